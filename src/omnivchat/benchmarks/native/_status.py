"""The status and the export of a native run directory (omnivchat-run-v1): the bench's instances done, failed
and not run, and every instance's reply and metadata without credentials or endpoints."""

from __future__ import annotations

from pathlib import Path

from omnivchat.benchmarks.native._files import ExportCounts, NativeExport, NativeRecord, RunManifest, load_manifest
from omnivchat.runs import (
    CANDIDATE,
    PROTOCOL,
    STORE_FILE,
    ItemCounts,
    RunError,
    RunStatus,
    RunStore,
    attempt_counts,
    item_costs,
    served_status,
    tally,
)


def _prompt_labels(manifest: RunManifest) -> dict[str, str]:
    """Which prompts a native run used, said plainly (its system prompt)."""
    label = manifest.prompt_label("system")
    return {"system": label} if label is not None else {}


def _native_status(manifest: RunManifest, store: RunStore) -> RunStatus:
    counts = {**store.counts(), "cost": tally(store.cost_rows())}
    items = store.items(CANDIDATE)
    expected = manifest.bench.n_instances
    done = sum(1 for i in items if i["status"] == "done")
    failed = sum(1 for i in items if i["status"] == "failed")
    return RunStatus(
        protocol=PROTOCOL,
        benchmark=manifest.benchmark,
        kind="run",
        model=manifest.route.model,
        route=manifest.route.kind,
        simulated=manifest.simulated,
        condition=manifest.condition,
        bench=f"{manifest.bench.name} v{manifest.bench.version}",
        instances=ItemCounts(declared=expected, done=done, failed=failed, not_run=expected - len(items)),
        failure_kinds=counts["failure_kinds"],
        prompts=_prompt_labels(manifest),
        **attempt_counts(counts),
    )


def status(run_dir: Path) -> RunStatus:
    """What a native run directory holds, read without changing anything (it may be being written, or
    read-only): the bench's instances done, failed and not run; see :class:`omnivchat.runs.RunStatus`."""
    run_dir = Path(run_dir)

    def read() -> RunStatus:
        manifest = load_manifest(run_dir)
        with RunStore(run_dir / STORE_FILE, read_only=True) as store:
            return _native_status(manifest, store)

    return served_status(run_dir, read)


def export(run_dir: Path, *, allow_incomplete: bool = False) -> NativeExport:
    """Per-item replies and metadata. Refuses an incomplete run unless ``allow_incomplete``; never includes a key,
    a base URL or an endpoint. Reads the store read-only, in one snapshot (a run being written can be exported)."""
    manifest = load_manifest(run_dir)
    with RunStore(Path(run_dir) / STORE_FILE, read_only=True) as store:
        status = _native_status(manifest, store)
        counts = status.instances
        assert counts is not None
        complete = counts.done == counts.declared
        if not complete and not allow_incomplete:
            raise RunError(
                f"{run_dir}: run is incomplete ({counts.done} of {counts.declared} done, "
                f"{counts.failed} failed, {counts.not_run} not run); resume it, or pass --allow-incomplete "
                "to export progress"
            )
        records = []
        costs = item_costs(store.cost_rows(), CANDIDATE)
        for item in store.items(CANDIDATE):
            result = store.result(item["key"]) if item["key"] else None
            attempts = store.attempts(item["key"]) if item["key"] else []
            records.append(
                NativeRecord(
                    id=item["item_id"],
                    **item["meta"],
                    status=item["status"],
                    reply=result.text if result else None,
                    reasoning=result.reasoning if result else None,
                    finish_reason=result.finish_reason if result else None,
                    usage=result.usage if result else None,
                    delivered=result.delivered if result else None,
                    redacted=bool(result and result.redacted),
                    error_kind=item["error_kind"],
                    error=item["error"],
                    attempts=len(attempts),
                    request_sha256=item["key"],
                    cost=costs.get(item["item_id"]),
                )
            )
    shared = manifest.dump(as_read=True)
    shared.pop("replicas", None)  # where the run was served locates servers: never in an export
    route = {k: v for k, v in shared["route"].items() if k != "endpoint"}
    route["settings"] = {k: v for k, v in route.get("settings", {}).items() if k not in ("api_key_env", "base_url")}
    return NativeExport(
        status="complete" if complete else "incomplete",
        simulated=manifest.simulated,
        prompts=_prompt_labels(manifest),
        manifest={**{k: v for k, v in shared.items() if k != "route"}, "route": route},
        counts=ExportCounts(
            instances=counts.declared,
            done=counts.done,
            failed=counts.failed,
            not_run=counts.not_run,
            failure_kinds=status.failure_kinds,
            tokens=status.tokens,
            cost=status.cost,
        ),
        records=records,
    )
