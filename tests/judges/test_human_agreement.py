"""Judges against people (`judges agree RUN --human LABELS`): the labels file, the figures, the command, the report."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.judges import (
    HumanLabelsError,
    Judgment,
    human_agreement,
    read_human_labels,
    render_human_agreement,
    wilson,
)
from omnivchat.judges._decisions import cohen_kappa, krippendorff_alpha
from omnivchat.judges._human import HumanLabel

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_LABELS = ROOT / "examples" / "labels" / "example-bench.csv"
EXAMPLE_MODEL = "sim:custom?video=0.5&audio=0.6&seed=1"  # the run the example labels were made on (their header)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def label(rater: str, item: str, criterion: int, met: bool, reply: str | None = None) -> HumanLabel:
    return HumanLabel(rater, item, criterion, met, reply, where=f"labels.csv:{criterion}")


def judgment(judge: str, item: str, hits: set[int] | None, tiers=(0, 1, 1, 2)) -> Judgment:
    return Judgment(item_id=item, subcategory="SVMR", judge=judge, tiers=tiers, hits=hits)


def figures(judgments, labels, judges, replies=None, **kw):
    replies = replies if replies is not None else {j.item_id: "a reply" for j in judgments}
    rubrics = {i: (0, 1, 1, 2) for i in [*replies, *(x.item_id for x in labels)] if i != "typo"}
    return human_agreement(
        judgments, labels, judges, rubrics=rubrics, replies=replies, labels_file="l.csv", labels_digest="0" * 64, **kw
    )


def row(report, judge, tier="all"):
    (found,) = [r for r in report.rows if r.judge == judge and r.tier == tier]
    return found


# --- reading the file -------------------------------------------------------------------------------------------


def test_csv_with_notes_and_jsonl_read_alike(tmp_path):
    text = '# labelled by hand\n\nrater,instance,criterion,met,reply,note\nr1,a,1,1,"Yes, on the right.",ok\n'
    text += "r1,a,2,no,,\nr2 , a ,3, Met ,,\n"
    labels = read_human_labels(write(tmp_path, "l.csv", text))
    assert [(x.rater, x.item_id, x.criterion, x.met, x.reply) for x in labels] == [
        ("r1", "a", 1, True, "Yes, on the right."),
        ("r1", "a", 2, False, None),
        ("r2", "a", 3, True, None),
    ]
    assert labels[0].where.endswith("l.csv:4") and labels[2].where.endswith("l.csv:6")
    jsonl = '{"rater": "r1", "instance": "a", "criterion": 1, "met": true, "reply": "Yes, on the right."}\n\n'
    jsonl += '{"rater": "r1", "instance": "a", "criterion": 2, "met": 0}\n'
    again = read_human_labels(write(tmp_path, "l.jsonl", jsonl))
    assert [(x.criterion, x.met, x.reply) for x in again] == [(1, True, "Yes, on the right."), (2, False, None)]
    assert again[1].where.endswith("l.jsonl:3")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("l.txt", "rater,instance,criterion,met\n", "a .csv or .jsonl file"),
        ("l.csv", "", "no header line"),
        ("l.csv", "rater,instance,criterion,met\n", "no label in the file"),
        ("l.csv", "rater,instance,criterion,met\nr,a,1,maybe\n", "l.csv:2: met must be 1 or 0"),
        ("l.csv", "rater,instance,criterion,met\nr,a,0,1\n", "l.csv:2: criterion numbers start at 1"),
        ("l.csv", "rater,instance,criterion,met\nr,a,two,1\n", "l.csv:2: criterion must be a whole number"),
        ("l.csv", "rater,instance,criterion,met\nr,a,1.5,1\n", "l.csv:2: criterion must be a whole number"),
        ("l.csv", "rater,instance,criterion,met\nr,a,\u00b2,1\n", "l.csv:2: criterion must be a whole number"),
        ("l.csv", "rater,instance,criteria,met\nr,a,1,1\n", "l.csv:1: unknown column(s) 'criteria' in the header"),
        ("l.csv", "# n\nrater,instance,criterion,met,extra\nr,a,1,1\n", "l.csv:2: unknown column(s) 'extra'"),
        ("l.csv", "rater,instance,criterion,met\nr,a,1,1\n# a late note\n", "l.csv:3: a '#' line after the header"),
        (
            "l.csv",
            'rater,instance,criterion,met,reply\nr,a,1,1,"two\nlines"\nr,a,x,1,"three\n\nlines"\n',
            "l.csv:4: criterion must be a whole number",
        ),  # a record spanning lines is named by its first line
        ("l.csv", "rater,instance,criterion,met\n,a,1,1\n", "l.csv:2: no rater"),
        ("l.csv", "rater,instance,criterion,met\nr,a,1,1,extra\n", "l.csv:2: more fields than the header"),
        ("l.csv", "rater,instance,instance,met\nr,a,b,1\n", "a column is named twice"),
        ("l.csv", 'rater,instance,criterion,met\nr,a,1,1\nr,"a\n', "l.csv:"),
        ("l.csv", "# n\nrater,instance,criterion,met\nr,a,1,1\nr,a,1,0\n", "l.csv:4: rater 'r' labels criterion 1"),
        ("l.jsonl", '{"rater": "r", "instance": "a", "criterion": 1, "met": 1}\n{"rater"\n', "l.jsonl:2: not JSON"),
        ("l.jsonl", "[1, 2]\n", "l.jsonl:1: a label is a JSON object"),
        ("l.jsonl", '{"rater": "r", "instance": "a", "criterion": true, "met": 1}\n', "whole number"),
        ("l.jsonl", '{"rater": "r", "instance": "a", "criterion": 1, "met": 1, "reply": 3}\n', "reply must be text"),
        (
            "l.jsonl",
            '{"rater": "r", "instance": "a", "criterion": 1, "met": 1, "met": 0}\n',
            "l.jsonl:1: the key 'met' is given twice",
        ),
        (
            "l.jsonl",
            '{"rater": "r", "instance": "a", "criterion": 1, "met": 1, "x": {"a": 1, "a": 2}}\n',
            "l.jsonl:1: unknown field(s) 'x'",
        ),
        ("l.jsonl", '{"rater": ["r"], "instance": "a", "criterion": 1, "met": 1}\n', "l.jsonl:1: rater must be text"),
        ("l.jsonl", '{"rater": "r", "instance": 7, "criterion": 1, "met": 1}\n', "l.jsonl:1: instance must be text"),
        ("l.csv", "rater,instance,criterion,met\nr,a,\u0662,1\n", "l.csv:2: criterion must be a whole number"),
        ("l.csv", "rater,instance,criterion,met\nr,a,\uff12,1\n", "l.csv:2: criterion must be a whole number"),
        (
            "l.csv",
            'rater,instance,criterion,met,reply\nr,a,1,1,"a\nb"\nr,a,2,1,"open\nr,a,3,1,x\n',
            "l.csv:4: not CSV",
        ),  # an unterminated quote: named where its record begins
    ],
)
def test_a_broken_labels_file_is_one_error_naming_file_and_line(tmp_path, name, text, message):
    with pytest.raises(HumanLabelsError) as err:
        read_human_labels(write(tmp_path, name, text))
    assert message in str(err.value)


def test_a_duplicate_names_both_lines_and_missing_or_binary_files_are_named(tmp_path):
    path = write(tmp_path, "l.csv", "rater,instance,criterion,met\nr,a,1,1\nr,b,1,1\nr,a,1,0\n")
    with pytest.raises(HumanLabelsError, match=r"l\.csv:4: .* again \(first at .*l\.csv:2\)"):
        read_human_labels(path)
    with pytest.raises(HumanLabelsError, match="no such file"):
        read_human_labels(tmp_path / "absent.csv")
    (tmp_path / "folder.csv").mkdir()
    with pytest.raises(HumanLabelsError, match="is a directory; give the labels file"):
        read_human_labels(tmp_path / "folder.csv")
    with pytest.raises(HumanLabelsError, match="is a directory"):
        read_human_labels(tmp_path)
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(HumanLabelsError, match=r"bin.csv:1: not UTF-8 text \(byte 0xff\)"):
        read_human_labels(tmp_path / "bin.csv")


# --- the figures ------------------------------------------------------------------------------------------------


def test_counts_rates_and_kappa_against_a_hand_count():
    # people (one rater) on two replies: x met {1, 2, 3}, y met {1}; criterion 4 of both not met
    labels = [label("p", i, c, c in met) for i, met in (("x", {1, 2, 3}), ("y", {1})) for c in (1, 2, 3, 4)]
    # judge J: x {1, 2, 4} (a false accept on 4, a false miss on 3); y {1, 2} (a false accept on 2)
    judgments = [judgment("J", "x", {1, 2, 4}), judgment("J", "y", {1, 2})]
    report = figures(judgments, labels, ["J"], n_resamples=200)
    r = row(report, "J")
    assert (r.met_both, r.false_accepts, r.false_misses, r.unmet_both) == (3, 2, 1, 2)
    assert (r.n_decisions, r.n_items, r.n_unscored, r.n_not_graded) == (8, 2, 0, 0)
    assert r.accuracy.model_dump() == wilson(5, 8)
    assert r.false_miss_rate.model_dump() == wilson(1, 4) and r.false_accept_rate.model_dump() == wilson(2, 4)
    people = [1, 1, 1, 0, 1, 0, 0, 0]
    judge = [1, 1, 0, 1, 1, 1, 0, 0]
    assert r.kappa == pytest.approx(cohen_kappa(people, judge))
    # per tier: tier 1 holds criteria 2 and 3 of both replies
    t1 = row(report, "J", "1")
    assert (t1.met_both, t1.false_accepts, t1.false_misses, t1.unmet_both) == (1, 1, 1, 1)
    assert [x.tier for x in report.rows] == ["all", "0 (gate)", "1", "2"]
    assert report.panel == [] and "one judge" in report.notes["panel"]
    assert report.n_units == 8 and report.raters == ["p"]


def test_an_unusable_verdict_is_unscored_and_never_a_miss_and_the_panel_needs_every_judge():
    labels = [label("p", i, c, True) for i in ("x", "y", "z") for c in (1, 2, 3, 4)]
    judgments = [
        judgment("A", "x", {1, 2, 3, 4}),
        judgment("B", "x", {1, 2}),
        judgment("C", "x", {1, 3}),
        judgment("A", "y", {1, 2, 3, 4}),
        judgment("B", "y", None),  # did not parse
        judgment("C", "y", {1}),
        judgment("A", "z", {1}),
        judgment("B", "z", {1}),  # C never graded z
    ]
    report = figures(judgments, labels, ["A", "B", "C"], n_resamples=100)
    b = row(report, "B")
    assert (b.n_decisions, b.n_unscored, b.n_not_graded) == (8, 4, 0)
    assert b.false_misses == 5  # x misses 3 and 4, z misses 2, 3 and 4; y counts as unscored, not as 4 misses
    c = row(report, "C")
    assert (c.n_decisions, c.n_unscored, c.n_not_graded) == (8, 0, 4)
    panel = row(report, "panel")
    assert report.panel == ["A", "B", "C"]
    # only x has a usable verdict from every judge: majority of {1234}, {12}, {13} is {1, 2, 3}
    assert (panel.n_decisions, panel.n_unscored, panel.n_not_graded) == (4, 4, 4)
    assert (panel.met_both, panel.false_misses) == (3, 1)
    assert "false_accept_rate" in panel.notes  # people found every criterion met: no false accept to count


def test_stale_labels_ties_and_replies_the_run_lacks_are_left_out_and_counted():
    labels = [
        label("p1", "x", 1, True, reply="the reply"),
        label("p2", "x", 1, True, reply="  the \n reply \n"),  # the same text, other whitespace
        label("p1", "x", 2, True, reply="an older reply"),  # stale
        label("p1", "x", 3, True),
        label("p2", "x", 3, False),  # a tie on x/3
        label("p1", "gone", 1, True),  # the run has no reply for it
    ]
    report = figures([judgment("J", "x", {1, 3})], labels, ["J"], replies={"x": "the reply"}, n_resamples=50)
    assert (report.n_labels, report.n_stale, report.n_no_reply, report.n_ties, report.n_units) == (6, 1, 1, 1, 1)
    (pair,) = report.rater_pairs
    assert (pair.rater_a, pair.rater_b, pair.n_decisions) == ("p1", "p2", 2)
    assert pair.agreement.k == 1 and pair.agreement.n == 2


def test_labels_naming_what_the_run_does_not_have_are_refused_naming_the_line():
    judgments = [judgment("J", "x", {1})]
    with pytest.raises(ValueError, match=r"labels\.csv:7: 'x' has 4 criteria, no criterion 7"):
        figures(judgments, [label("p", "x", 7, True)], ["J"])
    with pytest.raises(ValueError, match=r"labels\.csv:1: the bench has no instance 'typo'"):
        figures(judgments, [label("p", "typo", 1, True)], ["J"])
    # an instance the run replied to but no judge graded: not graded, counted, never a miss
    report = figures(judgments, [label("p", "y", 1, True)], ["J"], replies={"x": "r", "y": "r"})
    assert (row(report, "J").n_decisions, row(report, "J").n_not_graded) == (0, 1)
    with pytest.raises(ValueError, match="judge 'K' has no verdict"):
        figures(judgments, [label("p", "x", 1, True)], ["J", "K"])


def test_raters_agreement_is_kappa_and_alpha_of_their_labels():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 2, size=24)
    flips = [rng.random(24) < p for p in (0.0, 0.15, 0.3)]
    said = {f"r{k}": [bool(t ^ f) for t, f in zip(truth, flip, strict=True)] for k, flip in enumerate(flips)}
    items = [f"i{n // 4}" for n in range(24)]
    labels = [
        label(r, items[n], n % 4 + 1, said[r][n]) for r in said for n in range(24) if not (r == "r2" and n == 5)
    ]  # r2 skipped one criterion: alpha takes a missing value
    judgments = [judgment("J", f"i{k}", {1}) for k in range(6)]
    report = figures(judgments, labels, ["J"], n_resamples=50)
    pairs = {(p.rater_a, p.rater_b): p for p in report.rater_pairs}
    expected = cohen_kappa([int(x) for x in said["r0"]], [int(x) for x in said["r1"]])
    assert pairs[("r0", "r1")].kappa == pytest.approx(expected) and pairs[("r0", "r2")].n_decisions == 23
    matrix = [[float(said[r][n]) if not (r == "r2" and n == 5) else np.nan for n in range(24)] for r in said]
    assert report.rater_alpha == pytest.approx(krippendorff_alpha(matrix))


def test_the_kappa_interval_is_seeded_holds_the_kappa_and_is_none_when_it_cannot_spread():
    labels = [label("p", f"i{k}", c, (k + c) % 3 == 0) for k in range(10) for c in (1, 2, 3, 4)]
    judgments = [judgment("J", f"i{k}", {c for c in (1, 2, 3, 4) if (k * c) % 3 == 0}) for k in range(10)]
    a = row(figures(judgments, labels, ["J"], n_resamples=300, seed=1), "J")
    b = row(figures(judgments, labels, ["J"], n_resamples=300, seed=1), "J")
    assert a.kappa_interval == b.kappa_interval and a.kappa_interval is not None
    assert a.kappa_interval[0] <= a.kappa <= a.kappa_interval[1]
    perfect = [judgment("J", f"i{k}", {c for c in (1, 2, 3, 4) if (k + c) % 3 == 0} or None) for k in range(10)]
    p = row(figures(perfect, labels, ["J"], n_resamples=100), "J")
    assert p.kappa == 1.0 and p.kappa_interval is None and "every resample gives 1.000" in p.notes["kappa_interval"]
    one = row(figures(judgments[:1], labels[:4], ["J"], n_resamples=100), "J")
    assert one.kappa_interval is None


# --- the command and the report on the example bench -----------------------------------------------------------


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("labelled") / "run"
    result = runner.invoke(app, ["eval", "--bench", str(ROOT / "examples/bench"), "--model", EXAMPLE_MODEL,
                                 "-o", str(out), "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_the_example_labels_against_the_rule_judge(example_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(example_run, run)
    result = runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(EXAMPLE_LABELS)])
    assert result.exit_code == 0, result.output
    assert "Judges against people" in result.output and "Raters against each other" in result.output
    # one judge: no decomposition to count subcategories of, and one "n/a (...)" per cell, not two
    assert "(0 subcategories)" not in result.output and "ratio) / n/a" not in result.output.replace("\n", "")
    human = json.loads((run / "agreement.json").read_text())["human"]
    # what the file says, counted here from the file itself
    lines = [x for x in EXAMPLE_LABELS.read_text().splitlines() if not x.startswith("#")]
    rows = list(csv.DictReader(lines))
    votes: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        votes.setdefault((r["instance"], r["criterion"]), []).append(r["met"])
    ties = sum(1 for v in votes.values() if len(set(v)) == 2 and len(v) == 2)
    assert (human["n_labels"], human["n_stale"], human["n_ties"]) == (len(rows), 0, ties)
    assert human["n_units"] == len(votes) - ties and human["raters"] == ["rater-1", "rater-2"]
    by = {
        r["rater"]: {(x["instance"], x["criterion"]): x["met"] for x in rows if x["rater"] == r["rater"]} for r in rows
    }
    same = sum(by["rater-1"][u] == by["rater-2"][u] for u in by["rater-1"])
    (pair,) = human["rater_pairs"]
    assert pair["agreement"]["k"] == same and pair["agreement"]["n"] == len(by["rater-1"])
    # the rule judge cannot decide unchecked criteria: those replies are unscored, never counted as misses
    overall = next(r for r in human["rows"] if r["judge"] == "rule" and r["tier"] == "all")
    assert overall["n_unscored"] > 0 and overall["n_decisions"] + overall["n_unscored"] == human["n_units"]
    assert human["labels_sha256"] == __import__("hashlib").sha256(EXAMPLE_LABELS.read_bytes()).hexdigest()


def test_labels_of_another_reply_are_stale_and_a_bad_file_is_one_line(example_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(example_run, run)
    text = EXAMPLE_LABELS.read_text().replace("The taller one is the blue cup", "The taller one is the red cup", 1)
    edited = write(tmp_path, "edited.csv", text)
    result = runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(edited)])
    assert result.exit_code == 0, result.output
    assert json.loads((run / "agreement.json").read_text())["human"]["n_stale"] == 1
    before = (run / "agreement.json").read_bytes()
    bad = write(tmp_path, "bad.csv", "rater,instance,criterion,met\nr,ex-dr-en,9,1\n")
    result = runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(bad)])
    assert result.exit_code == 2 and "bad.csv:2: 'ex-dr-en' has 4 criteria, no criterion 9" in result.output
    assert (run / "agreement.json").read_bytes() == before  # nothing already written is lost
    typo = write(tmp_path, "typo.csv", "# notes\nrater,instance,criterion,met\nr,ex-dr-en,1,1\nr,ex-dr-eng,1,1\n")
    result = runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(typo)])
    assert result.exit_code == 2 and "typo.csv:4: the bench has no instance 'ex-dr-eng'" in result.output
    alone = runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule"])
    assert alone.exit_code == 2 and "one is enough with --human" in alone.output


def test_the_report_shows_people_beside_table_2(example_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(example_run, run)
    assert (
        runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(EXAMPLE_LABELS)]).exit_code
        == 0
    )
    assert runner.invoke(app, ["score", str(run), "--panel", "rule", "--allow-incomplete"]).exit_code == 0
    page = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(run), "-o", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert html.index("Judge agreement") < html.index("Judges against people")
    assert 'class="agreement-human"' in html and 'class="agreement-raters"' in html
    assert "human.rows[0].accuracy" in html  # every figure traced to its key in agreement.json
    assert "human labels" in html and str(EXAMPLE_LABELS) in html  # the labels file is one of the inputs
    # ... named by its full path: the tables' paths stay relative to the runs' folder, not to "/"
    assert f'relative to <span class="path">{tmp_path.resolve()}</span>' in html
    assert 'class="agreement-pairs"' not in html  # one judge: no empty table of judge pairs
    # the labels edited after the study: the report says its figures are of the file as it was
    labels = tmp_path / "labels.csv"
    shutil.copy(EXAMPLE_LABELS, labels)
    assert runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(labels)]).exit_code == 0
    labels.write_text(labels.read_text() + "rater-3,ex-dr-en,1,1,,\n")
    result = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "again.html")])
    assert result.exit_code == 0, result.output
    assert "changed after the study" in (tmp_path / "again.html").read_text()


def test_render_one_rater_has_no_raters_table():
    labels = [label("p", "x", c, c < 3) for c in (1, 2, 3, 4)]
    report = figures([judgment("J", "x", {1, 2})], labels, ["J"], n_resamples=20)
    tables = render_human_agreement(report)
    assert len(tables) == 1 and "One rater" in str(tables[0].caption)


def test_met_takes_the_documented_words_in_any_case(tmp_path):
    words = ["1", "0", "true", "False", "yes", "NO", "y", "n", "met", "Not Met", "unmet"]
    text = "rater,instance,criterion,met\n" + "".join(f"r,a,{k},{w}\n" for k, w in enumerate(words, start=1))
    met = [x.met for x in read_human_labels(write(tmp_path, "l.csv", text))]
    assert met == [True, False, True, False, True, False, True, False, True, False, False]


def test_no_decision_compared_says_so_once_and_no_usable_label_is_not_one_rater():
    # every label stale: no unit, no rater; the rates say "no decision", not "none met" beside "every one met"
    labels = [label("p", "x", c, True, reply="another reply") for c in (1, 2)]
    report = figures([judgment("J", "x", {1})], labels, ["J"], replies={"x": "the reply"}, n_resamples=20)
    r = row(report, "J")
    assert r.n_decisions == 0 and {r.notes[k] for k in ("accuracy", "false_miss_rate", "false_accept_rate")} == {
        "n/a (no decision compared)"
    }
    (table,) = render_human_agreement(report)
    caption = str(table.caption)
    assert "2 labels, none usable" in caption and "0 (reply, criterion) units" in caption
    assert "One rater" not in caption and "2 stale" in caption
    one = figures([judgment("J", "x", {1})], labels[:1], ["J"], replies={"x": "another reply"}, n_resamples=20)
    assert "1 label, 1 usable rater (p); 1 (reply, criterion) unit with" in str(render_human_agreement(one)[0].caption)


def test_many_raters_give_alpha_over_all_and_no_quadratic_pair_table():
    from omnivchat.judges._human import MAX_RATER_PAIRS

    n = 250  # 31,125 pairs if every pair were tabled
    labels = [label(f"r{k:03}", f"i{i}", c, (k + i + c) % 5 != 0) for k in range(n) for i in range(4) for c in (1, 2)]
    judgments = [judgment("J", f"i{i}", {1}) for i in range(4)]
    report = figures(judgments, labels, ["J"], n_resamples=20)
    assert len(report.raters) == n and report.rater_pairs == [] and report.rater_alpha is not None
    assert f"more than {MAX_RATER_PAIRS}" in report.notes["rater_pairs"]
    (table,) = render_human_agreement(report)
    assert "α over all raters" in str(table.caption) and "and 240 more" in str(table.caption)
    few = figures(judgments, [x for x in labels if x.rater < f"r{MAX_RATER_PAIRS:03}"], ["J"], n_resamples=20)
    assert len(few.rater_pairs) == MAX_RATER_PAIRS * (MAX_RATER_PAIRS - 1) // 2 and "rater_pairs" not in few.notes


# --- a run judged in part, and the run directory's own file -----------------------------------------------------


def test_a_reply_the_judge_never_graded_is_not_graded_and_missing_never_unscored(small_bench, tmp_path):
    from omnivchat.benchmarks.native import run_eval
    from omnivchat.routes import get_route
    from omnivchat.testing import Behaviour, LoopbackServer

    run = tmp_path / "run"
    assert run_eval(small_bench, get_route("sim:healthy"), run, system_prompt="x", progress=False).done == 4
    verdict = Behaviour(text='{"hits": [1], "reasoning": "r"}', usage={"prompt_tokens": 0, "completion_tokens": 1000})
    with LoopbackServer(verdict) as server:
        judge = {"name": "A", "model": "a", "base_url": server.base_url, "max_concurrency": 1, "max_tokens": 2048,
                 "price": {"input_per_mtok": 0.0, "output_per_mtok": 100.0}}  # fmt: skip
        path = tmp_path / "judges.json"
        path.write_text(json.dumps({"judges": [judge], "panels": {"default": ["A"]}}))
        stopped = runner.invoke(app, ["judge", str(run), "--judges", str(path), "--no-progress", "--budget", "0.25"])
        assert stopped.exit_code == 3, stopped.output  # one verdict bought of four: the run is judged in part
    ids = [i.id for i in small_bench.instances]
    labels = write(tmp_path, "l.csv", "rater,instance,criterion,met\n" + "".join(f"p,{i},1,1\n" for i in ids))
    result = runner.invoke(app, ["judges", "agree", str(run), "--judges", "A,rule", "--human", str(labels)])
    assert result.exit_code == 0, result.output
    report = json.loads((run / "agreement.json").read_text())
    a = next(r for r in report["rows"] if r["judge"] == "A")
    assert (a["n_unscored"], a["n_missing"]) == (0, 3)
    people = next(r for r in report["human"]["rows"] if r["judge"] == "A" and r["tier"] == "all")
    assert (people["n_decisions"], people["n_unscored"], people["n_not_graded"]) == (1, 0, 3)


def test_the_default_output_replaces_only_an_agreement_report_and_waits_for_no_writer(example_run, tmp_path):
    from omnivchat.runs import run_lock

    run = tmp_path / "run"
    shutil.copytree(example_run, run)
    args = ["judges", "agree", str(run), "--judges", "rule", "--human", str(EXAMPLE_LABELS)]
    (run / "agreement.json").write_text('{"mine": "a file the tool did not write"}\n')
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "is not an agreement report this command wrote" in refused.output
    assert json.loads((run / "agreement.json").read_text()) == {"mine": "a file the tool did not write"}
    (run / "agreement.json").unlink()
    assert runner.invoke(app, args).exit_code == 0
    first = (run / "agreement.json").read_bytes()
    assert runner.invoke(app, [*args, "--seed", "1"]).exit_code == 0  # its own report: replaced
    assert (run / "agreement.json").read_bytes() != first
    with run_lock(run, "judge"):  # another writer of the run (here this thread's lock, held as another command's)
        import threading

        out: list = []
        worker = threading.Thread(target=lambda: out.append(runner.invoke(app, args)))
        worker.start()
        worker.join()
    assert out[0].exit_code != 0 and "is being written by" in out[0].output
    elsewhere = runner.invoke(app, [*args, "-o", str(tmp_path / "study.json")])
    assert elsewhere.exit_code == 0 and (tmp_path / "study.json").is_file()  # --output elsewhere takes no lock
    named = runner.invoke(app, [*args, "-o", str(run / "agreement.json")])  # the default, named: the same file
    assert named.exit_code == 0 and "agreement.json" in named.output


def test_a_run_that_cannot_be_locked_says_the_study_can_go_elsewhere(example_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(example_run, run)
    (run / ".lock").unlink(missing_ok=True)
    (run / ".lock").mkdir()  # the lock file cannot be opened (as on read-only storage, which root would write)
    args = ["judges", "agree", str(run), "--judges", "rule", "--human", str(EXAMPLE_LABELS)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "cannot open the lock file" in result.output and "--output FILE" in result.output
    assert not (run / "agreement.json").exists()
    assert runner.invoke(app, [*args, "-o", str(tmp_path / "study.json")]).exit_code == 0


def test_labels_on_the_rest_of_the_bench_of_a_shard_are_without_a_reply_here(tmp_path):
    run = tmp_path / "shard"
    args = ["eval", "--bench", str(ROOT / "examples/bench"), "--model", EXAMPLE_MODEL, "-o", str(run), "--no-progress"]
    assert runner.invoke(app, [*args, "--shard", "1/2"]).exit_code == 0
    result = runner.invoke(app, ["judges", "agree", str(run), "--judges", "rule", "--human", str(EXAMPLE_LABELS)])
    assert result.exit_code == 0, result.output
    human = json.loads((run / "agreement.json").read_text())["human"]
    assert 0 < human["n_no_reply"] < human["n_labels"]  # the other shard's instances: counted, not refused


def test_the_report_leaves_out_a_study_of_replies_the_run_no_longer_has(tmp_path):
    run = tmp_path / "run"
    args = ["eval", "--bench", str(ROOT / "examples/bench"), "--model", EXAMPLE_MODEL, "-o", str(run), "--no-progress"]
    assert runner.invoke(app, [*args, "--limit", "4"]).exit_code == 0
    agree = ["judges", "agree", str(run), "--judges", "rule", "--human", str(EXAMPLE_LABELS)]
    assert runner.invoke(app, agree).exit_code == 0
    assert runner.invoke(app, args).exit_code == 0  # the run completed after the study
    assert runner.invoke(app, ["score", str(run), "--panel", "rule", "--allow-incomplete"]).exit_code == 0
    result = runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r.html").read_text()
    assert "is out of date" in html and "Judges against people" not in html
    assert runner.invoke(app, agree).exit_code == 0  # made again: shown again
    assert runner.invoke(app, ["report", str(run), "-o", str(tmp_path / "r2.html")]).exit_code == 0
    assert "Judges against people" in (tmp_path / "r2.html").read_text()


def test_line_breaks_are_line_breaks_only_and_blank_cells_are_nothing(tmp_path):
    # U+2028 and a form feed inside a note are characters, not line ends (str.splitlines would break there)
    text = "# notes\u2028 by Ann\x0c\nrater,instance,criterion,met,reply,note\r\n"
    text += 'r1,a,1,1, ,"a\u2028b"\r\n   \r\n"#3",a,2,0,,\r\n'
    labels = read_human_labels(write(tmp_path, "l.csv", text))
    assert [(x.rater, x.criterion, x.reply, x.where[-5:]) for x in labels] == [
        ("r1", 1, None, "csv:3"),  # a reply of one space is no reply given (never a stale label)
        ("#3", 2, None, "csv:5"),  # a quoted value starting with # is a value; the line of spaces is skipped
    ]
    jsonl = '{"rater": "r1", "instance": "a", "criterion": 1, "met": 1, "note": "a\u2028b\u0085c"}\n'
    (only,) = read_human_labels(write(tmp_path, "l.jsonl", jsonl))
    assert only.where.endswith("l.jsonl:1")
    (tmp_path / "latin.csv").write_bytes(b"rater,instance,criterion,met,note\nr,a,1,1,caf\xe9\n")
    with pytest.raises(HumanLabelsError, match=r"latin\.csv:2: not UTF-8 text \(byte 0xe9\)"):
        read_human_labels(tmp_path / "latin.csv")


def test_a_judge_named_panel_is_refused_beside_a_panel_and_graded_as_itself_alone():
    labels = [label("p", "x", c, c in (1, 2)) for c in (1, 2, 3, 4)]
    alone = figures([judgment("panel", "x", {1, 2})], labels, ["panel"], n_resamples=20)
    assert row(alone, "panel").accuracy.k == 4 and alone.panel == []  # its own verdicts, not an empty majority
    with pytest.raises(ValueError, match="a judge is named 'panel'"):
        figures([judgment("panel", "x", {1}), judgment("B", "x", {1})], labels, ["panel", "B"], n_resamples=20)


def test_kappa_and_alpha_a_hair_below_zero_show_as_zero():
    from omnivchat.judges._human import _signed

    assert _signed(-0.0000001) == "0.000" and _signed(-0.0006) == "-0.001" and _signed(0.8554) == "0.855"
