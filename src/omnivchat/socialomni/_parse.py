"""Reading the candidate's answer: strict full-response parsing (the protocol), and a lenient variant.

The protocol's parsers look at the whole reply: ``t = text.strip().upper()`` must itself be the answer. So
"A. The woman...", "**C**" and "$\\boxed{D}$" are parse failures, which stay in the fixed denominator.

The lenient parsers reproduce what the legacy pipeline did (after ``</think>``, then "answer is X", then the
last standalone letter). They give a separate, clearly labelled metric, never the default score.
"""

from __future__ import annotations

import re
from typing import cast

WHO_LABELS = ("A", "B", "C", "D")
WHEN_LABELS = ("YES", "NO")
_WHEN = {"A": "YES", "B": "NO", "YES": "YES", "NO": "NO"}


def parse_who(text: str | None) -> str | None:
    """Strict Who: the trimmed, upper-cased reply if it is exactly one of A, B, C, D, else None."""
    if text is None:
        return None
    t = text.strip().upper()
    return t if t in WHO_LABELS else None


def parse_when(text: str | None) -> str | None:
    """Strict When: the trimmed, upper-cased reply mapped by {A: YES, B: NO, YES: YES, NO: NO}, else None."""
    if text is None:
        return None
    return _WHEN.get(text.strip().upper())


def parse_how(text: str | None) -> str | None:
    """How: the trimmed reply, or None when it is empty (an empty completed reply is kept and scores 0)."""
    if text is None:
        return None
    return text.strip() or None


# ------------------------------------------------------------------------------------------------ lenient

_THINK_END = "</think>"
_DECOR = re.compile(r"[\s*_`$.:()\[\]{}]+|\\boxed|\\text")


def _after_thinking(text: str) -> str:
    index = text.rfind(_THINK_END)
    return text[index + len(_THINK_END) :] if index >= 0 else text


def _bare(text: str) -> str:
    """The text without markdown and LaTeX decoration ("**C**", "$\\boxed{D}$", "(A).") and upper-cased."""
    return _DECOR.sub("", text).upper()


# "answer is" in any case; then optional decoration ("**", "$\\boxed{", "(", ...); then a capital letter
_ANSWER_IS = r"(?i:answer\s+is)\s*[:：]?\s*(?:\*+|_+|`+|\$|\\boxed\{|\\text\{|[(\[{]|\s)*"
_WHO_ANSWER_IS = re.compile(_ANSWER_IS + r"([ABCD])(?![\w'])")
_WHO_LETTER = re.compile(r"(?<![\w'])([ABCD])(?![\w'])")
_WHEN_ANSWER_IS = re.compile(_ANSWER_IS + r"((?i:yes|no)|A|B)(?![\w'])")
_WHEN_TOKEN = re.compile(r"(?<![\w'])((?i:yes|no)|A|B)(?![\w'])")


def parse_who_lenient(text: str | None) -> str | None:
    """Lenient Who (legacy pipeline; a separate metric, never the protocol's): after the last ``</think>``,
    the bare reply if it is a letter, else the letter after the last "answer is", else the last standalone
    capital A-D. None when nothing is found.
    """
    if text is None:
        return None
    body = _after_thinking(text)
    if (bare := _bare(body)) in WHO_LABELS:
        return bare
    if found := _WHO_ANSWER_IS.findall(body):
        return cast("str | None", found[-1])
    if found := _WHO_LETTER.findall(body):
        return cast("str | None", found[-1])
    return None


def parse_when_lenient(text: str | None) -> str | None:
    """Lenient When (legacy pipeline; a separate metric, never the protocol's): after the last ``</think>``,
    the bare reply if it maps, else the answer after the last "answer is", else the last standalone YES/NO
    (any case) or capital A/B. None when nothing is found.
    """
    if text is None:
        return None
    body = _after_thinking(text)
    if (bare := _bare(body)) in _WHEN:
        return _WHEN[bare]
    if found := _WHEN_ANSWER_IS.findall(body):
        return _WHEN[found[-1].upper()]
    if found := _WHEN_TOKEN.findall(body):
        return _WHEN[found[-1].upper()]
    return None
