"""Table 3 (Appendix D.4) as pure maths: the paper's own numbers reproduced, and a small set worked by hand."""

from __future__ import annotations

import math

import pytest

from omnivchat.scoring import table3

# Table 3 of the paper: (single, multi) means per pair, for Gemini-3.7-Flash and the OmniVChat-RL policy.
PAIRS = (("ICC", "MDCC"), ("SVMR", "MVMS"), ("AR", "MRR"), ("SPSD", "MIST"), ("STIC", "MTIC"))
GEMINI = ((0.741, 0.640), (0.743, 0.632), (0.694, 0.492), (0.795, 0.751), (0.630, 0.520))
RL = ((0.653, 0.677), (0.525, 0.465), (0.738, 0.692), (0.646, 0.707), (0.757, 0.650))


def one_item_per_side(means: tuple[tuple[float, float], ...]) -> list[tuple[str, float | None]]:
    return [rec for (s, m), (x, y) in zip(PAIRS, means, strict=True) for rec in ((s, x), (m, y))]


def test_the_papers_statistics_come_back() -> None:
    # D.4: "A paired test for Gemini-3.7-Flash gives t(4) = −4.48 and p = 0.011 ... Pearson r is 0.89 ... Spearman
    # 0.80"; Table 3: Mean Gap −0.114.
    g = table3(one_item_per_side(GEMINI))
    assert g.n_pairs == 5 and g.t_test.df == 4
    assert round(g.t_test.statistic, 2) == -4.48 and round(g.t_test.p, 3) == 0.011
    assert round(g.pearson.value, 2) == 0.89 and round(g.spearman.value, 2) == 0.80
    assert round(g.mean_gap, 3) == -0.114
    assert [round(r.gap, 3) for r in g.rows] == [-0.101, -0.111, -0.202, -0.044, -0.110]
    # After training: t(4) = −0.85 (the paper prints p = 0.45; its rounded table means give 0.444), Pearson 0.75,
    # Spearman 0.10, Mean Gap −0.026.
    r = table3(one_item_per_side(RL))
    assert round(r.t_test.statistic, 2) == -0.85 and r.t_test.p == pytest.approx(0.444, abs=0.001)
    assert round(r.pearson.value, 2) == 0.75 and round(r.spearman.value, 2) == 0.10
    assert round(r.mean_gap, 3) == -0.026
    # one item per side: no standard error anywhere, and it says so
    assert all(row.gap_se is None and row.single.note == "n/a (n=1)" for row in g.rows)


def test_standard_errors_pooling_and_missing_pairs_by_hand() -> None:
    records: list[tuple[str, float | None]] = [
        ("ICC", 1.0),
        ("ICC", 0.5),
        ("ICC", None),  # unscored: counted, never averaged
        ("DSLP-VCC-MDCC", 0.0),  # a full path is the same subcategory
        ("MDCC", 0.5),
        ("AR", 1.0),
        ("DR", 0.0),
        ("DR", 0.5),  # AR and DR pooled: mean 0.5 over 3 items
        ("MRR", 0.25),
        ("MRR", 0.75),
        ("SVMR", 1.0),  # no multi-turn items: a row without a gap
        ("MTIC", None),  # multi-turn items, none scored
        ("STIC", 0.5),
        ("AOR", 0.0),  # not part of any pair
    ]
    t = table3(records)
    icc, svmr, rc, sdi, ic = t.rows
    assert (icc.single.n_items, icc.single.n_scored, icc.single.mean) == (3, 2, 0.75)
    assert icc.single.se == pytest.approx(math.sqrt(0.125) / math.sqrt(2))  # sd of (1, 0.5) is sqrt(0.125)
    assert icc.multi.mean == 0.25 and icc.multi.se == pytest.approx(math.sqrt(0.125) / math.sqrt(2))
    assert icc.gap == pytest.approx(-0.5) and icc.gap_se == pytest.approx(math.sqrt(2 * 0.0625))
    assert icc.within_se is False  # |−0.5| > 0.354
    assert rc.single.subcategories == ("AR", "DR") and rc.single.n_scored == 3 and rc.single.mean == 0.5
    assert rc.single.se == pytest.approx(0.5 / math.sqrt(3))  # sd of (1, 0, 0.5) is 0.5
    assert rc.gap == pytest.approx(0.0) and rc.within_se is True
    assert svmr.gap is None and svmr.multi.note == "n/a (no items)" and "multi-turn: no items" in (svmr.note or "")
    assert ic.gap is None and ic.multi.note == "n/a (0 of 1 scored)"
    assert sdi.single.n_items == 0 and sdi.multi.n_items == 0
    # statistics over the two pairs with both means: (0.75, 0.25) and (0.5, 0.5)
    assert t.n_pairs == 2 and t.mean_gap == pytest.approx(-0.25)
    assert t.t_test.df == 1 and t.t_test.statistic == pytest.approx(-1.0)  # d = (−0.5, 0): mean −0.25, se 0.25
    assert t.pearson.value is None and t.pearson.note == "n/a (n=2)"
    assert t.spearman.value is None and t.spearman.note == "n/a (n=2)"


def test_no_pair_at_all() -> None:
    t = table3([("AOR", 1.0), ("ER", 0.5)])
    assert t.n_pairs == 0 and t.mean_gap is None
    assert t.t_test.note == "n/a (n=0)" and t.pearson.note == "n/a (n=0)"
    assert [r.note for r in t.rows] == ["n/a (single-turn: no items; multi-turn: no items)"] * 5


def test_degenerate_statistics_say_na_with_their_reason() -> None:
    # Every gap 0 (a model that scores the same on both sides of every pair): the t-test of constant differences
    # is 0/0, not "p = 1"; means that are all equal correlate with nothing.
    same = table3(one_item_per_side(tuple((0.5, 0.5) for _ in PAIRS)))
    assert same.n_pairs == 5 and same.mean_gap == 0.0
    assert same.t_test.statistic is None and same.t_test.p is None
    assert same.t_test.note == "n/a (every difference is 0)"
    assert same.pearson.value is None and same.pearson.note == "n/a (every single-turn mean is the same)"
    assert same.spearman.value is None and same.spearman.p is None
    # every gap the same but not 0: t would be +-inf; the multi-turn means still vary with the single ones
    shifted = table3(one_item_per_side(tuple((x, x - 0.1) for x, _ in GEMINI)))
    assert shifted.t_test.p is None and shifted.t_test.note == "n/a (every difference is the same)"
    assert shifted.pearson.value == 1.0 and shifted.pearson.p is None  # on a line: no p
    assert (shifted.pearson.note or "").startswith("p n/a (|r| = 1")
    # a side whose scored items all have one score: a mean, but no SE (0 would claim an exact mean), and so no
    # SE of the gap; the note names the side
    t = table3([("ICC", 1.0), ("ICC", 1.0), ("ICC", None), ("MDCC", 0.5), ("MDCC", 0.0)])
    icc = t.rows[0]
    assert icc.single.mean == 1.0 and icc.single.se is None and icc.single.note == "n/a (every score is the same)"
    assert icc.multi.se == pytest.approx(0.25) and icc.multi.note is None
    assert icc.gap == -0.75 and icc.gap_se is None and icc.within_se is None
    assert icc.note == "n/a (single-turn: every score is the same)"
    one = table3([("ICC", 1.0), ("MDCC", 0.5), ("MDCC", 0.5)]).rows[0]
    assert one.note == "n/a (single-turn: n=1; multi-turn: every score is the same)"
