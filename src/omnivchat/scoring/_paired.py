"""Paired statistics: two sets of numbers measured on the same units (items, or subcategory pairs).

Used by the paired comparison of two runs (``omnivchat compare``: the units are items, each scored in both runs)
and by Table 3 of the paper (Appendix D.4: the units are the single-turn / multi-turn subcategory pairs of one
model). Every function says what is paired. The statistics come from ``scipy.stats`` (``ttest_rel``,
``bootstrap``, ``pearsonr``, ``spearmanr``), loaded on first use (scoring is imported by everything and scipy takes
seconds to import), except the sign flips of the permutation test, done in numpy for speed and checked against
``scipy.stats.permutation_test`` by the tests.

Undefined is never a number: a statistic that cannot be computed (too few pairs, a constant input, zero variance)
is None with a ``note`` that says why, in the words the report and ``compare`` print: ``n/a (n=2)``,
``n/a (every difference is 0)``. The sign-flip test is the exception that proves the rule: with every difference 0
each of its sign patterns reaches the observed mean, so its exact p is 1, a defined value (the t-test's t is 0/0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ALPHA = 0.05
"""The significance level of the verdicts (two-sided)."""
LEVEL = 0.95
"""The coverage of the bootstrap interval."""
SEED = 0
BOOTSTRAP_RESAMPLES = 10_000
PERMUTATION_RESAMPLES = 10_000
"""Sign patterns drawn by the permutation test (the Monte Carlo error of a p-value near 0.05 is then about 0.002);
with up to 13 non-zero differences all 2**n patterns (at most 8192) are enumerated instead: the test is exact."""
MIN_CORRELATION_PAIRS = 3
"""Fewer pairs than this give no correlation: two points always correlate at +-1, which says nothing."""


class TTest(BaseModel):
    """A paired t-test of the differences b − a (``scipy.stats.ttest_rel(b, a)``), two-sided."""

    model_config = ConfigDict(frozen=True)

    statistic: float | None = Field(description="t: mean difference over its standard error; None when undefined.")
    df: int | None = Field(description="Degrees of freedom, n − 1.")
    p: float | None = Field(description="Two-sided p-value; None when undefined.")
    n: int = Field(description="Pairs used.")
    note: str | None = Field(
        None, description="Why the test is undefined: 'n/a (n=1)', 'n/a (every difference is 0)'; None: it is not."
    )


class SignFlipTest(BaseModel):
    """The sign-flip permutation test of the mean difference (paired; as ``scipy.stats.permutation_test``)."""

    model_config = ConfigDict(frozen=True)

    statistic: float | None = Field(description="The observed mean difference b − a.")
    p: float | None = Field(description="Two-sided p-value; 1 when every difference is 0.")
    n: int = Field(description="Pairs used.")
    n_nonzero: int = Field(description="Pairs whose difference is not 0 (the only ones whose sign can flip).")
    exact: bool = Field(description="Every sign pattern was enumerated (else a seeded Monte Carlo sample).")
    resamples: int = Field(description="Sign patterns evaluated.")
    seed: int = SEED
    note: str | None = None


class Correlation(BaseModel):
    """A correlation across pairs (Pearson r or Spearman rho, ``scipy.stats``), with its two-sided p-value."""

    model_config = ConfigDict(frozen=True)

    method: Literal["pearson", "spearman"]
    value: float | None
    p: float | None = None
    n: int
    note: str | None = Field(
        None,
        description="Why there is no value or no p: 'n/a (n=2)', 'n/a (every x value is the same)', "
        "'p n/a (|r| = 1: ...)'.",
    )


class PairedComparison(BaseModel):
    """Two sets of scores on the same units compared: means, the mean difference b − a with its bootstrap
    interval, the paired t-test, the sign-flip permutation test and a verdict in words."""

    model_config = ConfigDict(frozen=True)

    n: int = Field(description="Pairs: units scored in both sets.")
    mean_a: float | None
    mean_b: float | None
    difference: float | None = Field(description="mean(b − a) = mean_b − mean_a over the pairs.")
    ci: tuple[float, float] | None = Field(description="Percentile-bootstrap interval of the mean difference.")
    ci_note: str | None = Field(
        None, description="Why there is no interval: 'n/a (n=1)', 'n/a (every difference is 0)'."
    )
    level: float = LEVEL
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = SEED
    t_test: TTest
    sign_flip: SignFlipTest
    alpha: float = ALPHA
    significant: bool = Field(description="The sign-flip test rejects 'no difference' at level alpha.")
    better: Literal["a", "b"] | None = Field(description="Which side is better, when significant.")
    verdict: str


def _check_pairs(a: Sequence[float], b: Sequence[float]) -> None:
    if len(a) != len(b):
        raise ValueError(f"{len(a)} values paired with {len(b)}")


def differences(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """b − a for each pair."""
    _check_pairs(a, b)
    return [float(y) - float(x) for x, y in zip(a, b, strict=True)]


def _all_equal(values: Sequence[float]) -> bool:
    """Every value the same, up to rounding (a near-zero spread makes t explode into a meaningless number)."""
    lo, hi = min(values), max(values)
    return hi - lo <= 1e-12 * max(1.0, abs(hi), abs(lo))


def _same_values(values: Sequence[float], what: str) -> str | None:
    """Why ``values`` (n >= 1) give no spread to estimate a standard error or an interval from: ``every <what> is
    0`` or ``every <what> is the same`` (up to rounding); None when they vary."""
    if not values or not _all_equal(values):
        return None
    return f"every {what} is 0" if all(float(v) == 0 for v in values) else f"every {what} is the same"


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> TTest:
    """Paired t-test of b − a: ``a[k]`` and ``b[k]`` are two measurements of the same unit k (an item in two runs;
    a single-turn subcategory mean and its multi-turn extension's mean for one model, Table 3). t = mean(d) /
    (sd(d) / sqrt(n)) with d = b − a, df = n − 1, two-sided (``scipy.stats.ttest_rel(b, a)``).

    Undefined (t and p None, with a note) with fewer than 2 pairs, or when every difference is the same (sd = 0):
    t is then 0/0 (every difference 0) or +-inf, and scipy's p (NaN, or 0) says nothing; the sign-flip test can
    still speak."""
    _check_pairs(a, b)
    n = len(a)
    if n < 2:
        return TTest(statistic=None, df=None, p=None, n=n, note=f"n/a (n={n})")
    d = differences(a, b)
    constant = _same_values(d, "difference")
    if constant is not None:
        return TTest(statistic=None, df=n - 1, p=None, n=n, note=f"n/a ({constant})")
    from scipy.stats import ttest_rel

    result = ttest_rel(list(map(float, b)), list(map(float, a)))
    return TTest(statistic=float(result.statistic), df=n - 1, p=float(result.pvalue), n=n)


def sign_flip_test(d: Sequence[float], *, resamples: int = PERMUTATION_RESAMPLES, seed: int = SEED) -> SignFlipTest:
    """Two-sided sign-flip permutation test that the mean of the paired differences ``d`` (b − a per unit) is 0.

    Under "no difference" each pair's two scores are exchangeable, so each difference is as likely to carry
    either sign; the p-value is the share of sign patterns whose mean difference is at least as far from 0 as
    the observed one. A zero difference is the same under either sign, so only the m non-zero ones are flipped
    (the zeros scale every pattern's mean alike): all 2**m patterns are enumerated while 2**m <= ``resamples``
    (exact), else ``resamples`` patterns are drawn with ``seed`` and the observed pattern is counted too, so the
    p-value is never 0 (as ``scipy.stats.permutation_test`` does; the tests check this function against it). The
    flips are done here in numpy, 1000 patterns at a time, several times faster than scipy's one-sample path on
    a full bench (``perf/perf_sign_flip.py`` prints the ratio). No difference at all gives p = 1."""
    n = len(d)
    nonzero = [float(x) for x in d if x != 0]
    m = len(nonzero)
    observed = sum(map(float, d)) / n if n else None
    if m == 0:
        note = "no pairs" if n == 0 else "every difference is 0"
        return SignFlipTest(
            statistic=observed, p=1.0 if n else None, n=n, n_nonzero=0, exact=True, resamples=1, seed=seed, note=note
        )
    import numpy as np

    x = np.asarray(nonzero)
    # Patterns whose |sum| equals the observed one up to rounding count as reaching it.
    target = abs(float(x.sum())) - 1e-9 * float(np.abs(x).sum())
    if 2**m <= resamples:
        every = 1 - 2 * ((np.arange(2**m)[:, None] >> np.arange(m)) & 1)  # row k: the bits of k as signs
        hits = int(np.count_nonzero(np.abs(every @ x) >= target))
        return SignFlipTest(statistic=observed, p=hits / 2**m, n=n, n_nonzero=m, exact=True, resamples=2**m, seed=seed)
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, resamples, 1000):
        signs = 2.0 * rng.integers(0, 2, size=(min(1000, resamples - start), m), dtype=np.int8) - 1.0
        hits += int(np.count_nonzero(np.abs(signs @ x) >= target))
    p = (hits + 1) / (resamples + 1)
    return SignFlipTest(statistic=observed, p=p, n=n, n_nonzero=m, exact=False, resamples=resamples, seed=seed)


def interval_note(values: Sequence[float], what: str = "difference") -> str | None:
    """Why :func:`mean_interval` gives no interval of the mean of ``values`` (``what`` names one value): ``n/a
    (n=1)`` below 2 values, ``n/a (every difference is 0)`` / ``n/a (every difference is the same)`` when they do
    not vary (every resample has the same mean: a zero-width interval would claim a precision the data cannot
    show); None when there is one."""
    if len(values) < 2:
        return f"n/a (n={len(values)})"
    constant = _same_values(values, what)
    return None if constant is None else f"n/a ({constant})"


def mean_interval(
    values: Sequence[float], *, level: float = LEVEL, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the mean of ``values``, seeded (``scipy.stats.bootstrap``). For paired
    differences, resampling the differences is resampling the pairs: the pairing is kept. None (and
    :func:`interval_note` says why) with fewer than 2 values or when every value is the same."""
    if interval_note(values) is not None:
        return None
    import numpy as np
    from scipy.stats import bootstrap

    result = bootstrap(
        (np.asarray(values, dtype=float),),
        np.mean,
        confidence_level=level,
        n_resamples=resamples,
        method="percentile",
        vectorized=True,
        batch=1000,
        rng=np.random.default_rng(seed),
    )
    low, high = result.confidence_interval
    return float(low), float(high)


PERFECT = 1 - 1e-12
"""|r| at or above this is +-1 up to rounding."""


def correlation(
    x: Sequence[float],
    y: Sequence[float],
    method: Literal["pearson", "spearman"],
    labels: tuple[str, str] = ("x value", "y value"),
) -> Correlation:
    """Pearson r or Spearman rho between paired values (``x[k]``, ``y[k]``), with its two-sided p-value
    (``scipy.stats.pearsonr`` / ``spearmanr``). Undefined cases are None with a note (``labels`` name one value of
    each side in it):

    - below :data:`MIN_CORRELATION_PAIRS` pairs: ``n/a (n=2)`` (two points always correlate at +-1);
    - a side that does not vary (every value, or every rank, the same): ``n/a (every x value is the same)``;
    - |r| = 1 (up to rounding) keeps the value, +-1, but not the p: scipy's p is then an artefact of rounding
      (1e-8, 1e-24, 0) rather than a probability; for Spearman the exact p would be 2/n! (no ties), far from it.
    """
    _check_pairs(x, y)
    n = len(x)
    if n < MIN_CORRELATION_PAIRS:
        return Correlation(method=method, value=None, n=n, note=f"n/a (n={n})")
    for values, label in zip((x, y), labels, strict=True):
        if _all_equal(list(map(float, values))):
            return Correlation(method=method, value=None, n=n, note=f"n/a (every {label} is the same)")
    from scipy.stats import pearsonr, spearmanr

    result = pearsonr(x, y) if method == "pearson" else spearmanr(x, y)
    value = max(-1.0, min(1.0, float(result.statistic)))  # rounding may step just past +-1
    if abs(value) >= PERFECT:
        name, what = ("r", "the points lie on a line") if method == "pearson" else ("rho", "the ranks match exactly")
        note = f"p n/a (|{name}| = 1: {what}, the test's p is a rounding artefact)"
        return Correlation(method=method, value=math.copysign(1.0, value), p=None, n=n, note=note)
    return Correlation(method=method, value=value, p=float(result.pvalue), n=n)


def _level(alpha: float) -> str:
    return f"{alpha * 100:g}%"


def verdict(
    difference: float | None, test: SignFlipTest, alpha: float = ALPHA
) -> tuple[bool, Literal["a", "b"] | None, str]:
    """(significant, better side, the verdict in words) from the sign-flip test of b − a at level ``alpha``."""
    if difference is None or test.p is None:
        return False, None, "nothing to compare: no item is scored in both runs"
    if test.p < alpha and difference != 0:
        better: Literal["a", "b"] = "b" if difference > 0 else "a"
        worse = "A" if better == "b" else "B"
        return True, better, f"{better.upper()} is better than {worse} at the {_level(alpha)} level"
    return False, None, f"no significant difference at the {_level(alpha)} level"


def compare_paired(
    a: Sequence[float],
    b: Sequence[float],
    *,
    alpha: float = ALPHA,
    level: float = LEVEL,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    permutation_resamples: int = PERMUTATION_RESAMPLES,
    seed: int = SEED,
) -> PairedComparison:
    """Compare paired scores: ``a[k]`` and ``b[k]`` are the scores of the same unit k (an item) in runs A and B.

    Reports the means over the pairs, the mean difference b − a with its seeded percentile-bootstrap interval
    (pairs resampled), the paired t-test and the sign-flip permutation test. The verdict follows the sign-flip
    test: it tests the very statistic reported (the mean difference) without assuming normal differences, which
    rubric scores (few distinct values, many ties at 0 and 1) and accuracies (0/1) are not; it is exact for up to
    13 non-zero differences (seeded Monte Carlo beyond). The t-test is reported beside it."""
    _check_pairs(a, b)
    n = len(a)
    d = differences(a, b)
    mean_a = sum(map(float, a)) / n if n else None
    mean_b = sum(map(float, b)) / n if n else None
    difference = sum(d) / n if n else None
    test = sign_flip_test(d, resamples=permutation_resamples, seed=seed)
    significant, better, words = verdict(difference, test, alpha)
    return PairedComparison(
        n=n,
        mean_a=mean_a,
        mean_b=mean_b,
        difference=difference,
        ci=mean_interval(d, level=level, resamples=bootstrap_resamples, seed=seed),
        ci_note=interval_note(d),
        level=level,
        bootstrap_resamples=bootstrap_resamples,
        seed=seed,
        t_test=paired_t_test(a, b),
        sign_flip=test,
        alpha=alpha,
        significant=significant,
        better=better,
        verdict=words,
    )
