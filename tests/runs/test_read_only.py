"""Readers (`runs show`, `export`, `score`, `report`) never write: they work while a run is being written, on
read-only storage, and leave every file of a run directory as it was, a killed writer's WAL files included.

We run as root in CI, where permission bits do not stop a write: the read-only storage tests run their readers in
a child process whose bounding set lacks CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER, so the kernel
checks the (removed) write bits for root too; a probe checks that a write really fails there, else they skip.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks import export as export_run
from omnivchat.benchmarks import status as run_status
from omnivchat.benchmarks.native import collect_judgments, collect_scores, run_eval
from omnivchat.cli import app
from omnivchat.routes import get_route
from omnivchat.runs import RunStore

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
SLOW = "sim:healthy?latency=1.0"
runner = CliRunner()


def eval_command(bench_root: Path, run_dir: Path) -> list[str]:
    return [
        sys.executable, "-m", "omnivchat", "eval", "--bench", str(bench_root), "--model", SLOW,
        "-o", str(run_dir), "--concurrency", "1", "--no-progress",
    ]  # fmt: skip


def done(run_dir: Path) -> int:
    if not (run_dir / "store.sqlite").is_file():
        return 0
    with RunStore(run_dir / "store.sqlite", read_only=True) as store:
        return sum(1 for i in store.items() if i["status"] == "done")


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``folder``: size, mtime and content hash."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def finished_run(bench, run_dir: Path) -> Path:
    """A complete run of the simulated model, scored with the rule judge (scores.json, for `report`)."""
    summary = run_eval(bench, get_route("sim:healthy"), run_dir, system_prompt=None, progress=False)
    assert summary.complete
    scored = runner.invoke(app, ["score", str(run_dir), "--allow-incomplete"])
    assert scored.exit_code == 0, scored.output
    return run_dir


def killed_run(bench_root: Path, run_dir: Path) -> Path:
    """A run whose writer was SIGKILLed mid-way: its -wal and -shm files are left as the writer had them."""
    writer = subprocess.Popen(eval_command(bench_root, run_dir), stdout=subprocess.DEVNULL, env=ENV)
    try:
        wait_for(lambda: done(run_dir) >= 1 or writer.poll() is not None)
        assert writer.poll() is None
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        writer.kill()
    assert (run_dir / "store.sqlite-wal").is_file() and (run_dir / "store.sqlite-shm").is_file()
    return run_dir


def _without_dac_override() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone from the program exec'd next
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_unprivileged(command: list[str]) -> subprocess.CompletedProcess:
    preexec = _without_dac_override if os.geteuid() == 0 else None
    return subprocess.run(command, capture_output=True, text=True, env=ENV, preexec_fn=preexec, timeout=120)


def make_read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    probe = run_unprivileged([sys.executable, "-c", "import sys; open(sys.argv[1], 'x')", str(folder / "probe")])
    if probe.returncode == 0:
        (folder / "probe").unlink()
        pytest.skip("cannot make storage read-only here (writes succeed despite chmod a-w)")


def make_writable(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_readers_work_while_eval_writes(small_bench, tmp_path):
    run_dir = tmp_path / "run"
    writer = subprocess.Popen(
        eval_command(small_bench.root, run_dir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV
    )
    try:
        wait_for(lambda: done(run_dir) >= 1 or writer.poll() is not None)
        shown = runner.invoke(app, ["runs", "show", str(run_dir)])
        assert shown.exit_code == 0, shown.output
        assert f"being written now by pid {writer.pid} (eval, since " in shown.output
        exported = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "x.json"), "--allow-incomplete"])
        assert exported.exit_code == 0, exported.output
        partial = json.loads((tmp_path / "x.json").read_text())
        scored = runner.invoke(app, ["score", str(run_dir), "--allow-incomplete"])
        assert scored.exit_code == 0, scored.output
        assert writer.poll() is None, "the writer ended before the readers ran: the test proves nothing"
        refused = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "y.json")])
        assert refused.exit_code == 2 and "incomplete" in refused.output
        output, _ = writer.communicate(timeout=60)
    finally:
        writer.kill()
    assert writer.returncode == 0, output
    assert partial["status"] == "incomplete" and 1 <= partial["counts"]["candidate"]["done"] < 4
    assert partial["counts"]["candidate"]["done"] == sum(
        1 for r in partial["records"] if r["reply"]
    )  # one consistent snapshot
    status = run_status(run_dir)
    assert status.instances.done == 4 and status.attempts == {"ok": 4} and status.writer is None


def test_readers_create_and_change_no_file(small_bench, checked_bench, tmp_path):
    clean = finished_run(checked_bench, tmp_path / "clean")
    killed = killed_run(small_bench.root, tmp_path / "killed")
    before = {d: snapshot(d) for d in (clean, killed)}
    for run_dir, bench in ((clean, checked_bench), (killed, small_bench)):
        status = run_status(run_dir)
        assert status.instances.done >= 1 and status.writer is None
        assert export_run(run_dir, allow_incomplete=True).records
        assert len(collect_scores(run_dir, bench, ["rule"])) == len(bench.instances)
        collect_judgments(run_dir, bench, ["rule"])
        with RunStore(run_dir / "store.sqlite", read_only=True) as store:
            assert store.items()
            with pytest.raises(Exception, match="readonly"):
                store.set_item("x", "candidate", None)
        shown = runner.invoke(app, ["runs", "show", str(run_dir)])
        assert shown.exit_code == 0, shown.output
    assert {d: snapshot(d) for d in (clean, killed)} == before


def test_readers_work_on_read_only_storage(small_bench, checked_bench, tmp_path):
    clean = finished_run(checked_bench, tmp_path / "clean")
    killed = killed_run(small_bench.root, tmp_path / "killed")
    out = tmp_path / "out"
    out.mkdir()
    collect = (
        "import sys; from pathlib import Path; from omnivchat.bench import load_bench; "
        "from omnivchat.benchmarks.native import collect_scores; "
        "print(len(collect_scores(Path(sys.argv[1]), load_bench(sys.argv[2]), ['rule'])))"
    )
    before = {d: snapshot(d) for d in (clean, killed)}
    try:
        for run_dir in (clean, killed):
            make_read_only(run_dir)
        for run_dir, bench, name in ((clean, checked_bench, "clean"), (killed, small_bench, "killed")):
            omnivchat = [sys.executable, "-m", "omnivchat"]
            shown = run_unprivileged([*omnivchat, "runs", "show", str(run_dir)])
            assert shown.returncode == 0, shown.stdout + shown.stderr
            assert "Items" in shown.stdout and "Traceback" not in shown.stderr
            export = [*omnivchat, "export", str(run_dir), "-o", str(out / f"{name}.json"), "--allow-incomplete"]
            exported = run_unprivileged(export)
            assert exported.returncode == 0, exported.stdout + exported.stderr
            scores = run_unprivileged([sys.executable, "-c", collect, str(run_dir), str(bench.root)])
            assert scores.returncode == 0 and scores.stdout.strip() == str(len(bench.instances)), scores.stderr
        reported = run_unprivileged([*omnivchat, "report", str(clean), "-o", str(out / "report.html")])
        assert reported.returncode == 0, reported.stdout + reported.stderr
        assert json.loads((out / "clean.json").read_text())["status"] == "complete"
        assert json.loads((out / "killed.json").read_text())["counts"]["candidate"]["done"] >= 1
        assert {d: snapshot(d) for d in (clean, killed)} == before
    finally:
        for run_dir in (clean, killed):
            make_writable(run_dir)


def test_score_works_on_read_only_storage(checked_bench, tmp_path):
    clean = finished_run(checked_bench, tmp_path / "clean")
    try:
        make_read_only(clean)
        scored = run_unprivileged([sys.executable, "-m", "omnivchat", "score", str(clean)])
        assert scored.returncode == 0 and "Traceback" not in scored.stderr, scored.stdout + scored.stderr
        assert "Table 1 row" in scored.stdout and "scores.json not written" in scored.stderr
    finally:
        make_writable(clean)


def test_a_copy_keeps_working_after_its_writer_is_gone(small_bench, tmp_path):
    """A killed run copied elsewhere (its WAL files with it) reads the same as the original, read-only."""
    killed = killed_run(small_bench.root, tmp_path / "killed")
    copy = tmp_path / "copy"
    shutil.copytree(killed, copy)
    before = snapshot(copy)
    assert run_status(copy).instances.done == run_status(killed).instances.done >= 1
    assert snapshot(copy) == before
