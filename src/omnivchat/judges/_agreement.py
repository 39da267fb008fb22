"""Judge agreement and score variation: the statistics of the paper's Appendix D.3, Table 2.

Several judges grade one fixed set of replies against the same tiered rubrics. From their verdicts this module
computes, as pure functions with no I/O:

- per judge (the rows of Table 2): point ratios per ability category, the pooled ratio (earned / available
  non-gate points), the mean of the subcategory ratios, the tier-0 gate pass rate, and the bootstrap standard
  deviation of the pooled ratio;
- per pair of judges: criterion agreement, Cohen's kappa over the binary criterion decisions, the full-score
  match rate, and the Pearson and Spearman correlations of the two judges' subcategory profiles;
- over all judges: Krippendorff's alpha (nominal) and a two-way variance decomposition of the
  (subcategory, judge) point ratios into subcategory, judge and interaction shares;
- per judge graded twice: the repeat-run change of the pooled ratio and the share of replies scored differently.

Points (Appendix D.3). A reply's available points are its criteria outside tier 0; its earned points are the gated
rubric score of Eq. 1 times the available points, so a blocked criterion earns nothing even when met. "Pooled"
divides total earned by total available points (point-weighted, unlike the per-reply means of Table 1).

Replies used. A verdict with ``hits=None`` is unusable: the reply is unscored for that judge and is left out of
every figure of that judge. By default (``common_items=True``, as in the paper: "each row computed on the same
2,773 replies") every statistic uses only the replies that all selected judges scored. With
``common_items=False`` each judge row uses the replies that judge scored and each pair the replies both judges
scored. The subcategory table and the variance decomposition always use the replies all judges scored. Every
statistic reports how many replies it used.

Undefined is never a number: a statistic that cannot be computed (no reply, one judge, fewer than 3 subcategories
to correlate, values that do not vary) is None, and the ``notes`` of its row (or of the report) say why in the
words printed: ``{"kappa": "n/a (every decision of both judges is the same)"}``. A spread or SD *across* judges
needs two judges; a bootstrap SD needs two replies whose ratios differ (an SD of 0 would claim an exact ratio).

Libraries: Krippendorff's alpha comes from the ``krippendorff`` package (numpy only); Cohen's kappa is read off
the 2x2 table that ``scipy.stats.contingency.crosstab`` builds; the bootstrap is ``scipy.stats.bootstrap``;
correlations are ``scipy.stats.pearsonr`` and ``scipy.stats.spearmanr``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from rich.table import Table
from scipy import stats

from omnivchat.bench import resolve_subcategory
from omnivchat.judges._decisions import Judgment, _alpha, _kappa, cohen_kappa, krippendorff_alpha
from omnivchat.judges._human import HumanAgreement
from omnivchat.scoring import correlation, rubric_score

__all__ = [
    "TABLE2_CATEGORIES",
    "AgreementReport",
    "JudgeRow",
    "Judgment",
    "PairRow",
    "RepeatRow",
    "SubcategoryRow",
    "VarianceDecomposition",
    "agreement_report",
    "bootstrap_pooled_sd",
    "cohen_kappa",
    "is_agreement_file",
    "krippendorff_alpha",
    "points",
    "render_agreement",
    "variance_decomposition",
]

TABLE2_CATEGORIES: tuple[str, ...] = ("AH", "ER", "MSA", "MEA", "DSLP")
"""Ability-category columns of Table 2, in the paper's order."""


def points(tiers: Sequence[int], hits: Iterable[int]) -> tuple[int, int]:
    """(earned, available) points of one reply, Appendix D.3.

    available = number of criteria outside tier 0; earned = r(y) x available with r(y) the gated score of Eq. 1,
    i.e. the met criteria that the tier gates let through.
    """
    available = sum(1 for t in tiers if t > 0)
    return round(rubric_score(tiers, hits) * available), available


class JudgeRow(BaseModel):
    """One row of Table 2: a judge's point ratios on the replies it is computed on (Appendix D.3).

    Ratios are None when there is nothing to divide (no reply used, or no available point).
    """

    model_config = ConfigDict(frozen=True)

    judge: str
    n_items: int
    """Replies this row is computed on."""
    n_scored: int
    """Replies this judge scored (usable verdict, main run)."""
    n_unscored: int
    """Replies whose verdict from this judge was unusable (``hits=None``)."""
    n_missing: int
    """Replies some selected judge graded that this judge has no verdict for."""
    categories: dict[str, float | None]
    """Earned / available points within each ability category (Table 2 columns AH, ER, MSA, MEA, DSLP)."""
    subcategories: dict[str, float]
    """Earned / available points within each subcategory present (short codes)."""
    pooled: float | None
    """Total earned / total available points (Table 2 column Pooled)."""
    mean: float | None
    """Mean over subcategories of the subcategory ratios (Table 2 column Mean)."""
    gate: float | None
    """Fraction of replies meeting every tier-0 criterion (Table 2 column Gate)."""
    earned: int
    available: int
    bootstrap_sd: float | None
    """Standard deviation of the pooled ratio over bootstrap resamples of the replies."""
    notes: dict[str, str] = Field(default_factory=dict)
    """Field name -> why that statistic is None, as printed: ``n/a (n=1)``."""


class PairRow(BaseModel):
    """Agreement of two judges on the replies both are compared on (Appendix D.3)."""

    model_config = ConfigDict(frozen=True)

    judge_a: str
    judge_b: str
    n_items: int
    """Replies compared."""
    n_decisions: int
    """(reply, criterion) decisions compared, tier-0 criteria included."""
    criterion_agreement: float | None
    """Fraction of (reply, criterion) decisions on which the two judges agree."""
    kappa: float | None
    """Cohen's kappa over the binary criterion decisions; None when chance agreement is 1 (undefined)."""
    full_score_match: float | None
    """Fraction of replies whose gated score (Eq. 1) is identical for both judges."""
    n_subcategories: int
    """Subcategories in the two profiles that are correlated."""
    pearson: float | None
    """Pearson correlation of the two judges' subcategory ratios; None below 2 subcategories or for a flat profile."""
    spearman: float | None
    """Spearman correlation of the two judges' subcategory ratios; None as for Pearson."""
    notes: dict[str, str] = Field(default_factory=dict)
    """Field name -> why that statistic is None, as printed: ``n/a (n=2)``."""


class RepeatRow(BaseModel):
    """Variation between a judge's main run (repeat 0) and a repeated grading of the same replies."""

    model_config = ConfigDict(frozen=True)

    judge: str
    repeat: int
    n_items: int
    """Replies scored in both runs."""
    pooled_main: float | None
    pooled_repeat: float | None
    pooled_change: float | None
    """pooled_repeat - pooled_main."""
    score_differs: float | None
    """Fraction of replies whose gated score differs between the runs."""
    criterion_agreement: float | None
    kappa: float | None
    notes: dict[str, str] = Field(default_factory=dict)
    """Field name -> why that statistic is None."""


class SubcategoryRow(BaseModel):
    """Point ratio per judge within one subcategory, on the replies all judges scored."""

    model_config = ConfigDict(frozen=True)

    subcategory: str
    category: str
    n_items: int
    ratios: dict[str, float | None]
    spread: float | None
    """Largest minus smallest ratio across judges; None with fewer than two judges' ratios."""


class VarianceDecomposition(BaseModel):
    """Two-way decomposition of the (subcategory, judge) point ratios (Appendix D.3: 95.7% / 1.1% / 3.3%).

    Shares of the total sum of squares; they sum to 1. See :func:`variance_decomposition`.
    """

    model_config = ConfigDict(frozen=True)

    subcategory: float
    judge: float
    interaction: float
    n_subcategories: int
    n_judges: int
    total_sum_of_squares: float


class AgreementReport(BaseModel):
    """Everything of Table 2 and the surrounding text of Appendix D.3 for one set of judges."""

    model_config = ConfigDict(frozen=True)

    judges: list[str]
    common_items: bool
    """True: every statistic on the replies all judges scored (the paper). False: each on its own judges' replies."""
    n_items: int
    """Distinct replies any selected judge graded (main run)."""
    n_common: int
    """Replies every selected judge scored."""
    rows: list[JudgeRow]
    pairs: list[PairRow]
    alpha: float | None
    """Krippendorff's alpha (nominal) over all judges' criterion decisions; None when undefined."""
    alpha_n_items: int
    alpha_n_units: int
    """(reply, criterion) units alpha is computed on."""
    subcategories: list[SubcategoryRow]
    decomposition: VarianceDecomposition | None
    repeats: list[RepeatRow]
    pooled_spread: float | None
    """Largest minus smallest pooled ratio across judges; None with fewer than two pooled ratios."""
    pooled_sd: float | None
    """Standard deviation (ddof=1) of the judges' pooled ratios."""
    mean_spread: float | None
    """Largest minus smallest Mean across judges."""
    category_spreads: dict[str, float | None]
    n_resamples: int
    seed: int
    notes: dict[str, str] = Field(default_factory=dict)
    """Field name (``alpha``, ``decomposition``, ``pooled_sd``...) -> why that statistic is None, as printed."""
    human: HumanAgreement | None = None
    """The same judges against people's verdicts (``judges agree --human``), when a labels file was given."""
    store_state: str | None = None
    """The run store's state when the study was made (``judges agree``): a report on a run judged or run further
    since leaves the study out rather than show figures of replies that are not the run's any more."""


# --------------------------------------------------------------------------------------------------------------
# Single statistics


def bootstrap_pooled_sd(
    earned: Sequence[float], available: Sequence[float], *, n_resamples: int = 1000, seed: int = 0
) -> float | None:
    """Bootstrap standard deviation of the pooled ratio sum(earned) / sum(available) (Appendix D.3).

    Replies are resampled with replacement (earned and available together) ``n_resamples`` times by
    ``scipy.stats.bootstrap`` with a ``numpy.random.Generator`` seeded by ``seed``; the result is the standard
    deviation (ddof=1) of the resampled pooled ratios. Deterministic for a given seed. None with no reply, one
    reply, or when every reply has the same ratio: every resample then has the same pooled ratio, and an SD of 0
    would claim a precision the replies cannot show (:func:`_bootstrap_sd` says which).
    """
    return _bootstrap_sd(earned, available, n_resamples=n_resamples, seed=seed)[0]


def _bootstrap_sd(
    earned: Sequence[float], available: Sequence[float], *, n_resamples: int, seed: int
) -> tuple[float | None, str | None]:
    """(the bootstrap SD of the pooled ratio, None) or (None, why there is none)."""
    e = np.asarray(earned, dtype=float)
    a = np.asarray(available, dtype=float)
    if e.shape != a.shape:
        raise ValueError(f"earned and available differ in length: {e.shape} and {a.shape}")
    if e.size == 0:
        return None, "n/a (no reply)"
    if (a <= 0).any():
        raise ValueError("available points must be positive")
    ratios = e / a
    if e.size == 1:
        return None, "n/a (n=1)"
    if np.all(ratios == ratios[0]):
        return None, "n/a (every reply has the same ratio)"

    def pooled(e_: np.ndarray, a_: np.ndarray, axis: int = -1) -> np.ndarray:
        return cast("np.ndarray", e_.sum(axis=axis) / a_.sum(axis=axis))

    result = stats.bootstrap(
        (e, a),
        pooled,
        n_resamples=n_resamples,
        paired=True,
        vectorized=True,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(result.standard_error), None


def variance_decomposition(ratios: Sequence[Sequence[float]]) -> VarianceDecomposition | None:
    """Two-way decomposition of a subcategories x judges matrix of point ratios (Appendix D.3).

    With x_sj the ratio of subcategory s (S rows) under judge j (J columns), grand mean m, row means r_s and
    column means c_j (two-way layout without replication, one value per cell):

        SS_subcategory = J * sum_s (r_s - m)^2
        SS_judge       = S * sum_j (c_j - m)^2
        SS_interaction = sum_sj (x_sj - r_s - c_j + m)^2      (the residual)
        SS_total       = sum_sj (x_sj - m)^2 = SS_subcategory + SS_judge + SS_interaction

    Each share is SS / SS_total, so the three sum to 1. Returns None when the matrix has fewer than two rows or two
    columns (one subcategory or one judge: nothing to tell apart) or SS_total is 0; see :func:`_decomposition`.
    """
    return _decomposition(ratios)[0]


def _decomposition(ratios: Sequence[Sequence[float]]) -> tuple[VarianceDecomposition | None, str | None]:
    """(the decomposition, None) or (None, why there is none)."""
    x = np.asarray(ratios, dtype=float)
    if x.ndim != 2 or x.size == 0:
        return None, "n/a (no subcategory)"
    if np.isnan(x).any():
        raise ValueError("variance decomposition needs a value in every (subcategory, judge) cell")
    s, j = x.shape
    if s < 2 or j < 2:
        return None, "n/a (one subcategory)" if s < 2 else "n/a (one judge)"
    m = x.mean()
    r = x.mean(axis=1, keepdims=True)
    c = x.mean(axis=0, keepdims=True)
    ss_sub = float(j * ((r - m) ** 2).sum())
    ss_judge = float(s * ((c - m) ** 2).sum())
    ss_int = float(((x - r - c + m) ** 2).sum())
    total = ss_sub + ss_judge + ss_int
    if total <= 0.0:
        return None, "n/a (every ratio is the same)"
    decomposition = VarianceDecomposition(
        subcategory=ss_sub / total,
        judge=ss_judge / total,
        interaction=ss_int / total,
        n_subcategories=s,
        n_judges=j,
        total_sum_of_squares=total,
    )
    return decomposition, None


NO_REPLY = "n/a (no reply)"
TWICE = "n/a (no reply scored in both runs)"


def _notes(**values: tuple[object, str | None]) -> dict[str, str]:
    """Field name -> its note, for every statistic given as (value, note) whose value is None."""
    return {name: note or "n/a" for name, (value, note) in values.items() if value is None}


# --------------------------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class _Scored:
    """One usable verdict, reduced to what the statistics need."""

    subcategory: str
    category: str
    earned: int
    available: int
    gate: bool
    decisions: tuple[int, ...]


def _scored(j: Judgment) -> _Scored:
    assert j.hits is not None
    earned, available = points(j.tiers, j.hits)
    sub = resolve_subcategory(j.subcategory)
    return _Scored(
        subcategory=sub.code,
        category=sub.category,
        earned=earned,
        available=available,
        gate=all(n in j.hits for n, t in enumerate(j.tiers, start=1) if t == 0),
        decisions=tuple(int(n in j.hits) for n in range(1, len(j.tiers) + 1)),
    )


def _ratio(earned: int, available: int) -> float | None:
    return earned / available if available else None


def _grouped_ratios(scored: Iterable[_Scored], key: str) -> dict[str, float]:
    earned: dict[str, int] = defaultdict(int)
    available: dict[str, int] = defaultdict(int)
    for s in scored:
        earned[getattr(s, key)] += s.earned
        available[getattr(s, key)] += s.available
    return {k: earned[k] / available[k] for k in sorted(earned)}


def _judge_row(
    judge: str,
    scored: Mapping[str, _Scored],
    items: Sequence[str],
    *,
    n_unscored: int,
    n_missing: int,
    n_resamples: int,
    seed: int,
) -> JudgeRow:
    used = [scored[i] for i in items]
    categories = _grouped_ratios(used, "category")
    subcategories = _grouped_ratios(used, "subcategory")
    earned = sum(s.earned for s in used)
    available = sum(s.available for s in used)
    pooled = _ratio(earned, available)
    mean = math.fsum(subcategories.values()) / len(subcategories) if subcategories else None
    gate = sum(s.gate for s in used) / len(used) if used else None
    boot = _bootstrap_sd([s.earned for s in used], [s.available for s in used], n_resamples=n_resamples, seed=seed)
    return JudgeRow(
        judge=judge,
        n_items=len(used),
        n_scored=len(scored),
        n_unscored=n_unscored,
        n_missing=n_missing,
        categories={c: categories.get(c) for c in TABLE2_CATEGORIES},
        subcategories=subcategories,
        pooled=pooled,
        mean=mean,
        gate=gate,
        earned=earned,
        available=available,
        bootstrap_sd=boot[0],
        notes=_notes(pooled=(pooled, NO_REPLY), mean=(mean, NO_REPLY), gate=(gate, NO_REPLY), bootstrap_sd=boot),
    )


def _decision_agreement(
    a: Sequence[_Scored], b: Sequence[_Scored]
) -> tuple[int, float | None, tuple[float | None, str | None]]:
    """(decisions compared, the share agreed on, (kappa, why none))."""
    da = [d for s in a for d in s.decisions]
    db = [d for s in b for d in s.decisions]
    agreement = sum(x == y for x, y in zip(da, db, strict=True)) / len(da) if da else None
    return len(da), agreement, _kappa(da, db)


def _pair_row(
    judge_a: str, judge_b: str, sa: Mapping[str, _Scored], sb: Mapping[str, _Scored], items: Sequence[str]
) -> PairRow:
    a = [sa[i] for i in items]
    b = [sb[i] for i in items]
    n_decisions, agreement, kappa = _decision_agreement(a, b)
    profile_a = _grouped_ratios(a, "subcategory")
    profile_b = _grouped_ratios(b, "subcategory")
    codes = sorted(profile_a)
    xa = [profile_a[c] for c in codes]
    xb = [profile_b[c] for c in codes]
    # scoring.correlation: None below 3 subcategories (two points always correlate at +-1) or for a flat profile
    labels = (f"subcategory ratio of {judge_a}", f"subcategory ratio of {judge_b}")
    pearson, spearman = (correlation(xa, xb, method, labels) for method in ("pearson", "spearman"))
    full = sum(x.earned == y.earned for x, y in zip(a, b, strict=True)) / len(items) if items else None
    return PairRow(
        judge_a=judge_a,
        judge_b=judge_b,
        n_items=len(items),
        n_decisions=n_decisions,
        criterion_agreement=agreement,
        kappa=kappa[0],
        full_score_match=full,
        n_subcategories=len(codes),
        pearson=pearson.value,
        spearman=spearman.value,
        notes=_notes(
            criterion_agreement=(agreement, NO_REPLY),
            kappa=kappa,
            full_score_match=(full, NO_REPLY),
            pearson=(pearson.value, pearson.note),
            spearman=(spearman.value, spearman.note),
        ),
    )


def _spread(values: Iterable[float | None]) -> float | None:
    """Largest minus smallest of the values present; None below two (a spread of one judge says nothing)."""
    present = [v for v in values if v is not None]
    return max(present) - min(present) if len(present) >= 2 else None


def is_agreement_file(path: Path) -> bool:
    """Whether ``path`` holds an agreement report (what ``judges agree`` writes), so that replacing it loses
    nothing the tool did not make."""
    try:
        AgreementReport.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return False
    return True


def agreement_report(
    judgments: Iterable[Judgment],
    judges: Sequence[str] | None = None,
    *,
    common_items: bool = True,
    n_resamples: int = 1000,
    seed: int = 0,
) -> AgreementReport:
    """Table 2 and the agreement statistics of Appendix D.3 for a set of judges grading the same replies.

    ``judgments`` holds one :class:`Judgment` per (reply, judge, repeat). ``judges`` selects and orders the
    judges (default: every judge in order of first appearance); each must have main-run (repeat 0) verdicts.
    Main-run verdicts feed every statistic but the repeat rows, which compare repeat 0 with each later repeat of
    the same judge on the replies scored in both runs.

    With ``common_items`` (the paper's setting) judge rows, pairs and alpha use only the replies every selected
    judge scored; without it, judge rows use each judge's scored replies, pairs the replies both judges scored,
    and alpha every reply with at least two usable verdicts (missing decisions are allowed by alpha). The
    subcategory rows and the variance decomposition always use the replies every judge scored. Bootstrap
    resamples use the same seed for every judge (so equal reply sets get the same resamples).

    Raises ValueError for a selected judge with no main-run verdict, a duplicate (reply, judge, repeat), or a
    reply whose subcategory or tiers differ between verdicts.
    """
    all_judgments = list(judgments)
    items: dict[str, tuple[str, tuple[int, ...]]] = {}
    runs: dict[tuple[str, int], dict[str, Judgment]] = defaultdict(dict)
    order: list[str] = []
    for j in all_judgments:
        known = items.setdefault(j.item_id, (j.subcategory, j.tiers))
        if known != (j.subcategory, j.tiers):
            raise ValueError(f"reply {j.item_id!r} has differing subcategory or tiers between verdicts")
        run = runs[(j.judge, j.repeat)]
        if j.item_id in run:
            raise ValueError(f"duplicate verdict for reply {j.item_id!r}, judge {j.judge!r}, repeat {j.repeat}")
        run[j.item_id] = j
        if j.judge not in order:
            order.append(j.judge)

    selected = list(order if judges is None else judges)
    if not selected:
        raise ValueError("no judge to compare")
    if len(set(selected)) != len(selected):
        raise ValueError(f"judges repeated in {selected}")
    for judge in selected:
        if not runs.get((judge, 0)):
            raise ValueError(f"judge {judge!r} has no main-run (repeat 0) verdict")

    main = {judge: runs[(judge, 0)] for judge in selected}
    scored = {judge: {i: _scored(j) for i, j in run.items() if j.hits is not None} for judge, run in main.items()}
    universe = sorted({i for run in main.values() for i in run})
    common = [i for i in universe if all(i in scored[judge] for judge in selected)]

    rows = [
        _judge_row(
            judge,
            scored[judge],
            common if common_items else sorted(scored[judge]),
            n_unscored=sum(1 for j in main[judge].values() if j.hits is None),
            n_missing=len(universe) - len(main[judge]),
            n_resamples=n_resamples,
            seed=seed,
        )
        for judge in selected
    ]

    pairs = []
    for a, b in combinations(selected, 2):
        pair_items = common if common_items else [i for i in universe if i in scored[a] and i in scored[b]]
        pairs.append(_pair_row(a, b, scored[a], scored[b], pair_items))

    # Krippendorff's alpha: judges x (reply, criterion) units.
    alpha_items = (
        common if common_items else [i for i in universe if sum(i in scored[judge] for judge in selected) >= 2]
    )
    matrix = [
        [
            float(d)
            for i in alpha_items
            for d in (scored[judge][i].decisions if i in scored[judge] else [math.nan] * len(items[i][1]))
        ]
        for judge in selected
    ]
    alpha = _alpha(matrix)

    # Subcategory profiles on the common replies, and the two-way decomposition.
    profiles = {judge: _grouped_ratios([scored[judge][i] for i in common], "subcategory") for judge in selected}
    codes = sorted({resolve_subcategory(items[i][0]).code for i in common})
    sub_rows = []
    for code in codes:
        ratios = {judge: profiles[judge].get(code) for judge in selected}
        sub_rows.append(
            SubcategoryRow(
                subcategory=code,
                category=resolve_subcategory(code).category,
                n_items=sum(1 for i in common if resolve_subcategory(items[i][0]).code == code),
                ratios=ratios,
                spread=_spread(ratios.values()),
            )
        )
    decomposition = _decomposition([[profiles[judge][c] for judge in selected] for c in codes])

    repeats = []
    for judge in selected:
        for repeat in sorted(r for (name, r) in runs if name == judge and r > 0):
            again = {i: _scored(j) for i, j in runs[(judge, repeat)].items() if j.hits is not None}
            both = [i for i in universe if i in scored[judge] and i in again]
            first = [scored[judge][i] for i in both]
            second = [again[i] for i in both]
            pooled_main = _ratio(sum(s.earned for s in first), sum(s.available for s in first))
            pooled_repeat = _ratio(sum(s.earned for s in second), sum(s.available for s in second))
            _, agreement, kappa = _decision_agreement(first, second)
            change = None if pooled_main is None or pooled_repeat is None else pooled_repeat - pooled_main
            changed = sum(x.earned != y.earned for x, y in zip(first, second, strict=True))
            differs = changed / len(both) if both else None
            repeats.append(
                RepeatRow(
                    judge=judge,
                    repeat=repeat,
                    n_items=len(both),
                    pooled_main=pooled_main,
                    pooled_repeat=pooled_repeat,
                    pooled_change=change,
                    score_differs=differs,
                    criterion_agreement=agreement,
                    kappa=kappa[0],
                    notes=_notes(
                        pooled_main=(pooled_main, TWICE),
                        pooled_repeat=(pooled_repeat, TWICE),
                        pooled_change=(change, TWICE),
                        score_differs=(differs, TWICE),
                        criterion_agreement=(agreement, TWICE),
                        kappa=kappa,
                    ),
                )
            )

    pooled_values = [r.pooled for r in rows if r.pooled is not None]
    pooled_spread, mean_spread = _spread(pooled_values), _spread(r.mean for r in rows)
    pooled_sd = float(np.std(pooled_values, ddof=1)) if len(pooled_values) >= 2 else None
    fewer = "n/a (fewer than two judges with a ratio)"
    return AgreementReport(
        judges=selected,
        common_items=common_items,
        n_items=len(universe),
        n_common=len(common),
        rows=rows,
        pairs=pairs,
        alpha=alpha[0],
        alpha_n_items=len(alpha_items),
        alpha_n_units=len(matrix[0]) if matrix else 0,
        subcategories=sub_rows,
        decomposition=decomposition[0],
        repeats=repeats,
        pooled_spread=pooled_spread,
        pooled_sd=pooled_sd,
        mean_spread=mean_spread,
        category_spreads={c: _spread(r.categories[c] for r in rows) for c in TABLE2_CATEGORIES},
        n_resamples=n_resamples,
        seed=seed,
        notes=_notes(
            alpha=alpha,
            decomposition=decomposition,
            pooled_spread=(pooled_spread, fewer),
            pooled_sd=(pooled_sd, fewer),
            mean_spread=(mean_spread, fewer),
        ),
    )


# --------------------------------------------------------------------------------------------------------------
# Rendering


def _fmt(value: float | None, digits: int = 3, note: str | None = None) -> str:
    """A number, or where it is undefined the reason ("n/a (n=1)"), or "—" where none is recorded."""
    return (note or "—") if value is None else f"{value:.{digits}f}"


def _pct(value: float | None, note: str | None = None) -> str:
    return (note or "—") if value is None else f"{100 * value:.1f}%"


def render_agreement(report: AgreementReport) -> list[Table]:
    """Rich tables for a report: Table 2 (judge rows AH ER MSA MEA DSLP Pooled Mean Gate, then the bootstrap SD),
    the pair table, the repeat-run table when a judge graded twice, and the all-judge summary (Appendix D.3)."""
    scope = "replies every judge scored" if report.common_items else "replies each judge scored"
    judges = Table(
        title="Judge agreement (Appendix D.3, Table 2)",
        caption=f"{report.n_common} of {report.n_items} replies scored by every judge; rows on {scope}. "
        "Pooled = earned / available non-gate points; Mean = mean of subcategory ratios; Gate = tier-0 pass rate.",
    )
    judges.add_column("Judge")
    for column in (*TABLE2_CATEGORIES, "Pooled", "Mean", "Gate", "Boot SD", "n"):
        judges.add_column(column, justify="right")
    for row in report.rows:
        judges.add_row(
            row.judge,
            *(_fmt(row.categories[c]) for c in TABLE2_CATEGORIES),
            _fmt(row.pooled, note=row.notes.get("pooled")),
            _fmt(row.mean, note=row.notes.get("mean")),
            _pct(row.gate, row.notes.get("gate")),
            _fmt(row.bootstrap_sd, 4, row.notes.get("bootstrap_sd")),
            str(row.n_items),
        )

    pairs = Table(title="Judge pairs", caption="Agree: criterion decisions; κ: Cohen's kappa; Full: same gated score.")
    pairs.add_column("Judge A")
    pairs.add_column("Judge B")
    for column in ("Agree", "κ", "Full", "Pearson", "Spearman", "n"):
        pairs.add_column(column, justify="right")
    for p in report.pairs:
        pairs.add_row(
            p.judge_a,
            p.judge_b,
            _pct(p.criterion_agreement, p.notes.get("criterion_agreement")),
            _fmt(p.kappa, note=p.notes.get("kappa")),
            _pct(p.full_score_match, p.notes.get("full_score_match")),
            _fmt(p.pearson, note=p.notes.get("pearson")),
            _fmt(p.spearman, note=p.notes.get("spearman")),
            str(p.n_items),
        )
    tables = [judges, pairs] if report.pairs else [judges]  # one judge (with --human): no pair to show

    if report.repeats:
        repeats = Table(title="Repeat runs", caption="Change = repeat pooled - main pooled, on replies scored twice.")
        repeats.add_column("Judge")
        for column in ("Repeat", "Main", "Again", "Change", "Differs", "Agree", "κ", "n"):
            repeats.add_column(column, justify="right")
        for r in report.repeats:
            repeats.add_row(
                r.judge,
                str(r.repeat),
                _fmt(r.pooled_main, note=r.notes.get("pooled_main")),
                _fmt(r.pooled_repeat, note=r.notes.get("pooled_repeat")),
                r.notes.get("pooled_change", "—") if r.pooled_change is None else f"{r.pooled_change:+.4f}",
                _pct(r.score_differs, r.notes.get("score_differs")),
                _pct(r.criterion_agreement, r.notes.get("criterion_agreement")),
                _fmt(r.kappa, note=r.notes.get("kappa")),
                str(r.n_items),
            )
        tables.append(repeats)

    summary = Table(title="All judges")
    summary.add_column("Statistic")
    summary.add_column("Value", justify="right")
    notes = report.notes
    summary.add_row(
        f"Krippendorff's α (nominal, {report.alpha_n_units} criterion decisions)",
        _fmt(report.alpha, note=notes.get("alpha")),
    )
    spread = _fmt(report.pooled_spread, note=notes.get("pooled_spread"))
    sd = _fmt(report.pooled_sd, note=notes.get("pooled_sd"))
    summary.add_row("Pooled spread / SD across judges", spread if spread == sd else f"{spread} / {sd}")
    summary.add_row("Mean spread", _fmt(report.mean_spread, note=notes.get("mean_spread")))
    for code in TABLE2_CATEGORIES:
        if report.category_spreads.get(code) is not None:
            summary.add_row(f"{code} spread", _fmt(report.category_spreads[code]))
    d = report.decomposition
    summary.add_row(
        "Variance: subcategory / judge / interaction" + (f" ({d.n_subcategories} subcategories)" if d else ""),
        notes.get("decomposition", "—")
        if d is None
        else f"{_pct(d.subcategory)} / {_pct(d.judge)} / {_pct(d.interaction)}",
    )
    tables.append(summary)
    return tables
