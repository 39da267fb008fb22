"""Paired statistics (scoring._paired) against hand computations, brute-force enumeration and scipy, with
properties: swapping A and B flips the sign of every difference and keeps every p-value; identical scores give a
difference of 0, a sign-flip p of 1 and no t-test or interval ("n/a (every difference is 0)"). Every degenerate case
(too few pairs, no spread, a constant side, a perfect correlation) is None with its reason, never a number."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.scoring import compare_paired, correlation, interval_note, mean_interval, paired_t_test, sign_flip_test


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
    assert paired_t_test([], []).note == "n/a (n=0)"
    # every difference 0: t is 0/0, a test of nothing; no p either (it was printed as 1.000 beside the note)
    same = paired_t_test([0.1, 0.2, 0.7], [0.1, 0.2, 0.7])
    assert same.statistic is None and same.p is None and same.note == "n/a (every difference is 0)"
    shifted = paired_t_test([0.1, 0.2, 0.7], [0.6, 0.7, 1.2])  # every difference 0.5 (to rounding): t is +-inf
    assert shifted.statistic is None and shifted.p is None and shifted.note == "n/a (every difference is the same)"
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
    assert interval_note(d) is None
    # no spread: every resample has the same mean; a zero-width interval would claim an exact difference
    assert mean_interval([0.25, 0.25, 0.25]) is None
    assert interval_note([0.25, 0.25, 0.25]) == "n/a (every difference is the same)"
    assert mean_interval([0.0, 0.0]) is None and interval_note([0.0, 0.0]) == "n/a (every difference is 0)"
    assert mean_interval([1.0]) is None and interval_note([1.0]) == "n/a (n=1)"
    assert interval_note([]) == "n/a (n=0)"


def test_correlations_match_scipy_and_say_na() -> None:
    from scipy.stats import pearsonr, spearmanr

    x, y = [0.1, 0.4, 0.35, 0.8], [0.2, 0.3, 0.5, 0.9]
    assert correlation(x, y, "pearson").value == pytest.approx(pearsonr(x, y).statistic)
    assert correlation(x, y, "spearman").p == pytest.approx(spearmanr(x, y).pvalue)
    two = correlation([0.1, 0.2], [0.3, 0.1], "pearson")
    assert two.value is None and two.note == "n/a (n=2)"
    flat = correlation([0.5, 0.5, 0.5], [0.1, 0.2, 0.3], "spearman")
    assert flat.value is None and flat.p is None and flat.note == "n/a (every x value is the same)"
    other = correlation([0.1, 0.2, 0.3], [0.4, 0.4, 0.4], "pearson", ("single mean", "multi mean"))
    assert other.value is None and other.note == "n/a (every multi mean is the same)"


def test_a_perfect_correlation_keeps_its_value_but_gives_no_p() -> None:
    from scipy.stats import spearmanr

    # five pairs in the same rank order: scipy's p is 1e-24 (a rounding artefact; the exact p is 2/5! = 0.017)
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 7.0, 9.0]
    assert spearmanr(x, y).pvalue < 1e-20
    rho = correlation(x, y, "spearman")
    assert rho.value == 1.0 and rho.p is None
    assert rho.note == "p n/a (|rho| = 1: the ranks match exactly, the test's p is a rounding artefact)"
    r = correlation([1.0, 2.0, 3.0], [3.0, 1.0, -1.0], "pearson")  # on a line, falling
    assert r.value == -1.0 and r.p is None and (r.note or "").startswith("p n/a (|r| = 1")
    # ties that leave the ranks unequal are a healthy case: scipy's value and p
    tied = correlation([1.0, 1.0, 2.0, 3.0], [1.0, 2.0, 2.0, 3.0], "spearman")
    want = spearmanr([1.0, 1.0, 2.0, 3.0], [1.0, 2.0, 2.0, 3.0])
    assert tied.value == pytest.approx(want.statistic) and tied.p == pytest.approx(want.pvalue) and tied.note is None


varying = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=12).filter(
    lambda pairs: len({round(x, 6) for x, _ in pairs}) > 1 and len({round(y, 6) for _, y in pairs}) > 1
)


@given(varying)
def test_healthy_cases_are_scipys_numbers(pairs: list[tuple[float, float]]) -> None:
    from scipy.stats import pearsonr, spearmanr, ttest_rel

    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    t = paired_t_test(a, b)
    if t.statistic is not None:
        want = ttest_rel(b, a)
        assert t.statistic == pytest.approx(want.statistic) and t.p == pytest.approx(want.pvalue)
        assert t.df == len(a) - 1 and t.note is None
    for method, scipy_fn in (("pearson", pearsonr), ("spearman", spearmanr)):
        c = correlation(a, b, method)
        want = scipy_fn(a, b)
        if c.p is not None:  # not a perfect correlation
            assert c.value == pytest.approx(want.statistic) and c.p == pytest.approx(want.pvalue) and c.note is None


def test_verdicts() -> None:
    a = [k / 20 for k in range(20)]
    better = compare_paired(a, [x + 0.3 for x in a])
    assert better.significant and better.better == "b" and better.verdict == "B is better than A at the 5% level"
    assert better.difference == pytest.approx(0.3)
    assert better.ci is None and better.ci_note == "n/a (every difference is the same)"
    assert better.t_test.p is None and better.t_test.note == "n/a (every difference is the same)"
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
    if ab.ci is None:  # every difference the same: no interval either way, for the same reason
        assert ba.ci is None and ba.ci_note == ab.ci_note and ab.ci_note is not None
    else:
        assert ba.ci is not None and ab.ci_note is None
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
    why = "n/a (every difference is 0)" if len(a) >= 2 else "n/a (n=1)"
    assert result.t_test.p is None and result.t_test.statistic is None and result.t_test.note == why
    assert result.verdict == "no significant difference at the 5% level" and not result.significant
    assert result.ci is None and result.ci_note == why
    assert math.isclose(result.mean_a or 0.0, sum(a) / len(a))
