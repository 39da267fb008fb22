"""The How judge prompt, exact score parsing, and strict three-judge panels."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnivchat.socialomni._data import SocialOmniError
from omnivchat.socialomni._panel import (
    JUDGE_SAMPLING,
    PANELS,
    check_panel,
    judge_text,
    load_judge_template,
    parse_judge_score,
)

STANDARD = {"gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni"}


def test_shipped_judge_prompt() -> None:
    text, sha = load_judge_template(None)
    assert sha == hashlib.sha256(text.encode("utf-8")).hexdigest()
    for placeholder in ("{context}", "{target_question}", "{reference}", "{candidate}"):
        assert text.count(placeholder) == 1
    # the sections come in the protocol's order: rubric, context, target instruction, reference, candidate
    order = [text.index(p) for p in ("{context}", "{target_question}", "{reference}", "{candidate}")]
    assert order == sorted(order)
    for anchor in ("100 =", "75 =", "50 =", "25 =", "0 ="):
        assert anchor in text
    assert "Output only one number from 0, 25, 50, 75, 100" in text
    assert "paraphrase" in text and "data" in text


def test_judge_text_fills_the_fields_in_one_pass() -> None:
    template, _ = load_judge_template(None)
    text = judge_text(template, "A: Are you coming {tonight}?", "What should B say?", "{candidate}", "Yes, see you!")
    assert "A: Are you coming {tonight}?" in text
    assert "\n{candidate}\n" in text  # the reference's own braces are data, not a placeholder
    assert "Yes, see you!" in text
    assert judge_text("{context}|{target_question}|{reference}|{candidate}", "c", "t", "r", "x") == "c|t|r|x"


def test_custom_judge_template(tmp_path: Path) -> None:
    path = tmp_path / "judge.txt"
    path.write_text("Rubric {{json}}\n{context}\n{target_question}\n{reference}\n{candidate}\n", encoding="utf-8")
    text, sha = load_judge_template(path)
    assert text == path.read_text(encoding="utf-8") and sha == hashlib.sha256(path.read_bytes()).hexdigest()
    path.write_text("{context} {reference} {candidate}", encoding="utf-8")
    with pytest.raises(SocialOmniError, match="target_question"):
        load_judge_template(path)
    path.write_text("{context} {target_question} {reference} {candidate} {extra}", encoding="utf-8")
    with pytest.raises(SocialOmniError, match="extra"):
        load_judge_template(path)
    with pytest.raises(SocialOmniError, match="cannot read"):
        load_judge_template(tmp_path / "absent.txt")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("25", 25),
        ("50", 50),
        (" 75\n", 75),
        ("100", 100),
        ("100.", None),
        ("80", None),
        ("75/100", None),
        ("Score: 75", None),
        ("**75**", None),
        ("075", None),
        ("+25", None),
        ("1 00", None),
        ("75 50", None),
        ("seventy-five", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_judge_score(text: str | None, expected: int | None) -> None:
    assert parse_judge_score(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_judge_score_is_exact(text: str) -> None:
    score = parse_judge_score(text)
    assert score == (int(text.strip()) if text.strip() in {"0", "25", "50", "75", "100"} else None)


def test_panels() -> None:
    assert PANELS["standard"] == STANDARD
    assert PANELS["modern-20260924"] == PANELS["standard"] == PANELS["minicpmo45-20260925"]
    assert PANELS["paper-v3"] == {"gpt-4o", "gemini-2.5-pro", "qwen3-omni"}
    assert PANELS["gpt56-sol"] == {"gpt-5.6-sol", "gemini-2.5-pro", "qwen3-omni"}
    assert all(len(judges) == 3 for judges in PANELS.values())
    assert JUDGE_SAMPLING == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 8192}


def test_check_panel_accepts_exactly_the_panel() -> None:
    assert check_panel("standard", ["qwen3.8-omni", "gpt-5.6-sol", "gemini-3.8-flash"]) == STANDARD
    assert check_panel("minicpmo45-20260925", iter(STANDARD)) == STANDARD
    assert check_panel("paper-v3", ["gpt-4o", "gemini-2.5-pro", "qwen3-omni"]) == PANELS["paper-v3"]


@pytest.mark.parametrize(
    ("panel", "names", "message"),
    [
        ("standard", ["gpt-5.6-sol", "gemini-3.8-flash"], "missing qwen3.8-omni"),  # no two-judge panel
        ("standard", ["gpt-4o", "gemini-3.8-flash", "qwen3.8-omni"], "not in the panel: gpt-4o"),  # substitute
        ("standard", [*sorted(STANDARD), "gpt-4o"], "not in the panel: gpt-4o"),
        ("standard", ["gpt-5.6-sol", "gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni"], "more than once"),
        ("standard", [], "missing"),
        ("gpt56-sol", ["gpt-4o", "gemini-2.5-pro", "qwen3-omni"], "missing gpt-5.6-sol"),
        ("standard", ["gpt-4o", "gemini-2.5-pro", "qwen3-omni"], "needs exactly"),  # original scores can't fill it
        ("paper-v4", sorted(STANDARD), "unknown"),
    ],
)
def test_check_panel_is_strict(panel: str, names: list[str], message: str) -> None:
    with pytest.raises(SocialOmniError, match=message):
        check_panel(panel, names)
