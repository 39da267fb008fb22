"""Shards: a deterministic part of a run's items (``eval --shard I/N``), and the stores of shards merged into one.

An item belongs to shard ``1 + (H mod N)``, where H is the first 8 bytes (big-endian) of the sha256 of its key (the
item's identity in the run store, as its benchmark names it). The choice depends on nothing but the key and N: the
same on every rerun and machine, whatever order or position the items come in, and every item is in exactly one
shard. Shards are numbered from 1 (as ``sbatch --array=1-N`` numbers its tasks).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from omnivchat._files import FileModel
from omnivchat.errors import OmnivchatError
from omnivchat.runs._errors import RunError
from omnivchat.runs._store import RunStore


class ShardError(OmnivchatError, ValueError):
    """A --shard value that is not I/N with 1 <= I <= N."""


def shard_of(key: str, count: int) -> int:
    """The shard (1..count) that the item ``key`` belongs to."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


class Shard(BaseModel):
    """One part of N: ``index`` from 1 to ``count``."""

    index: int = Field(ge=1)
    count: int = Field(ge=1)

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N`` (1 <= I <= N); a ShardError in one line otherwise."""
        parts = text.strip().split("/")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ShardError(f"--shard {text!r}: expected I/N, e.g. 1/4 (shards are numbered from 1 to N)")
        index, count = (int(p) for p in parts)
        if count < 1 or not 1 <= index <= count:
            raise ShardError(f"--shard {text!r}: I must be from 1 to N (shards are numbered from 1), N at least 1")
        return cls(index=index, count=count)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, key: str) -> bool:
        """Whether the item ``key`` is in this shard."""
        return shard_of(key, self.count) == self.index


class ShardRecord(FileModel):
    """The ``shard`` of a sharded run's manifest: which part it is, and the keys of its items per task (what the
    run declares: its status, export and scores count these, never the whole benchmark's)."""

    index: int
    count: int
    items: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def shard_set(parts: Sequence[tuple[Path, int, int]], error: type[Exception], items: str, whole: str) -> int:
    """N of a complete set of shards, each ``(directory, I, N)``: one N for all, each I from 1 to N given once;
    ``error`` naming the shard given twice or missing otherwise (``items``/``whole``: what a shard holds, and what
    the set makes, for the message)."""
    counts = {count for _, _, count in parts}
    if len(counts) > 1:
        raise error(f"the shards split the {items} differently (into {sorted(counts)} shards): run them all as I/N")
    count = counts.pop()
    where: dict[int, Path] = {}
    for directory, index, _ in parts:
        if index in where:
            raise error(f"shard {index}/{count} given twice: {where[index]} and {directory}")
        where[index] = directory
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in where]
    if missing:
        raise error(f"shard {', '.join(missing)} missing: every shard of {count} is needed for one {whole}")
    return count


# Copied table by table; ``attempts`` apart (its ids are renumbered, and attempt_costs follows them).
_PLAIN_TABLES = ("requests", "results", "items", "audio", "asr", "transcripts")
_KEEP_FIRST = ("requests", "results", "audio", "asr", "transcripts")  # the same content under the same key


def _columns(db: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA {schema}.table_info({table})").fetchall()]


def merge_stores(sources: list[Path], target: Path) -> None:
    """Copy every row of the run stores ``sources`` (requests, attempts with their costs, results, items and
    verdicts of every kind, spoken replies and transcripts) into the new store ``target``. The sources are copied
    to a temporary folder first and read there: a shard is never opened for writing. Attempt ids are renumbered in
    order (source by source); an item of the same id and kind in two sources is a RunError naming it."""
    RunStore(target).close()  # the current schema, every table and column
    db = sqlite3.connect(target, isolation_level=None)
    try:
        for source in sources:
            with tempfile.TemporaryDirectory(prefix="omnivchat-merge-") as scratch:
                copy = Path(scratch) / source.name
                for suffix in ("", "-wal", "-shm"):
                    if Path(f"{source}{suffix}").is_file():
                        shutil.copyfile(f"{source}{suffix}", f"{copy}{suffix}")
                db.execute("ATTACH DATABASE ? AS shard", (str(copy),))  # not inside a transaction
                try:
                    db.execute("BEGIN")
                    _copy_rows(db, source)
                    db.execute("COMMIT")
                except sqlite3.DatabaseError as err:
                    db.execute("ROLLBACK")
                    raise RunError(f"{source}: not a readable run store ({err}); the shard is damaged") from None
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                finally:
                    db.execute("DETACH DATABASE shard")
    finally:
        db.close()


def _copy_rows(db: sqlite3.Connection, source: Path) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM shard.sqlite_master WHERE type='table'")}
    for table in _PLAIN_TABLES:
        if table not in tables:
            continue
        names = ", ".join(c for c in _columns(db, "shard", table) if c in _columns(db, "main", table))
        verb = "INSERT OR IGNORE" if table in _KEEP_FIRST else "INSERT"
        try:
            db.execute(f"{verb} INTO main.{table} ({names}) SELECT {names} FROM shard.{table}")
        except sqlite3.IntegrityError:
            clash = db.execute(
                "SELECT s.item_id, s.kind FROM shard.items s JOIN main.items m USING (item_id, kind) LIMIT 1"
            ).fetchone()
            raise RunError(f"{source}: item {clash[0]} ({clash[1]}) is in another shard too") from None
    if "attempts" not in tables:
        return
    wanted = [c for c in _columns(db, "shard", "attempts") if c != "id" and c in _columns(db, "main", "attempts")]
    has_costs = "attempt_costs" in tables
    for row in db.execute(f"SELECT id, {', '.join(wanted)} FROM shard.attempts ORDER BY id").fetchall():
        cursor = db.execute(
            f"INSERT INTO main.attempts ({', '.join(wanted)}) VALUES ({', '.join('?' * len(wanted))})", row[1:]
        )
        if has_costs:
            db.execute(
                "INSERT INTO main.attempt_costs (attempt, estimate, usd, note) "
                "SELECT ?, estimate, usd, note FROM shard.attempt_costs WHERE attempt = ?",
                (cursor.lastrowid, row[0]),
            )


def manifest_shard(manifest: object) -> ShardRecord | None:
    """The shard a run's manifest (a :class:`~omnivchat.runs.Manifest` or its dict) records; None for a whole run."""
    value = (
        manifest.get("shard") if isinstance(manifest, dict) else getattr(manifest, "value", lambda _k: None)("shard")
    )
    if value is None:
        return None
    try:
        return ShardRecord.model_validate(value)
    except ValueError:
        raise RunError("the manifest's shard is not valid: the run directory is damaged") from None
