"""Who / When metrics with a fixed denominator, and How quality (QGold, QEns, Cov+, QEns_joint)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omnivchat.socialomni._data import SocialOmniError
from omnivchat.socialomni._metrics import HowMetrics, classification_metrics, how_metrics

# ------------------------------------------------------------------------------------------------ Who / When


def test_failures_stay_in_the_denominator() -> None:
    gold = {"v1": "YES", "v2": "NO", "v3": "NO", "v4": "NO"}
    predictions = {"v1": "YES", "v2": "NO", "v3": None, "v4": None}
    m = classification_metrics(predictions, gold, ("YES", "NO"), request_failed={"v3"})
    assert m["n"] == 4 and m["correct"] == 2 and m["accuracy"] == 50.0
    assert m["request_failures"] == 1 and m["parse_failures"] == 1
    assert m["class_counts"] == {"YES": {"tp": 1, "fp": 0, "fn": 0}, "NO": {"tp": 1, "fp": 0, "fn": 2}}
    # F1_YES = 2/(2+0+0) = 1; F1_NO = 2/(2+0+2) = 0.5; macro = 100 * 0.75
    assert m["macro_f1"] == pytest.approx(75.0)
    assert set(m) == {
        "n", "correct", "accuracy", "macro_f1", "class_counts", "request_failures", "parse_failures",
        "n_missing", "missing", "complete",
    }  # fmt: skip
    assert m["n_missing"] == 0 and m["missing"] == [] and m["complete"] is True


def test_who_macro_f1_by_hand() -> None:
    gold = {"1": "A", "2": "A", "3": "B", "4": "C"}
    predictions = {"1": "A", "2": "B", "3": "C", "4": None}
    m = classification_metrics(predictions, gold, "ABCD", request_failed=set())
    assert m["accuracy"] == 25.0 and m["parse_failures"] == 1 and m["request_failures"] == 0
    assert m["class_counts"] == {
        "A": {"tp": 1, "fp": 0, "fn": 1},
        "B": {"tp": 0, "fp": 1, "fn": 1},
        "C": {"tp": 0, "fp": 1, "fn": 1},
        "D": {"tp": 0, "fp": 0, "fn": 0},
    }
    # F1: A = 2/3, B = 0, C = 0, D = 0 (empty denominator); macro = 100 * (2/3) / 4
    assert m["macro_f1"] == pytest.approx(100 * (2 / 3) / 4)


def test_missing_prediction_and_request_failure_with_text() -> None:
    m = classification_metrics({"a": None, "b": "A"}, {"a": "A", "b": "A"}, "ABCD", request_failed={"b"})
    # "a" has no prediction (a parse failure); "b" failed, so its stale prediction does not count
    assert m["correct"] == 0 and m["parse_failures"] == 1 and m["request_failures"] == 1
    assert m["n"] == 2 and m["accuracy"] == 0.0 and m["complete"]


def test_an_item_without_a_record_is_missing_not_a_parse_failure() -> None:
    # "a" has a gold label but no record at all (no prediction, no failed request): it is missing, not wrong
    m = classification_metrics({"b": "A"}, {"a": "A", "b": "A"}, "ABCD", request_failed=set())
    assert m["n"] == 2 and m["parse_failures"] == 0 and m["request_failures"] == 0
    assert m["n_missing"] == 1 and m["missing"] == ["a"] and m["complete"] is False
    assert m["correct"] == 1 and m["accuracy"] is None and m["macro_f1"] is None  # no headline over part of it
    assert m["class_counts"]["A"] == {"tp": 1, "fp": 0, "fn": 0}  # the missing item is no false negative


def test_denominator_is_the_release_not_the_stored_rows() -> None:
    release = ["v1", "v2", "v3", "v4"]  # the task's items as loaded; only two were ever recorded
    m = classification_metrics(
        {"v1": "YES", "v2": None}, {"v1": "YES", "v2": "NO"}, ("YES", "NO"), set(), expected=release
    )
    assert m["n"] == 4 and m["n_missing"] == 2 and m["missing"] == ["v3", "v4"]
    assert m["correct"] == 1 and m["parse_failures"] == 1 and m["accuracy"] is None and not m["complete"]
    full = classification_metrics(
        {"v1": "YES", "v2": None}, {"v1": "YES", "v2": "NO"}, ("YES", "NO"), set(), expected=["v2", "v1"]
    )
    assert full["complete"] and full["n"] == 2 and full["accuracy"] == 50.0
    with pytest.raises(SocialOmniError, match="outside the task's item list"):
        classification_metrics({"z": "YES"}, {"z": "YES"}, ("YES", "NO"), set(), expected=release)


def test_classification_errors() -> None:
    with pytest.raises(SocialOmniError, match="gold label"):
        classification_metrics({}, {"a": "E"}, "ABCD", set())
    with pytest.raises(SocialOmniError, match="prediction 'E'"):
        classification_metrics({"a": "E"}, {"a": "A"}, "ABCD", set())
    with pytest.raises(SocialOmniError, match="without a gold label"):
        classification_metrics({"z": "A"}, {"a": "A"}, "ABCD", set())
    assert classification_metrics({}, {}, "ABCD", set())["accuracy"] is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from(["A", "B", "C", "D", None]), st.booleans())))
def test_classification_invariants(rows: list[tuple[str, str | None, bool]]) -> None:
    gold = {str(k): g for k, (g, _, _) in enumerate(rows)}
    predictions = {str(k): p for k, (_, p, _) in enumerate(rows)}
    failed = {str(k) for k, (_, _, f) in enumerate(rows) if f}
    m = classification_metrics(predictions, gold, "ABCD", failed)
    assert m["n"] == len(rows)
    assert m["request_failures"] == len(failed)
    assert m["correct"] + m["request_failures"] + m["parse_failures"] <= m["n"]
    assert sum(c["tp"] for c in m["class_counts"].values()) == m["correct"]
    assert sum(c["tp"] + c["fn"] for c in m["class_counts"].values()) == m["n"]
    if rows:
        assert m["accuracy"] == pytest.approx(100 * m["correct"] / m["n"])
        assert 0 <= m["macro_f1"] <= 100


# ------------------------------------------------------------------------------------------------ How


def _gold(n: int = 128, first: int = 1) -> list[str]:
    return [f"v{k}" for k in range(first, n + 1)]


def test_zeros_and_empty_responses() -> None:
    # v1 scored 0 by all three judges; the 127 other gold items completed with an empty reply (0, not judged)
    qualities = {"v1": [0, 0, 0], **dict.fromkeys(_gold(first=2))}
    empty = {"v1": False, **dict.fromkeys(_gold(first=2), True)}
    m = how_metrics(qualities, dict.fromkeys(_gold(), True), empty)
    assert m.complete and m.missing == [] and m.n_missing == 0
    assert m.qgold == 0.0 and m.qens == 0.0 and m.qens_joint == 0.0
    assert m.cov_plus == pytest.approx(100 / 128)  # the empty replies are not covered
    assert m.n_covered == 1 and m.n_gold == 128 and m.n_items == 128


def test_partial_panel_gives_null_metrics() -> None:
    for scores in ([75, 75], [75, 75, None], None, [75, 75, 60], [75, 75, True], [75, 75, 75, 75], "75"):
        m = how_metrics({"v1": scores, "v2": [100, 100, 100]}, {"v1": True, "v2": True}, {"v1": False, "v2": False})
        assert not m.complete and m.missing == ["v1"]
        assert m.failures == [{"item": "v1", "phase": "judging"}]
        assert (m.qgold, m.qens, m.cov_plus, m.qens_joint) == (None, None, None, None)


def test_when_no_item_counts_toward_qgold() -> None:
    empty = {"v1": False, **dict.fromkeys(_gold(first=2), True)}
    m = how_metrics({"v1": [75, 75, 75]}, dict.fromkeys(_gold(), False), empty)
    assert m.complete
    assert m.qgold == pytest.approx(75 / 128)
    assert m.qens is None  # nothing predicted YES
    assert m.cov_plus == 0.0 and m.qens_joint == 0.0


def test_full_computation() -> None:
    qualities = {"a": [100, 75, 50], "b": [25, 25, 25], "c": [100, 100, 100], "d": None}
    predicted_yes = {"a": True, "b": True, "c": False, "d": True}
    empty = {"a": False, "b": False, "c": False, "d": True}
    m = how_metrics(qualities, predicted_yes, empty, n_gold=4)
    # qualities 75, 25, 100, 0; C = {a, b}
    assert m.qgold == pytest.approx((75 + 25 + 100 + 0) / 4)
    assert m.qens == pytest.approx(50.0)
    assert m.cov_plus == pytest.approx(50.0)
    assert m.qens_joint == pytest.approx(100 / 4)
    assert m.qens_joint == pytest.approx(m.qens * m.cov_plus / 100)


def test_archives_have_no_qgold() -> None:
    qualities = {"v1": [75, 75, 75], "v2": [75, 75, 75]}
    m = how_metrics(qualities, {"v1": True, "v2": True}, {"v1": False, "v2": False}, full_gold=False)
    assert m.complete and not m.full_gold
    assert m.qgold is None
    assert m.qens == pytest.approx(75.0)
    assert m.cov_plus == pytest.approx(200 / 128)
    assert m.qens_joint == pytest.approx(150 / 128)


def test_missing_when_prediction_or_reply_is_incomplete() -> None:
    m = how_metrics({"v1": [50, 50, 50]}, {}, {"v1": False, "v2": True}, n_gold=2)
    assert not m.complete and m.missing == ["v1", "v2"]
    assert {"item": "v1", "phase": "when"} in m.failures and {"item": "v2", "phase": "when"} in m.failures
    assert m.n_when_missing == 2 and m.n_missing == 0
    m = how_metrics({}, {"v1": True}, {}, n_gold=1)
    assert m.failures == [{"item": "v1", "phase": "missing"}] and m.n_missing == 1
    assert m.qgold is None and m.cov_plus is None


def test_gold_items_lacking_a_generation_make_how_incomplete() -> None:
    # three gold items, two replies given: the third has no record, so nothing may be averaged over 3
    m = how_metrics(
        {"v1": [75, 75, 75], "v2": [25, 25, 25]}, {"v1": True, "v2": True}, {"v1": False, "v2": False}, n_gold=3
    )
    assert not m.complete and m.n_missing == 1 and m.n_gold == 3
    assert (m.qgold, m.qens, m.cov_plus, m.qens_joint) == (None, None, None, None)


def test_expected_items_name_the_missing_and_failed_generations_count_apart() -> None:
    qualities = {"v1": [100, 100, 100]}
    m = how_metrics(
        qualities, {"v1": True, "v2": True, "v3": False}, {"v1": False}, n_gold=4,
        expected=["v1", "v2", "v3", "v4"], generation_failed={"v2"},
    )  # fmt: skip
    assert not m.complete and m.missing == ["v2", "v3", "v4"]
    assert m.n_generation_failures == 1 and m.n_missing == 2 and m.n_when_missing == 1 and m.n_unjudged == 0
    assert {"item": "v2", "phase": "generation"} in m.failures and {"item": "v4", "phase": "when"} in m.failures
    assert m.qgold is None and m.cov_plus is None
    # a failed generation is never an empty reply worth 0, even for an archive (full_gold False)
    archive = how_metrics(
        {"a": [50, 50, 50]}, {"a": True, "b": True}, {"a": False}, full_gold=False, generation_failed={"b"}
    )
    assert not archive.complete and archive.n_generation_failures == 1 and archive.qens is None
    with pytest.raises(SocialOmniError, match="outside the expected"):
        how_metrics({"x": [0, 0, 0]}, {"x": True}, {"x": False}, n_gold=1, expected=["v1"])
    with pytest.raises(SocialOmniError, match="2 expected How items but n_gold is 3"):
        how_metrics({}, {}, {}, n_gold=3, expected=["v1", "v2"])
    with pytest.raises(SocialOmniError, match="both a reply and a failed generation"):
        how_metrics({}, {"v1": True}, {"v1": False}, n_gold=1, generation_failed={"v1"})


def test_non_strict_keeps_cov_plus() -> None:
    m = how_metrics({"v1": [75, 75]}, {"v1": True, "v2": False}, {"v1": False, "v2": True}, n_gold=2, strict=False)
    assert not m.complete
    assert (m.qgold, m.qens, m.qens_joint) == (None, None, None)
    assert m.cov_plus == pytest.approx(50.0)
    # without a reply the coverage itself is unknown
    assert how_metrics({}, {"v1": True}, {}, n_gold=1, strict=False).cov_plus is None
    # nor while gold items have no record at all
    assert how_metrics({"v1": [75, 75]}, {"v1": True}, {"v1": False}, strict=False).cov_plus is None


def test_scores_of_empty_replies_are_ignored() -> None:
    m = how_metrics({"v1": [100, 100, 100]}, {"v1": True}, {"v1": True}, n_gold=1)
    assert m.complete and m.qgold == 0.0 and m.n_covered == 0 and m.qens is None


def test_how_metrics_errors_and_access() -> None:
    with pytest.raises(SocialOmniError, match="n_gold"):
        how_metrics({}, {}, {}, n_gold=0)
    with pytest.raises(SocialOmniError, match="3 How items given but n_gold is 2"):
        how_metrics({}, {"a": True, "b": True, "c": True}, {"a": True, "b": True, "c": True}, n_gold=2)
    m = how_metrics({"v1": [50, 50, 50]}, {"v1": True}, {"v1": False}, n_gold=1)
    assert isinstance(m, HowMetrics)
    assert m["qens"] == m.qens == 50.0
    assert m["complete"] is True
    with pytest.raises(KeyError):
        m["nope"]
    dumped = m.model_dump()
    assert {"qgold", "qens", "cov_plus", "qens_joint", "n_gold", "n_covered", "complete", "missing"} <= set(dumped)
    assert set(m.keys()) == set(dumped)


_item = st.tuples(
    st.one_of(st.none(), st.lists(st.sampled_from([0, 25, 50, 75, 100]), min_size=3, max_size=3)),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_item, max_size=20), st.booleans())
def test_how_invariants(rows: list[tuple[list[int] | None, bool, bool]], full_gold: bool) -> None:
    ids = [f"v{k}" for k in range(len(rows))]
    qualities = {i: s for i, (s, _, _) in zip(ids, rows, strict=True)}
    predicted_yes = {i: y for i, (_, y, _) in zip(ids, rows, strict=True)}
    empty = {i: e for i, (_, _, e) in zip(ids, rows, strict=True)}
    m = how_metrics(qualities, predicted_yes, empty, n_gold=20, full_gold=full_gold)
    judged_all = all(e or s is not None for s, _, e in rows)
    all_there = len(rows) == 20 or not full_gold  # with full_gold, the 20 gold items all need a record
    assert m.complete == (judged_all and all_there)
    assert m.n_missing == (20 - len(rows) if full_gold else 0)
    if not m.complete:
        assert (m.qgold, m.qens, m.cov_plus, m.qens_joint) == (None, None, None, None)
        return
    covered = [(s, y, e) for s, y, e in rows if y and not e]
    assert m.n_covered == len(covered)
    assert m.cov_plus == pytest.approx(100 * len(covered) / 20)
    assert (m.qgold is None) == (not full_gold)
    if covered:
        assert m.qens_joint == pytest.approx(m.qens * m.cov_plus / 100)
        assert 0 <= m.qens <= 100
    else:
        assert m.qens is None and m.qens_joint == 0
    if full_gold:
        total = sum(sum(s) / 3 for s, _, e in rows if not e and s is not None)
        assert m.qgold == pytest.approx(total / 20)
