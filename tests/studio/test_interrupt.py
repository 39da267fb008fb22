"""Ctrl-C and SIGTERM during a real `omnivchat studio run`, as a user's terminal sends them: to the whole process
group (the tool and every child it started that shares the group), at several moments of the synthesis.

What must hold: nothing new starts after the signal; the command ends within seconds with status 130 and one line
"interrupted: N accepted, D discarded, R not finished of T instances; rerun the same command to resume"; an
interrupt never discards an instance (a child process killed by it leaves the instance unfinished); the rerun ends
with an `instances.jsonl` byte-identical to an uninterrupted run with the same seed. With the hosted backend on
the loopback mocks, no agent call starts after the interrupt and a call in flight is cancelled within seconds.

Timings (signal to exit) are printed (`pytest -s`); only a generous bound is asserted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from omnivchat.testing import Behaviour, LoopbackServer
from omnivchat.testing._videos import VideoMockServer, VideoTask

from .test_hosted_agents import Scripted
from .test_hosted_run import _agents_file, _configs, clip_bytes  # noqa: F401 (a fixture)

OMNIVCHAT = Path(sys.executable).with_name("omnivchat")
# A multi-turn subcategory (each turn's media is extracted by ffmpeg) with injected defects (repairs, discards).
# Six instances at concurrency 2: after three traces one is still queued, so an interruption at any moment below
# leaves one unfinished (with four, the last could end before the signal: seen once the engine got faster).
RUN = ("--config", "MIST", "--n", "6", "--seed", "0", "--defect-rate", "0.3", "--concurrency", "2", "--no-progress")
CONCURRENCY = 2
MESSAGE = re.compile(
    r"interrupted: (\d+) accepted, (\d+) discarded, (\d+) not finished of (\d+) instances; "
    r"rerun the same command to resume"
)
IN_FLIGHT_S = 0.1  # see the hosted test
EXIT_BOUND_S = 30.0  # generous: the machine may be loaded; the measured times are printed
MOMENT_ATTEMPTS = 3  # a run that ends before its signal arrives missed the moment; it is run again


def command(out: Path, *extra: str) -> list[str]:
    return [str(OMNIVCHAT), "studio", "run", *extra, "-o", str(out)]


def env(cache: Path, **more: str) -> dict[str, str]:
    # Each run renders for itself (no clip from another run's cache), so the moments below really happen.
    return {**os.environ, "OMNIVCHAT_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1", **more}


def traces(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text("utf-8")) for p in sorted((out / "studio" / "traces").glob("*.json"))}


def start(cmd: list[str], environ: dict[str, str]) -> subprocess.Popen[str]:
    # A process group of its own, as a terminal's foreground job: the signal goes to the group (killpg). SIGINT as
    # a shell gives a foreground job (a shell starts a background job, and so pytest run with `&`, ignoring it).
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_until(predicate: Callable[[], bool], proc: subprocess.Popen[str], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended (status {proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.002)


def interrupt(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[float, float, str, str]:
    """Send ``sig`` to the process group as a terminal would; (when sent, seconds to exit, stdout, stderr)."""
    sent = time.monotonic()
    os.killpg(proc.pid, sig)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"still running 120 s after {sig.name}")
    return sent, time.monotonic() - sent, out, err


def check_interrupted(proc: subprocess.Popen[str], out: str, err: str, seconds: float, total: int) -> re.Match[str]:
    assert proc.returncode == 130, f"status {proc.returncode}\n{out}\n{err}"
    assert "Traceback" not in err, err
    found = MESSAGE.search(err)
    assert found is not None, err
    accepted, discarded, unfinished, of = map(int, found.groups())
    assert of == total and accepted + discarded + unfinished == total, found.group(0)
    assert seconds < EXIT_BOUND_S, f"{seconds:.1f} s from the signal to the exit"
    return found


def no_interrupt_discard(out: Path) -> None:
    for instance_id, trace in traces(out).items():
        reason = trace.get("reason", "")
        assert "extraction" not in reason and "killed" not in reason and "signal" not in reason, (instance_id, reason)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, str]]:
    """The uninterrupted run: its instances.jsonl and every instance's status."""
    root = tmp_path_factory.mktemp("reference")
    done = subprocess.run(
        command(root / "out", *RUN), capture_output=True, text=True, env=env(root / "cache"), timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    statuses = {k: t["status"] for k, t in traces(root / "out").items()}
    assert set(statuses.values()) == {"accepted", "discarded"}, statuses  # both kinds of ending are exercised
    return (root / "out" / "instances.jsonl").read_bytes(), statuses


def _extracting(out: Path) -> bool:
    """ffmpeg is extracting a turn's audio or final frame right now (its temporary output exists, or the audio is
    out and the frame is not yet)."""
    work = out / "studio" / "work"
    if not work.is_dir():
        return False
    for folder in work.iterdir():
        names = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
        if any(n.startswith(".tmp-turn") for n in names):
            return True
        for name in names:
            if name.endswith(".audio.wav") and name.replace(".audio.wav", ".final_frame.png") not in names:
                return True
    return False


MOMENTS: dict[str, Callable[[Path], bool]] = {
    "during media extraction": _extracting,
    "after the first trace": lambda out: len(traces(out)) >= 1,
    "after three traces": lambda out: len(traces(out)) >= 3,
}


@pytest.mark.parametrize(
    ("moment", "sig"),
    [
        ("during media extraction", signal.SIGINT),
        ("after the first trace", signal.SIGINT),
        ("after three traces", signal.SIGINT),
        ("during media extraction", signal.SIGTERM),
    ],
    ids=["sigint-extracting", "sigint-first-trace", "sigint-three-traces", "sigterm-extracting"],
)
def test_interrupt_then_rerun_equals_an_uninterrupted_run(
    moment: str, sig: signal.Signals, reference: tuple[bytes, dict[str, str]], tmp_path: Path
) -> None:
    expected, statuses = reference
    for attempt in range(1, MOMENT_ATTEMPTS + 1):
        out = tmp_path / f"out{attempt}"
        environ = env(tmp_path / f"cache{attempt}")
        proc = start(command(out, *RUN), environ)
        wait_until(lambda out=out: MOMENTS[moment](out), proc, moment)
        before = len(traces(out))
        _, seconds, stdout, stderr = interrupt(proc, sig)
        after = len(traces(out))
        if proc.returncode != 0 or len(traces(out)) < len(statuses):
            break
        # The whole run ended before the signal came: a loaded machine starved this poller past the moment.
        print(f"\nattempt {attempt}: the run finished before the signal ({moment}); trying again")
    else:
        pytest.fail(f"the run finished before {sig.name} in all {MOMENT_ATTEMPTS} attempts ({moment})")
    found = check_interrupted(proc, stdout, stderr, seconds, len(statuses))
    print(f"\n{sig.name} {moment}: exit after {seconds:.2f} s; {found.group(0)}; traces {before} -> {after}")
    # Nothing queued starts: only the instances in flight may still end.
    assert after - before <= CONCURRENCY, f"{after - before} instances ended after the signal"
    assert int(found.group(3)) >= 1
    no_interrupt_discard(out)

    rerun = subprocess.run(command(out, *RUN), capture_output=True, text=True, env=environ, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert {k: t["status"] for k, t in traces(out).items()} == statuses
    assert (out / "instances.jsonl").read_bytes() == expected


# ------------------------------------------------------------------------------------------------- hosted


def _slow(rules: Scripted, latency: float) -> Callable[[dict[str, Any]], Behaviour]:
    def answer(body: dict[str, Any]) -> Behaviour:
        return replace(rules(body), latency=latency)

    return answer


def test_hosted_no_call_starts_after_the_interrupt_and_a_render_in_flight_is_cancelled(
    tmp_path: Path,
    clip_bytes: bytes,  # noqa: F811 (the fixture)
) -> None:
    """The Director and Reviewer answer after 0.2 s (a call is always in flight); every render hangs ("running"
    at every poll, 60 s timeout). SIGINT once the first render is submitted: no chat request and no render
    submission arrives after it; the hanging render is cancelled after the grace period, far before its timeout.
    The rerun, with renders that succeed, ends as an uninterrupted run does."""
    key = "sk-" + os.urandom(12).hex()
    environ = env(tmp_path / "cache", OMNIVCHAT_TEST_DASHSCOPE_KEY=key)
    with (
        LoopbackServer(rules=_slow(Scripted(), 0.2)) as llm,
        VideoMockServer(clip_bytes, api_key=key, default=VideoTask(outcome="never")) as videos,
    ):
        agents = _agents_file(tmp_path, llm, videos)
        agents.write_text(agents.read_text().replace("timeout_s = 20", "timeout_s = 60"), encoding="utf-8")
        args = [*_configs(tmp_path), "--n", "2", "--backend", "hosted", "--agents", str(agents), "--no-progress"]
        out = tmp_path / "out"
        proc = start(command(out, *args), environ)
        wait_until(lambda: bool(videos.submissions()), proc, "the first render submission")
        time.sleep(0.3)  # a Director or Reviewer call is in flight too
        sent, seconds, stdout, stderr = interrupt(proc, signal.SIGINT)
        found = check_interrupted(proc, stdout, stderr, seconds, 4)
        chats = [r.time for r in llm.requests]
        submissions = [r.time for r in videos.submissions()]
        # A request the tool was already sending when the signal landed may arrive a moment later (the handler runs
        # between two bytecodes of the main thread): IN_FLIGHT_S apart, an arrival after the signal is a new call.
        after = [round(t - sent, 3) for t in chats + submissions if t > sent]
        print(
            f"\nhosted SIGINT during a hanging render: exit after {seconds:.2f} s; {found.group(0)}; "
            f"{len(chats)} chat requests and {len(submissions)} submissions in all, arriving after the signal: {after}"
        )
        assert all(t <= IN_FLIGHT_S for t in after), f"requests started {after} s after the interrupt"
        assert seconds < 20, f"{seconds:.1f} s: the render in flight was not cancelled"
        assert found.group(1, 2) == ("0", "0")

        videos.default = VideoTask()  # the provider recovers: the rerun completes
        rerun = subprocess.run(command(out, *args), capture_output=True, text=True, env=environ, timeout=300)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert "accepted 4 of 4" in rerun.stdout
        fresh = subprocess.run(
            command(tmp_path / "fresh", *args), capture_output=True, text=True, env=environ, timeout=300
        )
        assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert (out / "instances.jsonl").read_bytes() == (tmp_path / "fresh" / "instances.jsonl").read_bytes()
    assert key not in stdout + stderr + rerun.stdout + rerun.stderr


# ------------------------------------------------------------------------------------------------- a killed child


HELD_S = "3599.25"  # the held extraction's sleep, found by it afterwards


def _end_sleeps(seconds: str) -> None:
    """End the held wrapper's sleep, left behind when the wrapper was killed."""
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if entry.read_bytes().split(b"\0")[:2] == [b"sleep", seconds.encode()]:
                os.kill(int(entry.parent.name), signal.SIGKILL)


def _children(parent: int, marker: str) -> list[int]:
    """Live child processes of ``parent`` whose command line holds ``marker`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and marker in cmdline:
            found.append(int(entry.name))
    return found


def test_a_killed_ffmpeg_is_media_killed_not_a_verdict_on_the_file(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from omnivchat.media import MediaError, MediaKilled
    from omnivchat.media._ffmpeg import run_ffmpeg

    marker = f"sine=frequency=440:duration={300 + os.getpid() % 97}"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_ffmpeg, ["-f", "lavfi", "-i", marker, "-f", "null", "-"], subject="a long tone")
        deadline = time.monotonic() + 30
        while not (pids := _children(os.getpid(), marker)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pids, "ffmpeg never started"
        assert os.getsid(pids[0]) == pids[0]  # a session of its own: a terminal's Ctrl-C does not reach it
        os.kill(pids[0], signal.SIGKILL)
        with pytest.raises(MediaKilled, match="killed by signal 9") as err:
            running.result(timeout=30)
    assert isinstance(err.value, MediaError)


def test_an_extraction_killed_by_a_signal_leaves_its_instance_unfinished_never_discarded(
    reference: tuple[bytes, dict[str, str]], tmp_path: Path
) -> None:
    """Not an interrupt: something else (the out-of-memory killer, a user's kill) kills the ffmpeg that extracts a
    turn's final frame. The instance stops with an error (status 1, "rerun to resume"), no trace says "media
    extraction failed", and the rerun ends as the uninterrupted run."""
    expected, statuses = reference
    out = tmp_path / "out"
    # A slow peer, not a race: the first extraction (ffmpeg -sseof) is held until it is killed, so the kill lands
    # on a running process on any machine; every other call, and the rerun's, is the real ffmpeg.
    from omnivchat.media import ffmpeg_exe

    hold = tmp_path / "held"
    wrapper = tmp_path / "ffmpeg"
    wrapper.write_text(
        "#!/bin/bash\n"
        f'for a in "$@"; do if [ "$a" = -sseof ] && mkdir {hold} 2>/dev/null; then\n'
        f"  sleep {HELD_S} </dev/null >/dev/null 2>&1; exit 1  # away from the pipes: killing bash closes them\n"
        "fi; done\n"
        f'exec {ffmpeg_exe()} "$@"\n'
    )
    wrapper.chmod(0o755)
    environ = env(tmp_path / "cache", IMAGEIO_FFMPEG_EXE=str(wrapper))
    proc = subprocess.Popen(command(out, *RUN), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ)
    killed: list[int] = []
    try:
        while proc.poll() is None and not killed:
            if hold.exists():
                killed = _children(proc.pid, "-sseof")
            time.sleep(0.01)
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        _end_sleeps(HELD_S)
    assert killed, "no extraction was caught running"
    assert proc.returncode == 1, f"status {proc.returncode}\n{stdout}\n{stderr}"
    said = " ".join(stderr.split())  # long lines are wrapped
    assert "killed by signal 9" in said and "rerun the same command to resume" in said, stderr
    no_interrupt_discard(out)
    assert len(traces(out)) < len(statuses)

    rerun = subprocess.run(command(out, *RUN), capture_output=True, text=True, env=environ, timeout=300)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert {k: t["status"] for k, t in traces(out).items()} == statuses
    assert (out / "instances.jsonl").read_bytes() == expected
