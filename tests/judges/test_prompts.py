"""The shipped prompts say what Appendix E.4 says, in our own words, and coach none of the abilities under test."""

from __future__ import annotations

import pytest

from omnivchat.bench import Instance
from omnivchat.judges import JudgesConfig
from omnivchat.judges._requests import JudgePrompts, style_request
from omnivchat.prompts import load_prompt

SYSTEM = load_prompt(None)[0]


@pytest.mark.parametrize(
    "coaching",
    [
        "wait",  # unfinished questions (UPC) are under test
        "assumption",  # false premises (FGC, AOR) are under test
        "feel",  # emotion (ER) is under test
        "listen",
        "look at",  # using both streams is under test
        "user's language",  # the language gate (tier 0) is under test
        "not visible",
    ],
)
def test_system_prompt_coaches_no_ability_under_test(coaching):
    assert coaching not in SYSTEM.lower()


def test_system_prompt_holds_the_policy():
    text = SYSTEM.lower()
    for policy in ("first person", "one to three", "roleplay", "bullet points", "emoji", "punctuation", "humour"):
        assert policy in text
    assert len(SYSTEM) < 1500  # the paper's policy prompt is 1,296 characters: a policy, not a manual


def test_style_judge_keeps_the_exceptions_and_gets_the_language():
    prompts = JudgePrompts()
    system = prompts.style_system
    assert "neutral, factual answer to a purely factual" in system and '"As an AI, I..."' in system
    assert "telegraphic" in system and "7 wins" in system
    spec = JudgesConfig.model_validate({"judges": {"j": {"model": "m"}}}).judges["j"]
    instance = Instance.model_validate(
        {
            "id": "x",
            "subcategory": "ICC",
            "language": "zh",
            "turns": [{"video": "media/x/turn1.mp4"}],
            "reference": "能听到。",
            "rubric": [{"tier": 0, "text": "中文"}, {"tier": 1, "text": "回答"}],
        }
    )
    request = style_request(instance, "能听到，请说。", prompts=prompts, spec=spec)
    assert "[USER'S LANGUAGE]\nChinese" in request.text and "能听到，请说。" in request.text
