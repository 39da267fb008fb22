"""Table 3 of the paper (Appendix D.4): each single-turn subcategory against its multi-turn extension.

For one model (one scored run), each extension pair of ``bench.MULTI_TURN_EXTENSIONS`` (ICC→MDCC, SVMR→MVMS,
AR and DR→MRR, SPSD→MIST, STIC→MTIC) gets the pooled mean gated rubric score (Eq. 1, 2) of its single-turn
items (AR and DR pooled together, as the paper's "AR And DR" row with 600 combined instances) and of its
multi-turn items, the gap Multi − Single, and standard errors. Across the pairs with both means: the mean gap, a
paired t-test (the paper's t(4) over five pairs) and the Pearson and Spearman correlations of the single-turn
means with the multi-turn means.

How the paper's text is read here: the two sides of a pair are sampled independently (D.4: "its instances are
sampled independently"), so the standard error of a gap is sqrt(SE_single² + SE_multi²), each SE that of a
pooled mean (sample SD / sqrt(n), the items as independent draws). A gap is "within its standard error" when
|gap| <= SE(gap) (D.4: "Four OmniVChat-RL gaps lie within their estimated standard errors").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from omnivchat.bench import MULTI_TURN_EXTENSIONS, resolve_subcategory
from omnivchat.scoring._paired import Correlation, TTest, _same_values, correlation, paired_t_test


class SideMean(BaseModel):
    """One side of a pair: the pooled mean of its scored items and the standard error of that mean."""

    model_config = ConfigDict(frozen=True)

    subcategories: tuple[str, ...]
    n_items: int = Field(description="Items of these subcategories in the run (scored or not).")
    n_scored: int = Field(description="Items with a score: the mean's n.")
    mean: float | None = Field(description="PooledMean (Eq. 2) over the scored items; None when none is scored.")
    se: float | None = Field(
        description="Standard error of the mean: sample SD / sqrt(n); None for n < 2 or when every score is the same."
    )
    note: str | None = Field(
        None,
        description="Why mean or SE is missing, as printed: 'n/a (no items)', 'n/a (0 of 3 scored)', 'n/a (n=1)', "
        "'n/a (every score is the same)'.",
    )


class ExtensionRow(BaseModel):
    """One row of Table 3: a single-turn subcategory (or AR and DR) and its multi-turn extension."""

    model_config = ConfigDict(frozen=True)

    single: SideMean
    multi: SideMean
    gap: float | None = Field(description="Multi − Single; None when either mean is missing.")
    gap_se: float | None = Field(description="sqrt(SE_single² + SE_multi²): the two sides are independent samples.")
    within_se: bool | None = Field(description="|gap| <= SE(gap).")
    note: str | None = Field(
        None, description="Why there is no gap (or no SE of it), as printed: 'n/a (multi-turn: n=1)'."
    )


class Table3(BaseModel):
    """Table 3 for one model: a row per extension pair, and the statistics across the pairs with both means."""

    model_config = ConfigDict(frozen=True)

    rows: list[ExtensionRow]
    n_pairs: int = Field(description="Pairs with both means: the n of the statistics below.")
    mean_gap: float | None = Field(description="Mean of the gaps of those pairs (the paper's 'Mean Gap' row).")
    t_test: TTest = Field(description="Paired t-test over the pairs: multi-turn mean − single-turn mean.")
    pearson: Correlation
    spearman: Correlation


LABELS = ("single-turn mean", "multi-turn mean")
"""How a correlation's note names one value of each side: ``n/a (every multi-turn mean is the same)``."""


def _reason(note: str | None) -> str:
    """The reason inside a note "n/a (reason)"."""
    text = note or "undefined"
    return text[len("n/a (") : -1] if text.startswith("n/a (") and text.endswith(")") else text


def side_mean(subcategories: tuple[str, ...], scores: list[float | None]) -> SideMean:
    """The pooled mean (Eq. 2) of the scored values among ``scores`` (None: an unscored item, counted, never
    averaged as 0) and its standard error: sample SD (ddof 1) / sqrt(n), the SE of a mean of n independent items.
    No SE below 2 scored items, nor when every score is the same: an SE of 0 would claim an exact mean."""
    values = [float(s) for s in scores if s is not None]
    n, n_items = len(values), len(scores)

    def side(mean: float | None, se: float | None, note: str | None) -> SideMean:
        return SideMean(subcategories=subcategories, n_items=n_items, n_scored=n, mean=mean, se=se, note=note)

    if n == 0:
        return side(None, None, "n/a (no items)" if not scores else f"n/a (0 of {n_items} scored)")
    mean = math.fsum(values) / n
    if n < 2:
        return side(mean, None, "n/a (n=1)")
    constant = _same_values(values, "score")
    if constant is not None:
        return side(mean, None, f"n/a ({constant})")
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    return side(mean, sd / math.sqrt(n), None)


def extension_row(single: SideMean, multi: SideMean) -> ExtensionRow:
    """The gap Multi − Single and its standard error sqrt(SE_single² + SE_multi²) (independent samples). The note
    of a missing gap or SE names the side and its reason: ``n/a (single-turn: no items)``."""
    sides = (("single-turn", single), ("multi-turn", multi))
    if single.mean is None or multi.mean is None:
        missing = [f"{name}: {_reason(m.note)}" for name, m in sides if m.mean is None]
        note = "n/a (" + "; ".join(missing) + ")"
        return ExtensionRow(single=single, multi=multi, gap=None, gap_se=None, within_se=None, note=note)
    gap = multi.mean - single.mean
    if single.se is None or multi.se is None:
        missing = [f"{name}: {_reason(m.note)}" for name, m in sides if m.se is None]
        note = "n/a (" + "; ".join(missing) + ")"
        return ExtensionRow(single=single, multi=multi, gap=gap, gap_se=None, within_se=None, note=note)
    gap_se = math.hypot(single.se, multi.se)
    return ExtensionRow(single=single, multi=multi, gap=gap, gap_se=gap_se, within_se=abs(gap) <= gap_se)


def table3(
    records: Iterable[tuple[str, float | None]],
    extensions: Mapping[str, tuple[str, ...]] = MULTI_TURN_EXTENSIONS,
) -> Table3:
    """Table 3 (Appendix D.4) for one model from its items' (subcategory, score) records, score None for an
    unscored item. Give the synthetic items only, as Table 1's Single / Multi / Mean do.

    Rows follow ``extensions`` (multi-turn code -> the single-turn codes it extends). What is paired in the
    statistics across rows: for this one model, each pair is (single-turn mean, multi-turn extension mean) of one
    row; rows with a missing mean are left out of them (and say so in their note). The t-test is of multi − single
    with df = pairs − 1 (``n/a (every difference is 0)`` when the gaps do not vary); the correlations need at least
    3 pairs (else ``n/a (n=2)``) and means that vary."""
    groups: dict[str, list[float | None]] = defaultdict(list)
    for subcategory, score in records:
        groups[resolve_subcategory(subcategory).code].append(score)
    rows = []
    for multi, singles in extensions.items():
        single_scores = [s for code in singles for s in groups.get(code, [])]
        rows.append(extension_row(side_mean(tuple(singles), single_scores), side_mean((multi,), groups.get(multi, []))))
    both = [r for r in rows if r.gap is not None]
    single_means = [r.single.mean for r in both if r.single.mean is not None]
    multi_means = [r.multi.mean for r in both if r.multi.mean is not None]
    return Table3(
        rows=rows,
        n_pairs=len(both),
        mean_gap=math.fsum(r.gap for r in both if r.gap is not None) / len(both) if both else None,
        t_test=paired_t_test(single_means, multi_means),
        pearson=correlation(single_means, multi_means, "pearson", LABELS),
        spearman=correlation(single_means, multi_means, "spearman", LABELS),
    )
