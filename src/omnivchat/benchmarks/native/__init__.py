"""omnivchat: the OmniVChat-Bench format (paper, Section 3): the benchmark, its requests and manifest
(:func:`run_eval` runs a bench directory), its judging pass (rubric and style verdicts through the judge engine),
its Table 1 scores.json, the files of its run directories (their status and export are the shared ones), and the
check of a bench's clips (:class:`BenchClipChecker`, what ``omnivchat validate`` runs).

Dataset: a bench directory (``bench.yaml``, ``instances.jsonl``, ``media/``); the user's question is spoken inside
each clip, and every instance carries a reference reply and a tiered gated rubric. Scores: the gated rubric score
of Eq. 1 from a judge panel, aggregated into the columns of Table 1 (Eq. 2). Chance level: 0 (no rubric tier is
met by guessing). Languages: as the bench has them (English and Chinese in the paper).
"""

from omnivchat.benchmarks.native._benchmark import OMNIVCHAT, OmniVChatBench
from omnivchat.benchmarks.native._clips import BenchClipChecker, clip_uses
from omnivchat.benchmarks.native._files import (
    NATIVE_BENCHMARK,
    BenchIdentity,
    RunManifest,
    load_manifest,
)
from omnivchat.benchmarks.native._judging import (
    ItemScore,
    JudgeReport,
    collect_judgments,
    collect_scores,
    estimate_judging,
    judge_run,
    judge_run_async,
    judged_replies,
    panel_hits_majority,
    run_bench,
    shard_part,
)
from omnivchat.benchmarks.native._run import bench_identity, build_manifest, build_request, run_eval, run_eval_async
from omnivchat.benchmarks.native._scores import bench_name, item_records, native_scores, prompt_labels
from omnivchat.benchmarks.native._summary import rejected_note, score_summary, table1_table

__all__ = [
    "NATIVE_BENCHMARK",
    "OMNIVCHAT",
    "BenchClipChecker",
    "BenchIdentity",
    "ItemScore",
    "JudgeReport",
    "OmniVChatBench",
    "RunManifest",
    "bench_identity",
    "bench_name",
    "build_manifest",
    "build_request",
    "clip_uses",
    "collect_judgments",
    "collect_scores",
    "estimate_judging",
    "item_records",
    "judge_run",
    "judge_run_async",
    "judged_replies",
    "load_manifest",
    "native_scores",
    "panel_hits_majority",
    "prompt_labels",
    "rejected_note",
    "run_bench",
    "run_eval",
    "run_eval_async",
    "score_summary",
    "shard_part",
    "table1_table",
]
