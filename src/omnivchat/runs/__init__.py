"""Runs: the manifest, the SQLite run store, the writer lock of a run directory, and the resumable async runner."""

from omnivchat.runs._errors import RunError
from omnivchat.runs._export import (
    EXPORT_SCHEMA,
    SOCIALOMNI_JUDGING_PROTOCOL,
    SOCIALOMNI_PROTOCOL,
    export_run,
    load_manifest,
    run_status,
)
from omnivchat.runs._limiter import AdaptiveLimiter, backoff_delay
from omnivchat.runs._lock import LOCK_FILE, LOCKING, LockHolder, RunLocked, lock_holder, run_lock, writes_run_dir
from omnivchat.runs._manifest import (
    MANIFEST_FILE,
    PROTOCOL,
    ManifestMismatch,
    build_manifest,
    differences,
    package_record,
    write_or_check_manifest,
)
from omnivchat.runs._runner import (
    CANDIDATE,
    STORE_FILE,
    Pending,
    RetryPolicy,
    Runner,
    RunSummary,
    TaskWork,
    build_request,
    run_eval,
    run_eval_async,
    run_tasks,
    run_tasks_async,
)
from omnivchat.runs._store import RunStore, StoredResult

__all__ = [
    "CANDIDATE",
    "EXPORT_SCHEMA",
    "LOCKING",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "PROTOCOL",
    "SOCIALOMNI_JUDGING_PROTOCOL",
    "SOCIALOMNI_PROTOCOL",
    "STORE_FILE",
    "AdaptiveLimiter",
    "LockHolder",
    "ManifestMismatch",
    "Pending",
    "RetryPolicy",
    "RunError",
    "RunLocked",
    "RunStore",
    "RunSummary",
    "Runner",
    "StoredResult",
    "TaskWork",
    "backoff_delay",
    "build_manifest",
    "build_request",
    "differences",
    "export_run",
    "load_manifest",
    "lock_holder",
    "package_record",
    "run_eval",
    "run_eval_async",
    "run_lock",
    "run_status",
    "run_tasks",
    "run_tasks_async",
    "write_or_check_manifest",
    "writes_run_dir",
]
