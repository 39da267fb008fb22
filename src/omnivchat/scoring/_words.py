"""Counted reply length w(y) and Reply Efficiency (paper Section 4.2, Eq. 5 and the RE metric)."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

# CJK ideographs (with extensions and compatibility forms), kana and Hangul syllables: one unit each.
_CJK = (
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
    "\U00020000-\U0002a6df\U0002a700-\U0002ebef\U00030000-\U0003134f"
)
# Latin letters (ASCII and Latin-1 / Extended-A/B with diacritics) and ASCII digits.
_ALNUM = "A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
# Apostrophes and hyphens join letters on both sides: don't, rock'n'roll, well-known, COVID-19.
_JOINERS = "'\u2019\u2010\u2011-"
_UNIT = re.compile(f"[{_CJK}]|[{_ALNUM}]+(?:[{_JOINERS}][{_ALNUM}]+)*")


def word_count(text: str) -> int:
    """Counted length w(y) of Section 4.2 (used by Eq. 5 and RE).

    Each CJK character is one unit; each maximal run of Latin letters or digits is one unit, and an apostrophe
    or hyphen between two such characters does not split the run; any other character (punctuation, spaces,
    emoji, other scripts) adds nothing. Text is NFKC-normalised first, so full-width letters and digits count
    as Latin ones.
    """
    return len(_UNIT.findall(unicodedata.normalize("NFKC", text)))


def is_empty_reply(text: str) -> bool:
    """A reply with no letter and no digit in any script: whitespace, punctuation, symbols or emoji only. The one
    definition of an empty reply for judging (scored 0 without a judge), Style (counts 0 where style is graded)
    and f(y) of Eq. 4.

    This is not w(y) = 0: w(y) counts Chinese characters and Latin or digit groups only (Section 4.2), so a reply
    in Cyrillic, Greek or Arabic has w(y) = 0 (and is left out of Len) yet says something, which its judge and
    the tier-0 language gate must grade.
    """
    return not any(unicodedata.category(char)[0] in "LN" for char in unicodedata.normalize("NFKC", text))


def reply_efficiency(scores: Sequence[float], replies: Sequence[str]) -> float:
    """Reply Efficiency RE(E) = 1000 * sum r(y) / sum w(y) over a set of replies (Section 4.2).

    Rubric credit per thousand counted words. Returns NaN when the replies hold no counted word at all, since
    the ratio is then undefined (never 0, which would read as a measured value).
    """
    if len(scores) != len(replies):
        raise ValueError(f"{len(scores)} scores for {len(replies)} replies")
    words = sum(word_count(r) for r in replies)
    if words == 0:
        return math.nan
    return 1000.0 * math.fsum(scores) / words
