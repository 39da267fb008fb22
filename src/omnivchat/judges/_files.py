"""The typed scores of a run: RUN_DIR/scores.json of a run of any benchmark (one schema: its metrics and every
item's score; a native run's Table 1 row is in its metrics, each item's record in its detail), the Table 1 view
of a native run's file, and the scores a benchmark computes.

The writer builds these models and dumps them; readers (reports, curves, tests) validate them. An older
scores.json still loads: a native run's omnivchat-scores-v1 file is converted on read, and one written before
runs were counted against their bench has no ``complete``/``incomplete`` (they are derived from its failed
requests, as that file meant) and no per-item ``not_run`` (no item was left unrun there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from omnivchat._files import FileModel, InputError, read_model, validate_file, write_model
from omnivchat.runs import CANDIDATE, STORE_FILE, Manifest, RunStore, read_manifest
from omnivchat.scoring import Table1Row

SCORES_FILE = "scores.json"
AGREEMENT_FILE = "agreement.json"
"""Where ``judges agree`` writes a run's agreement study by default; reports read it from there."""
BENCHMARK_SCORES_SCHEMA = "omnivchat-benchmark-scores-v1"
"""scores.json of a run of any registered benchmark (the one schema written)."""
NATIVE_SCORES_V1_SCHEMA = "omnivchat-scores-v1"
"""scores.json of a native run as older omnivchat wrote it: read only, converted on read."""
NATIVE_BENCHMARK = "omnivchat"  # the native benchmark's registry name (benchmarks.native), for files converted


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


class _NativeScoresV1(FileModel):
    """scores.json of a native run as omnivchat wrote it before one schema served every benchmark
    (omnivchat-scores-v1): read only, and converted on read (:func:`scores_from_json`)."""

    schema_: str = Field(NATIVE_SCORES_V1_SCHEMA, alias="schema")
    model: str | None = None
    simulated: bool = False
    condition: str = "both"
    bench: BenchName = Field(default_factory=BenchName)
    panel: list[str] = Field(default_factory=list)
    aggregate: str = "mean"
    style_judge: str | None = None
    prompts: dict[str, str] = Field(default_factory=dict)
    complete: bool = True
    incomplete: str | None = None
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
    """scores.json of a run of any benchmark (schema omnivchat-benchmark-scores-v1): its metrics, every item's
    score with its reason, and whether it is complete, with the model and condition from the run's manifest. A
    native run's metrics hold its Table 1 (read them through :func:`table1_scores`)."""

    schema_: str = Field(BENCHMARK_SCORES_SCHEMA, alias="schema")
    benchmark: str = "?"
    model: str | None = None
    simulated: bool = False
    condition: str = "both"
    items: list[ItemResult] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict, description="The benchmark's own metrics and table.")
    complete: bool = True
    incomplete: str | None = None
    store_state: str | None = None
    """What the run's store held when it was scored (``RunStore.state``): a store that holds more since (a resumed
    eval, a judge) makes this file out of date (:func:`stale_scores`). None in files written before it was kept."""

    omit_when_none: ClassVar[tuple[str, ...]] = ("store_state",)


class _Table1Metrics(BaseModel):
    """What a native run's scores.json keeps in ``metrics`` (and its items in their ``detail``)."""

    table1: Table1Row
    bench: BenchName = Field(default_factory=BenchName)
    panel: list[str] = Field(default_factory=list)
    aggregate: str = "mean"
    style_judge: str | None = None
    prompts: dict[str, str] = Field(default_factory=dict)
    """Which prompts ran, said plainly: ``system`` (the model's: "omnivchat default", "paper E.4 prompt" or "user
    file NAME (sha256 ...)") and ``style`` (the style judge's) when style was graded; {} in older files."""
    items: list[ScoreRecord]


class Table1Scores(BaseModel):
    """A native run's scores as Table 1 readers see them (reports, rl curves, the demo): its Table 1 row, the
    panel that scored it and every item's :class:`ScoreRecord`, over the scores.json it was read from (not a file
    of its own: build it with :func:`table1_scores`)."""

    model_config = ConfigDict(frozen=True)

    file: BenchmarkScores
    table1: Table1Row
    bench: BenchName
    panel: list[str]
    aggregate: str
    style_judge: str | None
    prompts: dict[str, str]
    items: list[ScoreRecord]

    @property
    def model(self) -> str | None:
        return self.file.model

    @property
    def simulated(self) -> bool:
        return self.file.simulated

    @property
    def simulated_recorded(self) -> bool:
        """Whether the file says if the run was simulated (the first native files did not)."""
        return "simulated" in self.file.model_fields_set

    @property
    def condition(self) -> str:
        return self.file.condition

    @property
    def complete(self) -> bool:
        return self.file.complete

    @property
    def incomplete(self) -> str | None:
        return self.file.incomplete


def has_table1(scores: BenchmarkScores) -> bool:
    """Whether a scores.json holds a Table 1 row (a native run's)."""
    return "table1" in scores.metrics


def table1_scores(scores: BenchmarkScores, path: Path, *, error: type[Exception] = InputError) -> Table1Scores:
    """The Table 1 view of the scores.json at ``path``; ``error`` naming the file when it has no Table 1 (another
    benchmark's run) or its Table 1 or items are not a native run's."""
    if not has_table1(scores):
        raise error(
            f"{path}: the scores of a {scores.benchmark} run, with no Table 1 (metrics.table1); "
            "give a scored OmniVChat-Bench run"
        )
    data = {**scores.metrics, "items": [item.detail for item in scores.items]}
    metrics = validate_file(_Table1Metrics, data, path, "Table 1 scores file", error=error)
    if metrics.table1.n_subcategories is None:
        scores, metrics = _older_mean(scores, metrics)
    return Table1Scores(file=scores, **dict(metrics))


def _older_mean(scores: BenchmarkScores, metrics: _Table1Metrics) -> tuple[BenchmarkScores, _Table1Metrics]:
    """A file written before the Mean was checked against every subcategory of the bench (Eq. 2): its Mean over
    fewer is moved to ``partial_mean`` and the file read as incomplete, as it is written today."""
    from omnivchat.scoring import unscored_subcategories

    try:
        c, unscored = unscored_subcategories((r.subcategory, r.score) for r in metrics.items if r.source == "synthetic")
    except KeyError:  # a subcategory this version does not know: its Mean is left as the file has it
        return scores, metrics
    row = metrics.table1
    update: dict[str, Any] = {"n_subcategories": c, "unscored_subcategories": unscored}
    if unscored:
        update |= {"Mean": None, "partial_mean": row.Mean}
    row = row.model_copy(update=update)
    if unscored:
        scores = scores.model_copy(update={"complete": False, "incomplete": row.incompleteness()})
    return scores, metrics.model_copy(update={"table1": row})


def record_result(record: ScoreRecord) -> ItemResult:
    """A native run's item as scores.json keeps it: its score and reason, grouped by its ability category, with
    the whole record as ``detail`` (what :func:`table1_scores` reads back)."""
    from omnivchat.bench import SUBCATEGORIES

    known = SUBCATEGORIES.get(record.subcategory)
    return ItemResult(
        key=record.id,
        task=CANDIDATE,
        score=record.score,
        reason=record.reason,
        ran=not record.not_run,
        group=known.category if known is not None else None,
        detail=record.dump(),
    )


def _native_v1_to_benchmark(old: _NativeScoresV1) -> dict[str, Any]:
    """An omnivchat-scores-v1 file as the omnivchat-benchmark-scores-v1 file the native benchmark writes today:
    its Table 1 and panel in ``metrics``, each ScoreRecord an ItemResult whose ``detail`` is the record."""
    recorded: dict[str, Any] = {
        k: getattr(old, k) for k in ("model", "simulated", "condition") if k in old.model_fields_set
    }
    items = [record_result(r).model_dump(mode="json") for r in old.items]
    metrics = {
        "table1": old.table1.model_dump(),
        "bench": old.bench.dump(),
        "panel": old.panel,
        "aggregate": old.aggregate,
        "style_judge": old.style_judge,
        "prompts": old.prompts,
    }
    return {
        "schema": BENCHMARK_SCORES_SCHEMA,
        "benchmark": NATIVE_BENCHMARK,
        **recorded,
        "items": items,
        "metrics": metrics,
        "complete": old.complete,
        "incomplete": old.incomplete,
    }


def scores_from_json(data: Any, path: Path, *, error: type[Exception] = InputError) -> BenchmarkScores:
    """The parsed scores.json at ``path``; an older native file (omnivchat-scores-v1) converted to the one schema;
    ``error`` naming the file otherwise."""
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema == NATIVE_SCORES_V1_SCHEMA:
        old = validate_file(_NativeScoresV1, data, path, "scores file", error=error)
        return BenchmarkScores.model_validate(_native_v1_to_benchmark(old))
    if schema != BENCHMARK_SCORES_SCHEMA:
        raise error(
            f"{path}: schema {schema!r}, expected {BENCHMARK_SCORES_SCHEMA!r} (or an older "
            f"{NATIVE_SCORES_V1_SCHEMA!r}); score the run again with `omnivchat score {path.parent}`"
        )
    return validate_file(BenchmarkScores, data, path, "scores file", error=error)


def read_scores(path: Path, *, error: type[Exception] = InputError) -> BenchmarkScores:
    """A scores.json (RUN_DIR/scores.json, or the path of the file itself), an older native file converted."""
    path = Path(path)
    if path.is_dir():
        path = path / SCORES_FILE
    generic = read_model(path, FileModel, "scores file", error=error)
    return scores_from_json(generic.dump(), path, error=error)


def read_table1_scores(path: Path, *, error: type[Exception] = InputError) -> Table1Scores:
    """A native run's scores.json as its Table 1 view; ``error`` naming the file when it has no Table 1."""
    path = Path(path)
    if path.is_dir():
        path = path / SCORES_FILE
    return table1_scores(read_scores(path, error=error), path, error=error)


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
            "store_state": run_store_state(Path(run_dir)),
        }
    )
    return write_model(Path(run_dir) / SCORES_FILE, data)


def run_store_state(run_dir: Path) -> str | None:
    """What a run's store holds, in a few characters (:meth:`RunStore.state`), recorded by the files made from it
    (scores.json, agreement.json) to tell later whether they are still current; None without a store."""
    path = run_dir / STORE_FILE
    if not path.is_file():
        return None
    with RunStore(path, read_only=True) as store:
        return store.state()


def store_changed(run_dir: Path, recorded: str | None) -> bool:
    """Whether ``run_dir``'s store changed since a file recorded its state ``recorded``; False for a file that
    recorded none (an older omnivchat's: it cannot tell, and is taken as it is)."""
    if recorded is None:
        return False
    now = run_store_state(Path(run_dir))
    return now is not None and now != recorded


def stale_scores(run_dir: Path, scores: BenchmarkScores) -> str | None:
    """Why ``run_dir``'s scores.json is out of date, or None: its store holds more than when it was scored (a
    resumed eval, a judge, a transcription since). A file that did not record the state (written by an older
    omnivchat) cannot tell and is taken as it is."""
    if not store_changed(run_dir, scores.store_state):
        return None
    return (
        f"{Path(run_dir) / SCORES_FILE} is out of date: the run's store changed after it was scored (replies, "
        f"failures or verdicts stored since); run `omnivchat score {run_dir}` again to refresh it"
    )
