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
_UNIT = r"(?:seconds?|secs?|s)"
# A clock time as the official parser takes it: "0:06", "0:6", "0:06.5", "0:06:50" (m:ss:hh, read by seconds()).
_CLOCK = r"\d+:\d+(?::\d+)?(?:\.\d+)?"
_N = r"(\d+(?:\.\d+)?)"
# The four phrasings of the marked interval that the official runner reads (matched case-insensitively, after
# ： → :); they accept what its four patterns accept.
WHO_PATTERNS: tuple[re.Pattern[str], ...] = (
    # "from 0:06 to 0:12", "from 0:6 to 0:12", "from 0:04 to 0:08 seconds"
    re.compile(rf"\bfrom\s+({_CLOCK})\s+to\s+({_CLOCK})", re.I),
    # "from the 15th second to the 20th second", "at the 2th and 6th second", "between the 3rd and 5th seconds",
    # "from 3s to 5s", "from 3 to 5 seconds"
    re.compile(
        rf"\b(?:from|between|at)\s+(?:the\s+)?{_N}{_ORD}?\s*{_UNIT}?"
        rf"\s+(?:to|and)\s+(?:the\s+)?{_N}{_ORD}?\s*{_UNIT}\b",
        re.I,
    ),
    # "between second 3 and 7", "between second 3 and second 7"
    re.compile(rf"\bbetween\s+seconds?\s+{_N}\s+and\s+(?:seconds?\s+)?{_N}(?![\d.:])", re.I),
    # "at 0:05", "at 1:05" (not "at 0:02 to 0:08": the official runner would cut at 0:02, the start of what reads
    # as an interval, so it is refused rather than cut early)
    re.compile(rf"\bat\s+({_CLOCK})(?![\d.:])(?!\s*(?:to|and|-|–)\s*\d)", re.I),
)
# Phrasings the release does not use, read only when none of WHO_PATTERNS matches (so that no question the
# official runner reads gets another cut-off, and none it finds ambiguous becomes readable).
WHO_FALLBACK_PATTERNS: tuple[re.Pattern[str], ...] = (
    # "between 0:06 and 0:12"
    re.compile(rf"\bbetween\s+({_CLOCK})\s+and\s+({_CLOCK})", re.I),
    # "at the 7 second mark", "at the 7-second mark", "at the 7th second", "at 7 seconds", "at 7s"
    re.compile(rf"\bat\s+(?:the\s+)?{_N}{_ORD}?[\s-]*{_UNIT}\b(?:\s+mark)?(?!\s*(?:to|and|-|–)\s*\d)", re.I),
    # "at second 7"
    re.compile(rf"\bat\s+seconds?\s+{_N}(?![\d.:])(?!\s*(?:to|and|-|–)\s*\d)", re.I),
)


def _value(text: str) -> float:
    return seconds(text) if ":" in text else float(text)


def who_cutoff(question: str) -> float:
    """The cut-off (seconds) of a Who question: the end of its marked interval, or its stated point.

    The question is searched with the four :data:`WHO_PATTERNS` (``from M:SS to M:SS``; ordinal or second
    phrases with from/between/at ... to/and; ``between second N and N``; ``at M:SS``) after full-width colons are
    normalised, and only when none matches with :data:`WHO_FALLBACK_PATTERNS` (``between M:SS and M:SS``, ``at
    the N second mark``, ``at second N``). Exactly one match is required: none, or several (two intervals, an
    interval and a point), raise :class:`SocialOmniError`. The cut-off is the last value: the interval's end, or
    the later of two stated points ("at the 2th and 6th second" → 6.0). It must be > 0, and a pair must have
    start <= end.
    """
    text = _normalize(question)
    found = [m for pattern in WHO_PATTERNS for m in pattern.finditer(text)]
    if not found:
        found = [m for pattern in WHO_FALLBACK_PATTERNS for m in pattern.finditer(text)]
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
