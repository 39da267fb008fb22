"""One `studio inspect` server per bench: a second (another process, or this one) is refused naming the first's
pid and URL; a lock file left by a server that died (SIGKILL) holds no lock and is taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import Bench
from omnivchat.cli import app
from omnivchat.studio.inspect import LOCK_FILE, InspectError, InspectLocked, InspectServer


def _serve(bench: Path) -> tuple[subprocess.Popen[str], str]:
    """`omnivchat studio inspect BENCH --port 0` in a process of its own, and the URL it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "omnivchat", "studio", "inspect", str(bench), "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        assert line, "the command ended early"
        if line.startswith("serving "):
            return process, line.split()[1]
    raise AssertionError("no URL printed")


def _end(process: subprocess.Popen[str], sig: int) -> None:
    if process.poll() is None:
        process.send_signal(sig)
    process.communicate(timeout=30)


def test_a_second_server_on_the_same_bench_is_refused_naming_the_first(small_bench: Bench) -> None:
    first, url = _serve(small_bench.root)
    try:
        with pytest.raises(InspectLocked) as caught:
            InspectServer(small_bench.root, port=0)
        message = str(caught.value)
        assert f"pid {first.pid} at {url}" in message and "already being inspected" in message
        refused = CliRunner().invoke(app, ["studio", "inspect", str(small_bench.root), "--port", "0", "--no-browser"])
        assert refused.exit_code != 0
        assert f"pid {first.pid} at {url}" in " ".join(refused.output.split())
    finally:
        _end(first, signal.SIGINT)
    with InspectServer(small_bench.root, port=0) as after:  # the first stopped: its lock went with it
        assert json.loads((small_bench.root / LOCK_FILE).read_text())["url"] == after.url
    assert not (small_bench.root / LOCK_FILE).exists()  # a server that stops leaves no lock file in the bench


def test_a_second_server_in_the_same_process_is_refused(small_bench: Bench) -> None:
    with InspectServer(small_bench.root, port=0) as first:
        with pytest.raises(InspectError, match=f"pid {os.getpid()} at {first.url}"):
            InspectServer(small_bench.root, port=0)
        assert first.running


def test_a_dead_servers_lock_is_taken_over(small_bench: Bench) -> None:
    first, url = _serve(small_bench.root)
    _end(first, signal.SIGKILL)  # no cleanup at all: the lock file still names it
    left = json.loads((small_bench.root / LOCK_FILE).read_text())
    assert left["pid"] == first.pid and left["url"] == url
    with InspectServer(small_bench.root, port=0) as second:
        record = json.loads((small_bench.root / LOCK_FILE).read_text())
        assert record["pid"] == os.getpid() and record["url"] == second.url


def test_a_lock_file_naming_a_dead_pid_is_taken_over(small_bench: Bench) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = {"pid": dead.pid, "url": "http://127.0.0.1:1/", "since": "2026-01-01 00:00:00+00:00"}
    (small_bench.root / LOCK_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    with InspectServer(small_bench.root, port=0) as server:
        assert json.loads((small_bench.root / LOCK_FILE).read_text())["pid"] == os.getpid()
        assert server.running
