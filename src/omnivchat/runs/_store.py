"""The run store: SQLite in WAL mode. Requests keyed by their hash, every attempt, and completed results.

Attempts are appended, never replaced: an attempt row is written when it starts and its outcome filled in once
when it ends, so an attempt cut by a crash stays visible (outcome NULL, shown as "interrupted"). A result exists
only for a completed answer. Media never enter the store: requests are described with content hashes.

Readers open the store read-only (``RunStore(path, read_only=True)``): they create no file and change none, work on
read-only storage, and read a store that another process is writing. SQLite's WAL mode needs two side files for
that (``-wal`` and ``-shm``), which a plain read-only connection would create and leave behind, so:

- when the side files exist (a writer is at work, or one was killed), the store is opened ``mode=ro`` with
  ``readonly_shm=1``: the reader sees everything committed, as one snapshot for the whole session (one read
  transaction), and writes nothing, not even to ``-shm``;
- when they do not (the store was closed cleanly), the main file holds everything and is opened ``immutable=1``:
  no lock, no side file. A writer could start meanwhile, so every read checks afterwards that the file and its
  side files are as they were when opened, and otherwise reads again through a fresh connection.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnivchat._canonical import sha256_json
from omnivchat.routes import ChatResponse, RouteError
from omnivchat.runs._audio import save_audio
from omnivchat.runs._errors import RunError

SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,              -- 'candidate' or 'judge:<name>'
    model TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    description TEXT NOT NULL,       -- canonical payload with media as sha256 placeholders
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL REFERENCES requests(key),
    item_id TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    status TEXT,                     -- 'ok', 'failed'; NULL while running or if interrupted
    http_status INTEGER,
    error_kind TEXT,
    error TEXT,
    latency REAL,
    usage TEXT,
    finish_reason TEXT
);
CREATE INDEX IF NOT EXISTS attempts_key ON attempts(key);
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY REFERENCES requests(key),
    text TEXT NOT NULL,
    reasoning TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    usage TEXT NOT NULL,
    model TEXT,
    latency REAL,
    delivered TEXT NOT NULL,
    completed REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT,                        -- NULL when the request could not even be built (bad media)
    status TEXT NOT NULL,            -- 'done' or 'failed'
    error_kind TEXT,
    error TEXT,
    meta TEXT NOT NULL DEFAULT '{}',  -- subcategory, language, source: what exports need beside the reply
    updated REAL NOT NULL,
    PRIMARY KEY (item_id, kind)
);
"""


# Each attempt's cost (docs/costs.md), apart from the attempts table: a store made before costs were kept gains it
# when a writer opens it, and its older attempts read as "not recorded".
COST_SCHEMA = """
CREATE TABLE IF NOT EXISTS attempt_costs (
    attempt INTEGER PRIMARY KEY,     -- attempts.id
    estimate REAL,                   -- USD estimated before sending; NULL without a price or a budget
    usd REAL,                        -- USD from the server's usage and the price; NULL: unknown (note says why)
    note TEXT NOT NULL               -- 'priced', 'refused (HTTP 429)', 'no price', 'no usage', 'in flight', ...
);
"""

# Spoken replies (docs/spoken-replies.md), apart like the costs: a store made before them gains the tables when a
# writer opens it; a reader of an older store finds no audio and no transcript.
SPOKEN_SCHEMA = """
CREATE TABLE IF NOT EXISTS audio (
    key TEXT PRIMARY KEY REFERENCES results(key),
    path TEXT NOT NULL,              -- relative to the run directory: audio/<sha256>.<format>
    sha256 TEXT NOT NULL,
    format TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    server_transcript TEXT           -- the server's own transcript, kept apart: never an ASR result
);
CREATE TABLE IF NOT EXISTS asr (
    id TEXT PRIMARY KEY,             -- sha256 of the description
    description TEXT NOT NULL        -- backend, model and its hash: what made the transcripts
);
CREATE TABLE IF NOT EXISTS transcripts (
    sha256 TEXT NOT NULL,            -- the audio's
    asr TEXT NOT NULL REFERENCES asr(id),
    language TEXT NOT NULL,
    text TEXT,                       -- NULL when the audio could not be transcribed (error says why)
    error TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (sha256, asr, language)
);
"""

# Columns added to the first tables after stores were made: a writer adds them when it opens an older store (an
# older store opened read-only is read without them: NULL). Replicas: where each attempt went; what was served: the
# server's system_fingerprint with each result (results.model is the model name it reported); redacted: 1 when the
# reply held the key and was masked, so its text is not what the model sent (routes._redact; NULL: not recorded).
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("attempts", "replica", "TEXT"),
    ("results", "system_fingerprint", "TEXT"),
    ("results", "redacted", "INTEGER"),
)

SIDE_FILES = ("-wal", "-shm")


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class StoredResult:
    key: str
    text: str
    reasoning: str
    finish_reason: str
    usage: dict[str, Any]
    model: str | None
    latency: float | None
    delivered: dict[str, Any]
    system_fingerprint: str | None = None
    """The server's system_fingerprint (None: not sent, or stored before it was kept)."""
    redacted: bool = False
    """The reply held the run's key and was masked: its text is not what the model sent (False in older stores)."""


def _unreadable(path: Path, err: sqlite3.Error | UnicodeDecodeError) -> RunError:
    # SQLite's message can quote a damaged schema's bytes, which Python cannot decode (UnicodeDecodeError)
    why = err.object.decode("utf-8", "replace") if isinstance(err, UnicodeDecodeError) else str(err)
    why = why if len(why) <= 160 else why[:159] + "…"  # it can quote a whole stored reply
    return RunError(
        f"{path}: not a readable run store ({why}); it is damaged or was not made by omnivchat. Keep it for "
        "inspection and run again into a new directory"
    )


_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _is_damage(err: Exception) -> bool:
    """Whether an error of SQLite says the file's bytes are wrong (not a lock, a full disk or our own SQL)."""
    if isinstance(err, UnicodeDecodeError):
        return True  # a message quoting damaged bytes
    if not isinstance(err, sqlite3.DatabaseError):
        return False
    return getattr(err, "sqlite_errorcode", None) in _DAMAGE_CODES or str(err).startswith(
        ("Could not decode to UTF-8", "malformed database schema", "database disk image is malformed")
    )


class _WriterConnection(sqlite3.Connection):
    """A writer's connection: damage met by any statement is one line naming the store (a traceback before)."""

    store_path = Path()

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            if _is_damage(err):
                raise _unreadable(self.store_path, err) from None
            raise


class RunStore:
    """One SQLite file per run directory; used from one thread (the event loop's).

    ``read_only``: open an existing store for reading only (see the module docstring); the write methods then
    fail. A writer must hold the run directory's lock (:mod:`omnivchat.runs._lock`); a reader never does.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._mode = "rw"
        self._opened: tuple[object, ...] = ()
        self._columns: dict[str, set[str]] = {}
        if not read_only and _size(self.path) == 0 and not _size(self._side("-wal")):
            # SQLite takes an empty file for a new database: a store that lost its content would be a fresh run,
            # every request sent (and billed) again. Ours is never empty without its -wal once opened (a writer
            # killed mid-run can leave the main file at 0 bytes with every result in the -wal). A reader may meet
            # a writer's file between its creation and its header, so only a writer refuses it.
            raise RunError(
                f"{self.path}: an empty file (0 bytes), not a run store: its results are lost or it was not made by "
                "omnivchat. Keep it for inspection and run again into a new directory"
            )
        if read_only:
            self._db = self._open_read_only()
            return
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, factory=_WriterConnection
            )
            self._db.store_path = self.path
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL survives a process kill
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(SCHEMA)
            self._db.executescript(COST_SCHEMA)
            self._db.executescript(SPOKEN_SCHEMA)
            # One transaction, so two processes opening an old store at once never add a column twice.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for table, column, kind in ADDED_COLUMNS:
                    if not self._has_column(table, column):
                        self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                        self._columns.pop(table, None)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
            raise _unreadable(self.path, err) from None

    def _has_column(self, table: str, column: str) -> bool:
        """Whether ``table`` has ``column`` (an older store may not: see ADDED_COLUMNS)."""
        if table not in self._columns:
            self._columns[table] = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})").fetchall()}
        return column in self._columns[table]

    def _column(self, table: str, column: str, alias: str = "") -> str:
        """``column`` for a SELECT, or NULL where an older store read without changing it lacks it."""
        return f"{alias}{column}" if self._has_column(table, column) else "NULL"

    def _side(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    def _state(self) -> tuple[object, ...]:
        """What a change by a writer would change: the main file's identity, size and times, the side files."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return ("missing",)
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, *(self._side(s).exists() for s in SIDE_FILES))

    def _open_read_only(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise RunError(f"{self.path}: no run store here")
        wal, shm = (self._side(s) for s in SIDE_FILES)
        deadline = time.monotonic() + 0.5
        while wal.exists() and not shm.exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # a writer opening the store makes -wal, then -shm
        wal_size = _size(wal)
        if wal_size is not None and shm.exists():
            mode, query = "ro", "mode=ro&readonly_shm=1"
        elif not wal_size:
            mode, query = "immutable", "mode=ro&immutable=1"  # no committed page outside the main file
        else:  # a -wal with content but no -shm (a damaged store): SQLite must rebuild the -shm to read it
            mode, query = "ro", "mode=ro"
        self._opened = self._state()
        try:
            db = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?{query}", uri=True, isolation_level=None, check_same_thread=False
            )
            db.execute("PRAGMA busy_timeout=5000")
            if mode == "ro":
                db.execute("BEGIN")  # one read transaction: every read of this session sees the same snapshot
        except (sqlite3.Error, UnicodeDecodeError) as err:
            if _is_damage(err):
                raise _unreadable(self.path, err) from None
            raise RunError(f"{self.path}: cannot open the run store for reading ({err})") from None
        self._mode = mode
        return db

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """Run a read query. Read again through a fresh connection when a writer changed the store under an
        immutable connection, or when a read-only one fails while a writer opens or closes the store."""
        for _ in range(5):
            try:
                rows = self._db.execute(sql, params).fetchall()
            except (sqlite3.DatabaseError, UnicodeDecodeError) as err:
                if self._mode == "rw" or isinstance(err, UnicodeDecodeError):
                    if _is_damage(err):
                        raise _unreadable(self.path, err) from None
                    raise
                changed = self._state() != self._opened
                if not (self._mode == "immutable" and changed):
                    if str(err).startswith("no such table"):
                        return []  # a store its writer has only just made: nothing in it yet
                    if not changed:
                        raise _unreadable(self.path, err) from None
            else:
                if self._mode != "immutable" or self._state() == self._opened:
                    return rows
            self._db.close()
            self._db = self._open_read_only()
        raise RunError(f"{self.path}: the store kept changing while it was read; try again")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------- writing

    def add_request(self, key: str, kind: str, model: str, endpoint: str, description: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO requests VALUES (?, ?, ?, ?, ?, ?)",
            (key, kind, model, endpoint, json.dumps(description, ensure_ascii=False, sort_keys=True), time.time()),
        )

    def start_attempt(self, key: str, item_id: str) -> int:
        cursor = self._db.execute(
            "INSERT INTO attempts (key, item_id, started) VALUES (?, ?, ?)", (key, item_id, time.time())
        )
        return int(cursor.lastrowid or 0)

    def finish_attempt(self, attempt: int, key: str, outcome: ChatResponse | RouteError) -> None:
        """Record an attempt's outcome; a success also stores the result, in the same transaction (a spoken
        reply's audio is written to its file first, and recorded with the result)."""
        now = time.time()
        spoken = None
        if isinstance(outcome, ChatResponse) and outcome.audio is not None:
            spoken = (*save_audio(self.path.parent, outcome.audio.data, outcome.audio.format), outcome.audio)
        with self._db:
            self._db.execute("BEGIN")
            if isinstance(outcome, ChatResponse):
                self._db.execute(
                    "UPDATE attempts SET ended=?, status='ok', http_status=?, latency=?, usage=?, finish_reason=? "
                    "WHERE id=? AND status IS NULL",
                    (
                        now,
                        outcome.http_status,
                        outcome.latency_s,
                        json.dumps(outcome.usage),
                        outcome.finish_reason,
                        attempt,
                    ),
                )
                self._db.execute(
                    "INSERT OR IGNORE INTO results (key, text, reasoning, finish_reason, usage, model, latency, "
                    "delivered, completed, system_fingerprint, redacted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        outcome.text,
                        outcome.reasoning,
                        outcome.finish_reason,
                        json.dumps(outcome.usage),
                        outcome.model,
                        outcome.latency_s,
                        outcome.delivered.model_dump_json(),
                        now,
                        outcome.system_fingerprint,
                        int(outcome.redacted),
                    ),
                )
                if spoken is not None:
                    path, sha, audio = spoken
                    self._db.execute(
                        "INSERT OR IGNORE INTO audio VALUES (?, ?, ?, ?, ?, ?)",
                        (key, path, sha, audio.format, len(audio.data), audio.transcript),
                    )
            else:
                self._db.execute(
                    "UPDATE attempts SET ended=?, status='failed', http_status=?, error_kind=?, error=? "
                    "WHERE id=? AND status IS NULL",
                    (now, outcome.http_status, outcome.kind, outcome.message[:500], attempt),
                )
            if outcome.replica is not None:
                self._db.execute("UPDATE attempts SET replica=? WHERE id=?", (outcome.replica, attempt))

    def record_cost(self, attempt: int, usd: float | None, note: str, *, estimate: float | None = None) -> None:
        """An attempt's cost: ``usd`` None when unknown, ``note`` why (or how it was counted); ``estimate`` (the
        pre-send estimate a budget counted) is kept once given."""
        self._db.execute(
            "INSERT INTO attempt_costs (attempt, estimate, usd, note) VALUES (?, ?, ?, ?) ON CONFLICT(attempt) DO "
            "UPDATE SET usd=excluded.usd, note=excluded.note, estimate=COALESCE(excluded.estimate, estimate)",
            (attempt, estimate, usd, note),
        )

    def set_item(
        self,
        item_id: str,
        kind: str,
        key: str | None,
        error: RouteError | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item_id,
                kind,
                key,
                "failed" if error else "done",
                error.kind if error else None,
                error.message[:500] if error else None,
                json.dumps(meta or {}, ensure_ascii=False),
                time.time(),
            ),
        )

    # ---------------------------------------------------------------------------------------- reading

    def result(self, key: str) -> StoredResult | None:
        fingerprint = self._column("results", "system_fingerprint")
        redacted = self._column("results", "redacted")
        rows = self._rows(
            "SELECT key, text, reasoning, finish_reason, usage, model, latency, delivered, "
            f"{fingerprint}, {redacted} FROM results WHERE key=?",
            (key,),
        )
        if not rows:
            return None
        row = rows[0]
        return StoredResult(
            row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], json.loads(row[7]), row[8], bool(row[9])
        )

    def results_of(self, kind: str) -> dict[str, StoredResult]:
        """Every stored result of the items of ``kind``, by request key, in one query (exports of large runs)."""
        fingerprint = self._column("results", "system_fingerprint", "r.")
        redacted = self._column("results", "redacted", "r.")
        rows = self._rows(
            "SELECT r.key, r.text, r.reasoning, r.finish_reason, r.usage, r.model, r.latency, r.delivered, "
            f"{fingerprint}, {redacted} FROM results r JOIN items i ON i.key = r.key WHERE i.kind=?",
            (kind,),
        )
        return {
            row[0]: StoredResult(
                row[0],
                row[1],
                row[2],
                row[3],
                json.loads(row[4]),
                row[5],
                row[6],
                json.loads(row[7]),
                row[8],
                bool(row[9]),
            )
            for row in rows
        }

    def attempt_counts_of(self, kind: str) -> dict[str, int]:
        """The number of attempts of each request of the items of ``kind``, by request key, in one query."""
        rows = self._rows(
            "SELECT a.key, count(*) FROM attempts a WHERE a.key IN (SELECT key FROM items WHERE kind=?) GROUP BY a.key",
            (kind,),
        )
        return {row[0]: int(row[1]) for row in rows}

    def items(self, kind: str = "candidate") -> list[dict[str, Any]]:
        rows = self._rows(
            "SELECT item_id, key, status, error_kind, error, meta FROM items WHERE kind=? ORDER BY item_id", (kind,)
        )
        names = ("item_id", "key", "status", "error_kind", "error", "meta")
        return [{**dict(zip(names, r, strict=True)), "meta": json.loads(r[5])} for r in rows]

    def item(self, item_id: str, kind: str) -> dict[str, Any] | None:
        """One item's row (by its primary key), or None."""
        rows = self._rows(
            "SELECT item_id, key, status, error_kind, error, meta FROM items WHERE item_id=? AND kind=?",
            (item_id, kind),
        )
        if not rows:
            return None
        row = rows[0]
        names = ("item_id", "key", "status", "error_kind", "error", "meta")
        return {**dict(zip(names, row, strict=True)), "meta": json.loads(row[5])}

    def attempts(self, key: str | None = None) -> list[dict[str, Any]]:
        query = (
            "SELECT id, key, item_id, started, ended, status, http_status, error_kind, error, latency, usage, "
            f"finish_reason, {self._column('attempts', 'replica')} FROM attempts"
        )
        rows = self._rows(query + (" WHERE key=? ORDER BY id" if key else " ORDER BY id"), (key,) if key else ())
        names = (
            "id",
            "key",
            "item_id",
            "started",
            "ended",
            "status",
            "http_status",
            "error_kind",
            "error",
            "latency",
            "usage",
            "finish_reason",
            "replica",
        )
        return [dict(zip(names, r, strict=True)) for r in rows]

    def replica_counts(self) -> dict[str, dict[str, int]]:
        """Attempts per replica (every kind of request) by outcome: ``{replica: {"ok": n, "failed": n,
        "interrupted": n}}``; empty when no attempt went to a replica set (or the store predates replicas)."""
        if not self._has_column("attempts", "replica"):
            return {}
        result: dict[str, dict[str, int]] = {}
        for replica, status, n in self._rows(
            "SELECT replica, COALESCE(status, 'interrupted'), COUNT(*) FROM attempts WHERE replica IS NOT NULL "
            "GROUP BY replica, 2 ORDER BY replica"
        ):
            result.setdefault(replica, {})[status] = n
        return result

    def served(self) -> dict[str, list[dict[str, Any]]]:
        """What the servers said they served, per kind of request: each distinct (model, system_fingerprint) with
        its number of results and the times of its first and last, in the order first seen."""
        fingerprint = self._column("results", "system_fingerprint", "s.")
        rows = self._rows(
            f"SELECT r.kind, s.model, {fingerprint}, COUNT(*), MIN(s.completed), MAX(s.completed) FROM results s "
            "JOIN requests r ON r.key = s.key GROUP BY r.kind, s.model, 3 ORDER BY r.kind, MIN(s.completed)"
        )
        result: dict[str, list[dict[str, Any]]] = {}
        for kind, model, fp, n, first, last in rows:
            entry = {"model": model, "fingerprint": fp, "replies": n, "first": first, "last": last}
            result.setdefault(kind, []).append(entry)
        return result

    def redacted_counts(self) -> dict[str, int]:
        """Results whose reply held the key and was masked, per kind of request (empty for a store made before this
        was recorded): their text is not what the model sent."""
        if not self._has_column("results", "redacted"):
            return {}
        rows = self._rows(
            "SELECT r.kind, COUNT(*) FROM results s JOIN requests r ON r.key = s.key WHERE s.redacted = 1 "
            "GROUP BY r.kind ORDER BY r.kind"
        )
        return dict(rows)

    def dropped_counts(self, kind: str = "candidate") -> tuple[int, dict[str, int]]:
        """(replies of ``kind``, how many of them were sent without each stream their clip had): what a route did
        not deliver (the video to an audio-only model, the audio to a muted route)."""
        rows = self._rows(
            "SELECT s.delivered FROM results s JOIN requests r ON r.key = s.key WHERE r.kind = ?", (kind,)
        )
        dropped: dict[str, int] = {}
        for (delivered,) in rows:
            try:
                streams = json.loads(delivered).get("dropped") or []
            except (ValueError, AttributeError):
                continue
            for stream in streams if isinstance(streams, list) else []:
                dropped[str(stream)] = dropped.get(str(stream), 0) + 1
        return len(rows), dropped

    def state(self) -> str:
        """What the store holds, in a few characters: every item's status by kind (with when the last changed),
        the results and the transcripts. It changes whenever a reply, a failure, a verdict or a transcript is
        stored, so a file computed from the store (scores.json) can tell whether it is still current."""
        items = self._rows("SELECT kind, status, COUNT(*), MAX(updated) FROM items GROUP BY kind, status ORDER BY 1, 2")
        results = self._rows("SELECT COUNT(*), MAX(completed) FROM results")
        tables = {row[0] for row in self._rows("SELECT name FROM sqlite_master WHERE type='table'")}
        heard = self._rows("SELECT COUNT(*), MAX(created) FROM transcripts") if "transcripts" in tables else []
        return sha256_json([[list(r) for r in items], [list(r) for r in results], [list(r) for r in heard]])[:16]

    def counts(self, kind: str = "candidate") -> dict[str, Any]:
        """Counts for `runs show`: items of ``kind`` by status and failure kind, attempts (of every kind) by
        outcome, token usage."""
        items = dict(self._rows("SELECT status, COUNT(*) FROM items WHERE kind=? GROUP BY status", (kind,)))
        kinds = dict(
            self._rows(
                "SELECT error_kind, COUNT(*) FROM items WHERE kind=? AND status='failed' GROUP BY error_kind", (kind,)
            )
        )
        attempts = dict(self._rows("SELECT COALESCE(status, 'interrupted'), COUNT(*) FROM attempts GROUP BY 1"))
        attempt_kinds = dict(
            self._rows("SELECT error_kind, COUNT(*) FROM attempts WHERE status='failed' GROUP BY error_kind")
        )
        tokens: dict[str, float] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for (usage,) in self._rows("SELECT usage FROM results"):
            for name, value in json.loads(usage).items():
                # token counts always; a cost only when the server reported one (never estimated here). A value
                # that is no count (negative, NaN, a bool, past what a float holds) is a server's garbage: skipped.
                plausible = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 2**53
                if (name in tokens or name == "cost") and plausible:
                    tokens[name] = tokens.get(name, 0) + value
        return {
            "items": items,
            "failure_kinds": kinds,
            "attempts": attempts,
            "attempt_failures": attempt_kinds,
            "tokens": tokens,
        }

    def cost_rows(self, key: str | None = None) -> list[dict[str, Any]]:
        """Every attempt (of request ``key`` only, when given) with its request's kind and its cost (``usd``
        None: unknown, ``note`` why; an attempt with no cost row has note None: made before costs were kept, or
        cut before its outcome)."""
        names = ("kind", "item_id", "status", "estimate", "usd", "note")
        where, params = (" WHERE a.key = ?", (key,)) if key is not None else ("", ())
        if self._rows("SELECT name FROM sqlite_master WHERE type='table' AND name='attempt_costs'"):
            rows = self._rows(
                "SELECT r.kind, a.item_id, a.status, c.estimate, c.usd, c.note FROM attempts a "
                f"JOIN requests r ON r.key = a.key LEFT JOIN attempt_costs c ON c.attempt = a.id{where} ORDER BY a.id",
                params,
            )
        else:  # a store made before costs were kept, read without changing it
            rows = self._rows(
                "SELECT r.kind, a.item_id, a.status, NULL, NULL, NULL FROM attempts a "
                f"JOIN requests r ON r.key = a.key{where} ORDER BY a.id",
                params,
            )
        return [dict(zip(names, r, strict=True)) for r in rows]

    def descriptions(self, kind: str = "candidate", item_id: str | None = None) -> dict[str, dict[str, Any]]:
        """Item id -> the stored description of its request (what was asked: the clip's sha256, the text, the
        history), one query for every item of ``kind`` (or only ``item_id``); items never sent are absent."""
        where, params = ("i.kind=? AND i.item_id=?", (kind, item_id)) if item_id is not None else ("i.kind=?", (kind,))
        rows = self._rows(
            f"SELECT i.item_id, r.description FROM items i JOIN requests r ON r.key = i.key WHERE {where}", params
        )
        return {row[0]: json.loads(row[1]) for row in rows}

    def audio(self, key: str) -> dict[str, Any] | None:
        """The spoken reply stored with result ``key``: path (relative to the run directory), sha256, format,
        bytes, server_transcript; None for a text reply (or a store made before spoken replies)."""
        names = ("path", "sha256", "format", "bytes", "server_transcript")
        rows = self._rows(f"SELECT {', '.join(names)} FROM audio WHERE key=?", (key,))
        return dict(zip(names, rows[0], strict=True)) if rows else None

    def add_asr(self, asr_id: str, description: dict[str, Any]) -> None:
        """Record the ASR whose transcripts are stored under ``asr_id``."""
        self._db.execute("INSERT OR IGNORE INTO asr VALUES (?, ?)", (asr_id, json.dumps(description, sort_keys=True)))

    def asrs(self) -> dict[str, dict[str, Any]]:
        """Every ASR with transcripts here: id -> its description."""
        return {row[0]: json.loads(row[1]) for row in self._rows("SELECT id, description FROM asr ORDER BY id")}

    def set_transcript(self, sha256: str, asr_id: str, language: str, text: str | None, error: str | None) -> None:
        """The transcript of the audio ``sha256`` by ``asr_id`` in ``language`` (text None: failed, ``error``
        why); a later call replaces it (a failure retried)."""
        self._db.execute(
            "INSERT OR REPLACE INTO transcripts VALUES (?, ?, ?, ?, ?, ?)",
            (sha256, asr_id, language, text, None if error is None else error[:500], time.time()),
        )

    def transcript(self, sha256: str, asr_id: str, language: str) -> dict[str, Any] | None:
        """{"text", "error"} of a stored transcription, or None when that audio was never transcribed so."""
        rows = self._rows(
            "SELECT text, error FROM transcripts WHERE sha256=? AND asr=? AND language=?", (sha256, asr_id, language)
        )
        return {"text": rows[0][0], "error": rows[0][1]} if rows else None

    def item_counts(self) -> dict[str, dict[str, Any]]:
        """kind -> {"items": status -> count, "ids": {item_id: status}} for every kind of item in the store
        (SocialOmni tasks, judges)."""
        result: dict[str, dict[str, Any]] = {}
        for kind, item_id, status in self._rows("SELECT kind, item_id, status FROM items ORDER BY kind, item_id"):
            entry = result.setdefault(kind, {"items": {}, "ids": {}})
            entry["items"][status] = entry["items"].get(status, 0) + 1
            entry["ids"][item_id] = status
        return result
