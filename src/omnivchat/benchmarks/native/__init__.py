"""omnivchat: the OmniVChat-Bench format (paper, Section 3): the benchmark, and the status and export of its
run directories.

Dataset: a bench directory (``bench.yaml``, ``instances.jsonl``, ``media/``); the user's question is spoken inside
each clip, and every instance carries a reference reply and a tiered gated rubric. Scores: the gated rubric score
of Eq. 1 from a judge panel, aggregated into the columns of Table 1 (Eq. 2). Chance level: 0 (no rubric tier is
met by guessing). Languages: as the bench has them (English and Chinese in the paper).
"""

from omnivchat.benchmarks.native._benchmark import OMNIVCHAT, OmniVChatBench
from omnivchat.benchmarks.native._status import export, status

__all__ = ["OMNIVCHAT", "OmniVChatBench", "export", "status"]
