"""Paired statistics (scoring._paired) against hand computations, brute-force enumeration and scipy, with
properties: swapping A and B flips the sign of every difference and keeps every p-value; identical scores give a
difference of 0 and p = 1."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.scoring import compare_paired, correlation, mean_interval, paired_t_test, sign_flip_test


def brute_force_sign_flip(d: list[float]) -> float:
    """The two-sided sign-flip p-value by enumerating every sign pattern in plain Python."""
    observed = abs(sum(d))
    hits = total = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        total += 1
        hits += abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed - 1e-12
    return hits / total


def test_t_test_by_hand() -> None:
    from scipy.stats import t as student

    # d = b − a = [0, 1, 1, 1]: mean 0.75, sd 0.5, t = 0.75 / (0.5 / 2) = 3 with 3 degrees of freedom
    result = paired_t_test([0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 2.0])
    assert result.statistic == pytest.approx(3.0) and result.df == 3
    assert result.p == pytest.approx(2 * student.sf(3.0, 3))
    assert paired_t_test([1.0], [2.0]).note == "n/a (n=1)" and paired_t_test([1.0], [2.0]).p is None
    same = paired_t_test([0.1, 0.2, 0.7], [0.1, 0.2, 0.7])
    assert same.statistic is None and same.p == 1.0 and same.note == "every difference is 0"
    shifted = paired_t_test([0.1, 0.2, 0.7], [0.6, 0.7, 1.2])  # every difference 0.5 (to rounding): t undefined
    assert shifted.statistic is None and shifted.p is None and shifted.note == "every difference is the same"
    with pytest.raises(ValueError, match="3 values paired with 2"):
        paired_t_test([1, 2, 3], [1, 2])


def test_sign_flip_exact_by_hand() -> None:
    # d = [0, 1, 1, 1]: the zero has no sign; of the 8 patterns of the three ones, only +++ and --- reach |3|.
    result = sign_flip_test([0.0, 1.0, 1.0, 1.0])
    assert result.exact and result.n_nonzero == 3 and result.resamples == 8
    assert result.p == pytest.approx(2 / 8) and result.statistic == pytest.approx(0.75)
    # d = [1, 2, -1]: sums of ±1 ±2 ±1 are 4, 2, 2, 0, 0, -2, -2, -4; |sum| >= 2 in 6 of 8
    assert sign_flip_test([1.0, 2.0, -1.0]).p == pytest.approx(6 / 8)
    for d in ([0.5, -0.25, 0.75, 1.0, 0.3], [1.0, 1.0, -1.0, 0.5, 0.5, 0.25, -0.75]):
        assert sign_flip_test(d).p == pytest.approx(brute_force_sign_flip(d))
    assert sign_flip_test([0.0, 0.4, 0.0]).p == 1.0  # one non-zero difference: both signs reach it
    none = sign_flip_test([0.0, 0.0])
    assert none.p == 1.0 and none.n_nonzero == 0 and none.note == "every difference is 0"


def test_sign_flip_sampled_is_seeded_and_close_to_exact() -> None:
    import numpy as np

    d = [((k * 37) % 11 - 4.5) / 10 for k in range(18)]  # 18 non-zero differences: 262144 patterns
    signs = 1 - 2 * ((np.arange(2**18)[:, None] >> np.arange(18)) & 1)
    exact = float(np.mean(np.abs(signs @ np.asarray(d)) >= abs(sum(d)) - 1e-12))
    sampled = sign_flip_test(d, resamples=4000, seed=7)
    assert not sampled.exact and sampled.resamples == 4000 and sampled.n_nonzero == 18
    assert sampled.p == sign_flip_test(d, resamples=4000, seed=7).p  # seeded: the same p every time
    assert abs(sampled.p - exact) < 0.03  # Monte Carlo error of a p near 0.2 with 4000 patterns: about 0.006


def test_sign_flip_agrees_with_scipy() -> None:
    import numpy as np
    from scipy.stats import permutation_test

    def scipy_p(d: list[float], resamples: int) -> float:
        nonzero = np.asarray([x for x in d if x != 0])
        result = permutation_test(
            (nonzero,), np.mean, permutation_type="samples", n_resamples=resamples, rng=np.random.default_rng(0)
        )
        return float(result.pvalue)

    small = [0.5, -0.25, 0.75, 1.0, 0.3, 0.0, -1 / 3, 2 / 3]  # 7 non-zero: 128 patterns, both exact
    assert sign_flip_test(small).p == pytest.approx(scipy_p(small, 10_000))
    big = [((k * 7) % 5 - 1.8) / 3 for k in range(60)]  # 60 non-zero: both sample 5000 patterns; p near 0.3
    assert abs(sign_flip_test(big, resamples=5000).p - scipy_p(big, 5000)) < 0.02  # MC error about 0.0065 each


def test_bootstrap_interval() -> None:
    d = [0.0, 1.0, 1.0, 1.0, 0.5, -0.5]
    low, high = mean_interval(d, seed=3)
    assert low < sum(d) / len(d) < high and low >= -0.5 and high <= 1.0
    assert mean_interval(d, seed=3) == (low, high)  # seeded
    assert mean_interval([0.25, 0.25, 0.25]) == (0.25, 0.25)
    assert mean_interval([1.0]) is None


def test_correlations_match_scipy_and_say_na() -> None:
    from scipy.stats import pearsonr, spearmanr

    x, y = [0.1, 0.4, 0.35, 0.8], [0.2, 0.3, 0.5, 0.9]
    assert correlation(x, y, "pearson").value == pytest.approx(pearsonr(x, y).statistic)
    assert correlation(x, y, "spearman").p == pytest.approx(spearmanr(x, y).pvalue)
    two = correlation([0.1, 0.2], [0.3, 0.1], "pearson")
    assert two.value is None and two.note == "n/a (n=2)"
    flat = correlation([0.5, 0.5, 0.5], [0.1, 0.2, 0.3], "spearman")
    assert flat.value is None and flat.note == "n/a (constant)"


def test_verdicts() -> None:
    a = [k / 20 for k in range(20)]
    better = compare_paired(a, [x + 0.3 for x in a])
    assert better.significant and better.better == "b" and better.verdict == "B is better than A at the 5% level"
    assert better.difference == pytest.approx(0.3) and better.ci == pytest.approx((0.3, 0.3))
    assert better.sign_flip.p == pytest.approx(2 / 2**20) or not better.sign_flip.exact
    worse = compare_paired(a, [x - 0.3 for x in a])
    assert worse.better == "a" and worse.verdict == "A is better than B at the 5% level"
    small = compare_paired([0, 0, 0, 1], [1, 1, 1, 1])  # three wins of three: p = 2/8, too few to tell
    assert not small.significant and small.verdict == "no significant difference at the 5% level"
    assert small.mean_a == 0.25 and small.mean_b == 1.0 and small.t_test.df == 3


scores = st.lists(
    st.tuples(st.sampled_from([0.0, 0.25, 1 / 3, 0.5, 2 / 3, 0.75, 1.0]), st.sampled_from([0.0, 0.5, 1.0, 0.25])),
    min_size=2,
    max_size=25,
)


@given(scores)
def test_swapping_a_and_b_flips_the_sign(pairs: list[tuple[float, float]]) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    ab = compare_paired(a, b, bootstrap_resamples=500, permutation_resamples=500)
    ba = compare_paired(b, a, bootstrap_resamples=500, permutation_resamples=500)
    assert ba.difference == pytest.approx(-ab.difference, abs=1e-12)
    assert ba.mean_a == ab.mean_b and ba.mean_b == ab.mean_a
    assert ab.ci is not None and ba.ci is not None
    assert ba.ci[0] == pytest.approx(-ab.ci[1], abs=1e-9) and ba.ci[1] == pytest.approx(-ab.ci[0], abs=1e-9)
    assert ba.sign_flip.p == pytest.approx(ab.sign_flip.p)
    if ab.t_test.statistic is not None:
        assert ba.t_test.statistic == pytest.approx(-ab.t_test.statistic)
        assert ba.t_test.p == pytest.approx(ab.t_test.p)
    assert {ab.better, ba.better} in ({None}, {"a", "b"})


@given(st.lists(st.sampled_from([0.0, 0.2, 0.5, 1.0]), min_size=1, max_size=30))
def test_identical_scores_give_zero_and_p_one(a: list[float]) -> None:
    result = compare_paired(a, list(a), bootstrap_resamples=200)
    assert result.difference == 0 and result.sign_flip.p == 1.0
    assert result.t_test.p == (1.0 if len(a) >= 2 else None)
    assert result.verdict == "no significant difference at the 5% level" and not result.significant
    assert result.ci == ((0.0, 0.0) if len(a) >= 2 else None)
    assert math.isclose(result.mean_a or 0.0, sum(a) / len(a))
