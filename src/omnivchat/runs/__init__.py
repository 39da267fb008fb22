"""Runs: the manifest, the SQLite run store, the writer lock of a run directory, the resumable async runner, and
the typed files every run directory has (the manifest's shared part and the registry of each benchmark's manifest
model, status, what an export has). This package knows no benchmark: each defines its manifest, requests and
export (the native bench's in ``omnivchat.benchmarks.native``), and the status and export of a run directory are
the benchmark's (``omnivchat.benchmarks.status``, ``export``), built on what this package reads."""

from omnivchat.routes import RetryPolicy  # the runner's parameter, re-exported: callers name it from runs
from omnivchat.runs._budget import Budget, BudgetError, check_priced
from omnivchat.runs._cost import CostTotals, RunCost, item_costs, money, tally
from omnivchat.runs._errors import RunError
from omnivchat.runs._estimate import (
    DryRun,
    estimate_requests,
    estimate_tasks,
)
from omnivchat.runs._export import (
    attempt_counts,
    run_cost,
    served_status,
    store_counts,
    where_served,
)
from omnivchat.runs._files import (
    MANIFEST_FILE,
    PROTOCOL,
    ExportFile,
    ItemCounts,
    JudgeCounts,
    Manifest,
    PackageRecord,
    PromptRecord,
    RouteIdentity,
    RunStatus,
    ServedModel,
    known_protocols,
    manifest_model,
    read_manifest,
    register_manifest,
    served_changes,
)
from omnivchat.runs._lock import LOCK_FILE, LOCKING, LockHolder, RunLocked, lock_holder, run_lock, writes_run_dir
from omnivchat.runs._manifest import (
    CODE_FIELDS,
    RECORD_FIELDS,
    ManifestMismatch,
    differences,
    package_record,
    route_identity,
    source_hash,
    write_or_check_manifest,
)
from omnivchat.runs._progress import RunProgress
from omnivchat.runs._runner import (
    CANDIDATE,
    STORE_FILE,
    Pending,
    Runner,
    RunSummary,
    TaskWork,
    run_tasks,
    run_tasks_async,
)
from omnivchat.runs._shards import (
    Shard,
    ShardError,
    ShardRecord,
    manifest_shard,
    merge_stores,
    shard_of,
    shard_set,
)
from omnivchat.runs._store import RunStore, StoredResult

__all__ = [
    "CANDIDATE",
    "CODE_FIELDS",
    "LOCKING",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "PROTOCOL",
    "RECORD_FIELDS",
    "STORE_FILE",
    "Budget",
    "BudgetError",
    "CostTotals",
    "DryRun",
    "ExportFile",
    "ItemCounts",
    "JudgeCounts",
    "LockHolder",
    "Manifest",
    "ManifestMismatch",
    "PackageRecord",
    "Pending",
    "PromptRecord",
    "RetryPolicy",
    "RouteIdentity",
    "RunCost",
    "RunError",
    "RunLocked",
    "RunProgress",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "Runner",
    "ServedModel",
    "Shard",
    "ShardError",
    "ShardRecord",
    "StoredResult",
    "TaskWork",
    "attempt_counts",
    "check_priced",
    "differences",
    "estimate_requests",
    "estimate_tasks",
    "item_costs",
    "known_protocols",
    "lock_holder",
    "manifest_model",
    "manifest_shard",
    "merge_stores",
    "money",
    "package_record",
    "read_manifest",
    "register_manifest",
    "route_identity",
    "run_cost",
    "run_lock",
    "run_tasks",
    "run_tasks_async",
    "served_changes",
    "served_status",
    "shard_of",
    "shard_set",
    "source_hash",
    "store_counts",
    "tally",
    "where_served",
    "write_or_check_manifest",
    "writes_run_dir",
]
