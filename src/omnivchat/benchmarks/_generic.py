"""What any benchmark's run directory can be asked without a benchmark of its own: its status (per task: done,
failed, not run) and an export of every record, read without changing anything. A benchmark whose runs need more
(the native Table 1 counts, SocialOmni's fixed denominators) says so in its own ``status`` and ``export``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from omnivchat.benchmarks._registry import read_run_manifest
from omnivchat.runs import STORE_FILE, RunError, RunStore, lock_holder

EXPORT_SCHEMA = "omnivchat-benchmark-export-v1"


def task_status(run_dir: Path, tasks: dict[str, list[str]]) -> dict[str, Any]:
    """The status of a run whose manifest names its benchmark, model and items: ``tasks`` maps each task (store
    kind) to the keys of the items the run declared; counts come from the store, read-only."""
    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir)
    per_task: dict[str, dict[str, int]] = {}
    counts: dict[str, Any] = {}
    path = run_dir / STORE_FILE
    if path.is_file():
        with RunStore(path, read_only=True) as store:
            counts = store.counts()
            by_kind = store.item_counts()
    else:
        by_kind = {}
    for task, keys in tasks.items():
        ids = by_kind.get(task, {"ids": {}})["ids"]
        done = sum(1 for k in keys if ids.get(k) == "done")
        failed = sum(1 for k in keys if ids.get(k) == "failed")
        per_task[task] = {"declared": len(keys), "done": done, "failed": failed, "not_run": len(keys) - done - failed}
    route = manifest.get("route") or {}
    holder = lock_holder(run_dir)
    return {
        "protocol": manifest.get("protocol"),
        "benchmark": manifest.get("benchmark"),
        "model": route.get("model") or manifest.get("model", "?"),
        "route": route.get("kind") or (route.get("settings") or {}).get("route", "?"),
        "simulated": bool(manifest.get("simulated")),
        "condition": manifest.get("condition", "both"),
        "tasks": per_task,
        **{k: v for k, v in counts.items() if k not in ("items", "failure_kinds")},
        "writer": None if holder is None else dataclasses.asdict(holder),
    }


def task_export(run_dir: Path, tasks: dict[str, list[str]], *, allow_incomplete: bool) -> dict[str, Any]:
    """Every declared item's record (reply, finish reason, usage, error, attempts), the manifest without its
    endpoint, key variable or base URL, and ``complete`` only when every item has a reply."""
    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir)
    status = task_status(run_dir, tasks)
    missing = {t: c["declared"] - c["done"] for t, c in status["tasks"].items() if c["declared"] != c["done"]}
    if missing and not allow_incomplete:
        listed = ", ".join(f"{t}: {n} of {status['tasks'][t]['declared']}" for t, n in missing.items())
        raise RunError(
            f"{run_dir}: run is incomplete (items without a reply: {listed}); resume it, or pass --allow-incomplete"
        )
    records = []
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        for task, keys in tasks.items():
            for key in keys:
                row = store.item(key, task)
                result = store.result(row["key"]) if row and row["key"] else None
                records.append(
                    {
                        "task": task,
                        "id": key,
                        "status": row["status"] if row else "not run",
                        "reply": result.text if result else None,
                        "finish_reason": result.finish_reason if result else None,
                        "usage": result.usage if result else None,
                        "error": f"{row['error_kind']}: {row['error']}" if row and row["status"] == "failed" else None,
                        "attempts": len(store.attempts(row["key"])) if row and row["key"] else 0,
                    }
                )
    return {
        "schema": EXPORT_SCHEMA,
        "benchmark": manifest.get("benchmark"),
        "status": "incomplete" if missing else "complete",
        "manifest": _shareable(manifest),
        "records": records,
    }


def _shareable(value: Any) -> Any:
    """The manifest without anything that locates a server or names a key."""
    if isinstance(value, dict):
        return {k: _shareable(v) for k, v in value.items() if k not in ("endpoint", "base_url", "api_key_env")}
    if isinstance(value, list):
        return [_shareable(v) for v in value]
    return value
