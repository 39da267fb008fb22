"""What any benchmark's run directory can be asked: its status (per task: done, failed, not run), an export of
every record (one schema, omnivchat-benchmark-export-v1, for every benchmark), read without changing anything, and
its scores.json. Written once here; what differs per benchmark is a small optional protocol:
:class:`~omnivchat.benchmarks.DeclaresItems` (the native run counts against its bench's instances),
:class:`~omnivchat.benchmarks.ExportsMore` (SocialOmni's predictions, judging and metrics) and
:class:`~omnivchat.benchmarks.OtherDirectories` (SocialOmni's judging directory). scores.json has one schema for
every benchmark too (omnivchat-benchmark-scores-v1)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from omnivchat._files import FileModel, InputError, read_model, validate_file
from omnivchat.benchmarks._options import BenchmarkOptionError
from omnivchat.benchmarks._protocol import (
    Declared,
    DeclaresItems,
    ExportExtras,
    ExportsMore,
    OtherDirectories,
)
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
    StoredResult,
    attempt_counts,
    item_costs,
    manifest_shard,
    served_status,
    store_counts,
    tally,
)

EXPORT_SCHEMA = "omnivchat-benchmark-export-v1"
OLD_NATIVE_SCHEMA = "omnivchat-export-v1"  # the native runs' exports before one schema served every benchmark
OLD_SOCIALOMNI_SCHEMA = "omnivchat-socialomni-export-v1"  # SocialOmni's, likewise


class TaskRecord(FileModel):
    """One declared item of a run in its export: its task, id, reply and outcome; ``meta`` what the store keeps
    with it (its subcategory, language, gold answer...) and what its benchmark adds (a parsed prediction, judge
    scores)."""

    task: str
    id: str
    status: str
    """``done``, ``failed`` or ``not run``."""
    reply: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    delivered: dict[str, Any] | None = None
    """What the request delivered to the model (media parts, as the route sent them)."""
    error_kind: str | None = None
    error: str | None = None
    """``kind: message`` of a failed item."""
    attempts: int = 0
    request_sha256: str | None = None
    cost: CostTotals | None = None
    """What the item's attempts cost (None in exports made before costs were kept)."""
    redacted: bool = False
    """The reply held the run's key and was masked: its text is not what the model sent (routes._redact)."""
    meta: dict[str, Any] = Field(default_factory=dict)


class BenchmarkExport(ExportFile):
    """The export of a run of any benchmark (schema omnivchat-benchmark-export-v1): every declared item's record
    and the manifest without its endpoint, key variable, base URL or replicas; ``complete`` when every item has a
    reply (or as the benchmark decides: SocialOmni's How needs a full panel); ``extra`` the benchmark's run-level
    figures (native: prompts, simulated; SocialOmni: metrics, completeness, quality, judging)."""

    schema_: str = Field(EXPORT_SCHEMA, alias="schema")
    benchmark: str | None = None
    manifest: dict[str, Any] = Field(default_factory=dict)
    records: list[TaskRecord] = Field(default_factory=list)
    cost: RunCost | None = None
    """What the run's attempts cost, in all and per task (None in exports made before costs were kept)."""
    counts: dict[str, ItemCounts] = Field(default_factory=dict)
    """Per task: its declared items, done, failed and not run (the records' snapshot)."""
    failure_kinds: dict[str, int] = Field(default_factory=dict)
    """Failed items by failure kind."""
    tokens: dict[str, float] = Field(default_factory=dict)
    incomplete_reasons: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


def status(run_dir: Path) -> RunStatus:
    """What a run directory of any registered benchmark holds (per task: declared, done, failed, not run; its
    cost, model and writer), read without changing anything."""
    run_dir = Path(run_dir)
    benchmark = benchmark_of(run_dir)
    if isinstance(benchmark, OtherDirectories) and (other := benchmark.directory_status(run_dir)) is not None:
        return other
    declared = _declared(benchmark, run_dir)
    return served_status(run_dir, lambda: _status(run_dir, declared))


def export(run_dir: Path, *, judging: Path | None = None, allow_incomplete: bool = False) -> BenchmarkExport:
    """Every declared item's reply and outcome, without keys or endpoints; an incomplete run refused unless
    ``allow_incomplete`` (``judging``: a separate judging directory, for a benchmark that keeps one)."""
    run_dir = Path(run_dir)
    benchmark = benchmark_of(run_dir)
    if judging is not None and not isinstance(benchmark, OtherDirectories):  # refused, never silently ignored
        raise BenchmarkOptionError(f"the {benchmark.name} benchmark does not take --judging (export): it keeps none")
    declared = _declared(benchmark, run_dir)
    extras = benchmark.export_extras(run_dir, judging) if isinstance(benchmark, ExportsMore) else ExportExtras()
    return _export(run_dir, declared, extras, allow_incomplete=allow_incomplete)


def save_scores(run_dir: Path, scores: Scores) -> Path:
    """Write ``scores`` as RUN_DIR/scores.json in the one form every benchmark's takes (schema
    omnivchat-benchmark-scores-v1, the form reports read); returns the path."""
    return write_benchmark_scores(run_dir, scores)


def manifest_tasks(run_dir: Path) -> dict[str, list[str]]:
    """The keys of a run's items by task, from its manifest's ``items`` (key -> task): what a benchmark that scores
    from its own records declared."""
    manifest = read_run_manifest(run_dir)
    if (shard := manifest_shard(manifest)) is not None:  # a shard declares its own part of the items
        return {task: list(keys) for task, keys in shard.items.items()}
    tasks: dict[str, list[str]] = {}
    for key, task in dict(manifest.value("items") or {}).items():
        tasks.setdefault(str(task), []).append(str(key))
    return tasks


def _declared(benchmark: object, run_dir: Path) -> Declared:
    """The items a run declares by task (a shard: its own part, listed in its manifest)."""
    if isinstance(benchmark, DeclaresItems):
        declared = benchmark.declared(run_dir)
        shard = manifest_shard(read_run_manifest(run_dir))
        if shard is None:
            return declared
        return Declared({task: list(keys) for task, keys in shard.items.items()}, declared.status)
    return Declared(dict(manifest_tasks(run_dir)))


def _counts(declared: list[str] | int, ids: dict[str, str]) -> ItemCounts:
    """A task's declared items counted against the store's ``ids`` (id -> status): listed keys, or a number of
    items (every stored one counts)."""
    if isinstance(declared, int):
        done = sum(1 for s in ids.values() if s == "done")
        failed = sum(1 for s in ids.values() if s == "failed")
        return ItemCounts(declared=declared, done=done, failed=failed, not_run=declared - len(ids))
    done = sum(1 for k in declared if ids.get(k) == "done")
    failed = sum(1 for k in declared if ids.get(k) == "failed")
    return ItemCounts(declared=len(declared), done=done, failed=failed, not_run=len(declared) - done - failed)


def _status(run_dir: Path, declared: Declared) -> RunStatus:
    """The status of a run: per declared task its items counted from the store (read-only); the manifest's
    benchmark, model and route unless the benchmark states them."""
    manifest = read_run_manifest(run_dir)
    counts, by_kind = store_counts(run_dir)
    per_task = {t: _counts(keys, by_kind.get(t, {"ids": {}})["ids"]) for t, keys in declared.tasks.items()}
    route = manifest.value("route")
    route = route if isinstance(route, dict) else {}
    fields: dict[str, Any] = {
        "protocol": manifest.protocol,
        "benchmark": manifest.benchmark,
        "kind": "tasks",
        "model": route.get("model") or manifest.value("model", "?"),
        "route": route.get("kind") or (route.get("settings") or {}).get("route", "?"),
        "simulated": bool(manifest.value("simulated")),
        "condition": manifest.value("condition") or "both",
        **declared.status,
    }
    if (shard := manifest_shard(manifest)) is not None:  # its counts are its own items': said beside them
        fields["shard"] = shard.label
    if fields["kind"] == "run":  # one bench: its instances, counted
        fields["instances"] = next(iter(per_task.values()), None)
    else:
        fields["tasks"] = per_task
    return RunStatus(**fields, **attempt_counts(counts))


def _export(run_dir: Path, declared: Declared, extras: ExportExtras, *, allow_incomplete: bool) -> BenchmarkExport:
    """Every declared item's record (reply, reasoning, finish reason, usage, error, attempts, meta), the manifest
    without what locates a server or names a key, and the status: the benchmark's, else ``complete`` only when
    every item has a reply. One read-only snapshot of the store (a run being written can be exported)."""
    manifest = read_run_manifest(run_dir)
    records = []
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        by_kind = store.item_counts()
        per_task = {t: _counts(keys, by_kind.get(t, {"ids": {}})["ids"]) for t, keys in declared.tasks.items()}
        rows = store.cost_rows()
        for task, keys in declared.tasks.items():
            costs = item_costs(rows, task)
            stored = {i["item_id"]: i for i in store.items(task)}
            read = _Stored(store.results_of(task), store.attempt_counts_of(task))  # two queries, not two per item
            for key in list(stored) if isinstance(keys, int) else keys:
                records.append(_record(read, task, key, stored.get(key), costs, extras))
        cost = tally(rows)
        counts = store.counts()
    reasons = list(extras.reasons)
    if extras.status is None:
        reasons = [
            f"{t}: {c.done} of {c.declared} done, {c.failed} failed, {c.not_run} not run"
            for t, c in per_task.items()
            if c.declared != c.done
        ]
    state = extras.status or ("incomplete" if reasons else "complete")
    if state == "incomplete" and not allow_incomplete:
        raise RunError(
            f"{run_dir}: run is incomplete ({'; '.join(reasons)}); resume it, or pass --allow-incomplete to export "
            "progress"
        )
    return BenchmarkExport(
        benchmark=manifest.benchmark,
        status=state,
        manifest=_shareable(manifest.dump(as_read=True)),
        records=records,
        cost=cost,
        counts=per_task,
        failure_kinds=counts["failure_kinds"],
        tokens=counts["tokens"],
        incomplete_reasons=reasons,
        extra=extras.extra,
    )


@dataclass(frozen=True)
class _Stored:
    """A task's stored results and attempt counts, by request key."""

    results: dict[str, StoredResult]
    attempts: dict[str, int]


def _record(
    stored: _Stored,
    task: str,
    key: str,
    row: dict[str, Any] | None,
    costs: dict[str, CostTotals],
    extras: ExportExtras,
) -> TaskRecord:
    result = stored.results.get(row["key"]) if row and row["key"] else None
    failed = row is not None and row["status"] == "failed"
    return TaskRecord(
        task=task,
        id=key,
        status=row["status"] if row else "not run",
        reply=result.text if result else None,
        reasoning=result.reasoning if result else None,
        finish_reason=result.finish_reason if result else None,
        usage=result.usage if result else None,
        delivered=result.delivered if result else None,
        redacted=bool(result and result.redacted),
        error_kind=row["error_kind"] if row else None,
        error=f"{row['error_kind']}: {row['error']}" if row and failed else None,
        attempts=stored.attempts.get(row["key"], 0) if row and row["key"] else 0,
        request_sha256=row["key"] if row else None,
        cost=costs.get(key),
        meta={**(row["meta"] if row else {}), **extras.meta.get((task, key), {})},
    )


def _shareable(value: Any) -> Any:
    """The manifest without anything that locates a server or names a key."""
    if isinstance(value, dict):
        hidden = ("endpoint", "base_url", "api_key_env", "replicas")
        return {k: _shareable(v) for k, v in value.items() if k not in hidden}
    if isinstance(value, list):
        return [_shareable(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------- old export files


def read_export(path: Path) -> BenchmarkExport:
    """An export file of any benchmark, as :class:`BenchmarkExport`: one of the old schemas (a native run's
    omnivchat-export-v1, SocialOmni's omnivchat-socialomni-export-v1) converted; an InputError naming the file
    when it is not a valid export."""
    path = Path(path)
    head = read_model(path, ExportFile, "export")
    if head.schema_ not in (OLD_NATIVE_SCHEMA, OLD_SOCIALOMNI_SCHEMA):
        return read_model(path, BenchmarkExport, "export")
    data = head.dump()
    try:
        converted = _from_native(data) if head.schema_ == OLD_NATIVE_SCHEMA else _from_socialomni(data)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        raise InputError(f"{path}: not a valid export ({head.schema_}: {type(err).__name__}: {err})") from None
    return validate_file(BenchmarkExport, converted, path, "export")


_NATIVE_FIELDS = (
    "id", "status", "reply", "reasoning", "finish_reason", "usage", "delivered", "error_kind", "attempts",
    "request_sha256", "cost", "redacted",
)  # fmt: skip


def _from_native(data: dict[str, Any]) -> dict[str, Any]:
    """An omnivchat-export-v1 file's fields in the one schema: an item's own fields (subcategory, language...)
    into its ``meta``; the prompts, simulated and counts into ``extra``."""
    records = []
    for r in data.get("records") or []:
        error = f"{r.get('error_kind')}: {r['error']}" if r.get("error") is not None else None
        meta = {k: v for k, v in r.items() if k not in (*_NATIVE_FIELDS, "error")}
        records.append(
            {"task": "candidate", **{k: r[k] for k in _NATIVE_FIELDS if k in r}, "error": error, "meta": meta}
        )
    counts = dict(data["counts"])
    declared = {k: counts[k] for k in ("done", "failed", "not_run")} | {"declared": counts["instances"]}
    manifest = data.get("manifest") or {}
    return {
        "schema": EXPORT_SCHEMA,
        "status": data["status"],
        "benchmark": manifest.get("benchmark") or "omnivchat",
        "manifest": manifest,
        "records": records,
        "cost": counts.get("cost"),
        "counts": {"candidate": declared},
        "failure_kinds": counts.get("failure_kinds") or {},
        "tokens": counts.get("tokens") or {},
        "extra": {"simulated": data.get("simulated", False), "prompts": data.get("prompts") or {}},
    }


def _from_socialomni(data: dict[str, Any]) -> dict[str, Any]:
    """An omnivchat-socialomni-export-v1 file's fields in the one schema: an item's prediction, gold answer and
    judge scores into its ``meta``; the metrics, completeness, quality and judging into ``extra``."""
    records = []
    for i in data.get("items") or []:
        meta = {k: i[k] for k in ("prediction", "gold", "judge_scores") if k in i}
        ok = i.get("request_success", True)
        records.append(
            {
                "task": i["task"],
                "id": f"{i['task']}-{i['item_id']}",
                "status": "done" if ok else "failed",
                "reply": i.get("text"),
                "redacted": i.get("redacted", False),
                "meta": meta,
            }
        )
    run_level = ("model", "protocol", "judge_panel", "judges", "judge_substitution", "metrics", "completeness")
    return {
        "schema": EXPORT_SCHEMA,
        "status": data["status"],
        "benchmark": "socialomni",
        "records": records,
        "incomplete_reasons": data.get("incomplete_reasons") or [],
        "extra": {k: data.get(k) for k in (*run_level, "quality", "manifest_sha256")},
    }


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
