"""The reward terms of Eq. 4-6, checked against hand computations."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.judges import STYLE_REQUIREMENTS
from omnivchat.rl import (
    DEFAULT_WEIGHTS,
    efficiency_rewards,
    format_reward,
    has_thinking_tags,
    raw_efficiency,
    rewards,
    style_reward,
    total_reward,
)

# --------------------------------------------------------------------------------------------- f(y)


@pytest.mark.parametrize(
    "reply",
    [
        "<think>The user wants the door.</think>The left door is closed.",
        "The left door is closed.</think>",  # a stray closing tag (the opening one was in the prompt)
        "<think>still thinking",  # a stray opening tag, never closed
        "<THINK>x</THINK> Closed.",
        "< think >x</ think > Closed.",
        "<think/> Closed.",
        "<think>\n\n</think>\n\nClosed.",  # an empty thinking block, as Qwen3 emits with thinking off
        "<thinking>x</thinking> Closed.",
    ],
)
def test_format_is_zero_with_thinking_tags(reply):
    assert has_thinking_tags(reply)
    assert format_reward(reply) == 0.0


@pytest.mark.parametrize("reply", ["", "   ", "...!?", "🙂🙂", "\n\t"])
def test_format_is_zero_for_an_empty_reply(reply):
    assert format_reward(reply) == 0.0


@pytest.mark.parametrize(
    "reply",
    [
        "The left door is closed.",
        "I think so.",
        "左边的门关着。",
        "A <thinker> is not a tag.",
        "x < y > z, think",
        "Левая дверь закрыта.",  # Cyrillic, Greek and Arabic have w(y) = 0 (Section 4.2) but are not empty
        "Η αριστερή πόρτα είναι κλειστή.",
        "الباب الأيسر مغلق.",
        "٣",  # an Arabic-Indic digit
    ],
)
def test_format_is_one_for_a_plain_reply(reply):
    assert not has_thinking_tags(reply)
    assert format_reward(reply) == 1.0


# --------------------------------------------------------------------------------------------- ρ(y), Eq. 5


def test_raw_efficiency_divides_credit_by_counted_units():
    assert raw_efficiency(0.5, "one two three four five") == pytest.approx(0.1)
    assert raw_efficiency(1.0, "你好世界") == pytest.approx(0.25)  # four CJK characters, four units
    assert raw_efficiency(1.0, "我有2个apple") == pytest.approx(0.2)  # 我 有 2 个 apple
    assert raw_efficiency(1.0, "don't well-known") == pytest.approx(0.5)  # joiners do not split a word
    assert raw_efficiency(0.75, "") == 0.75  # max(w, 1): no division by zero
    assert raw_efficiency(0.0, "a very long reply " * 50) == 0.0  # zero credit, zero efficiency


# --------------------------------------------------------------------------------------------- e(y), Eq. 6


def test_efficiency_is_min_max_normalised_within_the_group():
    scores = [1.0, 0.5, 0.0, 1.0]
    replies = ["a b", "a b c d e", "x", "a b c d"]
    # ρ = 1/2, 0.5/5, 0/1, 1/4 = 0.5, 0.1, 0, 0.25 -> min 0, max 0.5
    assert efficiency_rewards(scores, replies) == pytest.approx([1.0, 0.2, 0.0, 0.5])


def test_efficiency_uses_cjk_units():
    # ρ = 1/4 (four characters) and 1/2 (two words): the shorter reply is the most efficient
    assert efficiency_rewards([1.0, 1.0], ["左门关着", "left closed"]) == [0.0, 1.0]


def test_efficiency_with_ties_keeps_them_tied():
    assert efficiency_rewards([1.0, 1.0, 0.0], ["a b", "c d", "e f"]) == [1.0, 1.0, 0.0]
    assert efficiency_rewards([0.5, 1.0, 0.5], ["a", "b c d e", "f"]) == pytest.approx([1.0, 0.0, 1.0])


def test_efficiency_is_one_half_when_all_equal():
    assert efficiency_rewards([0.5, 0.5, 0.5, 0.5], ["a b", "c d", "e f", "g h"]) == [0.5] * 4
    # all zero credit: every ρ is 0 whatever the length
    assert efficiency_rewards([0.0, 0.0], ["a", "a b c d e f"]) == [0.5, 0.5]


def test_efficiency_of_a_single_reply_is_one_half():
    assert efficiency_rewards([0.8], ["anything at all"]) == [0.5]


def test_efficiency_of_an_empty_group():
    assert efficiency_rewards([], []) == []


def test_efficiency_refuses_what_is_not_a_score():
    with pytest.raises(ValueError, match="2 rubric scores for 1 replies"):
        efficiency_rewards([0.5, 0.5], ["a"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        efficiency_rewards([math.nan, 0.5], ["a", "b"])  # a missing score is never a number in min/max
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        efficiency_rewards([1.5], ["a"])


@given(st.lists(st.tuples(st.floats(0, 1), st.text(alphabet="ab 门", min_size=0, max_size=12)), min_size=1, max_size=8))
def test_efficiency_lies_in_unit_interval_with_min_zero_and_max_one(group):
    scores, replies = zip(*group, strict=True)
    values = efficiency_rewards(list(scores), list(replies))
    assert all(0.0 <= v <= 1.0 for v in values)
    if len(set(values)) > 1:
        assert min(values) == 0.0 and max(values) == 1.0
    else:
        assert values == [0.5] * len(values)


# --------------------------------------------------------------------------------------------- s(y), R(y)


def test_style_is_one_only_when_all_seven_hold():
    assert STYLE_REQUIREMENTS == rewards.STYLE_REQUIREMENTS == 7
    assert style_reward([1, 2, 3, 4, 5, 6, 7]) == 1.0
    assert style_reward([7, 6, 5, 4, 3, 2, 1]) == 1.0
    assert style_reward([1, 2, 3, 4, 5, 6]) == 0.0
    assert style_reward([]) == 0.0


def test_total_reward_by_hand():
    assert DEFAULT_WEIGHTS == (1.0, 0.5, 0.1, 0.5)
    assert total_reward(0.5, 1.0, 0.2, 0.0) == pytest.approx(0.5 + 0.5 + 0.02)
    assert total_reward(1.0, 1.0, 1.0, 1.0) == pytest.approx(2.1)
    assert total_reward(0.0, 0.0, 0.0, 0.0) == 0.0
    # the ablations of Table 1: no style, no efficiency
    assert total_reward(0.5, 1.0, 0.2, 1.0, weights=(1.0, 0.5, 0.1, 0.0)) == pytest.approx(1.02)
    assert total_reward(0.5, 1.0, 0.2, 1.0, weights=(1.0, 0.5, 0.0, 0.5)) == pytest.approx(1.5)


@given(st.floats(0, 1), st.sampled_from([0.0, 1.0]), st.floats(0, 1), st.sampled_from([0.0, 1.0]))
def test_total_reward_lies_in_zero_to_two_point_one(r, f, e, s):
    assert 0.0 <= total_reward(r, f, e, s) <= 2.1 + 1e-12


def test_total_reward_refuses_bad_terms_and_weights():
    with pytest.raises(ValueError, match="reward term e"):
        total_reward(0.5, 1.0, 1.2, 0.0)
    with pytest.raises(ValueError, match="reward term r"):
        total_reward(math.nan, 1.0, 0.5, 0.0)
    with pytest.raises(ValueError, match="4 numbers"):
        total_reward(0.5, 1.0, 0.5, 0.0, weights=(1.0, 0.5, 0.1))
    with pytest.raises(ValueError, match="finite and >= 0"):
        total_reward(0.5, 1.0, 0.5, 0.0, weights=(1.0, -0.5, 0.1, 0.5))
    with pytest.raises(ValueError, match="finite and >= 0"):
        total_reward(0.5, 1.0, 0.5, 0.0, weights=(1.0, math.inf, 0.1, 0.5))


def test_importing_the_package_is_cheap():
    code = (
        "import sys, omnivchat.rl; "
        "print(sorted(m for m in ('torch', 'numpy', 'aiohttp', 'omnivchat.judges', 'omnivchat.rl.service') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
