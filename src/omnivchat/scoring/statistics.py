"""Resampling statistics of scores, each estimator written once: the seeded percentile bootstrap (of a mean, of a
ratio of totals, over clusters, paired over several conditions) and the cluster-robust standard error.

Every bootstrap here draws its resamples the same way, ``numpy.random.default_rng(seed).integers(0, n, (resamples,
n))`` (row r: the units of resample r), and reads its interval off the resampled statistics with
``numpy.quantile`` at ``(1 - level) / 2`` and ``1 - (1 - level) / 2`` (linear interpolation). That is what
``scipy.stats.bootstrap(method="percentile", rng=default_rng(seed))`` does for a mean: for the same seed and
resamples it draws the same resamples and gives the same interval up to the last bits of a float (the tests check
it), without importing scipy. (The paired comparison's ``omnivchat.scoring.mean_interval`` calls scipy itself,
10,000 resamples: its reports keep the exact numbers they always had.)

An interval is ``(low, high)``, or ``(None, None)`` where there is nothing to resample (no values, fewer than two
clusters).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BOOTSTRAP_LEVEL",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "Interval",
    "bootstrap_draws",
    "bootstrap_interval",
    "cluster_bootstrap_interval",
    "cluster_sums",
    "clustered_se",
    "holm",
    "percentile_interval",
    "ratio_bootstrap_interval",
]

BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the intervals benchmarks report (accuracy, WER, the ablation grid)."""
BOOTSTRAP_SEED = 0
BOOTSTRAP_LEVEL = 0.95
"""The coverage of the intervals: 95%, the 2.5th to the 97.5th percentile of the resampled statistic."""

Interval = tuple[float | None, float | None]
"""(low, high) of an interval; (None, None) when there is none."""


def bootstrap_draws(n: int, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> NDArray[np.int64]:
    """The seeded resamples of ``n`` units with replacement: a ``(resamples, n)`` array of unit indices. Indexing
    every condition's scores with the same draws is a paired bootstrap."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(resamples, n))


def percentile_interval(samples: ArrayLike, *, level: float = BOOTSTRAP_LEVEL) -> tuple[float, float]:
    """The percentile interval of resampled statistics: their ``(1 - level) / 2`` and ``1 - (1 - level) / 2``
    quantiles (linear interpolation, as ``scipy.stats.bootstrap(method="percentile")`` reads them)."""
    tail = (1 - level) / 2
    low, high = np.quantile(np.asarray(samples, dtype=float), [tail, 1 - tail])
    return float(low), float(high)


def bootstrap_interval(
    values: Sequence[float] | NDArray[np.floating],
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
) -> Interval:
    """The seeded percentile-bootstrap interval of the mean of ``values`` (units resampled with replacement);
    ``(None, None)`` for no values. ``scipy.stats.bootstrap((values,), numpy.mean, method="percentile",
    rng=numpy.random.default_rng(seed))`` gives the same interval (to the last bits) for the same resamples and
    level."""
    if len(values) == 0:
        return None, None
    data = np.asarray(values, dtype=float)
    means = data[bootstrap_draws(len(data), resamples=resamples, seed=seed)].mean(axis=1)
    return percentile_interval(means, level=level)


def ratio_bootstrap_interval(
    numerators: NDArray[np.number],
    denominators: NDArray[np.number],
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
) -> Interval:
    """The seeded percentile-bootstrap interval of a ratio of totals, sum(numerators) / sum(denominators), units
    (a sentence's errors over its words; a cluster's score total over its items) resampled with replacement. A
    resample whose denominators sum to 0 has no ratio and is left out; ``(None, None)`` when every one is."""
    if len(numerators) != len(denominators):
        raise ValueError("one denominator per numerator")
    if len(numerators) == 0:
        return None, None
    draws = bootstrap_draws(len(numerators), resamples=resamples, seed=seed)
    drawn = denominators[draws].sum(axis=1)
    kept = drawn != 0
    if not kept.any():
        return None, None
    return percentile_interval(numerators[draws].sum(axis=1)[kept] / drawn[kept], level=level)


def cluster_sums(values: Sequence[float], clusters: Sequence[str]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per cluster (in order of first appearance): the sum of the values and their count."""
    if len(values) != len(clusters):
        raise ValueError("one cluster per value")
    index: dict[str, int] = {}
    for cluster in clusters:
        index.setdefault(cluster, len(index))
    sums = np.zeros(len(index))
    counts = np.zeros(len(index))
    for value, cluster in zip(values, clusters, strict=True):
        sums[index[cluster]] += value
        counts[index[cluster]] += 1
    return sums, counts


def cluster_bootstrap_interval(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
    level: float = BOOTSTRAP_LEVEL,
) -> Interval:
    """The seeded percentile-bootstrap interval of the mean of ``values``, resampling whole clusters with
    replacement (each resample's mean: its items' total over its item count). With one item per cluster, in
    order, it draws exactly what :func:`bootstrap_interval` draws. ``(None, None)`` with fewer than two clusters:
    resampling one cluster only ever gives back its own mean, an interval of width 0 that would claim a certainty
    it has not."""
    sums, counts = cluster_sums(values, clusters)
    if len(sums) < 2:
        return None, None
    return ratio_bootstrap_interval(sums, counts, seed=seed, resamples=resamples, level=level)


def clustered_se(values: Sequence[float], clusters: Sequence[str]) -> float | None:
    """The cluster-robust (CR1, Liang and Zeger 1986) standard error of the mean of ``values``.

    With item scores y_i of n items in G clusters g (videos) and their mean ȳ::

        Var(ȳ) = G / (G - 1) · Σ_g ( Σ_{i in g} (y_i - ȳ) )² / n²        SE = √Var(ȳ)

    (Cameron and Miller 2015, "A Practitioner's Guide to Cluster-Robust Inference", Eq. 11 for a regression on a
    constant, with the G/(G-1) small-sample factor.) With one item per cluster (G = n) it is the usual s/√n, s the
    sample standard deviation. None with fewer than two clusters (the variance between clusters is unknown).
    """
    sums, counts = cluster_sums(values, clusters)
    n, g = float(counts.sum()), len(sums)
    if g < 2:
        return None
    mean = sums.sum() / n
    residuals = sums - counts * mean
    return float(np.sqrt(g / (g - 1) * float((residuals**2).sum()) / n**2))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (Holm 1979), in their given order; None (no test) stays
    None and is not counted in the family. With the m p-values sorted ascending, p_(1) <= ... <= p_(m), the
    adjusted p_(i) is max over j <= i of min(1, (m - j + 1) p_(j)): it controls the family-wise error rate."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[index] = running
    return adjusted
