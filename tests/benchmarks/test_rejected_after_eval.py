"""A human-inspection decision made after an eval: the run still scores on its own instances, the score names
those since rejected, and `score --delivered-only` leaves them out (the counts say so)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import INSPECTION_FILE, Bench, InspectionDecision, Instance, load_bench, save_bench
from omnivchat.cli import app

runner = CliRunner()


@pytest.fixture
def bench(checked_bench: Bench, tmp_path: Path) -> Bench:
    """A private copy of the checked bench (every criterion has a machine check, so the rule judge scores)."""
    shutil.copytree(checked_bench.root, tmp_path / "bench")
    return load_bench(tmp_path / "bench")


def _eval(bench: Path, run: Path) -> None:
    args = ["eval", "--bench", str(bench), "--model", "sim:healthy", "-o", str(run), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def _reject(bench: Path, item_id: str, reason: str) -> None:
    """Append a decision as the inspection page writes it (one line, InspectionDecision.line())."""
    line = InspectionDecision(id=item_id, decision="reject", reason=reason, time="2026-01-05T10:12:03.512+00:00")
    with (bench / INSPECTION_FILE).open("a", encoding="utf-8") as handle:
        handle.write(line.line())


def _score(run: Path, *extra: str, out: Path) -> tuple[int, str, dict]:
    result = runner.invoke(app, ["score", str(run), "-o", str(out), "--force", *extra])
    values = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    return result.exit_code, result.output, values


def test_a_run_scores_after_a_later_reject_and_names_it(bench: Bench, tmp_path: Path):
    run = tmp_path / "run"
    _eval(bench.root, run)
    code, _, before = _score(run, out=tmp_path / "before.json")
    assert code == 0 and before["n_instances"] == 8 and before["n_scored"] == 8
    _reject(bench.root, "c3", "the ball is not green")

    code, printed, after = _score(run, out=tmp_path / "after.json")
    assert code == 0, printed
    assert "instances differ" not in printed
    assert "1 of this run's instance(s) rejected by inspection since the run: c3 (the ball is not green)" in printed
    assert "still scored" in printed
    assert after["n_instances"] == 8 and after["n_scored"] == before["n_scored"]

    code, printed, delivered = _score(run, "--delivered-only", out=tmp_path / "delivered.json")
    assert code == 0, printed
    assert "c3 (the ball is not green); left out of the scores (--delivered-only)" in printed
    assert delivered["n_instances"] == 7 and delivered["n_scored"] == before["n_scored"] - 1


def test_a_reject_then_accept_after_the_run_is_nothing_rejected(bench: Bench, tmp_path: Path):
    run = tmp_path / "run"
    _eval(bench.root, run)
    _reject(bench.root, "c1", "unclear")
    accept = InspectionDecision(id="c1", decision="accept", time="2026-01-05T10:13:00.000+00:00")
    with (bench.root / INSPECTION_FILE).open("a", encoding="utf-8") as handle:
        handle.write(accept.line())
    code, printed, values = _score(run, out=tmp_path / "s.json")
    assert code == 0 and "rejected by inspection" not in printed and values["n_instances"] == 8


def test_a_run_made_after_a_reject_is_scored_on_the_delivered_set(bench: Bench, tmp_path: Path):
    _reject(bench.root, "c2", "no speech heard")
    run = tmp_path / "run"
    _eval(bench.root, run)
    _reject(bench.root, "c4", "the second turn is silent")
    code, printed, values = _score(run, out=tmp_path / "s.json")
    assert code == 0, printed
    assert "c4 (the second turn is silent)" in printed and "c2" not in printed  # s2 was never in the run
    assert values["n_instances"] == 7


def test_a_bench_edited_otherwise_is_still_refused_and_says_inspection_does_not_explain_it(
    bench: Bench, tmp_path: Path
):
    run = tmp_path / "run"
    _eval(bench.root, run)
    _reject(bench.root, "c3", "x")
    edited = [
        Instance.model_validate({**i.model_dump(), "reference": "another reference"}) if i.id == "c1" else i
        for i in bench.instances
    ]
    save_bench(Bench(root=bench.root, info=bench.info, instances=edited))
    result = runner.invoke(app, ["score", str(run)])
    assert result.exit_code != 0
    assert "instances differ" in result.output and INSPECTION_FILE in result.output


def test_delivered_only_with_a_hits_file_is_refused(bench: Bench, tmp_path: Path):
    hits = tmp_path / "hits.jsonl"
    hits.write_text("", encoding="utf-8")
    args = ["score", "--bench", str(bench.root), "--hits", str(hits), "--delivered-only"]
    result = runner.invoke(app, args)
    assert result.exit_code != 0 and "--delivered-only scores a run" in result.output
