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
    # ER has no scored instance: Eq. 2's Mean is over all C = 4 subcategories, so there is none; the mean over the
    # other three is kept apart and the row is incomplete, saying so
    assert row.Mean is None and row.partial_mean == pytest.approx((0.75 + 0.25 + 0.0) / 3)
    assert (row.n_subcategories, row.unscored_subcategories, row.complete) == (4, ["ER"], False)
    assert row.incompleteness() == (
        "incomplete: 1 of 8 items have no reply (1 failed requests, 0 not run); "
        "Mean over 3 of 4 subcategories: 0.333 (unscored: ER)"
    )
    assert row.Human == pytest.approx(0.5)
    assert pytest.approx(1000 * 1.75 / 14) == row.RE
    assert row.Style == pytest.approx(0.5)
    assert row.Len == pytest.approx((7 + 1 + 6 + 2) / 4)
    assert (row.n_instances, row.n_scored, row.n_unscored) == (8, 6, 2)
    assert (row.n_failed_requests, row.n_empty_replies, row.n_style_graded) == (1, 1, 4)


def test_the_mean_is_over_every_subcategory_of_the_bench():
    """Eq. 2's C is the bench's: one scored instance per subcategory gives the Mean; a subcategory whose only
    instances are unscored (no failed request, no unrun item) leaves no Mean and an incomplete row, never a Mean
    over the others shown as the bench's."""
    whole = [
        ScoredReply(subcategory="SVMR", score=1.0, reply="Left."),
        ScoredReply(subcategory="ER", score=0.5, reply="Sorry."),
        ScoredReply(subcategory="ER", score=None, reply="Hm."),  # one unscored of two: ER still has a mean
    ]
    row = table1_row(whole)
    assert row.Mean == pytest.approx(0.75) and row.partial_mean is None and row.complete
    assert row.incompleteness() is None and row.partial_mean_note() is None
    part = table1_row([*whole[:1], ScoredReply(subcategory="ER", score=None, reply="Hm.")])
    assert part.Mean is None and part.partial_mean == 1.0 and not part.complete
    assert part.incompleteness() == "incomplete: Mean over 1 of 2 subcategories: 1.000 (unscored: ER)"
    human_only = table1_row([*whole, ScoredReply(subcategory="ICC", source="human", score=None, reply="x")])
    assert human_only.n_subcategories == 2 and human_only.complete  # C counts the synthetic subcategories


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
