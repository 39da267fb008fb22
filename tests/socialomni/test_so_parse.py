"""Strict full-response parsing (the protocol) and the separate lenient parsers (the legacy pipeline)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnivchat.socialomni._parse import (
    parse_how,
    parse_when,
    parse_when_lenient,
    parse_who,
    parse_who_lenient,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", "A"),
        (" b\n", "B"),
        ("d", "D"),
        ("\tC  ", "C"),
        ("A. The woman holding the umbrella", None),
        ("**C**", None),
        ("$\\boxed{D}$", None),
        ("A.", None),
        ("(B)", None),
        ("The answer is B", None),
        ("E", None),
        ("AB", None),
        ("", None),
        ("   ", None),
        ("<think>hmm</think>A", None),
        (None, None),
    ],
)
def test_parse_who_strict(text: str | None, expected: str | None) -> None:
    assert parse_who(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("yes", "YES"),
        ("A", "YES"),
        (" YES \n", "YES"),
        ("Yes", "YES"),
        ("a", "YES"),
        ("B", "NO"),
        ("no", "NO"),
        ("NO", "NO"),
        ("Yes.", None),
        ("A. YES", None),
        ("C", None),
        ("maybe", None),
        ("**YES**", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_when_strict(text: str | None, expected: str | None) -> None:
    assert parse_when(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Sure, I can help.\n", "Sure, I can help."),
        ("", None),
        ("  \n\t", None),
        (None, None),
    ],
)
def test_parse_how(text: str | None, expected: str | None) -> None:
    assert parse_how(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", "A"),
        ("A. The woman holding the umbrella", "A"),
        ("**C**", "C"),
        ("$\\boxed{D}$", "D"),
        ("(b).", "B"),
        ("<think>Maybe A, or B?</think>\nThe answer is C.", "C"),
        ("<think>It is A</think>", None),  # nothing after the reasoning
        ("I think the answer is **B**, not D.", "B"),  # "answer is" wins over the last letter
        ("Option C seems right, but D fits better.", "D"),  # else the last standalone capital letter
        ("the answer is a dog", None),  # lower-case "a" is an article, not a letter
        ("I don't know.", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_who_lenient(text: str | None, expected: str | None) -> None:
    assert parse_who_lenient(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", "YES"),
        ("**Yes.**", "YES"),
        ("<think>should they? no...</think> B", "NO"),
        ("The answer is: yes", "YES"),
        ("I would say No.", "NO"),
        ("Option A", "YES"),
        ("She should wait; the answer is B", "NO"),
        ("It is unclear", None),
        ("a pause", None),  # lower-case "a" is an article
        (None, None),
    ],
)
def test_parse_when_lenient(text: str | None, expected: str | None) -> None:
    assert parse_when_lenient(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_strict_parsers_read_the_whole_reply(text: str) -> None:
    t = text.strip().upper()
    assert parse_who(text) == (t if t in {"A", "B", "C", "D"} else None)
    assert parse_when(text) == {"A": "YES", "B": "NO", "YES": "YES", "NO": "NO"}.get(t)
    assert parse_who_lenient(text) in {None, "A", "B", "C", "D"}
    assert parse_when_lenient(text) in {None, "YES", "NO"}
    # lenient never disagrees with a reply the strict parser accepts
    if parse_who(text) is not None:
        assert parse_who_lenient(text) == parse_who(text)
    if parse_when(text) is not None:
        assert parse_when_lenient(text) == parse_when(text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from("ABCD"), st.text(alphabet=" \n\t", max_size=4), st.text(alphabet=" \n\t", max_size=4))
def test_strict_accepts_a_padded_letter(letter: str, left: str, right: str) -> None:
    assert parse_who(left + letter.lower() + right) == letter
