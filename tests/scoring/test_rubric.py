"""Eq. 1: the gated, tiered rubric score."""

import re
from itertools import chain, combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.scoring import rubric_score

MUG_TIERS = [0, 1, 2, 2, 3]  # Example 1 of the paper: language gate, reindeer, red, silhouette, tone


def _all_subsets(n: int):
    items = range(1, n + 1)
    return chain.from_iterable(combinations(items, k) for k in range(n + 1))


def _mug_by_hand(hits: set[int]) -> float:
    """Example 1 scored by reading its rules: 4 available points (tiers 1, 2, 2, 3)."""
    if 1 not in hits:  # tier-0 language gate
        return 0.0
    if 2 not in hits:  # tier 1 incomplete: tiers 2 and 3 are blocked
        return 0.0
    points = 1 + (3 in hits) + (4 in hits)
    if 3 in hits and 4 in hits and 5 in hits:  # tier 3 only after both tier-2 criteria
        points += 1
    return points / 4


@pytest.mark.parametrize("hits", list(_all_subsets(5)), ids=lambda h: "hits=" + ",".join(map(str, h)))
def test_festive_mug_every_subset(hits):
    assert rubric_score(MUG_TIERS, hits) == _mug_by_hand(set(hits))


@pytest.mark.parametrize(
    ("hits", "expected"),
    [
        ((1, 2, 3, 4, 5), 1.0),
        ((1, 2, 3, 5), 0.5),  # one tier-2 point kept, tier 3 blocked
        ((1, 2, 4), 0.5),
        ((2, 3, 4, 5), 0.0),  # language gate failed
        ((1, 3, 4, 5), 0.0),  # tier 1 missed blocks everything after it
        ((1,), 0.0),
        ((1, 2), 0.25),
    ],
)
def test_festive_mug_worked_cases(hits, expected):
    assert rubric_score(MUG_TIERS, hits) == expected


def test_rubric_without_gate_and_with_tier_gaps():
    assert rubric_score([1, 1, 3], [1, 3]) == pytest.approx(1 / 3)  # tier 1 incomplete blocks tier 3
    assert rubric_score([1, 1, 3], [1, 2, 3]) == 1.0


def test_duplicate_hits_count_once():
    assert rubric_score(MUG_TIERS, [1, 2, 2, 2]) == 0.25


@pytest.mark.parametrize(("hits", "bad"), [([0], "[0]"), ([1, 6], "[6]"), ([-1, 7], "[-1, 7]")])
def test_hits_outside_range_are_errors(hits, bad):
    with pytest.raises(ValueError, match=re.escape(f"hits {bad} are outside 1..5")):
        rubric_score(MUG_TIERS, hits)


def test_rubric_needs_a_scorable_criterion():
    with pytest.raises(ValueError, match="no criterion outside tier 0"):
        rubric_score([0, 0], [1, 2])
    with pytest.raises(ValueError, match="tiers must be >= 0"):
        rubric_score([0, -1], [1])


@st.composite
def rubric_and_hits(draw):
    tiers = sorted(draw(st.lists(st.integers(0, 4), min_size=1, max_size=10)))
    if all(t == 0 for t in tiers):
        tiers.append(1)
    hits = draw(st.sets(st.integers(1, len(tiers))))
    return tiers, hits


@given(rubric_and_hits())
def test_score_is_in_unit_interval(case):
    tiers, hits = case
    assert 0.0 <= rubric_score(tiers, hits) <= 1.0


@given(rubric_and_hits(), st.data())
def test_adding_a_hit_never_lowers_the_score(case, data):
    tiers, hits = case
    extra = data.draw(st.integers(1, len(tiers)))
    assert rubric_score(tiers, hits | {extra}) >= rubric_score(tiers, hits)


@given(rubric_and_hits())
def test_tier0_miss_gives_zero(case):
    tiers, hits = case
    gate = [n for n, t in enumerate(tiers, start=1) if t == 0]
    if gate:
        assert rubric_score(tiers, hits - {gate[0]}) == 0.0


@given(rubric_and_hits(), st.data())
def test_hit_inside_blocked_tier_changes_nothing(case, data):
    tiers, hits = case
    # the first incomplete tier blocks every later tier
    incomplete = [t for t in sorted(set(tiers)) if any(n not in hits for n, u in enumerate(tiers, 1) if u == t)]
    if not incomplete:
        return
    blocked = [n for n, t in enumerate(tiers, start=1) if t > incomplete[0]]
    if not blocked:
        return
    extra = data.draw(st.sampled_from(blocked))
    assert rubric_score(tiers, hits | {extra}) == rubric_score(tiers, hits)


@given(rubric_and_hits())
def test_full_hits_give_one(case):
    tiers, _ = case
    assert rubric_score(tiers, range(1, len(tiers) + 1)) == 1.0
