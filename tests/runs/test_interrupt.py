"""Ctrl-C during `eval`: one line saying how much was done and how to resume, status 130, nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from omnivchat.runs import RunStore


def test_ctrl_c_says_what_was_done_and_the_rerun_resumes(small_bench, tmp_path):
    run_dir = tmp_path / "run"
    command = [
        sys.executable, "-m", "omnivchat", "eval", "--bench", str(small_bench.root),
        "--model", "sim:healthy?latency=0.4", "-o", str(run_dir), "--concurrency", "1", "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for the first stored item, then press Ctrl-C
        store = run_dir / "store.sqlite"
        if (
            store.is_file()
        ):  # read-only: this test is a reader beside the run's writer, which may not be done creating it
            with RunStore(store, read_only=True) as s:
                if any(i["status"] == "done" for i in s.items()):
                    break
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    assert "Traceback" not in output
    line = next(x for x in output.splitlines() if x.startswith("interrupted:"))
    assert "done" in line and "rerun the same command to resume" in line
    resumed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resumed 4 items" in resumed.stdout and "reused" in resumed.stdout
