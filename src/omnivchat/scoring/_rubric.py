"""The gated, tiered rubric score of one reply (paper Section 3, Eq. 1)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def rubric_score(tiers: Sequence[int], hits: Iterable[int]) -> float:
    """Gated rubric score r(y) of Eq. 1.

    ``tiers[k-1]`` is the tier of criterion k (rubric order); ``hits`` holds the 1-based numbers of the criteria
    the grader found met. A tier-0 miss gives 0. A met criterion in tier t >= 1 earns one point only when every
    criterion of every earlier tier is met. The denominator counts every criterion outside tier 0, blocked or
    not, so the score lies in [0, 1].

    Raises ValueError for a negative tier, a rubric with no criterion outside tier 0, or a hit outside 1..K.
    """
    k = len(tiers)
    if any(t < 0 for t in tiers):
        raise ValueError(f"tiers must be >= 0, got {list(tiers)}")
    met = set(hits)
    out_of_range = sorted(h for h in met if not 1 <= h <= k)
    if out_of_range:
        raise ValueError(f"hits {out_of_range} are outside 1..{k}")
    available = sum(1 for t in tiers if t > 0)
    if available == 0:
        raise ValueError("rubric has no criterion outside tier 0")

    earned = 0
    for tier in sorted(set(tiers)):
        members = [n for n, t in enumerate(tiers, start=1) if t == tier]
        if tier > 0:
            earned += sum(1 for n in members if n in met)
        if not all(n in met for n in members):
            break  # an incomplete tier keeps its points but blocks every later tier
    return earned / available
