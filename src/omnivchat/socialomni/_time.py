"""Times in SocialOmni annotations: When/How query timestamps and the Who question's marked interval.

Both become the cut-off (seconds) at which the clip is trimmed before it is sent: the model sees only the
prefix up to that point.
"""

from __future__ import annotations

import math
import re

from omnivchat.socialomni._errors import SocialOmniError

#: Recorded in the run manifest: how :func:`who_cutoff` turns a question into a cut-off.
WHO_CUTOFF_RULE = "interval-end-or-explicit-point; paired-points-use-later; normalize-fullwidth-colon"

_FULLWIDTH_COLON = "："
_NUMBER = r"\d+(?:\.\d+)?"
_ONE = re.compile(rf"{_NUMBER}|\.\d+")
_MIN_SEC = re.compile(rf"(\d+):({_NUMBER})")
# "01:02:50": minutes, seconds, hundredths (the annotation's own convention, not hours:minutes:seconds)
_MIN_SEC_HUNDREDTHS = re.compile(r"(\d+):(\d{2}):(\d{2})")


def _normalize(text: str) -> str:
    return text.replace(_FULLWIDTH_COLON, ":")


def seconds(ts: object) -> float:
    """Seconds from an annotation timestamp.

    - a number, or a string with one part: plain seconds (``"27"`` → 27.0);
    - ``"m:s"``: ``m*60 + s`` (``"1:05"`` → 65.0);
    - ``"a:bb:cc"``: minutes, seconds and hundredths, ``a*60 + b + c/100`` (``"01:02:50"`` → 62.5,
      ``"00:17:00"`` → 17.0).

    Full-width colons (``：``) are read as ``:`` and spaces around the parts are ignored. Empty, malformed,
    negative and non-finite values raise :class:`SocialOmniError`; zero is returned as 0.0 (callers that need a
    positive cut-off check it).
    """
    if isinstance(ts, bool) or not isinstance(ts, (str, int, float)):
        raise SocialOmniError(f"timestamp {ts!r}: expected seconds as a number or a string like '27', 'm:ss'")
    if isinstance(ts, (int, float)):
        value = float(ts)
    else:
        text = re.sub(r"\s*:\s*", ":", _normalize(ts).strip())
        if not text:
            raise SocialOmniError("timestamp '': empty")
        negative = text.startswith("-")
        text = text[1:].lstrip() if negative else text
        parts = text.split(":")
        if len(parts) == 1 and _ONE.fullmatch(text):
            value = float(text)
        elif len(parts) == 2 and (m := _MIN_SEC.fullmatch(text)):
            value = int(m.group(1)) * 60 + float(m.group(2))
        elif len(parts) == 3 and (m := _MIN_SEC_HUNDREDTHS.fullmatch(text)):
            value = int(m.group(1)) * 60 + int(m.group(2)) + int(m.group(3)) / 100
        else:
            raise SocialOmniError(f"timestamp {ts!r}: malformed (expected 's', 'm:ss' or 'm:ss:hh')")
        if negative:
            raise SocialOmniError(f"timestamp {ts!r}: negative")
    if not math.isfinite(value):
        raise SocialOmniError(f"timestamp {ts!r}: not a finite number")
    if value < 0:
        raise SocialOmniError(f"timestamp {ts!r}: negative")
    return value


_ORD = r"(?:st|nd|rd|th)"
_MSS = r"\d+:\d{2}(?![\d:])"
# The four phrasings of the marked interval in Who questions (matched case-insensitively, after ： → :).
WHO_PATTERNS: tuple[re.Pattern[str], ...] = (
    # "from 0:06 to 0:12"
    re.compile(rf"\bfrom\s+({_MSS})\s+to\s+({_MSS})", re.I),
    # "from the 15th second to the 20th second", "at the 2th and 6th second", "between the 3rd and 5th seconds"
    re.compile(
        rf"\b(?:from|between|at)\s+(?:the\s+)?(\d+(?:\.\d+)?){_ORD}?(?:\s+seconds?)?"
        rf"\s+(?:to|and)\s+(?:the\s+)?(\d+(?:\.\d+)?){_ORD}?\s+seconds?\b",
        re.I,
    ),
    # "between second 3 and 7", "between second 3 and second 7"
    re.compile(r"\bbetween\s+seconds?\s+(\d+(?:\.\d+)?)\s+and\s+(?:seconds?\s+)?(\d+(?:\.\d+)?)(?![\d.:])", re.I),
    # "at 0:05" (not "at 0:02 to 0:08", which is no phrasing of the release: it matches nothing and raises)
    re.compile(rf"\bat\s+({_MSS})(?!\s*(?:to|and|-|–)\s*\d)", re.I),
)


def _value(text: str) -> float:
    return seconds(text) if ":" in text else float(text)


def who_cutoff(question: str) -> float:
    """The cut-off (seconds) of a Who question: the end of its marked interval, or its stated point.

    The question is searched with the four :data:`WHO_PATTERNS` (``from M:SS to M:SS``; ordinal or second
    phrases with from/between/at ... to/and; ``between second N and N``; ``at M:SS``) after full-width colons are
    normalised. Exactly one match over all four is required: none, or several (two intervals, an interval and a
    point), raise :class:`SocialOmniError`. The cut-off is the last value: the interval's end, or the later of
    two stated points ("at the 2th and 6th second" → 6.0). It must be > 0, and a pair must have start <= end.
    """
    text = _normalize(question)
    found = [m for pattern in WHO_PATTERNS for m in pattern.finditer(text)]
    if len(found) != 1:
        shown = ", ".join(repr(m.group(0)) for m in found) or "none"
        raise SocialOmniError(f"question {question!r}: expected exactly one marked interval or point, found {shown}")
    values = [_value(group) for group in found[0].groups()]
    if len(values) == 2 and values[0] > values[1]:
        raise SocialOmniError(f"question {question!r}: interval starts after it ends ({found[0].group(0)!r})")
    cutoff = values[-1]
    if cutoff <= 0:
        raise SocialOmniError(f"question {question!r}: cut-off must be > 0 ({found[0].group(0)!r})")
    return cutoff
