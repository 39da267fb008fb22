"""scores.json, typed (omnivchat.judges): one schema for every benchmark (omnivchat-benchmark-scores-v1; a native
run's Table 1 in its metrics). Written and read by the same models; a native run's older file
(omnivchat-scores-v1) converts on read, one written before runs were counted against their bench loads with the
defaults it meant; a damaged file is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omnivchat._files import InputError
from omnivchat.benchmarks import save_scores
from omnivchat.benchmarks.native import ItemScore, native_scores
from omnivchat.judges import (
    BENCHMARK_SCORES_SCHEMA,
    NATIVE_SCORES_V1_SCHEMA,
    BenchmarkScores,
    BenchName,
    ItemResult,
    ScoreRecord,
    Scores,
    read_scores,
    read_table1_scores,
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


def native_file(run_dir: Path, row: Table1Row, items: list[ScoreRecord]) -> Path:
    """scores.json of a native run as the real writer makes it (native_scores, then benchmarks.save_scores)."""
    scored = [
        ItemScore(r.id, r.subcategory, r.source, None if r.request_failed else "On your left.", r.score, r.style,
                  r.reason, per_judge=r.per_judge)
        for r in items
    ]  # fmt: skip
    scores = native_scores(run_dir, BenchName(name="small", version="1"), scored, row, ["rule"], "mean", None)
    return save_scores(run_dir, scores)


def test_a_native_run_writes_the_one_schema_with_its_table1_in_metrics(run_dir: Path) -> None:
    row = Table1Row(
        n_instances=2, n_scored=1, n_failed_requests=1, AH=0.5, n_subcategories=2, unscored_subcategories=["ICC"]
    )
    items = [
        ScoreRecord(id="s1", subcategory="SVMR", score=0.5, reason="panel mean of 1", per_judge={"rule": 0.5}),
        ScoreRecord(id="s2", subcategory="ICC", reason="request: media", request_failed=True),
    ]
    path = native_file(run_dir, row, items)
    data = json.loads(path.read_text())
    assert data["schema"] == BENCHMARK_SCORES_SCHEMA and data["benchmark"] == "omnivchat"
    assert data["model"] == "sim:healthy" and data["simulated"] is True and data["condition"] == "both"
    assert "table1" not in data and data["metrics"]["table1"] == row.model_dump()
    assert data["metrics"]["bench"] == {"name": "small", "version": "1"} and data["metrics"]["panel"] == ["rule"]
    assert data["metrics"]["prompts"] == {"system": "user file test (sha256 111111111111)"}
    assert data["metrics"]["table1"]["complete"] is False and data["items"][1]["detail"]["not_run"] is False
    assert [i["key"] for i in data["items"]] == ["s1", "s2"] and data["items"][0]["group"] == "DSLP"
    scores = read_scores(run_dir)
    assert isinstance(scores, BenchmarkScores) and not scores.complete
    view = read_table1_scores(run_dir)
    assert view.items == items and view.table1 == row and view.incomplete == row.incompleteness()


def old_native_file(run_dir: Path, row: Table1Row, items: list[ScoreRecord]) -> dict[str, Any]:
    """scores.json of a native run exactly as omnivchat wrote it before one schema (omnivchat-scores-v1)."""
    return {
        "schema": NATIVE_SCORES_V1_SCHEMA,
        "model": "sim:healthy",
        "simulated": True,
        "condition": "both",
        "bench": {"name": "small", "version": "1"},
        "panel": ["rule"],
        "aggregate": "mean",
        "style_judge": None,
        "prompts": {"system": "user file test (sha256 111111111111)"},
        "complete": row.complete,
        "incomplete": row.incompleteness(),
        "table1": row.model_dump(),
        "items": [r.dump() for r in items],
    }


def test_an_old_native_scores_file_loads_as_the_new_one(tmp_path: Path) -> None:
    """The same run written by today's writer and as an omnivchat-scores-v1 file: read_scores, the Table 1 view,
    the report's inputs and rl curves read the same figures from both."""
    from omnivchat.report._inputs import Sources, load_run
    from omnivchat.rl.curves import EvalSpec, read_checkpoint

    row = Table1Row(n_instances=2, n_scored=1, n_failed_requests=1, AH=0.5, Mean=0.5, Pooled=0.5)
    items = [
        ScoreRecord(id="s1", subcategory="SVMR", score=0.5, reason="panel mean of 1", per_judge={"rule": 0.5}),
        ScoreRecord(id="s2", subcategory="ICC", reason="request: media", request_failed=True),
    ]
    dirs = {}
    for name in ("new", "old"):
        dirs[name] = tmp_path / name
        dirs[name].mkdir()
        (dirs[name] / "manifest.json").write_text(json.dumps(MANIFEST))
        (dirs[name] / "store.sqlite").write_bytes(b"")
    native_file(dirs["new"], row, items)
    (dirs["old"] / "scores.json").write_text(json.dumps(old_native_file(dirs["old"], row, items), indent=2))
    new, old = read_scores(dirs["new"]), read_scores(dirs["old"])
    assert new.store_state is not None and old.store_state is None  # the old file did not keep the store's state
    assert old.dump() == {k: v for k, v in new.dump().items() if k != "store_state"}
    views = read_table1_scores(dirs["old"]), read_table1_scores(dirs["new"])
    for field in ("table1", "bench", "panel", "aggregate", "style_judge", "prompts", "items"):
        assert getattr(views[0], field) == getattr(views[1], field), field
    runs = {name: load_run(d, Sources()) for name, d in dirs.items()}
    for field in ("model", "simulated", "condition", "bench", "prompts", "table1", "items"):
        assert getattr(runs["old"], field) == getattr(runs["new"], field), field
    assert runs["old"].scores.panel == runs["new"].scores.panel == ["rule"]
    points = {name: read_checkpoint(EvalSpec(set="dev", step=1, path=d)) for name, d in dirs.items()}
    assert points["old"].model_copy(update={"path": ""}) == points["new"].model_copy(update={"path": ""})
    assert (points["old"].excluded or "").startswith("incomplete: 1 of 2 items have no reply")


def test_a_scores_file_from_before_runs_were_counted_loads(tmp_path: Path) -> None:
    """No complete/incomplete, no per-item not_run (the first omnivchat-scores-v1 files)."""
    table1 = Table1Row(n_instances=3, n_scored=2, n_failed_requests=1).model_dump()
    del table1["n_not_run"], table1["complete"]
    old = {
        "schema": NATIVE_SCORES_V1_SCHEMA,
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
    assert scores.schema_ == BENCHMARK_SCORES_SCHEMA and scores.benchmark == "omnivchat"
    assert scores.complete is False and scores.incomplete == "incomplete: 1 of 3 items have no reply"
    assert scores.items[0].ran is True and scores.items[0].key == "a" and scores.items[0].group == "DSLP"
    view = read_table1_scores(tmp_path)
    assert view.items[0].not_run is False and view.table1.n_not_run == 0 and view.prompts == {}
    assert view.complete is False and view.incomplete == scores.incomplete
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
        (json.dumps({"schema": NATIVE_SCORES_V1_SCHEMA, "table1": {}, "items": [{"score": 1}]}), "items.0.id: Field"),
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
    old = {"schema": NATIVE_SCORES_V1_SCHEMA, "table1": {"AH": "high"}, "items": []}
    (tmp_path / "scores.json").write_text(json.dumps(old))
    with pytest.raises(ReportError) as caught:
        build_report([tmp_path], tmp_path / "r.html")
    assert f"{tmp_path / 'scores.json'}: not a valid scores file (table1.AH" in str(caught.value)


@pytest.mark.parametrize(
    ("metrics", "items", "expected"),
    [
        ({"qa": {"accuracy": 1.0}}, [], "the scores of a toyqa run, with no Table 1 (metrics.table1)"),
        ({"table1": {"AH": "high"}}, [], "not a valid Table 1 scores file (table1.AH"),
        ({"table1": {}}, [{"key": "a", "task": "candidate", "score": 1.0}], "(items.0.id: Field required"),
    ],
)
def test_a_file_without_a_valid_table1_is_one_line_naming_it(
    tmp_path: Path, metrics: dict[str, Any], items: list[dict[str, Any]], expected: str
) -> None:
    """Where a Table 1 is needed (reports, rl curves, the demo): another benchmark's file, or a native one whose
    Table 1 or item records are damaged, is refused naming the file."""
    from omnivchat.report import ReportError
    from omnivchat.report._inputs import Sources, load_run
    from omnivchat.rl.curves import CurvesError, EvalSpec, read_checkpoint

    data = {"schema": BENCHMARK_SCORES_SCHEMA, "benchmark": "toyqa", "metrics": metrics, "items": items}
    (tmp_path / "scores.json").write_text(json.dumps(data))
    for error, read in (
        (InputError, lambda: read_table1_scores(tmp_path)),
        (ReportError, lambda: load_run(tmp_path, Sources())),
        (CurvesError, lambda: read_checkpoint(EvalSpec(set="dev", step=0, path=tmp_path))),
    ):
        if error is CurvesError and "no Table 1" in expected:
            expected_here = "the scores of a toyqa run; rl curves reads OmniVChat runs"
        else:
            expected_here = expected
        with pytest.raises(error) as caught:
            read()
        message = str(caught.value)
        assert str(tmp_path / "scores.json") in message and expected_here in message and "\n" not in message
