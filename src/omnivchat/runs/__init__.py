"""Runs: the manifest, the SQLite run store, and the resumable async runner."""

from omnivchat.runs._export import EXPORT_SCHEMA, RunError, export_run, load_manifest, run_status
from omnivchat.runs._limiter import AdaptiveLimiter, backoff_delay
from omnivchat.runs._manifest import MANIFEST_FILE, PROTOCOL, ManifestMismatch, build_manifest, differences
from omnivchat.runs._runner import (
    CANDIDATE,
    STORE_FILE,
    RetryPolicy,
    Runner,
    RunSummary,
    build_request,
    run_eval,
    run_eval_async,
)
from omnivchat.runs._store import RunStore, StoredResult

__all__ = [
    "CANDIDATE",
    "EXPORT_SCHEMA",
    "MANIFEST_FILE",
    "PROTOCOL",
    "STORE_FILE",
    "AdaptiveLimiter",
    "ManifestMismatch",
    "RetryPolicy",
    "RunError",
    "RunStore",
    "RunSummary",
    "Runner",
    "StoredResult",
    "backoff_delay",
    "build_manifest",
    "build_request",
    "differences",
    "export_run",
    "load_manifest",
    "run_eval",
    "run_eval_async",
    "run_status",
]
