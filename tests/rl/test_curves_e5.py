"""`omnivchat rl curves`: the rest of Appendix E.5 (each curve's correlation with the training step, the residual SD
around a centered five-point moving average, the mean gain per checkpoint and the ratio σ̂/Δτ̄), hand-computed on
a small curve with its degenerate cases, and Figure 4's control: the Chinese items of the bench runs, read from
each run's real store (SQLite) beside its scores.json (written by the real writer)."""

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

from omnivchat.benchmarks import save_scores
from omnivchat.benchmarks.native import ItemScore, native_scores
from omnivchat.cli._app import Commands
from omnivchat.cli.rl import rl_app
from omnivchat.judges import BenchName
from omnivchat.rl.curves import (
    CheckpointScore,
    CurvesError,
    Estimate,
    add_control,
    analyse,
    curve_trend,
    eval_grid,
    item_languages,
    mean_gain,
    moving_average,
    noise_to_gain,
    parse_eval_spec,
    read_evaluations,
    residual_sd,
)
from omnivchat.runs import RunStore
from omnivchat.scoring import table1_row

app = typer.Typer(cls=Commands, no_args_is_help=True, add_completion=False)
app.add_typer(rl_app, name="rl")
runner = CliRunner()

STEPS = [0, 20, 40, 60, 80, 100]
X = [0.40, 0.46, 0.44, 0.50, 0.49, 0.55]
# The centered five-point moving average, its windows cut at the ends ("endpoint windows use all available points").
MA = [1.30 / 3, 1.80 / 4, 2.29 / 5, 2.44 / 5, 1.98 / 4, 1.54 / 3]
RESIDUALS = [-1 / 30, 1 / 100, -9 / 500, 3 / 250, -1 / 200, 11 / 300]


def curve(values: Sequence[float | None], name: str = "dev") -> list[CheckpointScore]:
    return [
        CheckpointScore(
            set=name,
            step=step,
            path=f"{name}/{step}",
            pooled_mean=x,
            subcategory_mean=x,
            excluded="incomplete run" if x is None else None,
        )
        for step, x in zip(STEPS, values, strict=True)
    ]


def test_moving_average_and_residual_sd_by_hand() -> None:
    assert moving_average(X) == pytest.approx(MA, abs=1e-12)
    assert [x - m for x, m in zip(X, MA, strict=True)] == pytest.approx(RESIDUALS, abs=1e-12)
    mean = sum(RESIDUALS) / 6
    sd = math.sqrt(sum((r - mean) ** 2 for r in RESIDUALS) / 6)  # population SD (divisor n), docs/rl.md
    noise = residual_sd(X)
    assert noise.value == pytest.approx(sd, abs=1e-12) and noise.note is None
    assert sd == pytest.approx(0.0225376, abs=1e-7)


def test_mean_gain_ratio_and_step_correlation_by_hand() -> None:
    assert mean_gain(X, STEPS).value == pytest.approx((0.55 - 0.40) / 5)
    trend = curve_trend(curve(X))
    assert trend.gain.value == pytest.approx(0.03)
    assert trend.noise.value == pytest.approx(0.0225376, abs=1e-7)
    assert trend.ratio.value == pytest.approx(0.0225376 / 0.03, abs=1e-5)
    # Ranks of X: 1 3 2 5 4 6 against 1..6: sum d^2 = 4, rho = 1 - 6*4/(6*35).
    assert trend.with_step.spearman == pytest.approx(1 - 24 / 210)
    assert trend.with_step.n == 6 and trend.window == 5 and trend.steps == STEPS


def test_the_ratio_is_noise_over_gain_as_the_paper_reports_it() -> None:
    # Appendix E.5: sigma 0.0066, 0.0044, 0.0113 against gains 0.0039, 0.0039, 0.0044: "range from 1.1 to 2.6".
    ratios = [
        noise_to_gain(Estimate(value=s), Estimate(value=g)).value
        for s, g in ((0.0066, 0.0039), (0.0044, 0.0039), (0.0113, 0.0044))
    ]
    assert [round(r, 1) for r in ratios if r is not None] == [1.7, 1.1, 2.6]


def test_degenerate_curves_are_undefined_with_a_reason_never_a_number() -> None:
    short = curve_trend(curve([0.4, 0.5, None, None, None, None])[:2])
    assert short.with_step.spearman is None and short.with_step.note == "fewer than 3 points"
    assert short.noise == Estimate(note="fewer than 3 points (2)")
    assert short.gain == Estimate(note="fewer than 3 checkpoints (2)")
    assert short.ratio.value is None and short.ratio.note is not None

    flat = curve_trend(curve([0.5] * 6))
    assert flat.with_step.r is None and flat.with_step.spearman is None and flat.with_step.note == "a constant sequence"
    assert flat.noise == Estimate(note="a constant curve")
    assert flat.gain == Estimate(value=0.0)  # a difference of two scores, not a statistic: 0 is its value
    assert flat.ratio == Estimate(note="no noise estimate: a constant curve")

    falling = curve_trend(curve(X[::-1]))
    assert falling.gain.value == pytest.approx(-0.03)
    assert falling.ratio.value is None and falling.ratio.note == "the curve did not rise (mean gain -0.03)"


def test_a_left_out_checkpoint_is_a_gap_in_the_window_and_no_end_for_the_gain() -> None:
    gap = [0.40, 0.46, None, 0.50, 0.49, 0.55]
    # The gap is skipped inside each window: x_1's window holds x_0, x_1, x_3; x_0's only x_0, x_1 (fewer than 3).
    assert moving_average(gap) == pytest.approx([None, 1.36 / 3, None, 2.00 / 4, 1.54 / 3, 1.54 / 3])
    trend = curve_trend(curve(gap))
    assert trend.noise.value is not None and trend.gain.value == pytest.approx(0.03)
    assert trend.with_step.n == 5
    last = curve_trend(curve([*X[:-1], None]))
    assert last.gain == Estimate(note="the last checkpoint (step 100) is left out")
    assert last.ratio.note == "no mean gain: the last checkpoint (step 100) is left out"
    sparse = [0.4, None, None, 0.5, None, 0.6]
    assert moving_average(sparse) == [None] * 6  # no window holds 3 present points
    assert residual_sd(sparse) == Estimate(note="fewer than 3 residuals (0): too many gaps")


# ---------------------------------------------------------------------------------------------------------------
# Figure 4's control set


MANIFEST = {
    "protocol": "omnivchat-run-v1",
    "benchmark": "omnivchat",
    "bench": {"name": "bench", "version": "1", "instances_sha256": "0" * 64, "n_instances": 4, "clips": {}},
    "prompts": {"system": {"sha256": "1" * 64, "source": "test"}},
    "route": {"model": "sim:healthy", "kind": "sim", "endpoint": "sim", "settings": {"route": "sim"}},
    "sampling": {},
    "condition": "both",
    "simulated": True,
    "package": {"version": "0.1.0", "source_sha256": "2" * 64},
}


def write_run(run_dir: Path, items: Sequence[tuple[str, str, float]]) -> Path:
    """A scored run directory: scores.json by the real writer and the run's real store, which keeps each item's
    language as `omnivchat eval` does; ``items`` are (subcategory, language, score)."""
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    with RunStore(run_dir / "store.sqlite") as store:
        for n, (sub, language, _) in enumerate(items):
            meta = {"subcategory": sub, "language": language, "source": "synthetic"}
            store.set_item(f"i{n}", "candidate", f"key{n}", None, meta)
    scored = [
        ItemScore(f"i{n}", sub, "synthetic", "It is on your left.", score, None, "panel mean of 1")
        for n, (sub, _, score) in enumerate(items)
    ]
    row = table1_row([i.scored_reply() for i in scored])
    bench = BenchName(name="bench", version="1")
    save_scores(run_dir, native_scores(run_dir, bench, scored, row, ["rule"], "mean", None))
    return run_dir


# zh items score z, en items 1 - z: the control curve must follow z alone.
ZH = [0.2, 0.4, 0.3, 0.6]


def bench_runs(root: Path, *, zh: bool = True) -> list[str]:
    specs = []
    for step, z in zip(STEPS, ZH, strict=False):
        language = "zh" if zh else "en"
        items = [("SVMR", language, z), ("AR", language, z), ("SVMR", "en", 1 - z), ("ER", "en", 1 - z)]
        specs.append(f"bench:{step}={write_run(root / f'bench{step}', items)}")
        human = [("SVMR", "zh", z / 2), ("AR", "zh", z / 2 + 0.1)]
        specs.append(f"human:{step}={write_run(root / f'human{step}', human)}")
        specs.append(f"dev:{step}={write_run(root / f'dev{step}', [('SVMR', 'en', z), ('ER', 'zh', 1 - z)])}")
    return specs


def test_the_control_is_the_chinese_items_of_the_bench_runs(tmp_path: Path) -> None:
    specs = bench_runs(tmp_path)
    assert item_languages(tmp_path / "bench0") == {"i0": "zh", "i1": "zh", "i2": "en", "i3": "en"}
    grid = eval_grid(parse_eval_spec(s) for s in specs)
    curves, control = add_control(read_evaluations(grid), grid)
    assert control.set == "bench-zh" and control.of == "bench" and control.absent is None
    assert list(curves) == ["bench", "human", "dev", "bench-zh"]
    assert [p.pooled_mean for p in curves["bench-zh"]] == pytest.approx(ZH)
    assert [p.subcategory_mean for p in curves["bench-zh"]] == pytest.approx(ZH)
    assert [p.pooled_mean for p in curves["bench"]] == pytest.approx([0.5] * 4)  # the whole run: z and 1 - z
    assert all(p.n_items == 2 and p.re is None for p in curves["bench-zh"])

    result = analyse([], [], curves, control=control)
    pairs = {(p.a, p.b) for p in result.pairs}
    assert ("human", "bench-zh") in pairs  # the paper's language-matched pair
    assert ("bench", "bench-zh") not in pairs  # a set and its own subset share instances
    assert [t.set for t in result.trends] == ["bench", "human", "dev", "bench-zh"]
    zh = result.trends[-1]
    assert zh.gain.value == pytest.approx((0.6 - 0.2) / 3)
    assert result.trends[0].with_step.note == "a constant sequence"  # bench's pooled 0.5 at every step


def test_the_control_is_absent_when_the_runs_hold_no_chinese_item(tmp_path: Path) -> None:
    grid = eval_grid(parse_eval_spec(s) for s in bench_runs(tmp_path, zh=False))
    curves, control = add_control(read_evaluations(grid), grid)
    assert control.set is None and "bench-zh" not in curves
    assert control.absent is not None and control.absent.startswith("the runs of bench hold no zh item")
    _, none = add_control({}, eval_grid([]))
    assert none.absent == "no evaluation set named 'bench'"


def test_a_set_named_like_the_control_is_refused(tmp_path: Path) -> None:
    specs = bench_runs(tmp_path)
    specs.append(f"bench-zh:0={tmp_path / 'dev0'}")
    grid = eval_grid(parse_eval_spec(s) for s in specs)
    with pytest.raises(CurvesError, match="'bench-zh' is given, and is also the name of bench's zh control"):
        add_control(read_evaluations(grid), grid)


def test_rl_curves_prints_and_writes_the_trends_and_the_control(tmp_path: Path) -> None:
    args = ["rl", "curves", "-o", str(tmp_path / "out")]
    for spec in bench_runs(tmp_path / "runs"):
        args += ["--eval", spec]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Figure 4 control: bench-zh, the zh items of bench" in result.output
    assert "Appendix E.5: each curve (Pooled Mean)" in result.output
    assert "n/a (a constant sequence)" in result.output  # bench's flat pooled curve
    data = json.loads((tmp_path / "out" / "curves.json").read_text(encoding="utf-8"))
    assert data["control"] == {"of": "bench", "language": "zh", "set": "bench-zh", "absent": None}
    assert [t["set"] for t in data["trends"]] == ["bench", "human", "dev", "bench-zh"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "trends.csv").read_text(encoding="utf-8"))))
    zh = rows[-1]
    assert zh["set"] == "bench-zh" and float(zh["gain"]) == pytest.approx(0.4 / 3) and zh["window"] == "5"
    assert rows[0]["spearman_step"] == "" and "step: a constant sequence" in rows[0]["notes"]
    held = json.loads((tmp_path / "out" / "heldout.json").read_text(encoding="utf-8"))
    assert held["sets"]["bench-zh"]["subcategory_mean"] == pytest.approx(ZH)

    plain = ["rl", "curves", "-o", str(tmp_path / "out2")]
    for spec in bench_runs(tmp_path / "runs2", zh=False):
        plain += ["--eval", spec]
    result = runner.invoke(app, plain, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Figure 4 control (zh items of bench): absent, the runs of bench hold no zh item" in result.output
