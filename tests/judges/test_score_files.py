"""scores.json, typed (omnivchat.judges): a native run's (omnivchat-scores-v1) and any other benchmark's
(omnivchat-benchmark-scores-v1). Written and read by the same models; a file written before runs were counted
against their bench loads with the defaults it meant; a damaged file is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnivchat._files import InputError
from omnivchat.benchmarks.native import write_scores_file
from omnivchat.judges import (
    BENCHMARK_SCORES_SCHEMA,
    SCORES_SCHEMA,
    BenchmarkScores,
    ItemResult,
    NativeScores,
    ScoreRecord,
    Scores,
    read_scores,
    write_benchmark_scores,
)
from omnivchat.report import ReportError, build_report
from omnivchat.scoring import Table1Row

MANIFEST = {
    "protocol": "omnivchat-run-v1",
    "benchmark": "omnivchat",
    "bench": {"name": "small", "version": "1", "instances_sha256": "0" * 64, "n_instances": 2, "clips": {}},
    "prompts": {"system": {"sha256": "1" * 64, "source": "test"}},
    "route": {"model": "sim:healthy", "kind": "sim", "endpoint": "sim", "settings": {"route": "sim"}},
    "sampling": {},
    "condition": "both",
    "simulated": True,
    "package": {"version": "0.1.0", "source_sha256": "2" * 64},
}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A native run directory: its manifest and an (empty) store."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps(MANIFEST))
    (out / "store.sqlite").write_bytes(b"")
    return out


def test_native_scores_round_trip(run_dir: Path) -> None:
    row = Table1Row(n_instances=2, n_scored=1, n_failed_requests=1, AH=0.5)
    items = [
        ScoreRecord(id="s1", subcategory="SVMR", score=0.5, reason="panel mean of 1", per_judge={"rule": 0.5}),
        ScoreRecord(id="s2", subcategory="ICC", reason="request: media", request_failed=True),
    ]
    path = write_scores_file(
        run_dir,
        bench={"name": "small", "version": "1"},
        panel=["rule"],
        aggregate="mean",
        style_judge=None,
        table1=row,
        complete=row.complete,
        incomplete=row.incompleteness(),
        items=items,
    )
    data = json.loads(path.read_text())
    assert data["schema"] == SCORES_SCHEMA and data["model"] == "sim:healthy" and data["simulated"] is True
    assert data["table1"]["complete"] is False and data["items"][1]["not_run"] is False
    scores = read_scores(run_dir)
    assert isinstance(scores, NativeScores) and scores.items == items and scores.table1 == row
    assert not scores.complete and scores.incomplete == row.incompleteness()


def test_a_scores_file_from_before_runs_were_counted_loads(tmp_path: Path) -> None:
    """No complete/incomplete, no per-item not_run (the first omnivchat-scores-v1 files)."""
    table1 = Table1Row(n_instances=3, n_scored=2, n_failed_requests=1).model_dump()
    del table1["n_not_run"], table1["complete"]
    old = {
        "schema": SCORES_SCHEMA,
        "model": "m",
        "simulated": False,
        "condition": "both",
        "bench": {"name": "b", "version": "1"},
        "panel": ["rule"],
        "aggregate": "mean",
        "style_judge": None,
        "table1": table1,
        "items": [
            {
                "id": "a",
                "subcategory": "SVMR",
                "source": "synthetic",
                "score": 1.0,
                "style": None,
                "reason": "ok",
                "per_judge": {"rule": 1.0},
                "empty": False,
                "request_failed": False,
            }
        ],
    }
    (tmp_path / "scores.json").write_text(json.dumps(old))
    scores = read_scores(tmp_path / "scores.json")
    assert isinstance(scores, NativeScores)
    assert scores.complete is False and scores.incomplete == "incomplete: 1 of 3 items have no reply"
    assert scores.items[0].not_run is False and scores.table1.n_not_run == 0
    clean = {**old, "table1": {**table1, "n_failed_requests": 0}}
    (tmp_path / "scores.json").write_text(json.dumps(clean))
    scores = read_scores(tmp_path)
    assert scores.complete is True and scores.incomplete is None


def test_benchmark_scores_round_trip(run_dir: Path) -> None:
    (run_dir / "manifest.json").write_text(
        json.dumps({"protocol": "toyqa-run-v1", "benchmark": "toyqa", "route": {"model": "m", "route": "sim"}})
    )
    scores = Scores(
        benchmark="toyqa",
        items=[
            ItemResult(key="q1", task="qa", score=1.0, reason="matched"),
            ItemResult(key="q2", task="qa", score=None, reason="no reply", ran=False),
        ],
        metrics={"qa": {"accuracy": None, "n": 2}},
        complete=False,
        incomplete="1 item not run",
    )
    path = write_benchmark_scores(run_dir, scores)
    data = json.loads(path.read_text())
    assert data["schema"] == BENCHMARK_SCORES_SCHEMA and data["model"] == "m" and data["simulated"] is True
    back = read_scores(path)
    assert isinstance(back, BenchmarkScores) and back.items == scores.items and back.metrics == scores.metrics
    assert back.condition == "both" and back.incomplete == "1 item not run"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{oops", "cannot read the scores file (not valid JSON"),
        (json.dumps({"schema": "omnivchat-scores-v0"}), "schema 'omnivchat-scores-v0', expected"),
        (json.dumps({"schema": SCORES_SCHEMA, "table1": {}, "items": [{"score": 1}]}), "items.0.id: Field required"),
        (json.dumps({"schema": BENCHMARK_SCORES_SCHEMA, "items": "x"}), "not a valid scores file (items"),
    ],
)
def test_a_damaged_scores_file_is_one_line_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "scores.json").write_text(text)
    with pytest.raises(InputError) as caught:
        read_scores(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "scores.json") in message and expected in message and "\n" not in message


def test_the_report_names_a_damaged_scores_file(tmp_path: Path) -> None:
    (tmp_path / "scores.json").write_text(json.dumps({"schema": SCORES_SCHEMA, "table1": {"AH": "high"}, "items": []}))
    with pytest.raises(ReportError) as caught:
        build_report([tmp_path], tmp_path / "r.html")
    assert f"{tmp_path / 'scores.json'}: not a valid scores file (table1.AH" in str(caught.value)
