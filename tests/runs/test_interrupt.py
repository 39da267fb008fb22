"""Ctrl-C during `eval`: one line saying how much was done and how to resume, status 130, nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from omnivchat.runs import RunStore
from omnivchat.testing import Behaviour, LoopbackServer


def test_ctrl_c_says_what_was_done_and_the_rerun_resumes(small_bench, tmp_path):
    """A slow peer, not a race: the server answers the first request and holds the next one until the test lets it
    go, so Ctrl-C lands mid-run on any machine, however busy."""
    answer_all = threading.Event()
    answered = []

    def rules(request: dict) -> Behaviour:
        if answer_all.is_set() or not answered:
            answered.append(1)
            return Behaviour(text="The square is red.")
        return Behaviour(hang=True)

    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with LoopbackServer(rules=rules) as server:
        command = [
            sys.executable, "-m", "omnivchat", "eval", "--bench", str(small_bench.root),
            "--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--base-url", server.base_url, "--no-key",
            "-o", str(run_dir), "--concurrency", "1", "--no-progress",
        ]  # fmt: skip
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        deadline = time.monotonic() + 120  # a hang guard only: the held request keeps the run from ending
        done = False
        while not done and time.monotonic() < deadline and process.poll() is None:
            store = run_dir / "store.sqlite"
            if store.is_file():  # read-only: a reader beside the run's writer, which may not be done creating it
                with RunStore(store, read_only=True) as s:
                    done = any(i["status"] == "done" for i in s.items())
            time.sleep(0.05)
        assert done and process.poll() is None  # one item stored, the next one held by the server
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
        assert process.returncode == 130, output
        assert "Traceback" not in output
        line = next(x for x in output.splitlines() if x.startswith("interrupted:"))
        assert "1 done" in line and "rerun the same command to resume" in line, line
        answer_all.set()
        resumed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resumed 4 items" in resumed.stdout and "reused" in resumed.stdout
