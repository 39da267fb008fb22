"""Judge agreement statistics (Appendix D.3, Table 2) against values worked out by hand on small tables."""

from __future__ import annotations

import io
import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from omnivchat.judges._agreement import (
    TABLE2_CATEGORIES,
    AgreementReport,
    Judgment,
    agreement_report,
    bootstrap_pooled_sd,
    cohen_kappa,
    krippendorff_alpha,
    points,
    render_agreement,
    variance_decomposition,
)
from omnivchat.scoring import rubric_score

# --------------------------------------------------------------------------------------------------------------
# The main table: 3 judges x 6 replies, two subcategories.
#   SVMR (DSLP) replies s1..s3, tiers (0, 1, 2): criterion 1 is the gate, 2 points available.
#   AOR  (AH)   replies a1..a3, tiers (0, 1, 1, 2): 3 points available.
# Earned points (gated, Eq. 1) are noted beside each verdict. C's verdict on s3 was unusable.

SVMR = (0, 1, 2)
AOR = (0, 1, 1, 2)
ITEMS = {"s1": ("SVMR", SVMR), "s2": ("SVMR", SVMR), "s3": ("SVMR", SVMR)}
ITEMS |= {"a1": ("AOR", AOR), "a2": ("AOR", AOR), "a3": ("AOR", AOR)}

HITS: dict[str, dict[str, set[int] | None]] = {
    "A": {
        "s1": {1, 2, 3},  # 2
        "s2": {1, 2},  # 1
        "s3": {1, 3},  # 0: tier 1 incomplete blocks tier 2
        "a1": {1, 2, 3, 4},  # 3
        "a2": {1, 2, 4},  # 1: tier 1 incomplete, criterion 4 blocked
        "a3": {2, 3, 4},  # 0: gate missed
    },
    "B": {
        "s1": {1, 2, 3},  # 2
        "s2": {1, 2, 3},  # 2
        "s3": {1},  # 0
        "a1": {1, 2, 3, 4},  # 3
        "a2": {1, 2, 3},  # 2
        "a3": {1, 2, 3, 4},  # 3
    },
    "C": {
        "s1": {1, 2},  # 1
        "s2": {1, 2},  # 1
        "s3": None,  # unusable verdict
        "a1": {1, 2, 3, 4},  # 3
        "a2": {1, 2, 4},  # 1
        "a3": {1},  # 0
    },
}
COMMON = ["a1", "a2", "a3", "s1", "s2"]  # every judge scored these (s3 is unscored by C)


def _judgments(hits: dict[str, dict[str, set[int] | None]] = HITS, repeat: int = 0) -> list[Judgment]:
    return [
        Judgment(
            item_id=item,
            subcategory=ITEMS[item][0],
            judge=judge,
            tiers=ITEMS[item][1],
            hits=None if h is None else frozenset(h),
            repeat=repeat,
        )
        for judge, by_item in hits.items()
        for item, h in by_item.items()
    ]


def _decisions(judge: str, items: list[str]) -> list[int]:
    return [int(k in HITS[judge][i]) for i in items for k in range(1, len(ITEMS[i][1]) + 1)]


def _kappa_2x2(a: list[int], b: list[int]) -> float:
    """Cohen's kappa from the 2x2 table: p_o = (n11 + n00) / n, p_e = (r1 c1 + r0 c0) / n^2."""
    n11 = sum(x == 1 and y == 1 for x, y in zip(a, b, strict=True))
    n10 = sum(x == 1 and y == 0 for x, y in zip(a, b, strict=True))
    n01 = sum(x == 0 and y == 1 for x, y in zip(a, b, strict=True))
    n00 = sum(x == 0 and y == 0 for x, y in zip(a, b, strict=True))
    n = n11 + n10 + n01 + n00
    p_o = (n11 + n00) / n
    p_e = ((n11 + n10) * (n11 + n01) + (n01 + n00) * (n10 + n00)) / n**2
    return (p_o - p_e) / (1 - p_e)


def _alpha_by_hand(matrix: list[list[float]]) -> float:
    """Nominal Krippendorff's alpha from the coincidence matrix: 1 - (n - 1) o_01 / (n_0 n_1) for two values."""
    o = np.zeros((2, 2))
    for unit in zip(*matrix, strict=True):
        values = [int(v) for v in unit if not math.isnan(v)]
        m = len(values)
        if m < 2:
            continue
        for i, vi in enumerate(values):
            for j, vj in enumerate(values):
                if i != j:
                    o[vi, vj] += 1 / (m - 1)
    n = o.sum()
    n0, n1 = o.sum(axis=1)
    return 1 - (n - 1) * o[0, 1] / (n0 * n1)


@pytest.fixture(scope="module")
def report() -> AgreementReport:
    return agreement_report(_judgments(), n_resamples=200, seed=7)


def test_points_are_gated_credit() -> None:
    assert points(SVMR, {1, 2, 3}) == (2, 2)
    assert points(SVMR, {1, 3}) == (0, 2)  # met tier-2 criterion blocked by the tier-1 miss
    assert points(AOR, {1, 2, 4}) == (1, 3)
    assert points(AOR, {2, 3, 4}) == (0, 3)  # gate missed


def test_judge_rows_on_common_replies(report: AgreementReport) -> None:
    assert report.judges == ["A", "B", "C"]
    assert report.n_items == 6 and report.n_common == 5
    a, b, c = report.rows
    # A on the common replies: SVMR s1+s2 = 3/4, AOR 4/9, pooled 7/13.
    assert a.n_items == 5 and a.n_scored == 6 and a.n_unscored == 0
    assert a.categories["DSLP"] == pytest.approx(3 / 4)
    assert a.categories["AH"] == pytest.approx(4 / 9)
    assert a.categories["ER"] is None and a.categories["MSA"] is None and a.categories["MEA"] is None
    assert a.subcategories == pytest.approx({"SVMR": 3 / 4, "AOR": 4 / 9})
    assert (a.earned, a.available) == (7, 13)
    assert a.pooled == pytest.approx(7 / 13)
    assert a.mean == pytest.approx((3 / 4 + 4 / 9) / 2)
    assert a.gate == pytest.approx(4 / 5)
    # B: 4/4 and 8/9; gate always passed.
    assert b.pooled == pytest.approx(12 / 13)
    assert b.mean == pytest.approx((1 + 8 / 9) / 2)
    assert b.gate == 1.0
    # C: its unusable verdict on s3 is counted, never scored.
    assert c.n_items == 5 and c.n_scored == 5 and c.n_unscored == 1
    assert c.pooled == pytest.approx(6 / 13)
    assert c.mean == pytest.approx((2 / 4 + 4 / 9) / 2)
    assert c.gate == 1.0
    assert report.pooled_spread == pytest.approx(12 / 13 - 6 / 13)
    assert report.pooled_sd == pytest.approx(float(np.std([7 / 13, 12 / 13, 6 / 13], ddof=1)))
    assert report.category_spreads["DSLP"] == pytest.approx(1 - 2 / 4)
    assert report.category_spreads["ER"] is None


def test_pooled_is_point_weighted_not_the_reply_mean() -> None:
    row = agreement_report(_judgments({"A": HITS["A"]}), n_resamples=10).rows[0]
    assert row.pooled == pytest.approx(7 / 15)
    per_reply = np.mean([rubric_score(ITEMS[i][1], h) for i, h in HITS["A"].items()])
    assert row.pooled != pytest.approx(per_reply)


def test_rows_on_each_judges_own_replies() -> None:
    report = agreement_report(_judgments(), common_items=False, n_resamples=10)
    a, _, c = report.rows
    assert a.n_items == 6 and a.pooled == pytest.approx(7 / 15) and a.gate == pytest.approx(5 / 6)
    assert c.n_items == 5 and c.pooled == pytest.approx(6 / 13)
    assert c.subcategories == pytest.approx({"SVMR": 2 / 4, "AOR": 4 / 9})
    # A pair without C uses all six replies; pairs with C the five C scored.
    assert [(p.judge_a, p.judge_b, p.n_items) for p in report.pairs] == [("A", "B", 6), ("A", "C", 5), ("B", "C", 5)]
    # Subcategory rows and the decomposition stay on the replies every judge scored.
    assert [s.n_items for s in report.subcategories] == [3, 2]


def test_pairs_agreement_kappa_and_full_match(report: AgreementReport) -> None:
    ab, ac, bc = report.pairs
    # A vs B over 18 decisions: 14 agree; 2x2 table n11=14, n10=1, n01=3, n00=0 -> kappa = -1/11.
    assert (ab.n_items, ab.n_decisions) == (5, 18)
    assert ab.criterion_agreement == pytest.approx(14 / 18)
    assert ab.kappa == pytest.approx(-1 / 11)
    assert ab.full_score_match == pytest.approx(2 / 5)  # s1, a1
    # A vs C: 13 agree; n11=11, n10=4, n01=1, n00=2 -> kappa = 2/7. a3 scores 0 for both: a full-score match.
    assert ac.criterion_agreement == pytest.approx(13 / 18)
    assert ac.kappa == pytest.approx(2 / 7)
    assert ac.full_score_match == pytest.approx(4 / 5)
    for pair in (ab, ac, bc):
        da, db = _decisions(pair.judge_a, COMMON), _decisions(pair.judge_b, COMMON)
        assert pair.kappa == pytest.approx(_kappa_2x2(da, db))
        assert pair.criterion_agreement == pytest.approx(np.mean(np.array(da) == np.array(db)))


def test_alpha_matches_hand_computation(report: AgreementReport) -> None:
    matrix = [[float(d) for d in _decisions(j, COMMON)] for j in "ABC"]
    assert report.alpha_n_items == 5 and report.alpha_n_units == 18
    assert report.alpha == pytest.approx(_alpha_by_hand(matrix))
    # Without the common restriction, s3 joins with C's decisions missing.
    loose = agreement_report(_judgments(), common_items=False, n_resamples=10)
    items = ["a1", "a2", "a3", "s1", "s2", "s3"]
    matrix = [
        [
            float(k in h) if (h := HITS[j][i]) is not None else math.nan
            for i in items
            for k in (1, 2, 3, 4)[: len(ITEMS[i][1])]
        ]
        for j in "ABC"
    ]
    assert loose.alpha_n_units == 21
    assert loose.alpha == pytest.approx(_alpha_by_hand(matrix))


def test_krippendorff_alpha_tiny_case() -> None:
    # Coincidences: o11 = 4, o00 = 2, o01 = o10 = 1; n = 8, n0 = 3, n1 = 5 -> alpha = 1 - 7 * 1 / 15.
    assert krippendorff_alpha([[1, 1, 0, 1], [1, 0, 0, 1]]) == pytest.approx(8 / 15)
    assert krippendorff_alpha([[1, 1, 0], [1, 1, 0]]) == pytest.approx(1.0)
    assert krippendorff_alpha([[1, 1], [1, 1]]) is None  # one value throughout: undefined
    assert krippendorff_alpha([[1, math.nan], [math.nan, 0]]) is None  # no unit with two decisions


def test_cohen_kappa_edge_cases() -> None:
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.0)
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None  # p_e = 1
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 0])


# --------------------------------------------------------------------------------------------------------------
# Profiles: one reply per subcategory with tiers (0, 1, 1, 1, 1); hitting the gate and k tier-1 criteria gives
# the ratio k/4. Subcategory order is by code: AOR, ER, SVMR.

PROFILE_QUARTERS = {"A": (1, 2, 4), "B": (2, 3, 4), "C": (4, 1, 2)}


def _profile_judgments() -> list[Judgment]:
    return [
        Judgment(f"x-{code}", code, judge, (0, 1, 1, 1, 1), frozenset({1, *range(2, 2 + k)}))
        for judge, ks in PROFILE_QUARTERS.items()
        for code, k in zip(("AOR", "ER", "SVMR"), ks, strict=True)
    ]


def test_profile_correlations() -> None:
    report = agreement_report(_profile_judgments(), n_resamples=10)
    ab, ac, bc = report.pairs
    assert ab.n_subcategories == 3
    # x = (1, 2, 4), y = (2, 3, 4): Sxy = 3, Sxx = 14/3, Syy = 2.
    assert ab.pearson == pytest.approx(3 / math.sqrt(14 / 3 * 2))
    assert ab.spearman == pytest.approx(1.0)
    # x = (1, 2, 4), z = (4, 1, 2): Sxz = -7/3, Szz = 14/3; ranks (1, 2, 3) vs (3, 1, 2): sum d^2 = 6.
    assert ac.pearson == pytest.approx(-0.5)
    assert ac.spearman == pytest.approx(1 - 6 * 6 / (3 * (9 - 1)))
    assert bc.pearson == pytest.approx(-2 / math.sqrt(2 * 14 / 3))
    assert bc.spearman == pytest.approx(-0.5)
    assert [s.subcategory for s in report.subcategories] == ["AOR", "ER", "SVMR"]
    assert report.subcategories[0].ratios == pytest.approx({"A": 1 / 4, "B": 2 / 4, "C": 4 / 4})
    assert report.subcategories[0].spread == pytest.approx(3 / 4)


def test_variance_decomposition_in_report() -> None:
    # Matrix (quarters) rows AOR, ER, SVMR x judges A, B, C: [[1,2,4],[2,3,1],[4,4,2]]; m = 23/9.
    # SS_sub = 3 * (4 + 25 + 49) / 81 = 26/9; SS_judge = 3 * (4 + 4 + 16) / 81 = 8/9; SS_total = 71 - 529/9 = 110/9.
    d = agreement_report(_profile_judgments(), n_resamples=10).decomposition
    assert d is not None and (d.n_subcategories, d.n_judges) == (3, 3)
    assert d.subcategory == pytest.approx(26 / 110)
    assert d.judge == pytest.approx(8 / 110)
    assert d.interaction == pytest.approx(76 / 110)
    assert d.subcategory + d.judge + d.interaction == pytest.approx(1.0)


def test_variance_decomposition_by_hand() -> None:
    # m = 0.55; rows 0.3, 0.8; columns 0.4, 0.7; residuals +-0.05: SS = 0.25, 0.09, 0.01 of 0.35.
    d = variance_decomposition([[0.2, 0.4], [0.6, 1.0]])
    assert d is not None
    assert (d.subcategory, d.judge, d.interaction) == pytest.approx((5 / 7, 9 / 35, 1 / 35))
    assert d.total_sum_of_squares == pytest.approx(0.35)
    additive = variance_decomposition([[0.1, 0.3], [0.5, 0.7], [0.2, 0.4]])
    assert additive is not None and additive.interaction == pytest.approx(0.0, abs=1e-12)
    assert variance_decomposition([[0.5, 0.5], [0.5, 0.5]]) is None
    assert variance_decomposition([]) is None


# --------------------------------------------------------------------------------------------------------------
# Bootstrap and repeat runs


def test_bootstrap_sd_is_seeded_and_sane() -> None:
    rng = np.random.default_rng(3)
    available = rng.integers(1, 5, size=60)
    earned = rng.binomial(available, 0.6)
    first = bootstrap_pooled_sd(earned, available, n_resamples=2000, seed=11)
    assert first == bootstrap_pooled_sd(earned, available, n_resamples=2000, seed=11)
    assert first != bootstrap_pooled_sd(earned, available, n_resamples=2000, seed=12)
    # Close to the delta-method standard error of a ratio estimator.
    ratio = earned.sum() / available.sum()
    delta = math.sqrt(((earned - ratio * available) ** 2).sum()) / available.sum()
    assert first == pytest.approx(delta, rel=0.1)


def test_bootstrap_sd_na_when_every_reply_scores_the_same() -> None:
    # every resample has the same pooled ratio: an SD of 0 would claim an exact ratio; none, and the row says why
    assert bootstrap_pooled_sd([1, 2, 1], [2, 4, 2]) is None
    assert bootstrap_pooled_sd([3], [4]) is None
    assert bootstrap_pooled_sd([], []) is None
    row = agreement_report(_judgments({"B": {i: {1, 2, 3, 4} if i[0] == "a" else {1, 2, 3} for i in ITEMS}})).rows[0]
    assert row.pooled == 1.0 and row.bootstrap_sd is None
    assert row.notes == {"bootstrap_sd": "n/a (every reply has the same ratio)"}
    one = agreement_report(_judgments({"B": {"s1": {1, 2, 3}}})).rows[0]
    assert one.bootstrap_sd is None and one.notes["bootstrap_sd"] == "n/a (n=1)"


def test_report_bootstrap_is_deterministic(report: AgreementReport) -> None:
    again = agreement_report(_judgments(), n_resamples=200, seed=7)
    assert [r.bootstrap_sd for r in again.rows] == [r.bootstrap_sd for r in report.rows]
    assert all(r.bootstrap_sd is not None and r.bootstrap_sd > 0 for r in report.rows)


def test_repeat_run_variation() -> None:
    second = {
        "A": {
            "s1": {1, 2, 3},  # 2 (same)
            "s2": {1, 2, 3},  # 2 (was 1)
            "s3": None,  # unusable in the repeat: left out
            "a1": {1, 2, 3, 4},  # 3 (same)
            "a2": {1, 2, 4},  # 1 (same)
            "a3": {1, 2},  # 1 (was 0)
        }
    }
    report = agreement_report(_judgments() + _judgments(second, repeat=1), n_resamples=10)
    assert [(r.judge, r.repeat) for r in report.repeats] == [("A", 1)]
    r = report.repeats[0]
    assert r.n_items == 5
    # Main run on a1 a2 a3 s1 s2: 3 + 1 + 0 + 2 + 1 = 7 of 13; repeat: 3 + 1 + 1 + 2 + 2 = 9 of 13.
    assert r.pooled_main == pytest.approx(7 / 13)
    assert r.pooled_repeat == pytest.approx(9 / 13)
    assert r.pooled_change == pytest.approx(2 / 13)
    assert r.score_differs == pytest.approx(2 / 5)
    # Decisions differ on s2 criterion 3, a3 criteria 1, 3 and 4: 14 of 18 agree.
    assert r.criterion_agreement == pytest.approx(14 / 18)
    # The repeat does not touch the main statistics.
    assert report.rows[0].pooled == pytest.approx(7 / 13)
    assert len(report.pairs) == 3


# --------------------------------------------------------------------------------------------------------------
# Selection, missing judges, validation


def test_judge_subset_and_missing_judge() -> None:
    report = agreement_report(_judgments(), judges=["C", "A"], n_resamples=10)
    assert report.judges == ["C", "A"]
    assert [(p.judge_a, p.judge_b) for p in report.pairs] == [("C", "A")]
    assert report.n_common == 5
    with pytest.raises(ValueError, match="'X'"):
        agreement_report(_judgments(), judges=["A", "X"])


def test_judge_without_verdicts_on_some_replies() -> None:
    partial = {"D": {"s1": {1, 2, 3}, "a1": {1, 2, 3, 4}}}
    report = agreement_report(_judgments() + _judgments(partial), common_items=False, n_resamples=10)
    d = report.rows[3]
    assert (d.n_items, d.n_scored, d.n_unscored, d.n_missing) == (2, 2, 0, 4)
    assert report.n_common == 2
    pairs = {(p.judge_a, p.judge_b): p for p in report.pairs}
    assert pairs["A", "B"].n_items == 6
    assert pairs["A", "D"].n_items == 2 and pairs["A", "D"].full_score_match == 1.0
    assert pairs["C", "D"].n_items == 2
    # Both profiles are flat (1.0 in SVMR and AOR): no correlation is defined.
    assert pairs["A", "D"].n_subcategories == 2 and pairs["A", "D"].pearson is None
    strict = agreement_report(_judgments() + _judgments(partial), n_resamples=10)
    assert all(r.n_items == 2 for r in strict.rows)


def test_no_common_reply_gives_empty_figures() -> None:
    hits = {"A": {"s1": {1, 2, 3}}, "B": {"s1": None}}
    report = agreement_report(_judgments(hits), n_resamples=10)
    assert report.n_common == 0
    assert report.rows[0].pooled is None and report.rows[0].bootstrap_sd is None
    assert report.rows[0].notes == {k: "n/a (no reply)" for k in ("pooled", "mean", "gate", "bootstrap_sd")}
    assert report.pairs[0].kappa is None and report.pairs[0].criterion_agreement is None
    assert report.pairs[0].notes["kappa"] == "n/a (no decision)"
    assert report.pairs[0].notes["criterion_agreement"] == "n/a (no reply)"
    assert report.alpha is None and report.decomposition is None
    assert report.notes["alpha"] == "n/a (no criterion decided by two judges)"
    assert report.notes["decomposition"] == "n/a (no subcategory)"
    assert report.pooled_spread is None and report.notes["pooled_spread"] == "n/a (fewer than two judges with a ratio)"


def test_degenerate_statistics_say_na_with_their_reason() -> None:
    # Two judges who pass every criterion of every reply: chance agreement is 1 (kappa 0/0), no disagreement to
    # expect (alpha undefined), flat profiles (no correlation), every ratio 1 (no variance to decompose).
    every = {i: set(range(1, len(ITEMS[i][1]) + 1)) for i in ITEMS}
    flat = agreement_report(_judgments({"A": every, "B": every}), n_resamples=10)
    (pair,) = flat.pairs
    assert pair.criterion_agreement == 1.0 and pair.full_score_match == 1.0  # shares: defined
    assert pair.kappa is None and pair.notes["kappa"] == (
        "n/a (every decision of both judges is the same: chance agreement is 1)"
    )
    assert flat.alpha is None and flat.notes["alpha"] == "n/a (every decision is the same: no disagreement to expect)"
    assert flat.decomposition is None and flat.notes["decomposition"] == "n/a (every ratio is the same)"
    assert flat.pooled_spread == 0.0 and flat.pooled_sd == 0.0  # descriptive: two judges that agree, spread 0
    # the profiles of three subcategories: one judge flat, the other not
    profile = _profile_judgments()
    one_flat = [j for j in profile if j.judge == "A"] + [
        Judgment(j.item_id, j.subcategory, "F", j.tiers, frozenset({1, 2})) for j in profile if j.judge == "A"
    ]
    (ab,) = agreement_report(one_flat, n_resamples=10).pairs
    assert ab.n_subcategories == 3 and ab.pearson is None and ab.spearman is None
    assert ab.notes["pearson"] == "n/a (every subcategory ratio of F is the same)"
    # a single judge: nothing across judges
    alone = agreement_report(_judgments({"A": HITS["A"]}), n_resamples=10)
    assert alone.alpha is None and alone.notes["alpha"] == "n/a (one judge)"
    assert alone.pooled_sd is None and alone.pooled_spread is None and alone.mean_spread is None
    assert alone.decomposition is None and alone.notes["decomposition"] == "n/a (one judge)"
    assert all(v is None for v in alone.category_spreads.values())
    assert [s.spread for s in alone.subcategories] == [None, None]
    # the decomposition needs two subcategories and two judges
    assert variance_decomposition([[0.2, 0.4]]) is None and variance_decomposition([[0.2], [0.4]]) is None
    # printed: the reasons, never a bare dash or a number standing in for nothing
    console = Console(file=io.StringIO(), width=400)
    for table in render_agreement(flat):
        console.print(table)
    text = console.file.getvalue()
    assert "n/a (every decision of both judges is the same: chance agreement is 1)" in text
    assert "n/a (every decision is the same: no disagreement to expect)" in text
    assert AgreementReport.model_validate_json(flat.model_dump_json()) == flat  # the notes are in the JSON


def test_validation() -> None:
    with pytest.raises(ValueError):
        Judgment("x", "SVMR", "A", (0, 1), frozenset({3}))
    with pytest.raises(ValueError):
        Judgment("x", "SVMR", "A", (0, 0), frozenset())
    ok = Judgment("x", "SVMR", "A", (0, 1), frozenset({1}))
    with pytest.raises(ValueError, match="duplicate"):
        agreement_report([ok, ok])
    with pytest.raises(ValueError, match="differing"):
        agreement_report([ok, Judgment("x", "SVMR", "B", (0, 1, 1), frozenset({1}))])
    with pytest.raises(ValueError, match="no main-run"):
        agreement_report([Judgment("x", "SVMR", "A", (0, 1), frozenset({1}), repeat=1)])


# --------------------------------------------------------------------------------------------------------------
# Output


def test_json_round_trip_and_render(report: AgreementReport) -> None:
    assert AgreementReport.model_validate_json(report.model_dump_json()) == report
    tables = render_agreement(report)
    headers = [c.header for c in tables[0].columns]
    assert headers[: 1 + len(TABLE2_CATEGORIES) + 3] == [
        "Judge",
        "AH",
        "ER",
        "MSA",
        "MEA",
        "DSLP",
        "Pooled",
        "Mean",
        "Gate",
    ]
    console = Console(file=io.StringIO(), width=160)
    for table in tables:
        console.print(table)
    text = console.file.getvalue()
    assert f"{7 / 13:.3f}" in text and "80.0%" in text  # A's pooled and gate
    assert f"{-1 / 11:.3f}" in text  # A-B kappa
    assert "Krippendorff" in text


# --------------------------------------------------------------------------------------------------------------
# Properties


@st.composite
def _tables(draw: st.DrawFn) -> list[Judgment]:
    n_items = draw(st.integers(1, 8))
    judges = draw(st.lists(st.sampled_from("ABCD"), min_size=2, max_size=4, unique=True))
    out = []
    for i in range(n_items):
        code = draw(st.sampled_from(["SVMR", "AOR", "ER", "PLA", "MRR"]))
        tiers = (0, *draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
        for judge in judges:
            hits = draw(st.none() | st.frozensets(st.integers(1, len(tiers))))
            out.append(Judgment(f"i{i}", code, judge, tiers, hits))
    return out


@settings(max_examples=60, deadline=None)
@given(_tables())
def test_properties(judgments: list[Judgment]) -> None:
    report = agreement_report(judgments, n_resamples=20)
    for row in report.rows:
        assert row.pooled is None or 0.0 <= row.pooled <= 1.0
        assert row.n_items == report.n_common
    for pair in report.pairs:
        assert pair.n_items == report.n_common
        assert pair.kappa is None or -1.0 <= pair.kappa <= 1.0 + 1e-12
    if report.decomposition is not None:
        d = report.decomposition
        assert d.subcategory + d.judge + d.interaction == pytest.approx(1.0)
    assert report.alpha is None or -1.0 - 1e-9 <= report.alpha <= 1.0 + 1e-9


def test_identical_judges_agree_fully() -> None:
    twin = {"A": HITS["A"], "A2": HITS["A"]}
    report = agreement_report(_judgments(twin), n_resamples=10)
    (pair,) = report.pairs
    assert pair.criterion_agreement == 1.0 and pair.full_score_match == 1.0
    assert pair.kappa == pytest.approx(1.0) and report.alpha == pytest.approx(1.0)
    # two subcategories: two points always correlate at +-1, which says nothing
    assert pair.pearson is None and pair.spearman is None and pair.n_subcategories == 2
    assert pair.notes == {"pearson": "n/a (n=2)", "spearman": "n/a (n=2)"}
    assert report.decomposition is not None and report.decomposition.judge == pytest.approx(0.0, abs=1e-12)
    assert list(combinations(report.judges, 2)) == [("A", "A2")]
