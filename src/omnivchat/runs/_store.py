"""The run store: SQLite in WAL mode. Requests keyed by their hash, every attempt, and completed results.

Attempts are appended, never replaced: an attempt row is written when it starts and its outcome filled in once
when it ends, so an attempt cut by a crash stays visible (outcome NULL, shown as "interrupted"). A result exists
only for a completed answer. Media never enter the store: requests are described with content hashes.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnivchat.routes import ChatResponse, RouteError

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


class RunStore:
    """One SQLite file per run directory; used from one thread (the event loop's)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL survives a process kill
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)

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
        """Record an attempt's outcome; a success also stores the result, in the same transaction."""
        now = time.time()
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
                    "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    ),
                )
            else:
                self._db.execute(
                    "UPDATE attempts SET ended=?, status='failed', http_status=?, error_kind=?, error=? "
                    "WHERE id=? AND status IS NULL",
                    (now, outcome.http_status, outcome.kind, outcome.message[:500], attempt),
                )

    def set_item(
        self, item_id: str, kind: str, key: str | None, error: RouteError | None = None, meta: dict | None = None
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
        row = self._db.execute(
            "SELECT key, text, reasoning, finish_reason, usage, model, latency, delivered FROM results WHERE key=?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return StoredResult(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], json.loads(row[7]))

    def items(self, kind: str = "candidate") -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT item_id, key, status, error_kind, error, meta FROM items WHERE kind=? ORDER BY item_id", (kind,)
        ).fetchall()
        names = ("item_id", "key", "status", "error_kind", "error", "meta")
        return [{**dict(zip(names, r, strict=True)), "meta": json.loads(r[5])} for r in rows]

    def item(self, item_id: str, kind: str) -> dict[str, Any] | None:
        """One item's row (by its primary key), or None."""
        row = self._db.execute(
            "SELECT item_id, key, status, error_kind, error, meta FROM items WHERE item_id=? AND kind=?",
            (item_id, kind),
        ).fetchone()
        if row is None:
            return None
        names = ("item_id", "key", "status", "error_kind", "error", "meta")
        return {**dict(zip(names, row, strict=True)), "meta": json.loads(row[5])}

    def attempts(self, key: str | None = None) -> list[dict[str, Any]]:
        query = (
            "SELECT id, key, item_id, started, ended, status, http_status, error_kind, error, latency, usage, "
            "finish_reason FROM attempts"
        )
        rows = self._db.execute(query + (" WHERE key=? ORDER BY id" if key else " ORDER BY id"), (key,) if key else ())
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
        )
        return [dict(zip(names, r, strict=True)) for r in rows.fetchall()]

    def counts(self) -> dict[str, Any]:
        """Counts for `runs show`: items by status and failure kind, attempts by outcome, token usage."""
        db = self._db
        items = dict(db.execute("SELECT status, COUNT(*) FROM items WHERE kind='candidate' GROUP BY status").fetchall())
        kinds = dict(
            db.execute(
                "SELECT error_kind, COUNT(*) FROM items WHERE kind='candidate' AND status='failed' GROUP BY error_kind"
            ).fetchall()
        )
        attempts = dict(
            db.execute("SELECT COALESCE(status, 'interrupted'), COUNT(*) FROM attempts GROUP BY 1").fetchall()
        )
        attempt_kinds = dict(
            db.execute("SELECT error_kind, COUNT(*) FROM attempts WHERE status='failed' GROUP BY error_kind").fetchall()
        )
        tokens: dict[str, float] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        for (usage,) in db.execute("SELECT usage FROM results"):
            for name, value in json.loads(usage).items():
                # token counts always; a cost only when the server reported one (never estimated here)
                if (name in tokens or name == "cost") and isinstance(value, int | float):
                    tokens[name] = tokens.get(name, 0) + value
        return {
            "items": items,
            "failure_kinds": kinds,
            "attempts": attempts,
            "attempt_failures": attempt_kinds,
            "tokens": tokens,
        }
