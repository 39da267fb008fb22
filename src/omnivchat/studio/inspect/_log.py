"""The decision log: ``<bench>/inspection.jsonl``, appended one whole line per decision as it is made."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from omnivchat.bench import INSPECTION_FILE, InspectionDecision, inspection_decisions
from omnivchat.errors import OmnivchatError

try:
    import fcntl
except ImportError:  # Windows (not a target): the in-process lock still serializes this server's appends
    fcntl = None  # type: ignore[assignment]  # Windows: the name is None there and checked before each use

MAX_BODY_BYTES = 16 * 1024
"""The largest request body POST /api/decisions reads."""
MAX_REASON_CHARS = 2000
VERDICTS = ("accept", "reject")


class DecisionError(OmnivchatError, ValueError):
    """A decision that cannot be recorded (unknown id, bad decision, a reject without a reason, ...)."""


def parse_decision(body: bytes, known: frozenset[str]) -> tuple[str, str, str]:
    """``(id, decision, reason)`` from the JSON body of POST /api/decisions, or DecisionError saying what is
    wrong. ``reason`` comes back stripped."""
    try:
        data: Any = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise DecisionError("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise DecisionError('the body must be a JSON object {"id", "decision", "reason"}')
    unknown = sorted(set(data) - {"id", "decision", "reason"})
    if unknown:
        raise DecisionError(f"unknown field(s): {', '.join(unknown)}")
    instance_id, decision, reason = data.get("id"), data.get("decision"), data.get("reason", "")
    if not isinstance(instance_id, str) or not instance_id:
        raise DecisionError("id must be the id of an instance (a string)")
    if instance_id not in known:
        raise DecisionError(f"no instance with id {instance_id[:200]!r} in this bench")
    if decision not in VERDICTS:
        raise DecisionError('decision must be "accept" or "reject"')
    if reason is None:
        reason = ""
    if not isinstance(reason, str):
        raise DecisionError("reason must be a string")
    reason = reason.strip()
    if len(reason) > MAX_REASON_CHARS:
        raise DecisionError(f"reason is longer than {MAX_REASON_CHARS} characters")
    if decision == "reject" and not reason:
        raise DecisionError("a reject needs a reason")
    return instance_id, decision, reason


class DecisionLog:
    """The decisions on one bench: the latest per id in memory, every decision appended to inspection.jsonl.

    Appends are one write of one whole line, flushed and fsynced before the decision counts as made, so a page
    or a server that dies loses nothing it reported saved. A lock serializes this server's appends and an
    advisory file lock (``flock``) those of another process on the same bench; earlier lines are never rewritten.
    """

    def __init__(self, root: Path, known_ids: Iterable[str]) -> None:
        self.root = root
        self.path = root / INSPECTION_FILE
        self.known = frozenset(known_ids)
        self.made = 0
        """Decisions appended by this log (this session)."""
        self._lock = threading.Lock()
        self._latest = inspection_decisions(root)  # BenchError naming file:line for a line it cannot read
        self._lines = sum(1 for _ in self._read_lines())

    def _read_lines(self) -> Iterable[str]:
        if not self.path.is_file():
            return []
        return [line for line in self.path.read_text(encoding="utf-8-sig").splitlines() if line.strip()]

    @property
    def lines(self) -> int:
        """Decision lines in inspection.jsonl (earlier sessions' included)."""
        return self._lines

    def latest(self) -> dict[str, InspectionDecision]:
        """The current decision of every instance of the bench that has one (stale ids left out)."""
        with self._lock:
            return {i: d for i, d in self._latest.items() if i in self.known}

    def counts(self) -> dict[str, int]:
        """accepted, rejected, undecided and total, over the instances of the bench."""
        latest = self.latest()
        accepted = sum(d.decision == "accept" for d in latest.values())
        rejected = len(latest) - accepted
        return {
            "accepted": accepted,
            "rejected": rejected,
            "undecided": len(self.known) - accepted - rejected,
            "total": len(self.known),
        }

    def record(self, instance_id: str, decision: str, reason: str = "") -> InspectionDecision:
        """Append one decision and make it the current one for ``instance_id``; DecisionError when it is not
        valid (checked again here: this is the one way into the file)."""
        if instance_id not in self.known:
            raise DecisionError(f"no instance with id {instance_id!r} in this bench")
        try:
            entry = InspectionDecision.model_validate(
                {
                    "id": instance_id,
                    "decision": decision,
                    "reason": reason.strip(),
                    "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
                }
            )
        except ValidationError as err:
            raise DecisionError(err.errors()[0]["msg"].removeprefix("Value error, ")) from None
        data = entry.line().encode("utf-8")
        with self._lock:
            self._append(data)
            self._latest.pop(instance_id, None)
            self._latest[instance_id] = entry
            self.made += 1
            self._lines += 1
        return entry

    def _append(self, data: bytes) -> None:
        created = not self.path.exists()
        with self.path.open("ab+") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when the file closes
            handle.seek(0, os.SEEK_END)
            if handle.tell() > 0:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":  # a hand-edited last line without its newline: never glue onto it
                    data = b"\n" + data
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if created:
            _fsync_dir(self.path.parent)  # the new file's name survives a crash too


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not possible on every platform; the file's own data is already on disk
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
