"""The README's main job, end to end: the offline demo (mini-bench, self-check, two simulated models, report)."""

import json

from typer.testing import CliRunner

from omnivchat.cli import app


def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--output", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "self-check passed" in result.output and "Table 1 rows" in result.output
    healthy = json.loads((out / "sim-healthy" / "ablation.json").read_text())
    blind = json.loads((out / "sim-video-blind" / "ablation.json").read_text())
    assert healthy["diagnosis"]["verdict"] == "healthy"
    assert "video_ignored" in blind["diagnosis"]["flags"] and "no_fusion" in blind["diagnosis"]["flags"]
    page = (out / "report.html").read_text()
    assert "sim:video-blind" in page and "<img" in page
    again = CliRunner().invoke(app, ["demo", "--output", str(out), "--no-progress"])  # resumes: nothing re-run
    assert again.exit_code == 0 and "reusing the mini-bench" in again.output
