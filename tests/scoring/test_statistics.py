"""The resampling estimators of omnivchat.scoring.statistics: seeded, checked against scipy where scipy has them
and against their definitions by hand where it has not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from omnivchat.scoring.statistics import (
    bootstrap_draws,
    bootstrap_interval,
    cluster_bootstrap_interval,
    clustered_se,
    percentile_interval,
    ratio_bootstrap_interval,
)


@pytest.mark.parametrize(
    ("values", "level", "resamples"),
    [
        ([0.0, 1.0, 1.0, 1.0, 0.5, -0.5], 0.95, 2000),
        ([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0], 0.9, 3000),
        (list(np.random.default_rng(5).random(40)), 0.95, 10_000),
    ],
)
@pytest.mark.parametrize("seed", [0, 3])
def test_plain_bootstrap_matches_scipy_percentile(values: list[float], level: float, resamples: int, seed: int) -> None:
    low, high = bootstrap_interval(values, seed=seed, resamples=resamples, level=level)
    reference = bootstrap(
        (np.asarray(values),),
        np.mean,
        confidence_level=level,
        n_resamples=resamples,
        method="percentile",
        vectorized=True,
        batch=1000,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    # scipy draws the same resamples from the same seed: the intervals agree to the last bits of a float
    assert (low, high) == pytest.approx((reference.low, reference.high), rel=1e-12, abs=1e-12)


def test_bootstrap_is_seeded_and_says_none_for_nothing() -> None:
    values = list(np.random.default_rng(8).random(12))
    assert bootstrap_interval(values, seed=4) == bootstrap_interval(values, seed=4)
    assert bootstrap_interval(values, seed=4) != bootstrap_interval(values, seed=5)
    assert bootstrap_interval([]) == (None, None)
    assert bootstrap_draws(5, resamples=7, seed=1).shape == (7, 5)


def test_percentile_interval_reads_the_tails() -> None:
    samples = np.arange(101, dtype=float)  # the q-quantile of 0..100 is 100 q
    assert percentile_interval(samples) == pytest.approx((2.5, 97.5))
    assert percentile_interval(samples, level=0.8) == pytest.approx((10.0, 90.0))


def test_ratio_bootstrap_is_the_ratio_of_resampled_totals() -> None:
    errors = np.array([1, 0, 3, 2])
    words = np.array([4, 0, 5, 3])
    draws = bootstrap_draws(4, resamples=500, seed=2)
    totals = words[draws].sum(axis=1)
    kept = totals != 0  # a resample of the wordless sentence alone has no rate
    expected = percentile_interval(errors[draws].sum(axis=1)[kept] / totals[kept])
    assert ratio_bootstrap_interval(errors, words, seed=2, resamples=500) == expected
    assert ratio_bootstrap_interval(np.array([1]), np.array([0])) == (None, None)
    with pytest.raises(ValueError, match="one denominator per numerator"):
        ratio_bootstrap_interval(errors, words[:2])


def test_cluster_bootstrap_with_singletons_is_the_plain_bootstrap() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    singletons = [str(k) for k in range(len(values))]
    assert cluster_bootstrap_interval(values, singletons, seed=1) == pytest.approx(bootstrap_interval(values, seed=1))
    assert cluster_bootstrap_interval(values, ["a"] * len(values)) == (None, None)


def test_clustered_se_against_its_formula() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    clusters = ["a", "a", "b", "b", "b", "c", "c"]
    mean = sum(values) / 7
    residuals = [sum(v - mean for v, c in zip(values, clusters, strict=True) if c == g) for g in "abc"]
    assert clustered_se(values, clusters) == pytest.approx(np.sqrt(3 / 2 * sum(r**2 for r in residuals) / 49))
    with pytest.raises(ValueError, match="one cluster per value"):
        clustered_se(values, clusters[:3])
