"""`omnivchat rl curves`: Figure 4, checkpoint selection by development Subcategory Mean, and Appendix E.5 (level
and change correlations, block means over k checkpoints, the sign test), on scores.json files written by the real
writer (benchmarks.native.native_scores from judge items and their Table 1 row, saved by
benchmarks.save_scores)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from omnivchat._files import OutputError
from omnivchat.benchmarks import save_scores
from omnivchat.benchmarks.native import ItemScore, native_scores
from omnivchat.cli._app import Commands
from omnivchat.cli.rl import rl_app
from omnivchat.judges import BenchName
from omnivchat.rl.curves import (
    CURVES_SCHEMA,
    CheckpointScore,
    CurvesError,
    CurvesFile,
    EvalSpec,
    analyse,
    block_means,
    changes,
    eval_grid,
    pair_stats,
    parse_eval_spec,
    pearson,
    read_checkpoint,
    read_eval_index,
    read_evaluations,
    read_reward_logs,
    select_checkpoint,
    sign_test,
    write_curves,
)
from omnivchat.scoring import table1_row

# `rl_app` is registered in omnivchat.cli by another module; here it hangs under a local root with the same error
# handling (Commands: a user-facing error is one line and status 2).
app = typer.Typer(cls=Commands, no_args_is_help=True, add_completion=False)
app.add_typer(rl_app, name="rl")
runner = CliRunner()

MANIFEST = {
    "protocol": "omnivchat-run-v1",
    "benchmark": "omnivchat",
    "bench": {"name": "dev", "version": "1", "instances_sha256": "0" * 64, "n_instances": 2, "clips": {}},
    "prompts": {"system": {"sha256": "1" * 64, "source": "test"}},
    "route": {"model": "sim:healthy", "kind": "sim", "endpoint": "sim", "settings": {"route": "sim"}},
    "sampling": {},
    "condition": "both",
    "simulated": True,
    "package": {"version": "0.1.0", "source_sha256": "2" * 64},
}


def write_run(
    run_dir: Path,
    scores: Sequence[tuple[str, float | None]],
    *,
    failed: int = 0,
    source: str = "synthetic",
) -> Path:
    """A scored run directory: its manifest and the scores.json the real writer makes from judged items.

    ``scores`` are (subcategory, score) of replied items (a None score: a verdict that did not parse); ``failed``
    items have no reply (a failed request), which makes the run incomplete.
    """
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps(MANIFEST))
    (run_dir / "store.sqlite").write_bytes(b"")
    items = [
        ItemScore(
            f"i{n}", sub, source, "It is on your left.", score, None, "panel mean of 1" if score is not None else "?"
        )
        for n, (sub, score) in enumerate(scores)
    ]
    items += [ItemScore(f"f{n}", "SVMR", source, None, None, None, "request: server") for n in range(failed)]
    row = table1_row([i.scored_reply() for i in items])
    bench = BenchName(name="dev", version="1")
    save_scores(run_dir, native_scores(run_dir, bench, items, row, ["rule"], "mean", None))
    return run_dir


def point(set_name: str, step: int, value: float | None, *, excluded: str | None = None) -> CheckpointScore:
    """A checkpoint whose Pooled Mean and Subcategory Mean are both ``value``."""
    return CheckpointScore(
        set=set_name, step=step, path=f"{set_name}/{step}", subcategory_mean=value, pooled_mean=value, excluded=excluded
    )


def write_log(path: Path, rows: Sequence[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


LOG = [
    {"step": s, "r": 0.3 + s / 1000, "f": 1.0, "e": 0.5, "s": 0.75 + s / 400, "total": 1.2 + s / 500,
     "failures": 0, "grader_calls": 128, "cache_hits": 0, "reply_efficiency": 3.0 + s / 10, "reply_length": 90 - s / 2}
    for s in range(1, 101)
]  # fmt: skip

# Six checkpoints of two sets, in tenths (hand-computed statistics below).
DEV = [0.1, 0.3, 0.2, 0.5, 0.4, 0.6]
BENCH = [0.2, 0.3, 0.4, 0.4, 0.5, 0.7]
STEPS = [0, 20, 40, 60, 80, 100]


# --------------------------------------------------------------------------------------------- the maths (E.5)


def test_pearson_is_eq_13_by_hand() -> None:
    assert pearson([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)  # cov 1, variances 2 and 2
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert pearson([1, 2], [1, 2]) is None  # two points always correlate at +-1
    assert pearson([1, 2, 3], [5, 5, 5]) is None  # constant: undefined, never 0


def test_changes_and_block_means_by_hand() -> None:
    assert changes([0.1, 0.3, None, 0.4, 0.6]) == pytest.approx([0.2, None, None, 0.2])
    assert block_means([1, 2, 3, 4, 5, 6, 7], 3) == pytest.approx([2.0, 5.0])  # 7 fills no whole block
    assert block_means([1, 2, None, 4, 5, 6], 2) == pytest.approx([1.5, None, 5.5])  # a gap is not averaged over
    # The paper's grid: x_0..x_50 (51 points) in blocks of 5 cover x_0..x_49 and exclude x_50.
    paper = block_means([float(t) for t in range(51)], 5)
    assert len(paper) == 10 and paper[0] == 2.0 and paper[-1] == 47.0
    assert len(block_means([float(t) for t in range(51)], 10)) == 5


def test_sign_test_matches_the_papers_eight_of_nine() -> None:
    """Appendix E.5: eight agreements out of nine give a nominal two-sided p of 0.039 (exactly 20/512)."""
    du = [1, 1, 1, 1, 1, 1, 1, -1, 1]
    dv = [1, 1, 1, 1, 1, 1, 1, 1, 1]
    result = sign_test(du, dv)
    assert (result.agree, result.disagree, result.ties, result.n) == (8, 1, 0, 9)
    assert result.p == pytest.approx(20 / 512) and round(result.p, 3) == 0.039
    # Zero changes have no direction: excluded from the test and counted.
    tied = sign_test([0.1, -0.2, 0.0, 0.3], [0.2, -0.1, 0.5, 0.0])
    assert (tied.agree, tied.disagree, tied.ties, tied.n) == (2, 0, 2, 2) and tied.p == pytest.approx(0.5)
    assert sign_test([0.0], [1.0]).p is None


def test_pair_statistics_by_hand() -> None:
    dev = [point("dev", t, x) for t, x in zip(STEPS, DEV, strict=True)]
    bench = [point("bench", t, x) for t, x in zip(STEPS, BENCH, strict=True)]
    stats = pair_stats(dev, bench, blocks=[2, 3, 4])
    assert (stats.a, stats.b, stats.steps) == ("dev", "bench", STEPS)
    # Levels in tenths: deviations (-2.5 -0.5 -1.5 1.5 0.5 2.5) and (-13 -7 -1 -1 5 17)/6.
    assert stats.checkpoints.level.r == pytest.approx(13.5 / math.sqrt(17.5 * 534 / 36))
    assert stats.checkpoints.level.n == 6
    # Changes (2 -1 3 -1 2) and (1 1 0 1 2): deviations (1 -2 2 -2 1) and (0 0 -1 0 1).
    assert stats.checkpoints.change.r == pytest.approx(-1 / math.sqrt(14 * 2))
    assert stats.checkpoints.change.n == 5
    sign = stats.checkpoints.sign  # + +, - +, + 0 (tie), - +, + +
    assert (sign.agree, sign.disagree, sign.ties, sign.n, sign.p) == (2, 2, 1, 4, pytest.approx(1.0))
    k2, k3, k4 = stats.blocks
    # k = 2: block means (0.2 0.35 0.5) and (0.25 0.4 0.6).
    assert (k2.k, k2.blocks, k2.dropped) == (2, 3, 0)
    assert k2.level.r == pytest.approx(5.25 / math.sqrt(4.5 * 222 / 36)) and k2.level.n == 3
    assert k2.change.r is None and k2.change.n == 2 and k2.change.note == "fewer than 3 points"
    assert (k2.sign.agree, k2.sign.n, k2.sign.p) == (2, 2, pytest.approx(0.5))
    assert (k3.blocks, k3.dropped, k3.level.n, k3.change.n) == (2, 0, 2, 1)
    assert (k4.blocks, k4.dropped, k4.level.n, k4.change.n) == (1, 2, 1, 0) and k4.sign.p is None


def test_a_left_out_run_is_a_gap_not_a_zero() -> None:
    dev = [point("dev", t, x) for t, x in zip(STEPS, DEV, strict=True)]
    bench = [point("bench", t, x) for t, x in zip(STEPS, BENCH, strict=True)]
    bench[2] = point("bench", 40, None, excluded="incomplete: 1 of 2 items have no reply")
    stats = pair_stats(dev, bench, blocks=[2])
    kept = [i for i in range(6) if i != 2]
    assert stats.checkpoints.level.n == 5
    assert stats.checkpoints.level.r == pytest.approx(pearson([DEV[i] for i in kept], [BENCH[i] for i in kept]))
    assert stats.checkpoints.change.n == 3  # the two changes touching step 40 are gone, none spans the gap
    assert stats.blocks[0].level.n == 2  # the block holding step 40 is gone


def test_paper_sized_grid_blocks_of_five() -> None:
    """51 checkpoints (step 0 = base, every 20 steps to 1,000): 10 blocks of 5, x_50 excluded, 9 block changes."""
    steps = [20 * t for t in range(51)]
    rising = [0.4 + 0.004 * t + (0.01 if t % 2 else 0.0) for t in range(51)]
    other = [0.45 + 0.003 * t - (0.01 if t % 3 else 0.0) for t in range(51)]
    # Block 8 of the other set dips below block 7 so that 8 of 9 block changes agree.
    other[40:45] = [x - 0.05 for x in other[40:45]]
    stats = pair_stats(
        [point("dev", s, x) for s, x in zip(steps, rising, strict=True)],
        [point("probe", s, x) for s, x in zip(steps, other, strict=True)],
        blocks=[5, 10],
    )
    k5, k10 = stats.blocks
    assert (k5.blocks, k5.dropped, k5.level.n, k5.change.n) == (10, 1, 10, 9)
    assert (k5.sign.agree, k5.sign.n) == (8, 9) and round(k5.sign.p or 0, 3) == 0.039
    assert (k10.blocks, k10.dropped, k10.change.n) == (5, 1, 4)
    assert stats.checkpoints.level.n == 51 and stats.checkpoints.change.n == 50


# --------------------------------------------------------------------------------------------- selection


def test_selection_takes_the_best_dev_mean_and_the_earliest_of_a_tie() -> None:
    points = [point("dev", 0, 0.5), point("dev", 20, 0.7), point("dev", 40, 0.6), point("dev", 60, 0.7)]
    selection = select_checkpoint(points)
    assert selection.step == 20 and selection.tied == [20, 60] and selection.subcategory_mean == 0.7
    assert "tied with step 60: the earliest is selected" in selection.note


def test_selection_leaves_out_an_incomplete_run(tmp_path: Path) -> None:
    runs = {
        0: write_run(tmp_path / "ck0", [("SVMR", 0.4), ("AOR", 0.6)]),
        20: write_run(tmp_path / "ck20", [("SVMR", 1.0), ("AOR", 1.0)], failed=1),  # best, but incomplete
        40: write_run(tmp_path / "ck40", [("SVMR", 0.8), ("AOR", 0.6)]),
        60: tmp_path / "ck60",  # evaluated, not scored yet
    }
    runs[60].mkdir()
    grid = eval_grid(EvalSpec(set="dev", step=s, path=p, origin=f"dev:{s}") for s, p in runs.items())
    curves = read_evaluations(grid)
    selection = select_checkpoint(curves["dev"])
    assert selection.step == 40 and selection.subcategory_mean == pytest.approx(0.7) and selection.candidates == 2
    assert selection.left_out[20].startswith("incomplete: 1 of 3 items have no reply")
    assert selection.left_out[60].startswith("not scored: no scores.json")
    assert curves["dev"][1].value("subcategory") is None  # never 0


def test_scores_are_read_from_the_real_scores_file(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [("SVMR", 1.0), ("SVMR", 0.0), ("AOR", 0.5), ("AOR", None)])
    score = read_checkpoint(EvalSpec(set="dev", step=20, path=run / "scores.json"))
    assert score.usable and score.n_items == 4 and score.n_scored == 3 and score.n_unscored == 1
    assert score.subcategory_mean == pytest.approx((0.5 + 0.5) / 2)  # SVMR 0.5, AOR 0.5
    assert score.pooled_mean == pytest.approx(1.5 / 3)
    assert score.single == pytest.approx(0.5) and score.multi is None
    assert score.re == pytest.approx(1000 * 1.5 / (3 * 5)) and score.length == pytest.approx(5.0)
    # A subcategory of the bench with no scored item: no Mean over all of them (Eq. 2), the point left out
    partial = write_run(tmp_path / "partial", [("SVMR", 1.0), ("AOR", 0.5), ("MDCC", None)])
    score = read_checkpoint(EvalSpec(set="dev", step=20, path=partial))
    assert not score.usable and score.value("subcategory") is None
    assert score.excluded == "incomplete: Mean over 2 of 3 subcategories: 0.750 (unscored: MDCC)"
    # A Bench-Human run: only recorded items, whose Table 1 Mean is empty; its Subcategory Mean is still its own.
    human = write_run(tmp_path / "human", [("SVMR", 1.0), ("ICC", 0.0), ("ICC", 1.0)], source="human")
    score = read_checkpoint(EvalSpec(set="human", step=20, path=human))
    assert score.subcategory_mean == pytest.approx(0.75) and score.pooled_mean == pytest.approx(2 / 3)


def test_metric_chooses_pooled_or_subcategory_mean(tmp_path: Path) -> None:
    curves = {
        name: [point(name, t, x) for t, x in zip(STEPS, values, strict=True)]
        for name, values in (("dev", DEV), ("bench", BENCH))
    }
    # Make the subcategory means differ from the pooled ones: flat on bench.
    curves["bench"] = [p.model_copy(update={"subcategory_mean": 0.5}) for p in curves["bench"]]
    pooled = analyse([], [], curves, metric="pooled").pairs[0].checkpoints.level
    by_subcategory = analyse([], [], curves, metric="subcategory").pairs[0].checkpoints.level
    assert pooled.r == pytest.approx(pearson(DEV, BENCH)) and by_subcategory.r is None
    assert by_subcategory.note == "a constant sequence"


# --------------------------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "steps.jsonl:2: not a JSON object"),
        ("[1, 2]", "steps.jsonl:2: a JSON list, expected one object per line"),
        ('{"r": 0.5}', "steps.jsonl:2: no 'step'"),
        ('{"step": -1, "r": 0.5}', "steps.jsonl:2: step is -1"),
        ('{"step": 2, "r": "high"}', "steps.jsonl:2: r is 'high', expected a number or null"),
        ('{"step": 2, "r": NaN}', "steps.jsonl:2: r is nan, expected a finite number"),
        ('{"step": 1, "r": 0.5}', "steps.jsonl:2: step 1 is logged again (first at "),
    ],
)
def test_a_malformed_log_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write_log(tmp_path / "steps.jsonl", [{"step": 1, "r": 0.4}, line])
    with pytest.raises(CurvesError, match=None) as err:
        read_reward_logs([path])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_log_with_no_reward_term_is_refused(tmp_path: Path) -> None:
    path = write_log(tmp_path / "steps.jsonl", [{"step": 1, "loss": 0.4}])
    with pytest.raises(CurvesError, match="no line holds a reward term"):
        read_reward_logs([path])


def test_logs_accept_extra_fields_nulls_and_blank_lines(tmp_path: Path) -> None:
    path = write_log(tmp_path / "steps.jsonl", [{"step": 2, "r": None, "extra": [1]}, "", {"step": 1, "r": 0.3}])
    steps = read_reward_logs([path])
    assert [s.step for s in steps] == [1, 2] and steps[1].r is None and steps[0].reply_length is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dev20=runs/x", "expected SET:STEP=PATH"),
        ("dev:20", "expected SET:STEP=PATH"),
        ("dev:20=", "expected SET:STEP=PATH"),
        ("dev:twenty=runs/x", "step 'twenty' is not a whole number"),
        ("dev:-20=runs/x", "step '-20' is not a whole number"),
        ("1dev:20=runs/x", "set name '1dev' is not a plain name"),
        (":20=runs/x", "set name '' is not a plain name"),
    ],
)
def test_an_unknown_eval_syntax_is_one_line(text: str, message: str) -> None:
    with pytest.raises(CurvesError) as err:
        parse_eval_spec(text)
    assert message in str(err.value) and str(err.value).startswith(f"--eval {text!r}")


def test_eval_spec_and_index(tmp_path: Path) -> None:
    spec = parse_eval_spec("bench-zh:940=runs/ck940")
    assert (spec.set, spec.step, spec.path) == ("bench-zh", 940, Path("runs/ck940"))
    index = tmp_path / "evals" / "index.toml"
    index.parent.mkdir()
    index.write_text('[dev]\n0 = "base"\n20 = "/abs/ck20"\n[human]\n20 = "h20/scores.json"\n')
    specs = read_eval_index(index)
    assert [(s.set, s.step, s.path) for s in specs] == [
        ("dev", 0, index.parent / "base"),
        ("dev", 20, Path("/abs/ck20")),
        ("human", 20, index.parent / "h20" / "scores.json"),
    ]
    with pytest.raises(CurvesError, match=r"dev step 20 is also given by"):
        eval_grid([*specs, parse_eval_spec("dev:20=other")])


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("index.json", "{", "index.json: not valid JSON"),
        ("index.toml", "[dev", "index.toml: not valid TOML"),
        ("index.json", "[]", 'expected {"SET": {"STEP"'),
        ("index.json", '{"dev": ["a"]}', 'index.json: dev: expected {"SET"'),
        ("index.json", '{"dev": {"x": "a"}}', "index.json: dev.x: step 'x' is not a whole number"),
        ("index.json", '{"dev": {"20": 3}}', "index.json: dev.20: 3 is not a path"),
    ],
)
def test_a_bad_index_is_one_line(tmp_path: Path, name: str, text: str, message: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(CurvesError) as err:
        read_eval_index(tmp_path / name)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_missing_run_is_an_error_not_a_gap(tmp_path: Path) -> None:
    with pytest.raises(CurvesError, match=r"--eval 'dev:20=.*nope': .*nope does not exist"):
        read_checkpoint(parse_eval_spec(f"dev:20={tmp_path / 'nope'}"))


def test_another_benchmarks_scores_are_refused(tmp_path: Path) -> None:
    from omnivchat.judges import BenchmarkScores

    (tmp_path / "scores.json").write_text(BenchmarkScores(benchmark="socialomni").to_json())
    with pytest.raises(CurvesError, match="the scores of a socialomni run"):
        read_checkpoint(EvalSpec(set="dev", step=0, path=tmp_path))


def test_evaluations_without_the_development_set_are_refused() -> None:
    curves = {"bench": [point("bench", 0, 0.5)]}
    with pytest.raises(CurvesError, match=r"no evaluation set named 'dev' \(sets: bench\).*--select-on"):
        analyse([], [], curves)
    assert analyse([], [], curves, select_on="bench").selection is not None


# --------------------------------------------------------------------------------------------- plots and files


def _curves(tmp_path: Path) -> tuple[list[Path], dict[str, list[CheckpointScore]]]:
    log = write_log(tmp_path / "steps.jsonl", LOG)
    curves = {
        name: [point(name, t, x) for t, x in zip(STEPS, values, strict=True)]
        for name, values in (("dev", DEV), ("bench", BENCH), ("human", list(reversed(BENCH))))
    }
    return [log], curves


def test_plots_and_their_numbers_are_written(tmp_path: Path) -> None:
    logs, curves = _curves(tmp_path)
    steps = read_reward_logs(logs)
    result = analyse(logs, steps, curves, blocks=[2])
    out = tmp_path / "out"
    written = write_curves(out, steps, result)
    names = {p.name for p in written}
    for panel in ("reward-terms", "reply-efficiency", "reply-length", "heldout", "figure4"):
        assert {f"{panel}.png", f"{panel}.json"} <= names
        png = (out / f"{panel}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    terms = json.loads((out / "reward-terms.json").read_text())
    assert terms["step"] == [row["step"] for row in LOG]
    assert terms["r"] == [row["r"] for row in LOG] and terms["total"] == [row["total"] for row in LOG]
    assert json.loads((out / "reply-length.json").read_text())["reply_length"] == [row["reply_length"] for row in LOG]
    held = json.loads((out / "heldout.json").read_text())
    assert held["selected_step"] == 100 and held["sets"]["bench"]["subcategory_mean"] == BENCH
    assert json.loads((out / "figure4.json").read_text())["heldout"] == held
    saved = CurvesFile.model_validate_json((out / "curves.json").read_text())
    assert saved.schema_ == CURVES_SCHEMA and saved.selection is not None and saved.selection.step == 100
    assert [(p.a, p.b) for p in saved.pairs] == [("dev", "bench"), ("dev", "human"), ("bench", "human")]
    rows = list(csv.DictReader(io.StringIO((out / "correlations.csv").read_text())))
    level = next(r for r in rows if (r["a"], r["b"], r["k"], r["kind"]) == ("dev", "bench", "1", "level"))
    assert float(level["r"]) == pytest.approx(13.5 / math.sqrt(17.5 * 534 / 36)) and level["n"] == "6"
    change = next(r for r in rows if (r["a"], r["b"], r["k"], r["kind"]) == ("dev", "bench", "1", "change"))
    assert (change["agree"], change["disagree"], change["ties"]) == ("2", "2", "1")


def test_the_output_folder_is_refused_when_it_holds_something_else(tmp_path: Path) -> None:
    logs, curves = _curves(tmp_path)
    steps = read_reward_logs(logs)
    result = analyse(logs, steps, curves)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="is not empty and is not an rl curves folder"):
        write_curves(busy, steps, result)
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    # An earlier curves folder is replaced, and a panel this log cannot draw does not linger.
    out = tmp_path / "out"
    write_curves(out, steps, result)
    bare = write_log(tmp_path / "bare.jsonl", [{"step": 1, "r": 0.5}, {"step": 2, "r": 0.6}])
    bare_steps = read_reward_logs([bare])
    write_curves(out, bare_steps, analyse([bare], bare_steps, curves))
    assert not (out / "reply-length.png").exists() and not (out / "reply-efficiency.json").exists()
    assert json.loads((out / "reward-terms.json").read_text())["step"] == [1, 2]


# --------------------------------------------------------------------------------------------- the command


def test_rl_curves_end_to_end(tmp_path: Path) -> None:
    log = write_log(tmp_path / "steps.jsonl", LOG)
    args = ["rl", "curves", "--log", str(log), "-o", str(tmp_path / "out"), "--block", "2"]
    index: dict[str, dict[str, str]] = {"bench": {}}
    for t, d, b in zip(STEPS, DEV, BENCH, strict=True):
        # dev through --eval; bench through an index file with paths relative to it. Scores per subcategory.
        write_run(tmp_path / "dev" / f"ck{t}", [("SVMR", d), ("AOR", d)])
        args += ["--eval", f"dev:{t}={tmp_path / 'dev' / f'ck{t}'}"]
        write_run(tmp_path / "bench" / f"ck{t}", [("SVMR", b), ("MDCC", b)])
        index["bench"][str(t)] = f"bench/ck{t}"
    write_run(tmp_path / "dev" / "ck120", [("SVMR", 1.0)], failed=1)
    args += ["--eval", f"dev:120={tmp_path / 'dev' / 'ck120'}"]
    (tmp_path / "index.json").write_text(json.dumps(index))
    result = runner.invoke(app, [*args, "--evals", str(tmp_path / "index.json")], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "selected checkpoint: step 100" in result.output
    assert "dev step 120 left out: incomplete: 1 of 2 items have no reply" in result.output
    assert "Appendix E.5" in result.output and "dev–bench" in result.output and "blocks of 2 (3)" in result.output
    assert f"{13.5 / math.sqrt(17.5 * 534 / 36):.3f} (6)" in result.output
    assert "2/4 agree, p 1, 1 ties left out" in result.output
    assert f"wrote {tmp_path / 'out' / 'figure4.png'}" in result.output
    saved = json.loads((tmp_path / "out" / "curves.json").read_text())
    assert saved["checkpoints"]["dev"][-1]["excluded"].startswith("incomplete")
    # The same command again replaces its own folder.
    again = runner.invoke(app, [*args, "--evals", str(tmp_path / "index.json")], terminal_width=200)
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--eval", "dev20=x"], "error: --eval 'dev20=x': expected SET:STEP=PATH"),
        (["--eval", "dev:20={missing}"], "error: --eval 'dev:20={missing}': {missing} does not exist"),
        (["--log", "{bad}"], "error: {bad}:2: not a JSON object"),
        (["--metric", "median"], "error: --metric is pooled|subcategory, not 'median'"),
        (["--block", "1"], "Invalid value for '--block'"),
    ],
)
def test_rl_curves_bad_inputs_are_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    paths = {"bad": write_log(tmp_path / "bad.jsonl", [{"step": 1, "r": 0.5}, "oops"]), "missing": tmp_path / "gone"}
    args = [e.format(**paths) for e in extra]
    result = runner.invoke(app, ["rl", "curves", "-o", str(tmp_path / "out"), *args], terminal_width=400)
    assert result.exit_code == 2
    assert message.format(**paths) in result.output
    assert not (tmp_path / "out").exists()


def test_rl_curves_needs_inputs(tmp_path: Path) -> None:
    result = runner.invoke(app, ["rl", "curves", "-o", str(tmp_path / "out")], terminal_width=200)
    assert result.exit_code == 2 and "give a reward log (--log)" in result.output
