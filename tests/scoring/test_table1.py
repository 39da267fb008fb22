"""Means (Eq. 2) and the Table 1 columns, against values worked out by hand."""

import pytest

from omnivchat.scoring import (
    ScoredReply,
    category_means,
    mean_length,
    pooled_mean,
    style_rate,
    subcategory_mean,
    table1_row,
)


def test_subcategory_mean_weights_subcategories_equally():
    records = [("SVMR", 1.0), ("SVMR", 0.0), ("SVMR", 0.5), ("DSLP-VDMC-MVMS", 1.0)]
    assert pooled_mean(s for _, s in records) == pytest.approx(0.625)
    assert subcategory_mean(records) == pytest.approx((0.5 + 1.0) / 2)  # full path and code are the same


def test_category_means_and_style_and_length():
    assert category_means([("AOR", 1.0), ("FGC", 0.0), ("ER", 0.5)]) == {"AH": 0.5, "ER": 0.5}
    assert style_rate([1.0, None, 0.0, 1.0]) == pytest.approx(2 / 3)
    assert mean_length(["one two", "", "...", "三个字"]) == pytest.approx(2.5)
    with pytest.raises(ValueError):
        subcategory_mean([])
    with pytest.raises(KeyError, match="unknown subcategory 'XYZ'"):
        subcategory_mean([("XYZ", 1.0)])


def test_table1_row_by_hand():
    records = [
        ScoredReply(subcategory="SVMR", score=1.0, reply="The one on your left is closed.", style=1),  # w=7
        ScoredReply(subcategory="SVMR", score=0.5, reply="Left.", style=0),  # w=1
        ScoredReply(subcategory="MVMS", score=0.25, reply="它在你的右边", style=1),  # w=6
        ScoredReply(subcategory="AOR", score=0.0, reply="", style=None),  # empty: style 0 where style is graded
        ScoredReply(subcategory="ER", score=None, reply="I'm sorry", style=None),  # unscored, style failed
        ScoredReply(subcategory="AOR", score=None, reply=None),  # request failed
        ScoredReply(subcategory="ICC", source="human", score=0.75, reply="yes I hear you", style=1),
        ScoredReply(subcategory="UPC", source="human", score=0.25, reply="go on", style=0),
    ]
    row = table1_row(records)
    assert pytest.approx((1.0 + 0.5 + 0.25) / 3) == row.DSLP
    assert row.AH == 0.0
    assert row.ER is None and row.MEA is None and row.MSA is None  # nothing scored there: no number
    assert row.Single == pytest.approx(0.5)
    assert row.Multi == pytest.approx(0.25)
    assert row.Mean == pytest.approx((0.75 + 0.25 + 0.0) / 3)
    assert row.Human == pytest.approx(0.5)
    assert pytest.approx(1000 * 1.75 / 14) == row.RE
    assert row.Style == pytest.approx(0.5)
    assert row.Len == pytest.approx((7 + 1 + 6 + 2) / 4)
    assert (row.n_instances, row.n_scored, row.n_unscored) == (8, 6, 2)
    assert (row.n_failed_requests, row.n_empty_replies, row.n_style_graded) == (1, 1, 4)


def test_table1_row_of_nothing_scored_has_no_numbers():
    row = table1_row([ScoredReply(subcategory="ER", score=None, reply=None)])
    assert all(getattr(row, c) is None for c in ("ER", "Mean", "Single", "RE", "Style", "Len", "Human"))
    assert row.n_unscored == 1


def test_style_is_none_when_nothing_was_style_graded():
    """The paper's Style is a mean over graded replies: with no grading at all there is no Style, even when a
    reply is empty (that 0 exists only where style was graded)."""
    records = [
        ScoredReply(subcategory="SVMR", score=1.0, reply="It is on your left."),
        ScoredReply(subcategory="AOR", score=0.0, reply=""),
        ScoredReply(subcategory="AOR", score=0.0, reply=" ... !"),  # punctuation only: no counted word, empty
    ]
    row = table1_row(records)
    assert row.Style is None and row.n_style_graded == 0 and row.n_empty_replies == 2
    assert table1_row(records, style_graded=False).Style is None
    graded = table1_row(records, style_graded=True)  # a grader ran and every grading of the reply failed
    assert graded.Style == 0.0 and graded.n_style_graded == 2


def test_one_definition_of_an_empty_reply():
    from omnivchat.scoring import is_empty_reply, word_count

    for text in ("", "   ", "...", "!?", "🙂"):
        assert is_empty_reply(text) and word_count(text) == 0
    for text in ("ok", "好", "42"):
        assert not is_empty_reply(text)
    # w(y) counts Chinese characters and Latin or digit groups only; a reply in another script says something
    for text in ("Дверь закрыта", "Κλειστή", "مغلق", "दरवाज़ा", "ドア", "Ⅻ"):
        assert not is_empty_reply(text)
