"""What any benchmark's run directory can be asked: its status (per task: done, failed, not run), an export of
every record, read without changing anything, and its scores.json. Written once here for every benchmark (one
scores schema for all); one whose run directories keep status and export files of their own form (the native
Table 1 counts, SocialOmni's fixed denominators) implements :class:`omnivchat.benchmarks.OwnFormats`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from omnivchat._files import FileModel
from omnivchat.benchmarks._protocol import OwnFormats
from omnivchat.benchmarks._registry import benchmark_of, read_run_manifest
from omnivchat.judges import ItemResult, Scores, write_benchmark_scores
from omnivchat.runs import (
    STORE_FILE,
    CostTotals,
    ExportFile,
    ItemCounts,
    RunCost,
    RunError,
    RunStatus,
    RunStore,
    item_costs,
    lock_holder,
    tally,
    where_served,
)

EXPORT_SCHEMA = "omnivchat-benchmark-export-v1"


class TaskRecord(FileModel):
    """One declared item of a run in its export: its task, id, reply and outcome."""

    task: str
    id: str
    status: str
    """``done``, ``failed`` or ``not run``."""
    reply: str | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None
    """``kind: message`` of a failed item."""
    attempts: int = 0
    cost: CostTotals | None = None
    """What the item's attempts cost (None in exports made before costs were kept)."""
    redacted: bool = False
    """The reply held the run's key and was masked: its text is not what the model sent (routes._redact)."""


class BenchmarkExport(ExportFile):
    """The export of a run of any benchmark (schema omnivchat-benchmark-export-v1): every declared item's record
    and the manifest without its endpoint, key variable or base URL; ``complete`` when every item has a reply."""

    schema_: str = Field(EXPORT_SCHEMA, alias="schema")
    benchmark: str | None = None
    manifest: dict[str, Any] = Field(default_factory=dict)
    records: list[TaskRecord] = Field(default_factory=list)
    cost: RunCost | None = None
    """What the run's attempts cost, in all and per task (None in exports made before costs were kept)."""


def status(run_dir: Path) -> RunStatus:
    """What a run directory of any registered benchmark holds (per task: declared, done, failed, not run; its
    cost, model and writer), read without changing anything."""
    benchmark = benchmark_of(run_dir)
    if isinstance(benchmark, OwnFormats):
        return benchmark.status(run_dir)
    return task_status(run_dir, manifest_tasks(run_dir))


def export(run_dir: Path, *, judging: Path | None = None, allow_incomplete: bool = False) -> ExportFile:
    """Every declared item's reply and outcome, without keys or endpoints; an incomplete run refused unless
    ``allow_incomplete`` (``judging``: a separate judging directory, for a benchmark that keeps one)."""
    benchmark = benchmark_of(run_dir)
    if isinstance(benchmark, OwnFormats):
        return benchmark.export(run_dir, judging=judging, allow_incomplete=allow_incomplete)
    return task_export(run_dir, manifest_tasks(run_dir), allow_incomplete=allow_incomplete)


def save_scores(run_dir: Path, scores: Scores) -> Path:
    """Write ``scores`` as RUN_DIR/scores.json in the one form every benchmark's takes (schema
    omnivchat-benchmark-scores-v1, the form reports read); returns the path."""
    return write_benchmark_scores(run_dir, scores)


def manifest_tasks(run_dir: Path) -> dict[str, list[str]]:
    """The keys of a run's items by task, from its manifest's ``items`` (key -> task): what a benchmark that scores
    from its own records declared."""
    tasks: dict[str, list[str]] = {}
    for key, task in dict(read_run_manifest(run_dir).value("items") or {}).items():
        tasks.setdefault(str(task), []).append(str(key))
    return tasks


def task_status(run_dir: Path, tasks: dict[str, list[str]]) -> RunStatus:
    """The status of a run whose manifest names its benchmark, model and items: ``tasks`` maps each task (store
    kind) to the keys of the items the run declared; counts come from the store, read-only."""
    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir)
    per_task: dict[str, ItemCounts] = {}
    counts: dict[str, Any] = {}
    path = run_dir / STORE_FILE
    if path.is_file():
        with RunStore(path, read_only=True) as store:
            counts = {**store.counts(), "cost": tally(store.cost_rows())}
            by_kind = store.item_counts()
    else:
        by_kind = {}
    for task, keys in tasks.items():
        ids = by_kind.get(task, {"ids": {}})["ids"]
        done = sum(1 for k in keys if ids.get(k) == "done")
        failed = sum(1 for k in keys if ids.get(k) == "failed")
        per_task[task] = ItemCounts(declared=len(keys), done=done, failed=failed, not_run=len(keys) - done - failed)
    route = manifest.value("route")
    route = route if isinstance(route, dict) else {}
    return RunStatus(
        protocol=manifest.protocol,
        benchmark=manifest.benchmark,
        kind="tasks",
        model=route.get("model") or manifest.value("model", "?"),
        route=route.get("kind") or (route.get("settings") or {}).get("route", "?"),
        simulated=bool(manifest.value("simulated")),
        condition=manifest.value("condition") or "both",
        tasks=per_task,
        **{k: counts[k] for k in ("attempts", "attempt_failures", "tokens", "cost") if k in counts},
        **where_served(run_dir),
        writer=lock_holder(run_dir),
    )


def task_export(run_dir: Path, tasks: dict[str, list[str]], *, allow_incomplete: bool) -> BenchmarkExport:
    """Every declared item's record (reply, finish reason, usage, error, attempts), the manifest without its
    endpoint, key variable or base URL, and ``complete`` only when every item has a reply."""
    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir)
    status = task_status(run_dir, tasks)
    declared = status.tasks or {}
    missing = {t: c.declared - c.done for t, c in declared.items() if c.declared != c.done}
    if missing and not allow_incomplete:
        listed = ", ".join(f"{t}: {n} of {declared[t].declared}" for t, n in missing.items())
        raise RunError(
            f"{run_dir}: run is incomplete (items without a reply: {listed}); resume it, or pass --allow-incomplete"
        )
    records = []
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        rows = store.cost_rows()
        for task, keys in tasks.items():
            costs = item_costs(rows, task)
            for key in keys:
                row = store.item(key, task)
                result = store.result(row["key"]) if row and row["key"] else None
                records.append(
                    TaskRecord(
                        task=task,
                        id=key,
                        status=row["status"] if row else "not run",
                        reply=result.text if result else None,
                        finish_reason=result.finish_reason if result else None,
                        usage=result.usage if result else None,
                        redacted=bool(result and result.redacted),
                        error=f"{row['error_kind']}: {row['error']}" if row and row["status"] == "failed" else None,
                        attempts=len(store.attempts(row["key"])) if row and row["key"] else 0,
                        cost=costs.get(key),
                    )
                )
    return BenchmarkExport(
        benchmark=manifest.benchmark,
        status="incomplete" if missing else "complete",
        manifest=_shareable(manifest.dump(as_read=True)),
        records=records,
        cost=status.cost,
    )


def _shareable(value: Any) -> Any:
    """The manifest without anything that locates a server or names a key."""
    if isinstance(value, dict):
        hidden = ("endpoint", "base_url", "api_key_env", "replicas")
        return {k: _shareable(v) for k, v in value.items() if k not in hidden}
    if isinstance(value, list):
        return [_shareable(v) for v in value]
    return value


def scores_of(
    benchmark: str,
    items: list[ItemResult],
    metrics: dict[str, Any],
    failed: list[ItemResult],
    *,
    not_transcribed: int = 0,
) -> Scores:
    """A benchmark's scores, incomplete (and saying why) while an item has no record, a request ``failed``, or a
    spoken reply is ``not_transcribed`` (counted apart: unscored, never wrong)."""
    missing = [i for i in items if not i.ran]
    incomplete = None
    if missing or failed:
        incomplete = f"incomplete: {len(missing)} items have no record, {len(failed)} requests failed"
    if not_transcribed:
        untranscribed = f"{not_transcribed} spoken replies not transcribed (run `omnivchat transcribe`)"
        incomplete = f"{incomplete}, {untranscribed}" if incomplete else f"incomplete: {untranscribed}"
    return Scores(benchmark=benchmark, items=items, metrics=metrics, complete=incomplete is None, incomplete=incomplete)
