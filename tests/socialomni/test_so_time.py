"""seconds() for When/How timestamps and who_cutoff() for the marked interval of Who questions."""

from __future__ import annotations

import json
import math

import pytest
from bench_factory import REALDATA
from hypothesis import given, settings
from hypothesis import strategies as st

from omnivchat.socialomni._data import SocialOmniError
from omnivchat.socialomni._time import WHO_CUTOFF_RULE, WHO_PATTERNS, seconds, who_cutoff


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        ("01:02:50", 62.5),  # minutes:seconds:hundredths
        ("00:17:00", 17.0),
        ("27", 27.0),
        ("1：05", 65.0),  # full-width colon
        ("00：17：00", 17.0),
        ("1:05", 65.0),
        ("0:45", 45.0),
        ("12:03.5", 723.5),
        (" 27 ", 27.0),
        ("3.25", 3.25),
        ("1 : 05", 65.0),
        ("0", 0.0),
        (27, 27.0),
        (2.5, 2.5),
        (0, 0.0),
    ],
)
def test_seconds(ts: str | int | float, expected: float) -> None:
    assert seconds(ts) == expected


@pytest.mark.parametrize(
    "ts",
    [
        "",
        "   ",
        "-3",
        "-0:05",
        -1,
        -0.5,
        math.nan,
        math.inf,
        "nan",
        "inf",
        "1e3",
        "1_000",
        "abc",
        "1:2:3",  # three parts need two-digit seconds and hundredths
        "1::2",
        "1:-5",
        "1:02:03:04",
        ":30",
        "5s",
        None,
        True,
        [1],
    ],
)
def test_seconds_rejects(ts: object) -> None:
    with pytest.raises(SocialOmniError, match="timestamp"):
        seconds(ts)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(0, 59), st.booleans())
def test_seconds_minutes_seconds(m: int, s: int, fullwidth: bool) -> None:
    colon = "：" if fullwidth else ":"
    assert seconds(f"{m}{colon}{s:02d}") == m * 60 + s


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))
def test_seconds_hundredths(a: int, b: int, c: int) -> None:
    assert seconds(f"{a:02d}:{b:02d}:{c:02d}") == pytest.approx(a * 60 + b + c / 100)


# ------------------------------------------------------------------------------------------------ who_cutoff


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What happened in the video from 0:02 to 0:08?", 8.0),
        ("What did the speaker mention at the 2th and 6th second of the video?", 6.0),  # the later point
        ("Who was speaking at 0:05 in the video?", 5.0),
        ("What happened in the video from 0:06 to 0:12?", 12.0),
        ("What did she say from the 15th second to the 20th second?", 20.0),
        ("What happened between the 3rd and 5th seconds?", 5.0),
        ("What was said from 1st second to 4th second?", 4.0),
        ("What happened between second 3 and 7?", 7.0),
        ("What happened between second 3 and second 7?", 7.0),
        ("What did the boy say from 0：03 to 0：09？", 9.0),  # full-width colons
        ("Who was speaking AT 1:05?", 65.0),
        ("What happened From 0:10 To 0:10?", 10.0),  # a zero-length interval is start <= end
        # what the official parser also reads (issue 22 item 6)
        ("What happened from 0:6 to 0:12?", 12.0),
        ("What happened from 3s to 5s?", 5.0),
        ("What happened from 3 to 5 seconds?", 5.0),
        ("What happened from 0：04 to 0:08 seconds?", 8.0),  # the official runner's own test
        ("What happened from 0:06:50 to 0:07:00?", 7.0),  # m:ss:hh, as seconds() reads it
        # other phrasings, read only when none of the release's matches
        ("What happened between 0:06 and 0:12?", 12.0),
        ("Who was speaking at the 7 second mark?", 7.0),
        ("Who was speaking at the 7-second mark?", 7.0),
        ("Who was speaking at second 7?", 7.0),
        ("What happened from 0:02 to 0:08, not between 0:10 and 0:12?", 8.0),  # the release's phrasing wins
    ],
)
def test_who_cutoff(question: str, expected: float) -> None:
    assert who_cutoff(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "What happened from 0:02 to 0:08 and from 0:10 to 0:12?",  # two intervals: ambiguous
        "Who was speaking at 0:05, and what happened from 0:06 to 0:09?",  # an interval and a point
        "Who spoke at 0:02 and who spoke at 0:04?",  # two points in two phrases
        "What happened in the video?",  # none
        "What happened from 0:08 to 0:02?",  # start after end
        "What did he say at the 6th and 2nd second?",
        "Who was speaking at 0:00?",  # cut-off must be > 0
        "What happened at 0:02 to 0:08?",  # not a phrasing of the release
        "What happened at 0:12 to 0:18?",  # never cut at 0:1 by reading part of the time
        "Who spoke at the 3 second mark and at the 5 second mark?",  # two points of the fallback phrasings
        "",
    ],
)
def test_who_cutoff_rejects(question: str) -> None:
    with pytest.raises(SocialOmniError, match="question"):
        who_cutoff(question)


def test_who_cutoff_error_lists_the_matches() -> None:
    with pytest.raises(SocialOmniError, match=r"'from 0:02 to 0:08', 'from 0:10 to 0:12'"):
        who_cutoff("What happened from 0:02 to 0:08 and from 0:10 to 0:12?")


def test_rule_string_and_four_patterns() -> None:
    assert WHO_CUTOFF_RULE == "interval-end-or-explicit-point; paired-points-use-later; normalize-fullwidth-colon"
    assert len(WHO_PATTERNS) == 4


_mss = st.tuples(st.integers(0, 9), st.integers(0, 59))


@settings(max_examples=200, deadline=None)
@given(_mss, _mss, st.sampled_from(["What happened ", "Describe what the man did ", ""]), st.booleans())
def test_who_cutoff_interval_end(a: tuple[int, int], b: tuple[int, int], prefix: str, fullwidth: bool) -> None:
    start, end = sorted([a[0] * 60 + a[1], b[0] * 60 + b[1]])
    colon = "：" if fullwidth else ":"
    question = f"{prefix}from {start // 60}{colon}{start % 60:02d} to {end // 60}{colon}{end % 60:02d}?"
    if end == 0:
        with pytest.raises(SocialOmniError):
            who_cutoff(question)
    else:
        assert who_cutoff(question) == end


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 120), st.integers(1, 120))
def test_who_cutoff_ordinals(first: int, second: int) -> None:
    question = f"What was said at the {first}th and {second}th second?"
    if first <= second:
        assert who_cutoff(question) == second
    else:
        with pytest.raises(SocialOmniError):
            who_cutoff(question)


REAL_WHO = REALDATA / "socialomni" / "data" / "level_1"


@pytest.mark.skipif(not (REAL_WHO / "dataset.excerpt.json").is_file(), reason="../shared/realdata is absent")
def test_real_release_questions_keep_their_cutoffs() -> None:
    """Real Who rows (ids 1, 8, 12, 477, 482, 491, 941, 953): the wider phrasings change no release cut-off."""
    rows = json.loads((REAL_WHO / "dataset.excerpt.json").read_text(encoding="utf-8"))
    got = {row["id"]: who_cutoff(row["question"]) for row in rows}
    assert got == {1: 12.0, 8: 20.0, 12: 19.0, 477: 13.0, 482: 4.0, 491: 6.0, 941: 2.0, 953: 31.0}
