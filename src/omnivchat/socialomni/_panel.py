"""The How judge: a 0-100 five-level prompt, exact score parsing, and the registry of three-judge panels.

The judge gets one user message of plain text (no media): the rubric, then the observed dialogue context, the
target instruction, the reference continuation and the candidate continuation, each under its own heading
(``judge_prompt.txt``, named placeholders ``{context}``, ``{target_question}``, ``{reference}``,
``{candidate}``; written from the protocol's description of its Appendix A.6 reconstruction). Judges sample at
temperature 0, top_p 1, 8,192 tokens. A panel is exactly three named judges: no substitution, no two-judge
average, no same-family exclusion.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

from omnivchat.socialomni._errors import SocialOmniError

JUDGE_PROMPT = "judge_prompt.txt"
JUDGE_FIELDS = frozenset({"context", "target_question", "reference", "candidate"})
#: Judge sampling: temperature 0, top_p 1, an 8,192-token output limit.
JUDGE_SAMPLING = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 8192}

_STANDARD = frozenset({"gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni"})
#: Panel name -> its judges' names (the names used in score files and judges configurations).
PANELS: dict[str, frozenset[str]] = {
    "standard": _STANDARD,
    "modern-20260924": _STANDARD,  # alias kept so existing manifests can be read
    "minicpmo45-20260925": _STANDARD,  # a per-run label for the same three judges, not a new cohort
    "paper-v3": frozenset({"gpt-4o", "gemini-2.5-pro", "qwen3-omni"}),
    "gpt56-sol": frozenset({"gpt-5.6-sol", "gemini-2.5-pro", "qwen3-omni"}),
}
DEFAULT_PANEL = "standard"
_SCORES = {"0": 0, "25": 25, "50": 50, "75": 75, "100": 100}


def _check_template(text: str, label: str) -> None:
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as err:
        raise SocialOmniError(f"{label}: judge prompt is not a valid format template ({err})") from None
    if fields != JUDGE_FIELDS:
        wanted = ", ".join("{" + f + "}" for f in sorted(JUDGE_FIELDS))
        found = ", ".join("{" + f + "}" for f in sorted(fields)) or "none"
        raise SocialOmniError(f"{label}: judge prompt must use exactly {wanted} (double other braces); found {found}")


def load_judge_template(path: Path | None) -> tuple[str, str]:
    """(template text, its sha256): the shipped ``judge_prompt.txt`` when ``path`` is None, else that file.

    A file is used byte for byte; the shipped file's final newline is not part of the prompt. Raises
    SocialOmniError when the file cannot be read or its placeholders are not exactly the four named ones.
    """
    if path is None:
        text = resources.files(__package__).joinpath(JUDGE_PROMPT).read_text(encoding="utf-8").rstrip("\n")
        label = f"omnivchat:{JUDGE_PROMPT}"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise SocialOmniError(f"{path}: cannot read judge prompt ({err.strerror or err})") from None
        except UnicodeDecodeError as err:
            raise SocialOmniError(f"{path}: judge prompt is not UTF-8 ({err.reason})") from None
        label = str(path)
    _check_template(text, label)
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_text(template: str, context: str, target_question: str, reference: str, candidate: str) -> str:
    """The judge's user message: ``template`` with the four fields filled in (one pass: braces inside the
    inputs are kept as they are)."""
    return template.format(context=context, target_question=target_question, reference=reference, candidate=candidate)


def parse_judge_score(text: str | None) -> int | None:
    """The score if ``text.strip()`` is exactly one of "0", "25", "50", "75", "100"; None otherwise."""
    if text is None:
        return None
    return _SCORES.get(text.strip())


def check_panel(panel: str, judge_names: Iterable[str]) -> frozenset[str]:
    """The panel's judges, after checking that the configured ``judge_names`` are exactly them.

    Raises SocialOmniError for an unknown panel, a repeated name, or any difference from the panel's three
    judges (a missing judge, an extra one, or a substitute): scores are never assembled from another panel.
    """
    if panel not in PANELS:
        raise SocialOmniError(f"panel {panel!r}: unknown; known panels: {', '.join(sorted(PANELS))}")
    names = list(judge_names)
    expected = PANELS[panel]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SocialOmniError(f"panel {panel!r}: judge(s) configured more than once: {', '.join(repeated)}")
    given = frozenset(names)
    if given != expected:
        parts = []
        if lacking := sorted(expected - given):
            parts.append(f"missing {', '.join(lacking)}")
        if extra := sorted(given - expected):
            parts.append(f"not in the panel: {', '.join(extra)}")
        raise SocialOmniError(
            f"panel {panel!r} needs exactly the judges {', '.join(sorted(expected))}; the configuration has "
            f"{', '.join(sorted(given)) or 'none'} ({'; '.join(parts)})"
        )
    return expected
