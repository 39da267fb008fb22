"""The Benchmark protocol: a new benchmark is one module behind it, and every command runs it.

A toy text benchmark (questions and answers in a JSON file) is registered here and run end to end through the
CLI: eval, runs show, score, export, resume. The two shipped benchmarks implement the same protocol.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks import (
    Benchmark,
    Item,
    ItemResult,
    RunOptions,
    ScoreOptions,
    Scores,
    Source,
    _registry,
    get_benchmark,
    registered,
)
from omnivchat.cli import app
from omnivchat.errors import OmnivchatError
from omnivchat.routes import ChatRequest, Route, SimOracle
from omnivchat.runs import RunStore, package_record
from omnivchat.scoring.spoken import answer_matches

runner = CliRunner()


class ToyQA:
    """Text questions with short answers: the smallest benchmark the protocol allows."""

    name = "toyqa"
    title = "Toy QA: typed questions, spoken-answer matching"
    protocols = ("toyqa-run-v1",)
    sampling = {"temperature": 0.0}  # noqa: RUF012

    def chance(self, task: str) -> float:
        return 0.0

    def load(self, source: Source) -> list[dict[str, str]]:
        rows = json.loads(source.data.read_text())
        bad = [n for n, r in enumerate(rows, start=1) if not {"id", "question", "answer"} <= set(r)]
        if bad:
            raise OmnivchatError(f"{source.data}: items {bad} lack id, question or answer")
        return rows

    def items(self, dataset: list[dict[str, str]], options: RunOptions) -> list[Item]:
        rows = dataset[: options.limit] if options.limit else dataset
        return [Item(r["id"], "qa", r, {"answer": r["answer"]}) for r in rows]

    def manifest(self, dataset: list[dict[str, str]], route: Route, options: RunOptions) -> dict[str, Any]:
        return {
            "protocol": "toyqa-run-v1",
            "benchmark": self.name,
            "items": {r["id"]: "qa" for r in dataset},  # key -> task: the shared status and export read it
            "route": {"model": route.model_id, "kind": route.settings.route},
            "sampling": options.sampling.model_dump(),
            "simulated": options.simulated,
            "package": package_record(),
        }

    def request(self, dataset: Any, item: Item, options: RunOptions, work_dir: Path, meta: dict) -> ChatRequest:
        oracle = SimOracle(reference=item.record["answer"], language="en") if options.simulated else None
        return ChatRequest(item_id=item.key, text=item.record["question"], sampling=options.sampling, oracle=oracle)

    def score(self, dataset: Any, run_dir: Path, options: ScoreOptions) -> Scores:
        results = []
        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            for key in json.loads((run_dir / "manifest.json").read_text())["items"]:
                row = store.item(key, "qa")
                result = store.result(row["key"]) if row and row["status"] == "done" else None
                if result is None:
                    results.append(ItemResult(key=key, task="qa", score=None, reason="no reply", ran=row is not None))
                    continue
                right = answer_matches(result.text, row["meta"]["answer"])
                results.append(ItemResult(key=key, task="qa", score=float(right), reason="matched"))
        scored = [r.score for r in results if r.score is not None]
        accuracy = sum(scored) / len(results) if len(scored) == len(results) and results else None
        return Scores(benchmark=self.name, items=results, metrics={"qa": {"accuracy": accuracy, "n": len(results)}})


@pytest.fixture
def toyqa(monkeypatch: pytest.MonkeyPatch) -> ToyQA:
    registered()  # the shipped ones first
    toy = ToyQA()
    monkeypatch.setitem(_registry._REGISTRY, toy.name, toy)
    return toy


def test_the_shipped_benchmarks_implement_the_protocol():
    shipped = registered()
    assert {"omnivchat", "socialomni"} <= set(shipped)
    for benchmark in shipped.values():
        assert isinstance(benchmark, Benchmark)
    assert get_benchmark("socialomni").chance("who") == 0.25 and get_benchmark("omnivchat").chance("candidate") == 0
    with pytest.raises(OmnivchatError, match="no benchmark named 'nope'"):
        get_benchmark("nope")


def test_a_new_benchmark_runs_through_every_command(toyqa, tmp_path):
    data = tmp_path / "qa.json"
    rows = [{"id": f"q{n}", "question": f"What is {n} plus one?", "answer": str(n + 1)} for n in range(5)]
    data.write_text(json.dumps(rows))
    listed = runner.invoke(app, ["benchmarks"], env={"COLUMNS": "200"})
    assert "toyqa" in listed.output and "Toy QA" in listed.output

    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "toyqa", "--data", str(data), "--model", "sim:healthy?text=1", "-o", str(run_dir)]
    result = runner.invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "5 done" in result.output

    shown = runner.invoke(app, ["runs", "show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "toyqa run of sim:healthy?text=1" in shown.output

    scored = runner.invoke(app, ["score", str(run_dir)])
    assert scored.exit_code == 0, scored.output
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["schema"] == "omnivchat-benchmark-scores-v1" and scores["benchmark"] == "toyqa"
    assert scores["metrics"]["qa"]["accuracy"] == 1.0 and len(scores["items"]) == 5

    out = tmp_path / "export.json"
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    data_out = json.loads(out.read_text())
    assert data_out["status"] == "complete"
    assert [r["reply"] for r in data_out["records"]] == [str(n + 1) for n in range(5)]

    again = runner.invoke(app, [*args, "--no-progress"])
    assert again.exit_code == 0 and "(5 reused)" in again.output and "0 requests sent" in again.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["benchmark"] == "toyqa" and manifest["sampling"]["temperature"] == 0.0


def test_a_run_of_an_unregistered_benchmark_is_named(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(json.dumps({"protocol": "toyqa-run-v1", "benchmark": "toyqa"}))
    shown = runner.invoke(app, ["runs", "show", str(run_dir)])
    assert shown.exit_code == 2 and "unknown protocol 'toyqa-run-v1'" in " ".join(shown.output.split())
