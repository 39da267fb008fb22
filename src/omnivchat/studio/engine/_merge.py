"""Shards of one synthesis (``studio run --shard I/N``) merged into one bench directory (``omnivchat bench merge``).

The shards must have one identity (the same studio manifest but for the shard), every planned instance must have
ended (accepted or discarded) in exactly the shard its id hashes to, and the merged directory gets, for every
instance, its trace, its accepted record and its clips (copied with their times, so the stamps in the traces still
match), then bench.yaml and instances.jsonl written as the unsharded synthesis writes them. Agent call stores and
work folders stay in the shards: the merged bench is complete, so a rerun there calls nothing.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from omnivchat._files import OutputError, write_text_atomic
from omnivchat.studio.engine._run import (
    MANIFEST,
    STUDIO_DIR,
    StudioError,
    StudioManifest,
    planned_ids,
    read_trace,
    write_bench,
)


class BenchMergeError(StudioError):
    """Shards that do not make one synthesis: another identity, a shard or an instance missing or twice."""


@dataclass
class BenchMergeSummary:
    """What ``bench merge`` wrote: the bench, its shards, the planned instances and those accepted."""

    output: Path
    shards: int
    planned: int
    accepted: int
    incomplete: list[str]


def _manifest(directory: Path) -> StudioManifest:
    path = directory / STUDIO_DIR / MANIFEST
    if not path.is_file():
        raise BenchMergeError(f"{directory}: not a Studio synthesis (no {STUDIO_DIR}/{MANIFEST})")
    try:
        return StudioManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValidationError) as err:
        raise BenchMergeError(f"{path}: not a Studio manifest ({str(err).splitlines()[0]})") from None


def merge_benches(dirs: Sequence[Path], output: Path, *, allow_incomplete: bool = False) -> BenchMergeSummary:
    """Merge the shard directories ``dirs`` of one synthesis into the new bench directory ``output`` (built beside
    it and renamed at the end; an existing one is refused). BenchMergeError, one line naming the shard or the
    instance, when they do not make one synthesis; an instance that has not ended is refused unless
    ``allow_incomplete`` (then it is left out, and listed)."""
    from omnivchat.runs import Shard, lock_holder, shard_set

    dirs = [Path(d) for d in dirs]
    output = Path(output)
    if not dirs:
        raise BenchMergeError("no shard directories given")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise OutputError(f"{output} exists: bench merge writes a new bench directory; choose a new one")
    manifests = [_manifest(d) for d in dirs]
    shards = []
    for directory, manifest in zip(dirs, manifests, strict=True):
        if manifest.shard is None:
            raise BenchMergeError(f"{directory}: not a shard (made without studio run --shard)")
        if (holder := lock_holder(directory)) is not None:
            raise BenchMergeError(f"{directory}: being written now by pid {holder.pid}; merge it once that has ended")
        shards.append(Shard.parse(manifest.shard))
    identity = manifests[0].model_copy(update={"shard": None})
    for directory, manifest in zip(dirs[1:], manifests[1:], strict=True):
        other = manifest.model_copy(update={"shard": None})
        if other != identity:
            changed = [k for k in StudioManifest.model_fields if getattr(other, k) != getattr(identity, k)]
            raise BenchMergeError(
                f"{directory} is a shard of another synthesis than {dirs[0]} ({', '.join(changed)} differ)"
            )
    count = shard_set(
        [(d, s.index, s.count) for d, s in zip(dirs, shards, strict=True)], BenchMergeError, "instances", "bench"
    )
    planned = planned_ids(identity)
    plan = set(planned)
    owner: dict[str, Path] = {}
    for directory, shard in zip(dirs, shards, strict=True):
        for path in sorted((directory / STUDIO_DIR / "traces").glob("*.json")):
            if path.stem in owner:
                raise BenchMergeError(f"instance {path.stem} is in two shards: {owner[path.stem]} and {directory}")
            if path.stem not in plan or not shard.holds(path.stem):
                raise BenchMergeError(f"{path}: instance {path.stem} is not one of shard {shard.label}'s")
            owner[path.stem] = directory
    incomplete = [f"{i} (shard {_index(i, count)}/{count})" for i in planned if i not in owner]
    if incomplete and not allow_incomplete:
        more = f" (and {len(incomplete) - 1} more)" if len(incomplete) > 1 else ""
        raise BenchMergeError(
            f"instance {incomplete[0]} has not ended{more}: resume that shard, or pass --allow-incomplete"
        )
    staging = output.with_name(f".{output.name}.merging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        write_text_atomic(staging / STUDIO_DIR / MANIFEST, identity.model_dump_json(indent=1))
        accepted = 0
        for instance, directory in owner.items():
            studio = directory / STUDIO_DIR
            shutil.copy2(
                studio / "traces" / f"{instance}.json", _made(staging / STUDIO_DIR / "traces") / f"{instance}.json"
            )
            trace = read_trace(studio / "traces" / f"{instance}.json")
            if trace.status != "accepted":
                continue
            accepted += 1
            record = studio / "accepted" / f"{instance}.json"
            shutil.copy2(record, _made(staging / STUDIO_DIR / "accepted") / record.name)
            for video in trace.delivered:  # media/<id>/turnN.mp4: each must be there, as its own
                if not re.fullmatch(rf"media/{re.escape(instance)}/turn[0-9]+\.mp4", video):
                    raise BenchMergeError(f"{studio / 'traces' / instance}.json: clip {video!r} is not one of its own")
                if not (directory / video).is_file() or (directory / video).is_symlink():
                    raise BenchMergeError(f"{directory / video}: the clip of accepted instance {instance} is missing")
            # Its clips and what was rendered beside them: plain copies with their times (the traces' stamps
            # match), never links, so nothing done in the merged bench reaches a shard.
            for source in sorted((directory / "media" / instance).iterdir()):
                if source.is_file() and not source.is_symlink():
                    shutil.copy2(source, _made(staging / "media" / instance) / source.name)
        write_bench(staging, identity, planned)
        if output.is_dir():
            output.rmdir()  # empty (checked above)
        staging.rename(output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return BenchMergeSummary(output, len(dirs), len(planned), accepted, incomplete)


def _index(instance: str, count: int) -> int:
    from omnivchat.runs import shard_of

    return shard_of(instance, count)


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
