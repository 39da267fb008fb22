"""A partial run is not the bench: items never run count against it everywhere (score, judge, scores.json, the
report), and a command that ends with failed items says why, grouped by kind."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from omnivchat.benchmarks.native import collect_scores
from omnivchat.cli import app
from omnivchat.report import build_report

runner = CliRunner()


def test_a_limited_run_is_incomplete_against_the_bench(checked_bench, tmp_path):
    run_dir = tmp_path / "run"
    args = ["eval", "--bench", str(checked_bench.root), "--model", "sim:healthy", "-o", str(run_dir)]
    result = runner.invoke(app, [*args, "--limit", "3", "--no-progress"])
    assert result.exit_code == 0, result.output

    scores = collect_scores(run_dir, checked_bench, ["rule"])
    assert len(scores) == 8 and sum(not s.ran for s in scores) == 5
    assert all(s.score is None and s.reason == "not run" for s in scores if not s.ran)

    result = runner.invoke(app, ["score", str(run_dir), "--panel", "rule"], terminal_width=200)
    assert result.exit_code == 1, result.output
    assert "incomplete: 5 of 8 items have no reply (0 failed requests, 5 not run)" in result.output
    assert "INCOMPLETE" in result.output and "not run: 5" in result.output
    data = json.loads((run_dir / "scores.json").read_text())
    assert data["complete"] is False and data["incomplete"].startswith("incomplete: 5 of 8")
    table1 = data["metrics"]["table1"]
    assert (table1["n_instances"], table1["n_scored"], table1["n_not_run"]) == (8, 3, 5)
    assert sum(i["detail"]["not_run"] for i in data["items"]) == 5 and len(data["items"]) == 8

    accepted = runner.invoke(app, ["score", str(run_dir), "--panel", "rule", "--allow-incomplete"])
    assert accepted.exit_code == 0, accepted.output

    report = build_report([run_dir], tmp_path / "report.html")
    html = report.read_text()
    assert "INCOMPLETE" in html and "incomplete: 5 of 8 items have no reply" in html

    export = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "e.json")])
    assert export.exit_code == 2 and "3 of 8 done" in export.output and "5 not run" in export.output

    # resumed to the end, the same run is complete and scores with status 0
    assert runner.invoke(app, [*args, "--no-progress"]).exit_code == 0
    done = runner.invoke(app, ["score", str(run_dir), "--panel", "rule"])
    assert done.exit_code == 0, done.output
    assert json.loads((run_dir / "scores.json").read_text())["complete"] is True


def test_failed_items_are_explained_by_kind(small_bench, tmp_path):
    for instance in small_bench.instances:  # every clip broken: the user must learn it from the output
        small_bench.media_path(instance.turns[-1]).write_bytes(b"not a video at all")
    run_dir = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(run_dir), "--no-progress"]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 1
    assert "failed items by kind:" in result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("media: 4"))
    assert "(first: " in line and "turn" in line  # the first message names the clip

    result = runner.invoke(app, ["score", str(run_dir), "--panel", "rule"], terminal_width=200)
    assert result.exit_code == 1
    assert "unscored items by kind:" in result.output and "request: media: 4" in result.output
