"""Shards of one run (``eval --shard I/N``) merged into one run directory (``omnivchat runs merge``), for any
benchmark: the same manifest but for the shard, every declared item in exactly one shard, every store row kept.

What the merged run holds: the shards' common manifest without ``shard`` (what an unsharded run of the same
command writes); one store with every request, attempt, cost row, result, item and verdict of every shard; the
shards' invocations, one after another, then the merge's; their spoken replies' audio and any other file they
made, each the same in every shard that has it. Derived files (``scores.json``, a summary) are not copied: score
the merged run.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat._files import OutputError, loads_json, read_text, write_text_atomic
from omnivchat.benchmarks._generic import _declared, status
from omnivchat.benchmarks._protocol import TaskSummary
from omnivchat.benchmarks._registry import benchmark_of
from omnivchat.runs import (
    CODE_FIELDS,
    LOCK_FILE,
    MANIFEST_FILE,
    RECORD_FIELDS,
    STORE_FILE,
    RunError,
    differences,
    lock_holder,
    manifest_shard,
    merge_stores,
    package_record,
    shard_set,
)

_STORE_FILES = (STORE_FILE, f"{STORE_FILE}-wal", f"{STORE_FILE}-shm")
_NOT_COPIED = (MANIFEST_FILE, LOCK_FILE, "invocations.jsonl", "scores.json", "summary.json", *_STORE_FILES)
"""Written by the merge itself, or derived from the store (scored again on the merged run)."""


class MergeError(RunError):
    """Shards that do not make one run: another manifest, a shard or an item missing or twice, an incomplete shard."""


@dataclass
class MergeSummary:
    """What ``runs merge`` wrote: the merged run, its shards, its declared items and how many are done."""

    output: Path
    shards: int
    declared: int
    done: int
    incomplete: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _raw_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        raise MergeError(f"{run_dir}: not a run directory (no {MANIFEST_FILE})")
    data = loads_json(read_text(path, "manifest"))
    if not isinstance(data, dict):
        raise MergeError(f"{path}: not a run manifest (not a JSON object)")
    return data


def _identity(manifest: dict[str, Any]) -> dict[str, Any]:
    """What must be the same in every shard: all but the shard, the code that made it and where it was served."""
    return {k: v for k, v in manifest.items() if k not in ("shard", *CODE_FIELDS, *RECORD_FIELDS)}


def _check_shards(dirs: Sequence[Path], *, allow_incomplete: bool) -> tuple[dict[str, Any], list[str], list[str]]:
    """The merged manifest, the incomplete shards (each said in words) and notes; MergeError when the shards do
    not make one run."""
    if not dirs:
        raise MergeError("no shard directories given")
    manifests = [_raw_manifest(d) for d in dirs]
    records = []
    for directory, manifest in zip(dirs, manifests, strict=True):
        record = manifest_shard(manifest)
        if record is None:
            raise MergeError(f"{directory}: not a shard (its manifest has no shard: it was not run with --shard)")
        if (holder := lock_holder(directory)) is not None:
            raise MergeError(f"{directory}: being written now by pid {holder.pid}; merge it once that run has ended")
        records.append(record)
    first = _identity(manifests[0])
    for directory, manifest in zip(dirs[1:], manifests[1:], strict=True):
        changed = differences(first, _identity(manifest))
        if changed:
            listing = "; ".join(changed[:5]) + (f"; and {len(changed) - 5} more" if len(changed) > 5 else "")
            raise MergeError(f"{directory} is a shard of another run than {dirs[0]} ({listing})")
    shard_set([(d, r.index, r.count) for d, r in zip(dirs, records, strict=True)], MergeError, "items", "run")
    owner: dict[tuple[str, str], Path] = {}
    for directory, record in zip(dirs, records, strict=True):
        for task, keys in record.items.items():
            for key in keys:
                if (task, key) in owner:
                    raise MergeError(f"item {key} ({task}) is in two shards: {owner[(task, key)]} and {directory}")
                owner[(task, key)] = directory
    incomplete = []
    for directory, record in zip(dirs, records, strict=True):
        shown = status(directory)
        tasks = shown.tasks or ({} if shown.instances is None else {"candidate": shown.instances})
        short = [f"{t}: {c.done} of {c.declared} done" for t, c in tasks.items() if c.done != c.declared]
        if short:
            incomplete.append(f"{directory} (shard {record.label}): {', '.join(short)}")
    if incomplete and not allow_incomplete:
        raise MergeError(
            f"incomplete shard: {incomplete[0]}"
            + (f" (and {len(incomplete) - 1} more)" if len(incomplete) > 1 else "")
            + "; resume it, or pass --allow-incomplete to merge an incomplete run"
        )
    notes = []
    if any(
        differences({k: m.get(k) for k in CODE_FIELDS}, {k: manifests[0].get(k) for k in CODE_FIELDS})
        for m in manifests
    ):
        notes.append("the shards were made by other omnivchat code: the merged manifest records the first shard's")
    merged = {k: v for k, v in manifests[0].items() if k != "shard"}
    for name in RECORD_FIELDS:  # where it was served: kept when every shard says the same, else per attempt only
        if any(m.get(name) != manifests[0].get(name) for m in manifests) and name in merged:
            del merged[name]
            notes.append(f"the shards differ in {name}: the merged manifest leaves it out (each attempt keeps its own)")
    return merged, incomplete, notes


def _check_coverage(run_dir: Path, dirs: Sequence[Path]) -> tuple[int, int]:
    """Every item the merged run declares is in a shard, and no shard holds an item it does not declare: the
    declared and done counts; MergeError naming the first missing or stray item."""
    declared = _declared(benchmark_of(run_dir), run_dir).tasks
    held: dict[str, set[str]] = {}
    for directory in dirs:
        record = manifest_shard(_raw_manifest(directory))
        assert record is not None  # checked in _check_shards
        for task, listed in record.items.items():
            held.setdefault(task, set()).update(listed)
    for task in sorted(set(held) - set(declared)):
        raise MergeError(f"the shards hold items of task {task}, which the run does not declare")
    total = 0
    for task, keys in declared.items():
        have = held.get(task, set())
        if isinstance(keys, int):
            if len(have) != keys:
                raise MergeError(
                    f"the shards hold {len(have)} {task} items; the run declares {keys}: an item is missing"
                )
            total += keys
            continue
        missing = [k for k in keys if k not in have]
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise MergeError(f"item {missing[0]} ({task}) is in no shard{more}: the shards do not cover the run")
        stray = sorted(have - set(keys))
        if stray:
            raise MergeError(f"item {stray[0]} ({task}) is in a shard but not declared by the run")
        total += len(keys)
    shown = status(run_dir)
    tasks = shown.tasks or ({} if shown.instances is None else {"candidate": shown.instances})
    return total, sum(c.done for c in tasks.values())


def _entry(line: str) -> dict[str, Any]:
    """An invocation line as a dict ({} for one that is not a JSON object: kept as it is, never read)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return {}
    return entry if isinstance(entry, dict) else {}


def _check_apart(dirs: Sequence[Path], output: Path) -> None:
    """The merged run is apart from every shard: not a shard, inside one (a shard would be copied into itself) or
    holding one (the merge builds it beside itself and renames it there); OutputError naming both otherwise."""
    target = output.resolve()
    for directory in dirs:
        shard = directory.resolve()
        if target == shard or shard in target.parents or target in shard.parents:
            where = "is" if target == shard else "is inside" if shard in target.parents else "contains"
            raise OutputError(
                f"{output} {where} the shard {directory}: runs merge writes a new run directory apart from the shards"
            )


def _copy_files(source: Path, target: Path, top: Path) -> None:
    """Every file under ``source`` (a shard) into ``target``, but for the merge's own; a file another shard copied
    already must be the same."""
    for path in sorted(source.iterdir()):
        if source == top and path.name in _NOT_COPIED:
            continue
        there = target / path.name
        if path.is_dir():
            there.mkdir(exist_ok=True)
            _copy_files(path, there, top)
        elif there.exists():
            if there.read_bytes() != path.read_bytes():
                raise MergeError(f"{path}: differs from the same file in another shard; the shards are not one run")
        else:
            shutil.copyfile(path, there)


def merge_runs(dirs: Sequence[Path], output: Path, *, allow_incomplete: bool = False) -> MergeSummary:
    """Merge the shard directories ``dirs`` (every shard of one ``eval --shard I/N`` run) into the new run
    directory ``output``, built in a folder beside it and renamed at the end (an existing ``output`` is refused:
    nothing is written over). MergeError (one line naming the shard or item) when they do not make one run."""
    dirs = [Path(d) for d in dirs]
    output = Path(output)
    _check_apart(dirs, output)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise OutputError(f"{output} exists: runs merge writes a new run directory; choose a new one")
    merged, incomplete, notes = _check_shards(dirs, allow_incomplete=allow_incomplete)
    staging = output.with_name(f".{output.name}.merging-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        write_text_atomic(staging / MANIFEST_FILE, json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
        merge_stores([d / STORE_FILE for d in dirs], staging / STORE_FILE)
        declared, done = _check_coverage(staging, dirs)
        lines = []
        for directory in dirs:
            log = directory / "invocations.jsonl"
            if log.is_file():
                lines += [line for line in read_text(log, "invocations").splitlines() if line.strip()]
            _copy_files(directory, staging, directory)
        merge: dict[str, Any] = {"merge": [str(d.resolve()) for d in dirs], "time": time.time()}
        benches = [e["bench"] for e in map(_entry, lines) if isinstance(e.get("bench"), str)]
        if benches:  # where the merged run's data is (score, judge and view look it up in this log)
            merge["bench"] = benches[-1]
        merge["code"] = package_record()
        lines.append(json.dumps(merge, ensure_ascii=False))
        write_text_atomic(staging / "invocations.jsonl", "\n".join(lines) + "\n")
        benchmark = benchmark_of(staging)
        if isinstance(benchmark, TaskSummary):  # its summary, made again from the merged store
            benchmark.after_task(staging, "")
        if output.is_dir():
            output.rmdir()  # empty (checked above)
        staging.rename(output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return MergeSummary(output, len(dirs), declared, done, incomplete, notes)
