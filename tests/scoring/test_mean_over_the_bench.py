"""Eq. 2's Mean is over every subcategory of the bench: a real run of the example bench (8 subcategories) on the
simulated route, scored by the rule judge, which cannot decide 3 of them. `score` shows no Mean, says over how
many the mean of the others is, marks the row incomplete and exits 1 (unless --allow-incomplete); the report,
`compare` and a scores.json written before the rule read it the same way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.judges import read_table1_scores

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "bench"
PARTIAL = "Mean over 5 of 8 subcategories: 1.000 (unscored: ER, FGC, SVMR)"
runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mean")
    shutil.copytree(EXAMPLES, root / "bench")
    args = ["eval", "--bench", str(root / "bench"), "--model", "sim:healthy", "-o", str(root / "run"), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    return root / "run"


def test_score_shows_no_mean_over_fewer_subcategories_and_exits_1(run_dir: Path) -> None:
    result = runner.invoke(app, ["score", str(run_dir), "--panel", "rule"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    out = flat(result.output)
    assert f"Mean —: {PARTIAL}, not Eq. 2's Mean over every subcategory of the bench" in out
    assert f"incomplete: {PARTIAL}: these figures are not the bench's; score every subcategory" in out
    assert "resume the run" not in out  # every item has its reply: there is nothing to resume
    header, row = [line for line in result.output.splitlines() if "┃" in line or "│" in line][:2]
    assert row.split("│")[header.split("┃").index(" Mean ")].strip() == "—"
    scores = json.loads((run_dir / "scores.json").read_text())
    table1 = scores["metrics"]["table1"]
    assert table1["Mean"] is None and table1["partial_mean"] == 1.0 and table1["n_subcategories"] == 8
    assert table1["unscored_subcategories"] == ["ER", "FGC", "SVMR"] and table1["complete"] is False
    assert scores["complete"] is False and scores["incomplete"] == f"incomplete: {PARTIAL}"
    accepted = runner.invoke(app, ["score", str(run_dir), "--panel", "rule", "--allow-incomplete"])
    assert accepted.exit_code == 0 and "INCOMPLETE" in accepted.output


def test_a_scores_file_written_before_the_rule_is_read_as_incomplete(run_dir: Path, tmp_path: Path) -> None:
    """An older scores.json (no n_subcategories, its Mean over 5 of 8, marked complete) is read as written today."""
    assert runner.invoke(app, ["score", str(run_dir), "--panel", "rule", "--allow-incomplete"]).exit_code == 0
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    data = json.loads((old / "scores.json").read_text())
    table1 = data["metrics"]["table1"]
    for key in ("n_subcategories", "unscored_subcategories", "partial_mean", "complete"):
        del table1[key]
    table1["Mean"] = 1.0
    data["complete"], data["incomplete"] = True, None
    (old / "scores.json").write_text(json.dumps(data))
    read = read_table1_scores(old)
    assert read.table1.Mean is None and read.table1.partial_mean == 1.0 and not read.complete
    assert read.incomplete == f"incomplete: {PARTIAL}"
    html = tmp_path / "report.html"
    assert runner.invoke(app, ["report", str(old), "-o", str(html)]).exit_code == 0
    page = html.read_text()
    assert f'title="incomplete: {PARTIAL}"' in page and PARTIAL in page  # the badge and the Mean cell's reason


def test_compare_marks_a_run_with_unscored_subcategories_incomplete(run_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    result = runner.invoke(app, ["compare", str(run_dir), str(other), "--panel", "rule"], env={"COLUMNS": "250"})
    assert result.exit_code in (0, 1), result.output
    assert flat(result.output).count("INCOMPLETE") == 2, result.output
