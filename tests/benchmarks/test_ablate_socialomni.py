"""The ablation grid on another benchmark: SocialOmni's When task, through the Benchmark protocol, with the
harness self-check on the same data (simulated models told the gold answer) and When's chance level (1/2)."""

from __future__ import annotations

import json

from socialomni_factory import make_socialomni
from typer.testing import CliRunner

from omnivchat.cli import app

runner = CliRunner()


def test_ablate_runs_socialomni_when_with_its_chance_level(tmp_path):
    annotations, media, _contexts = make_socialomni(tmp_path / "data")
    out = tmp_path / "ablate"
    args = [
        "ablate", "--benchmark", "socialomni", "--data", str(annotations), "--media", str(media), "--task", "when",
        "--limit", "4", "--model", "sim:healthy", "-o", str(out), "--no-progress",
    ]  # fmt: skip
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ablation.json").read_text())
    assert data["benchmark"] == "socialomni" and data["self_check"]["passed"]
    diagnosis = data["diagnosis"]
    assert diagnosis["chance"] == 0.5 and diagnosis["means"]["both"] == 1.0 and diagnosis["verdict"] == "healthy"
    assert diagnosis["means"]["neither"] == 0.0 and not diagnosis["refused"]
    # every condition is a SocialOmni run with its own manifest (the condition recorded) and scores.json
    manifest = json.loads((out / "neither" / "manifest.json").read_text())
    assert manifest["protocol"] == "omnivchat-socialomni-v1" and manifest["condition"] == "neither:blank"
    scores = json.loads((out / "both" / "scores.json").read_text())
    assert scores["benchmark"] == "socialomni" and all(
        i["score"] == 1.0 for i in scores["items"] if i["task"] == "when"
    )


def test_a_benchmark_with_several_tasks_needs_one(tmp_path):
    annotations, media, _contexts = make_socialomni(tmp_path / "data")
    args = [
        "ablate", "--benchmark", "socialomni", "--data", str(annotations), "--media", str(media),
        "--limit", "4", "--model", "sim:healthy", "-o", str(tmp_path / "ab"), "--no-progress", "--skip-self-check",
    ]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "choose one with --task" in result.output
    # How is judged 0-100, not multiple choice: never pooled, and refused before anything is sent
    assert "how is not multiple choice" in " ".join(result.output.split())
    assert "condition 1 of 4" not in result.output and not (tmp_path / "ab").exists()


def test_the_report_shows_another_benchmarks_runs_and_grids(tmp_path):
    annotations, media, _contexts = make_socialomni(tmp_path / "data")
    out = tmp_path / "ablate"
    args = [
        "ablate", "--benchmark", "socialomni", "--data", str(annotations), "--media", str(media), "--task", "when",
        "--limit", "4", "--model", "sim:video-blind", "-o", str(out), "--no-progress", "--skip-self-check",
    ]  # fmt: skip
    assert runner.invoke(app, args).exit_code == 0
    report = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(out), "-o", str(report)])
    assert result.exit_code == 0, result.output
    html = report.read_text()
    assert 'id="others"' in html and "sim:video-blind" in html and "· socialomni" in html
    assert 'id="ablation"' in html and "no fusion" in html  # the grid of a When task, diagnosed
    assert "accuracy" in html and "metrics.when.accuracy" in html  # each number traced to its file and key
