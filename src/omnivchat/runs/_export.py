"""Reading a finished run back: its status counts and a shareable export without credentials or endpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omnivchat.errors import OmnivchatError
from omnivchat.runs._manifest import MANIFEST_FILE
from omnivchat.runs._runner import CANDIDATE, STORE_FILE
from omnivchat.runs._store import RunStore

EXPORT_SCHEMA = "omnivchat-export-v1"


class RunError(OmnivchatError, RuntimeError):
    """A run directory cannot be read or exported as asked."""


def load_manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file() or not (Path(run_dir) / STORE_FILE).is_file():
        raise RunError(f"{run_dir}: not a run directory (needs {MANIFEST_FILE} and {STORE_FILE})")
    return json.loads(path.read_text(encoding="utf-8"))


def run_status(run_dir: Path) -> dict[str, Any]:
    """Counts by item status and failure kind, attempts by outcome, tokens and any cost the server reported."""
    manifest = load_manifest(run_dir)
    with RunStore(Path(run_dir) / STORE_FILE) as store:
        counts = store.counts()
        items = store.items(CANDIDATE)
    expected = manifest["bench"]["n_instances"]
    done = sum(1 for i in items if i["status"] == "done")
    return {
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


def export_run(run_dir: Path, *, allow_incomplete: bool = False) -> dict[str, Any]:
    """Per-item replies and metadata. Refuses an incomplete run unless ``allow_incomplete``; never includes a key,
    a base URL or an endpoint."""
    manifest = load_manifest(run_dir)
    status = run_status(run_dir)
    complete = status["done"] == status["instances"]
    if not complete and not allow_incomplete:
        raise RunError(
            f"{run_dir}: run is incomplete ({status['done']} of {status['instances']} done, {status['failed']} failed, "
            f"{status['not_run']} not run); resume it, or pass --allow-incomplete to export progress"
        )
    records = []
    with RunStore(Path(run_dir) / STORE_FILE) as store:
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
