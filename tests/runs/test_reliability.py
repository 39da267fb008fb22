"""Crash safety and secrecy: SIGKILL mid-run, then resume; a key never lands anywhere it should not."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

SECRET = "sk-omnivchat-test-SECRET-7f3a9c2e51d04b88"
EVAL = "from omnivchat.cli import app; app()"


def _eval_args(bench: Path, base_url: str, out: Path, key_file: Path) -> list[str]:
    return [
        "eval",
        "--bench",
        str(bench),
        "--model",
        "omni-test",
        "--base-url",
        base_url,
        "--output",
        str(out),
        "--key-file",
        str(key_file),
        "--key-field",
        "MY_KEY",
        "--concurrency",
        "2",
        "--no-progress",
        "--max-attempts",
        "2",
    ]


def _key_file(tmp_path: Path) -> Path:
    path = tmp_path / "private.env"
    path.write_text(f"# keys\nOTHER=x\nexport MY_KEY='{SECRET}'\n")
    return path


def test_sigkill_mid_run_loses_nothing_and_repeats_nothing(small_bench, tmp_path):
    out = tmp_path / "run"
    key_file = _key_file(tmp_path)
    with LoopbackServer(default=Behaviour(text="slow answer", latency=0.6)) as server:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        child = subprocess.Popen(
            [sys.executable, "-c", EVAL, *_eval_args(small_bench.root, server.base_url, out, key_file)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        store_path = out / "store.sqlite"
        deadline = time.monotonic() + 60
        done_before = 0
        while time.monotonic() < deadline and child.poll() is None:  # wait for some, not all, results
            if store_path.exists():
                try:
                    with sqlite3.connect(store_path) as db:
                        done_before = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                except sqlite3.OperationalError:
                    done_before = 0
                if done_before >= 1:
                    break
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert 1 <= done_before < 4
        with sqlite3.connect(store_path) as db:
            completed = {k for (k,) in db.execute("SELECT key FROM results")}
            attempts_before = db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
        sent_before = server.count

        result = CliRunner().invoke(app, _eval_args(small_bench.root, server.base_url, out, key_file))
        assert result.exit_code == 0, result.output
        with sqlite3.connect(store_path) as db:
            results = {k for (k,) in db.execute("SELECT key FROM results")}
            attempts = db.execute("SELECT key, status FROM attempts ORDER BY id").fetchall()
        assert completed <= results and len(results) == 4  # no completed result lost
        resent = [k for k, _ in attempts[attempts_before:] if k in completed]
        assert resent == []  # no completed request sent twice
        assert attempts_before >= sent_before  # every request that reached the server before the kill has a row
        assert server.count == sent_before + (len(attempts) - attempts_before)
        interrupted = [k for k, status in attempts[:attempts_before] if status is None]  # kept, never filled
        assert all(k in results for k in interrupted)


def test_secret_never_reaches_files_logs_exports_or_errors(small_bench, tmp_path, capfd):
    out = tmp_path / "run"
    key_file = _key_file(tmp_path)
    with LoopbackServer(default=Behaviour(text="ok")) as server:
        server.script(Behaviour(status=401, error_message=f"invalid key {SECRET}"), Behaviour(status=500))
        runner = CliRunner()
        first = runner.invoke(app, _eval_args(small_bench.root, server.base_url, out, key_file))
        second = runner.invoke(app, _eval_args(small_bench.root, server.base_url, out, key_file))
        shown = runner.invoke(app, ["runs", "show", str(out)])
        exported = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "export.json")])
        assert server.chat_requests[0].headers["Authorization"] == f"Bearer {SECRET}"  # it was really used
    assert first.exit_code == 1 and second.exit_code == 0, second.output
    outputs = first.output + second.output + shown.output + exported.output + "".join(capfd.readouterr())
    assert SECRET not in outputs
    scanned = 0
    for path in [*out.rglob("*"), tmp_path / "export.json"]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
            scanned += 1
    assert scanned >= 4  # manifest, store (+ WAL files), invocations log, export
    with sqlite3.connect(out / "store.sqlite") as db:
        errors = [e for (e,) in db.execute("SELECT error FROM attempts WHERE error IS NOT NULL")]
    assert any("invalid key ***" in e for e in errors)  # the echoed key was redacted, the message kept
