"""Reading runs back, without changing them (also while a run is being written, or on read-only storage): what the
store counts and cost, where it was served; each benchmark builds its status and export on
these (:mod:`omnivchat.benchmarks`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omnivchat.runs._cost import RunCost, tally
from omnivchat.runs._errors import RunError
from omnivchat.runs._files import RunStatus, ServedModel
from omnivchat.runs._lock import lock_holder
from omnivchat.runs._runner import STORE_FILE
from omnivchat.runs._store import RunStore


def store_counts(run_dir: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
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


def attempt_counts(counts: dict[str, Any]) -> dict[str, Any]:
    """The parts of :meth:`RunStore.counts` every status has: attempts, failed attempts by kind, tokens, and the
    cost when it was read."""
    if "cost" in counts:
        return {k: counts[k] for k in ("attempts", "attempt_failures", "tokens", "cost")}
    return {k: counts[k] for k in ("attempts", "attempt_failures", "tokens")}


def served_status(run_dir: Path, read: Callable[[], RunStatus]) -> RunStatus:
    """The status ``read`` gives of a run directory, with its writer (if one holds it) and where its store says
    it was served; a store that cannot be read is a RunError naming it."""
    writer = lock_holder(run_dir)
    try:
        status = read()
        served = where_served(run_dir)
    except sqlite3.DatabaseError as err:
        raise RunError(f"{run_dir / STORE_FILE}: cannot read the run store ({err})") from None
    return status.model_copy(update={"writer": writer, **served})
