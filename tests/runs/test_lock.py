"""One writer per run directory: a second writer fails at once naming the holder's pid and sends nothing; the
operating system drops the lock of a killed writer, so a new one resumes at once. Real processes, real SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from omnivchat.benchmarks.native import run_eval
from omnivchat.runs import LOCK_FILE, RunLocked, RunStore, run_lock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="run directories are locked with fcntl.flock")

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
# A slow simulated model: 4 items one at a time take 4 s, long enough for a second process to start meanwhile.
SLOW = "sim:healthy?latency=1.0"
HOLD = """
import sys, time
from omnivchat.runs import run_lock
with run_lock(sys.argv[1], "holder"):
    print("locked", flush=True)
    time.sleep(120)
"""


# Slower still, for a first eval that must outlast a second process's start-up on a loaded machine (12 s).
SLOWER = "sim:healthy?latency=3.0"


def eval_command(bench_root: Path, run_dir: Path, model: str = SLOW) -> list[str]:
    return [
        sys.executable, "-m", "omnivchat", "eval", "--bench", str(bench_root), "--model", model,
        "-o", str(run_dir), "--concurrency", "1", "--no-progress",
    ]  # fmt: skip


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def attempts(run_dir: Path) -> list[dict]:
    store = run_dir / "store.sqlite"
    if not store.is_file():
        return []
    with RunStore(store, read_only=True) as s:
        return s.attempts()


def done(run_dir: Path) -> int:
    store = run_dir / "store.sqlite"
    if not store.is_file():
        return 0
    with RunStore(store, read_only=True) as s:
        return sum(1 for i in s.items() if i["status"] == "done")


def hold_lock(run_dir: Path) -> subprocess.Popen:
    """Another process holding the writer lock of ``run_dir`` until it is killed."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True, env=ENV)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_second_eval_fails_at_once_naming_the_first_and_sends_nothing(small_bench, tmp_path):
    run_dir = tmp_path / "run"
    command = eval_command(small_bench.root, run_dir, SLOWER)
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    try:
        wait_for(lambda: len(attempts(run_dir)) >= 1)  # the first is sending
        manifest = (run_dir / "manifest.json").stat().st_mtime_ns
        started = time.monotonic()
        second = subprocess.run(command, capture_output=True, text=True, env=ENV)
        took = time.monotonic() - started
        output = second.stdout + second.stderr
        assert second.returncode == 2, output
        assert first.poll() is None, "the first eval ended before the second started: the test proves nothing"
        assert f"is being written by pid {first.pid} (eval, since " in output and "wait for it or stop it" in output
        assert "Traceback" not in output
        assert took < 20  # at once: no request, no waiting for the first
        assert (run_dir / "manifest.json").stat().st_mtime_ns == manifest  # not even the manifest was touched
        assert len((run_dir / "invocations.jsonl").read_text().splitlines()) == 1
        out, _ = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == 0, out
    assert "ran 4 items" in out and "4 requests sent" in out
    sent = attempts(run_dir)
    assert len(sent) == 4 and all(a["status"] == "ok" for a in sent)  # every request sent once, by the first only
    assert len({a["key"] for a in sent}) == 4


def test_sigkill_frees_the_lock_and_a_new_eval_resumes_at_once(small_bench, tmp_path):
    run_dir = tmp_path / "run"
    first = subprocess.Popen(
        eval_command(small_bench.root, run_dir), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    try:
        wait_for(lambda: done(run_dir) >= 1 or first.poll() is not None)
        assert first.poll() is None
        record = json.loads((run_dir / LOCK_FILE).read_text())
        assert record["pid"] == first.pid and record["command"] == "eval"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        first.kill()
    assert json.loads((run_dir / LOCK_FILE).read_text())["pid"] == first.pid  # a dead holder's record is left
    started = time.monotonic()
    resumed = subprocess.run(eval_command(small_bench.root, run_dir), capture_output=True, text=True, env=ENV)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resumed 4 items" in resumed.stdout and "reused" in resumed.stdout
    assert time.monotonic() - started < 60
    assert (run_dir / LOCK_FILE).is_file()  # the lock file stays (it is harmless); its record is cleared
    assert (run_dir / LOCK_FILE).read_text() == ""


def test_every_writer_is_refused_while_another_process_holds_the_lock(small_bench, tmp_path):
    from omnivchat.benchmarks.native import judge_run
    from omnivchat.judges import JudgesConfig
    from omnivchat.socialomni._run import evaluate, rescore
    from omnivchat.socialomni._run import judge_run as so_judge_run

    run_dir = tmp_path / "run"
    holder = hold_lock(run_dir)
    try:
        pid = f"pid {holder.pid} (holder, since "
        # The lock is taken before anything else is read: arguments are never looked at, no manifest is made.
        writers = [
            lambda: run_eval(small_bench, None, run_dir, system_prompt=None, progress=False),
            lambda: judge_run(run_dir, small_bench, JudgesConfig(), ["gpt"], progress=False),
            lambda: evaluate(tmp_path / "a", tmp_path / "m", run_dir, None, cards=None, progress=False),
            lambda: so_judge_run(tmp_path, tmp_path, tmp_path, "standard", run_dir, template="", template_sha=""),
            lambda: rescore({}, tmp_path, "standard", run_dir, template=""),
        ]
        for writer in writers:
            started = time.monotonic()
            with pytest.raises(RunLocked) as refused:
                writer()
            message = str(refused.value)
            assert message.startswith(f"{run_dir} is being written by {pid}"), message
            assert message.endswith("; wait for it or stop it")
            assert time.monotonic() - started < 3
        assert sorted(os.listdir(run_dir)) == [LOCK_FILE]
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        summary = run_eval(small_bench, _sim(), run_dir, system_prompt=None, progress=False)
        assert summary.done == 4
    finally:
        holder.kill()


def _sim():
    from omnivchat.routes import get_route

    return get_route("sim:healthy")


def test_the_lock_is_reentrant_for_its_thread_only_and_a_failed_writer_leaves_no_folder(tmp_path):
    run_dir = tmp_path / "run"
    with run_lock(run_dir, "outer"):
        with run_lock(run_dir, "inner"):  # a writer may call another (the ablation grid calls eval)
            pass
        assert (run_dir / LOCK_FILE).is_file()
        refused: list[BaseException] = []

        def other_thread() -> None:
            try:
                with run_lock(run_dir, "thread"):
                    pass
            except RunLocked as err:
                refused.append(err)

        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert len(refused) == 1 and f"another thread of this process (pid {os.getpid()}, outer)" in str(refused[0])
    # the directory the lock made, holding nothing else, goes again: a failed start leaves nothing behind
    assert not run_dir.exists()
    run_dir.mkdir()
    (run_dir / "keep.txt").write_text("x")
    with pytest.raises(ValueError), run_lock(run_dir, "x"):
        raise ValueError("boom")
    assert sorted(os.listdir(run_dir)) == [LOCK_FILE, "keep.txt"]  # a folder it did not make keeps the lock file
