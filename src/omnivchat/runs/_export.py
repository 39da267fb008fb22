"""Reading runs back, without changing them: the status of any run directory (also while it is being written, or
on read-only storage) and a shareable export of a native run without credentials or endpoints."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from omnivchat._files import InputError, loads_json, read_text
from omnivchat.runs._errors import RunError
from omnivchat.runs._lock import lock_holder
from omnivchat.runs._manifest import MANIFEST_FILE, PROTOCOL
from omnivchat.runs._runner import CANDIDATE, STORE_FILE
from omnivchat.runs._store import RunStore

EXPORT_SCHEMA = "omnivchat-export-v1"
# The protocols of the other run directories the runner makes (defined by omnivchat.socialomni, which this package
# may not import): `runs show` reads them too.
SOCIALOMNI_PROTOCOL = "omnivchat-socialomni-v1"
SOCIALOMNI_JUDGING_PROTOCOL = SOCIALOMNI_PROTOCOL + "-judging"
KNOWN_PROTOCOLS = (PROTOCOL, SOCIALOMNI_PROTOCOL, SOCIALOMNI_JUDGING_PROTOCOL)


def _read_manifest(run_dir: Path) -> dict[str, Any]:
    """Any run directory's manifest (read only); RunError naming the directory and what it expected."""
    path = Path(run_dir) / MANIFEST_FILE
    expected = f"{MANIFEST_FILE} with protocol {', '.join(KNOWN_PROTOCOLS)}"
    if not path.is_file():
        raise RunError(f"{run_dir}: not a run directory (no {MANIFEST_FILE}; expected {expected} and {STORE_FILE})")
    try:
        manifest = loads_json(read_text(path, "manifest"))
    except (InputError, ValueError) as err:
        raise RunError(f"{path}: cannot read the manifest ({err})") from None
    if not isinstance(manifest, dict):
        raise RunError(f"{path}: not a run manifest (expected a JSON object with protocol {expected})")
    protocol = manifest.get("protocol", PROTOCOL)  # the first native manifests had no protocol field
    if protocol not in KNOWN_PROTOCOLS:
        raise RunError(f"{path}: unknown protocol {protocol!r} (expected one of {', '.join(KNOWN_PROTOCOLS)})")
    return manifest


def load_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest of a native run directory (protocol omnivchat-run-v1, with its store); RunError otherwise."""
    manifest = _read_manifest(run_dir)
    protocol = manifest.get("protocol", PROTOCOL)
    if protocol != PROTOCOL:
        raise RunError(
            f"{run_dir} is a SocialOmni {'judging' if protocol == SOCIALOMNI_JUDGING_PROTOCOL else 'run'} directory "
            f"({protocol}), not an omnivchat run ({PROTOCOL}); use the `omnivchat socialomni` commands for it"
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
        return store.counts(), store.item_counts()


def _writer(run_dir: Path) -> dict[str, Any] | None:
    holder = lock_holder(run_dir)
    if holder is None:
        return None
    return {"pid": holder.pid, "command": holder.command, "since": holder.since, "host": holder.host}


def _native_status(manifest: dict[str, Any], store: RunStore) -> dict[str, Any]:
    counts = store.counts()
    items = store.items(CANDIDATE)
    expected = manifest["bench"]["n_instances"]
    done = sum(1 for i in items if i["status"] == "done")
    return {
        "protocol": PROTOCOL,
        "model": manifest["route"]["model"],
        "route": manifest["route"]["kind"],
        "simulated": manifest.get("simulated", False),
        "condition": manifest["condition"],
        "bench": f"{manifest['bench']['name']} v{manifest['bench']['version']}",
        "instances": expected,
        "done": done,
        "failed": sum(1 for i in items if i["status"] == "failed"),
        "not_run": expected - len(items),
        **counts,
    }


def _socialomni_status(run_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """A SocialOmni run: per task (who, when, how) the items it declared, done, failed and not run."""
    counts, by_kind = _store_counts(run_dir)
    tasks = [t for t in manifest.get("tasks") or [] if isinstance(t, str)]
    declared = [k for k in manifest.get("source_media_sha256") or {} if isinstance(k, str)]
    per_task = {}
    for task in tasks:
        ids = {k for k in declared if k.split("-", 1)[0] == task}
        stored = by_kind.get(task, {"items": {}, "ids": {}})
        done = sum(1 for i, status in stored["ids"].items() if status == "done" and i in ids)
        failed = sum(1 for i, status in stored["ids"].items() if status == "failed" and i in ids)
        per_task[task] = {"declared": len(ids), "done": done, "failed": failed, "not_run": len(ids) - done - failed}
    settings = manifest.get("route") or {}
    return {
        "protocol": SOCIALOMNI_PROTOCOL,
        "model": manifest.get("model", "?"),
        "route": settings.get("route", "?"),
        "simulated": settings.get("route") == "sim",
        "limit": manifest.get("limit"),
        "tasks": per_task,
        **{k: v for k, v in counts.items() if k not in ("items", "failure_kinds")},
    }


def _judging_status(run_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """A SocialOmni judging directory: per judge of the panel, the scores done and failed."""
    counts, by_kind = _store_counts(run_dir)
    names = [j.get("name", "?") for j in manifest.get("judges") or [] if isinstance(j, dict)]
    judges = {}
    for name in names:
        stored = by_kind.get(f"judge:{name}", {"items": {}})["items"]
        judges[name] = {"done": stored.get("done", 0), "failed": stored.get("failed", 0)}
    return {
        "protocol": SOCIALOMNI_JUDGING_PROTOCOL,
        "panel": manifest.get("panel", "?"),
        "judges": judges,
        **{k: v for k, v in counts.items() if k not in ("items", "failure_kinds")},
    }


def run_status(run_dir: Path) -> dict[str, Any]:
    """What a run directory holds, read without changing anything (it may be being written, or read-only).

    Every kind has ``protocol``, ``attempts`` (by outcome), ``attempt_failures``, ``tokens`` (and any cost the
    server reported) and ``writer`` (the process writing it now: pid, command, since; or None). A native run
    (omnivchat-run-v1) adds its model, route, bench, condition and item counts (instances, done, failed,
    not_run, failure_kinds); a SocialOmni run adds ``tasks`` (task -> declared, done, failed, not_run); a
    SocialOmni judging directory adds ``panel`` and ``judges`` (name -> done, failed).
    """
    run_dir = Path(run_dir)
    manifest = _read_manifest(run_dir)
    protocol = manifest.get("protocol", PROTOCOL)
    writer = _writer(run_dir)
    try:
        if protocol == SOCIALOMNI_PROTOCOL:
            status = _socialomni_status(run_dir, manifest)
        elif protocol == SOCIALOMNI_JUDGING_PROTOCOL:
            status = _judging_status(run_dir, manifest)
        else:
            with RunStore(Path(run_dir) / STORE_FILE, read_only=True) as store:
                status = _native_status(load_manifest(run_dir), store)
    except (KeyError, TypeError, AttributeError) as err:
        raise RunError(f"{run_dir / MANIFEST_FILE}: not a complete {protocol} manifest (no {err})") from None
    except sqlite3.DatabaseError as err:
        raise RunError(f"{run_dir / STORE_FILE}: cannot read the run store ({err})") from None
    return {**status, "writer": writer}


def export_run(run_dir: Path, *, allow_incomplete: bool = False) -> dict[str, Any]:
    """Per-item replies and metadata. Refuses an incomplete run unless ``allow_incomplete``; never includes a key,
    a base URL or an endpoint. Reads the store read-only, in one snapshot (a run being written can be exported)."""
    manifest = load_manifest(run_dir)
    with RunStore(Path(run_dir) / STORE_FILE, read_only=True) as store:
        try:
            status = _native_status(manifest, store)
        except (KeyError, TypeError) as err:
            raise RunError(f"{run_dir / MANIFEST_FILE}: not a complete {PROTOCOL} manifest (no {err})") from None
        complete = status["done"] == status["instances"]
        if not complete and not allow_incomplete:
            raise RunError(
                f"{run_dir}: run is incomplete ({status['done']} of {status['instances']} done, "
                f"{status['failed']} failed, {status['not_run']} not run); resume it, or pass --allow-incomplete "
                "to export progress"
            )
        records = []
        for item in store.items(CANDIDATE):
            result = store.result(item["key"]) if item["key"] else None
            attempts = store.attempts(item["key"]) if item["key"] else []
            records.append(
                {
                    "id": item["item_id"],
                    **item["meta"],
                    "status": item["status"],
                    "reply": result.text if result else None,
                    "reasoning": result.reasoning if result else None,
                    "finish_reason": result.finish_reason if result else None,
                    "usage": result.usage if result else None,
                    "delivered": result.delivered if result else None,
                    "error_kind": item["error_kind"],
                    "error": item["error"],
                    "attempts": len(attempts),
                    "request_sha256": item["key"],
                }
            )
    route = {k: v for k, v in manifest["route"].items() if k != "endpoint"}
    route["settings"] = {k: v for k, v in route["settings"].items() if k not in ("api_key_env", "base_url")}
    return {
        "schema": EXPORT_SCHEMA,
        "status": "complete" if complete else "incomplete",
        "simulated": manifest.get("simulated", False),
        "manifest": {**{k: v for k, v in manifest.items() if k != "route"}, "route": route},
        "counts": {k: status[k] for k in ("instances", "done", "failed", "not_run", "failure_kinds", "tokens")},
        "records": records,
    }
