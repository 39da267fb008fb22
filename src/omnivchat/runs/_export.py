"""Reading runs back, without changing them: the status of any run directory (also while it is being written, or
on read-only storage) and a shareable export of a native run without credentials or endpoints."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from omnivchat._files import InputError, loads_json, read_text, validate_file
from omnivchat.runs._cost import RunCost, item_costs, tally
from omnivchat.runs._errors import RunError
from omnivchat.runs._files import (
    KNOWN_PROTOCOLS,
    MANIFEST_FILE,
    PROTOCOL,
    SOCIALOMNI_JUDGING_PROTOCOL,
    SOCIALOMNI_PROTOCOL,
    ExportCounts,
    ItemCounts,
    JudgeCounts,
    Manifest,
    NativeExport,
    NativeRecord,
    RunManifest,
    RunStatus,
    ServedModel,
    SocialOmniJudgingManifest,
    SocialOmniManifest,
    manifest_model,
)
from omnivchat.runs._lock import lock_holder
from omnivchat.runs._runner import CANDIDATE, STORE_FILE
from omnivchat.runs._store import RunStore


def _read_manifest(run_dir: Path) -> Manifest:
    """Any run directory's manifest (read only), as the model of its protocol; RunError naming the directory and
    what it expected."""
    path = Path(run_dir) / MANIFEST_FILE
    expected = f"{MANIFEST_FILE} with protocol {', '.join(KNOWN_PROTOCOLS)}"
    if not path.is_file():
        raise RunError(f"{run_dir}: not a run directory (no {MANIFEST_FILE}; expected {expected} and {STORE_FILE})")
    try:
        data = loads_json(read_text(path, "manifest"))
    except (InputError, ValueError) as err:
        raise RunError(f"{path}: cannot read the manifest ({err})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a run manifest (expected a JSON object with protocol {expected})")
    protocol = data.get("protocol", PROTOCOL)  # the first native manifests had no protocol field
    if protocol not in KNOWN_PROTOCOLS:
        raise RunError(f"{path}: unknown protocol {protocol!r} (expected one of {', '.join(KNOWN_PROTOCOLS)})")
    return validate_file(manifest_model(protocol), data, path, f"{protocol} manifest", error=RunError)


def load_manifest(run_dir: Path) -> RunManifest:
    """The manifest of a native run directory (protocol omnivchat-run-v1, with its store); RunError otherwise."""
    manifest = _read_manifest(run_dir)
    if not isinstance(manifest, RunManifest):
        judging = manifest.protocol == SOCIALOMNI_JUDGING_PROTOCOL
        raise RunError(
            f"{run_dir} is a SocialOmni {'judging' if judging else 'run'} directory "
            f"({manifest.protocol}), not an omnivchat run ({PROTOCOL}); use the `omnivchat socialomni` commands for it"
        )
    if not (Path(run_dir) / STORE_FILE).is_file():
        raise RunError(f"{run_dir}: not a run directory (needs {MANIFEST_FILE} and {STORE_FILE})")
    return manifest


def _store_counts(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(:meth:`RunStore.counts`, :meth:`RunStore.item_counts`) of the run's store, read-only; zero counts when the
    store is not made yet (a writer that has only just begun)."""
    path = Path(run_dir) / STORE_FILE
    if not path.is_file():
        empty = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return {"items": {}, "failure_kinds": {}, "attempts": {}, "attempt_failures": {}, "tokens": empty}, {}
    with RunStore(path, read_only=True) as store:
        return {**store.counts(), "cost": tally(store.cost_rows())}, store.item_counts()


def run_cost(run_dir: Path) -> RunCost:
    """What a run directory's store has cost, in all and per kind of request (read-only; nothing when it has no
    store yet)."""
    path = Path(run_dir) / STORE_FILE
    if not path.is_file():
        return RunCost()
    with RunStore(path, read_only=True) as store:
        return tally(store.cost_rows())


def where_served(run_dir: Path) -> dict[str, Any]:
    """Where and what a run's store says was served (read-only): ``replicas`` (attempts per replica, by outcome),
    ``served`` (per kind of request, the model names and fingerprints servers reported, as ServedModel) and
    ``redacted`` (per kind of request, the replies masked of the key: not what the model sent)."""
    path = Path(run_dir) / STORE_FILE
    if not path.is_file():
        return {"replicas": {}, "served": {}, "redacted": {}}
    with RunStore(path, read_only=True) as store:
        served = {k: [ServedModel.model_validate(e) for e in v] for k, v in store.served().items()}
        return {"replicas": store.replica_counts(), "served": served, "redacted": store.redacted_counts()}


def _attempts(counts: dict[str, Any]) -> dict[str, Any]:
    """The parts of :meth:`RunStore.counts` every status has: attempts, failed attempts by kind, tokens, and the
    cost when it was read."""
    if "cost" in counts:
        return {k: counts[k] for k in ("attempts", "attempt_failures", "tokens", "cost")}
    return {k: counts[k] for k in ("attempts", "attempt_failures", "tokens")}


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
        **_attempts(counts),
    )


def _socialomni_status(run_dir: Path, manifest: SocialOmniManifest) -> RunStatus:
    """A SocialOmni run: per task (who, when, how) the items it declared, done, failed and not run."""
    counts, by_kind = _store_counts(run_dir)
    declared = list(manifest.source_media_sha256 or {})
    per_task = {}
    for task in manifest.tasks or []:
        ids = {k for k in declared if k.split("-", 1)[0] == task}
        stored = by_kind.get(task, {"items": {}, "ids": {}})
        done = sum(1 for i, status in stored["ids"].items() if status == "done" and i in ids)
        failed = sum(1 for i, status in stored["ids"].items() if status == "failed" and i in ids)
        per_task[task] = ItemCounts(declared=len(ids), done=done, failed=failed, not_run=len(ids) - done - failed)
    route = manifest.route.get("route", "?")
    cards = manifest.prompts.items()
    return RunStatus(
        protocol=SOCIALOMNI_PROTOCOL,
        benchmark=manifest.benchmark,
        kind="tasks",
        model=manifest.model,
        route=str(route),
        simulated=route == "sim",
        condition=manifest.condition or "both",
        limit=manifest.limit,
        tasks=per_task,
        # a manifest written before labels were recorded has the cards' hashes only
        prompts={t: (manifest.prompt_labels or {}).get(t) or f"not recorded (sha256 {h[:12]})" for t, h in cards},
        **_attempts(counts),
    )


def _judging_status(run_dir: Path, manifest: SocialOmniJudgingManifest) -> RunStatus:
    """A SocialOmni judging directory: per judge of the panel, the scores done and failed."""
    counts, by_kind = _store_counts(run_dir)
    judges = {}
    for name in manifest.judge_names:
        stored = by_kind.get(f"judge:{name}", {"items": {}})["items"]
        judges[name] = JudgeCounts(done=stored.get("done", 0), failed=stored.get("failed", 0))
    return RunStatus(
        protocol=SOCIALOMNI_JUDGING_PROTOCOL,
        kind="judging",
        panel=manifest.panel,
        judges=judges,
        **_attempts(counts),
    )


def run_status(run_dir: Path) -> RunStatus:
    """What a run directory holds, read without changing anything (it may be being written, or read-only): a
    native run (omnivchat-run-v1), a SocialOmni run (per task) or a SocialOmni judging directory (per judge); see
    :class:`RunStatus`."""
    run_dir = Path(run_dir)
    manifest = _read_manifest(run_dir)
    writer = lock_holder(run_dir)
    try:
        if isinstance(manifest, SocialOmniManifest):
            status = _socialomni_status(run_dir, manifest)
        elif isinstance(manifest, SocialOmniJudgingManifest):
            status = _judging_status(run_dir, manifest)
        else:
            with RunStore(Path(run_dir) / STORE_FILE, read_only=True) as store:
                status = _native_status(load_manifest(run_dir), store)
        served = where_served(run_dir)
    except sqlite3.DatabaseError as err:
        raise RunError(f"{run_dir / STORE_FILE}: cannot read the run store ({err})") from None
    return status.model_copy(update={"writer": writer, **served})


def export_run(run_dir: Path, *, allow_incomplete: bool = False) -> NativeExport:
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
