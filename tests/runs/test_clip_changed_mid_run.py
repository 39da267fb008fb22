"""A clip rewritten while a run uses it (other bytes, the same size, its modification time put back, so that nothing
but its bytes tells): the request is never sent as if it held the clip it was prepared with; the item fails as
`media`, naming the clip, the others are answered, and a rerun notices the change."""

from __future__ import annotations

import base64
import hashlib
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from omnivchat.benchmarks.native import run_eval
from omnivchat.routes import RetryPolicy, get_route
from omnivchat.runs import ManifestMismatch
from omnivchat.testing import Behaviour, LoopbackServer


def _stored_description(run: Path, item: str) -> str:
    with sqlite3.connect(run / "store.sqlite") as db:
        (description,) = db.execute(
            "SELECT r.description FROM requests r JOIN items i ON i.key = r.key WHERE i.item_id = ?", (item,)
        ).fetchone()
    return str(description)


def _b64_tail(data: bytes) -> str:
    """The end of ``data``'s base64 (whole 3-byte groups, so it does not depend on what precedes it)."""
    return base64.b64encode(data[len(data) - 300 - len(data) % 3 :]).decode()


def rewrite_keeping_size_and_time(path: Path) -> None:
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte inside the media data: still a clip, another clip
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_clip_changed_mid_run_fails_its_item_and_a_rerun_notices(small_bench, tmp_path):
    target = small_bench.media_path(small_bench.get("s3").turns[-1])
    changed = threading.Event()

    original = target.read_bytes()

    def rules(payload: dict) -> Behaviour:
        holds_target = any(
            isinstance(m.get("content"), list)
            and any(
                p.get("type") == "video_url" and p["video_url"]["url"].endswith(_b64_tail(original))
                for p in m["content"]
            )
            for m in payload["messages"]
        )
        if not changed.is_set() and not holds_target:  # on a request for another item, while s3 waits its turn
            rewrite_keeping_size_and_time(target)
            changed.set()
        return Behaviour(text="An answer.", latency=0.05)

    out = tmp_path / "run"
    with LoopbackServer(rules=rules) as srv:
        route = get_route("my-omni", base_url=srv.base_url, no_key=True)
        summary = run_eval(
            small_bench, route, out, system_prompt="x", concurrency=1, retry=RetryPolicy(max_attempts=2), progress=False
        )
        sent_first = len(srv.chat_requests)
    assert changed.is_set()
    if summary.failed:  # the item failed as media naming the clip, whichever check saw the change
        assert (summary.done, summary.failed) == (3, 1) and summary.failures == {"media": 1}
        message = summary.first_errors["media"]
        # sent as prepared: refused mid-upload; or built while the file was being rewritten (requests are built as
        # the first ones are sent): the clip read empty or unreadable
        seen = ("changed since the request was prepared", "empty file (0 bytes)", "not a readable media file")
        assert str(target) in message and any(words in message for words in seen), message
    else:  # prepared again after the change (a retry, hashes forgotten): its record names the bytes it sent
        assert summary.done == 4
        assert hashlib.sha256(target.read_bytes()).hexdigest() in _stored_description(out, "s3")
        assert hashlib.sha256(original).hexdigest() not in _stored_description(out, "s3")
    # a rerun (a new process would hash the clip afresh; this one forgot what it had worked out) sees the change
    with LoopbackServer(Behaviour(text="An answer.")) as srv:
        with pytest.raises(ManifestMismatch, match="clips"):
            run_eval(small_bench, get_route("my-omni", base_url=srv.base_url, no_key=True), out, system_prompt="x")
        assert srv.chat_requests == []
    assert sent_first >= 3
