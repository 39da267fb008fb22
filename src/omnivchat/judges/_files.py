"""The typed scores of a run: RUN_DIR/scores.json of a native run (its Table 1 row and every item's score) and of
a run of any other benchmark (its metrics and every item's score), and the scores a benchmark computes.

Writers build these models and dump them; readers (reports, tests) validate them. An older scores.json still
loads: one written before runs were counted against their bench has no ``complete``/``incomplete`` (they are
derived from its failed requests, as that file meant) and no per-item ``not_run`` (no item was left unrun there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from omnivchat._files import FileModel, InputError, read_model, validate_file, write_model
from omnivchat.runs import Manifest, read_manifest
from omnivchat.scoring import Table1Row

SCORES_FILE = "scores.json"
SCORES_SCHEMA = "omnivchat-scores-v1"
"""scores.json of a native run."""
BENCHMARK_SCORES_SCHEMA = "omnivchat-benchmark-scores-v1"
"""scores.json of a run of another registered benchmark."""


class ItemResult(BaseModel):
    """One item's outcome: its score (None: unscored, with the reason), never a failure read as 0."""

    model_config = ConfigDict(frozen=True)

    key: str
    task: str
    score: float | None
    reason: str = ""
    ran: bool = True
    group: str | None = Field(default=None, description="What it is diagnosed with (an ability category).")
    detail: dict[str, Any] = Field(default_factory=dict, description="The benchmark's own fields for its file.")


class Scores(BaseModel):
    """A scored run: every item of the benchmark, its headline metrics and table, and whether it is complete."""

    benchmark: str
    items: list[ItemResult] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict, description="The benchmark's own metrics and table.")
    complete: bool = True
    incomplete: str | None = Field(default=None, description="Why the figures are not the benchmark's.")


class BenchName(FileModel):
    """The bench a native run was scored on."""

    name: str = "?"
    version: str = "?"


class ScoreRecord(FileModel):
    """One item of a native run in scores.json: its score with the reason, and why it has none."""

    id: str
    subcategory: str = "?"
    source: str = "synthetic"
    score: float | None = None
    style: float | None = None
    reason: str = ""
    per_judge: dict[str, float | None] = Field(default_factory=dict, description="Each judge's score of the item.")
    empty: bool = False
    """The reply was empty (scored 0, not judged)."""
    request_failed: bool = False
    not_run: bool = False
    """The run never ran the item (files written before unrun items were counted have none: False)."""


class NativeScores(FileModel):
    """scores.json of a native run (schema omnivchat-scores-v1): the Table 1 row and every item's score, with the
    model and condition from the run's manifest (what reports read)."""

    schema_: str = Field(SCORES_SCHEMA, alias="schema")
    model: str | None = None
    simulated: bool = False
    condition: str = "both"
    bench: BenchName = Field(default_factory=BenchName)
    panel: list[str] = Field(default_factory=list)
    aggregate: str = "mean"
    style_judge: str | None = None
    prompts: dict[str, str] = Field(default_factory=dict)
    """Which prompts ran, said plainly: ``system`` (the model's: "omnivchat default", "paper E.4 prompt" or "user
    file NAME (sha256 ...)") and ``style`` (the style judge's) when style was graded; {} in older files."""
    complete: bool = True
    """Every bench item has a reply (derived from the failed requests in a file written before it was recorded)."""
    incomplete: str | None = None
    """Why the figures are not the bench's ("incomplete: K of N items have no reply ..."), or None."""
    table1: Table1Row
    items: list[ScoreRecord]

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A file written before items were counted against the bench: complete unless a request failed."""
        if isinstance(data, dict) and "complete" not in data and isinstance(data.get("table1"), dict):
            failed = data["table1"].get("n_failed_requests") or 0
            n = data["table1"].get("n_instances")
            data = {
                **data,
                "complete": not failed,
                "incomplete": f"incomplete: {failed} of {n} items have no reply" if failed else None,
            }
        return data


class BenchmarkScores(FileModel):
    """scores.json of a run of any benchmark but the native one (schema omnivchat-benchmark-scores-v1): its
    metrics, every item's score with its reason, and whether it is complete."""

    schema_: str = Field(BENCHMARK_SCORES_SCHEMA, alias="schema")
    benchmark: str = "?"
    model: str | None = None
    simulated: bool = False
    condition: str = "both"
    items: list[ItemResult] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict, description="The benchmark's own metrics and table.")
    complete: bool = True
    incomplete: str | None = None


def scores_from_json(data: Any, path: Path, *, error: type[Exception] = InputError) -> NativeScores | BenchmarkScores:
    """The parsed scores.json at ``path`` as the model its schema names; ``error`` naming the file otherwise."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == BENCHMARK_SCORES_SCHEMA:
        return validate_file(BenchmarkScores, data, path, "scores file", error=error)
    if schema != SCORES_SCHEMA:
        raise error(
            f"{path}: schema {schema!r}, expected {SCORES_SCHEMA!r} or {BENCHMARK_SCORES_SCHEMA!r}; "
            f"score the run again with `omnivchat score {path.parent}`"
        )
    return validate_file(NativeScores, data, path, "scores file", error=error)


def read_scores(path: Path, *, error: type[Exception] = InputError) -> NativeScores | BenchmarkScores:
    """A scores.json (RUN_DIR/scores.json, or the path of the file itself) as the model its schema names."""
    path = Path(path)
    if path.is_dir():
        path = path / SCORES_FILE
    generic = read_model(path, FileModel, "scores file", error=error)
    return scores_from_json(generic.dump(), path, error=error)


def write_benchmark_scores(run_dir: Path, scores: Scores) -> Path:
    """RUN_DIR/scores.json of a run of any benchmark but the native one: its metrics, every item's score with
    its reason, and whether it is complete (``scores`` is a :class:`omnivchat.benchmarks.Scores`)."""
    manifest = read_manifest(run_dir, Manifest)
    route = manifest.value("route")
    route = route if isinstance(route, dict) else {}
    data = BenchmarkScores.model_validate(
        {
            "benchmark": scores.benchmark,
            "model": manifest.value("model") or route.get("model"),
            "simulated": route.get("route") == "sim" or bool(manifest.value("simulated")),
            "condition": manifest.value("condition") or "both",
            **scores.model_dump(mode="json"),
        }
    )
    return write_model(Path(run_dir) / SCORES_FILE, data)
