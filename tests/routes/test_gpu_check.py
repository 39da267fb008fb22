"""The GPU-ready check (examples/gpu/check.sh) run as bash on this machine, with a stand-in `vllm` (the loopback
server answering like a small omni model: tests/routes/standin_vllm.py) started the way vLLM starts its engine, as
a child process: every step runs and is timed, the summary shows each step's figures, the server's whole process
group is gone afterwards (also after Ctrl-C mid-run), a server that dies at start fails fast with its log, and a
failed step is reported with its log, never as a figure."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from omnivchat.media import export_audio

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "examples" / "gpu" / "check.sh"
STANDIN = Path(__file__).with_name("standin_vllm.py")
MODEL = "Qwen/Qwen2.5-Omni-3B"  # the real name: omnivchat's vLLM defaults (in-video audio) apply to it
FAKE_VLLM = """#!/bin/bash
# `vllm serve ...`: the stand-in runs as a child, as vLLM's engine core does, so only a process-group kill stops it
{python} {standin} "$@" &
wait
"""

pytestmark = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("bash", "curl", "setsid", "python3")),
    reason="needs bash, curl, setsid and python3",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def gone(pid: int) -> bool:
    """The process no longer runs (absent, or a zombie nobody has reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def refuses(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def dailyomni(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two questions laid out like the Daily-Omni release (qa.json; Videos/<id>/<id>_video.mp4 and _audio.wav),
    with invented questions on a rendered clip; gold answers A and B."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("Daily-Omni")
    scene = {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": "circle", "color": "red", "position": "center", "size": 0.3}],
        "speech": [{"text": "A short line.", "language": "en", "start": 0.2}],
    }
    clip = render_clip(scene, root / "clip.mp4").path
    rows = []
    for vid, gold in (("gpuChkVid01", "A"), ("gpuChkVid02", "B")):
        rows.append(
            {
                "Question": f"Which shape is shown while the voice speaks in {vid}?",
                "Choice": ["A. a circle", "B. a square", "C. a star", "D. nothing"],
                "Answer": gold,
                "video_id": vid,
                "Type": "AV Event Alignment",
                "content_parent_category": "Lifestyle",
                "content_fine_category": "Cooking",
                "video_category": "Howto & Style",
                "video_duration": "30s",
            }
        )
        videos = root / "Videos" / vid
        videos.mkdir(parents=True)
        shutil.copy(clip, videos / f"{vid}_video.mp4")
        export_audio(clip, fmt="wav", out=videos / f"{vid}_audio.wav")
    (root / "qa.json").write_text(json.dumps(rows, indent=1))
    return root


def setup(tmp_path: Path, **extra: str) -> tuple[dict[str, str], int, Path]:
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE_VLLM.format(python=sys.executable, standin=STANDIN))
    fake.chmod(0o755)
    port = free_port()
    pidfile = tmp_path / "standin.pid"
    env = {
        **os.environ,
        "PATH": f"{fake.parent}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "OMNIVCHAT_HOME": str(tmp_path / "home"),  # route checks on record stay in the test's folder
        "STANDIN_PIDFILE": str(pidfile),
        "PORT": str(port),
        "OUT": str(tmp_path / "out"),
        "HEALTH_TIMEOUT": "60",
        "COLUMNS": "200",
        **extra,
    }
    return env, port, pidfile


def test_the_check_runs_every_step_prints_figures_and_times_and_stops_the_server(dailyomni, tmp_path):
    env, port, pidfile = setup(tmp_path)
    result = subprocess.run(
        ["bash", str(SCRIPT), "--dailyomni", str(dailyomni)], env=env, capture_output=True, text=True, timeout=600
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    for step in ("serve", "check-route", "eval", "ablate", "dailyomni", "judge", "people"):
        assert re.search(rf"^\[{step}\] ok in \d+\.\d s$", out, re.M), step
        assert re.search(rf"^{re.escape(step)} +ok +\d+\.\d  \S", out, re.M), step  # its summary row
    summary = out[out.index("GPU-ready check:") :]
    assert "serve           ok" in summary and f"{MODEL} on http://127.0.0.1:{port}/v1" in summary
    assert "audio arrives (in-video)" in summary  # the stand-in heard the password only in the audible clip
    # the rule judge leaves 3 of the mini-bench's 8 subcategories unscored: no Mean over the bench, said so
    assert "8 done (0 reused), 0 failed; rule judge: Mean over 5 of 8 subcategories " in summary
    assert re.search(r"fusion gain [+-]\d\.\d{3}, video reliance [+-]\d\.\d{3}, audio reliance [+-]\d\.\d{3}", summary)
    assert "2 done (0 reused), 0 failed; accuracy 0.500 (1 of 2)" in summary  # "A" is right for one of two
    assert re.search(r"judge +ok .* Mean \d\.\d{3}, 8 scored, 0 unscored, panel self", summary)
    # the served model and the rule judge against the labels of examples/labels, each with its kappa or n/a
    assert re.search(r"people +ok .* against people \(examples/labels\): self accuracy \d\.\d{3}, kappa ", summary)
    assert "; rule accuracy 1.000" in summary and "; panel accuracy" in summary
    assert "READY: every step passed" in out and "FAILED" not in out
    check = json.loads((tmp_path / "out" / "route-check-in-video.json").read_text())
    assert check["passed"] and "copper meadow" in check["records"][0]["answer"]
    assert "audio is unavailable" in check["records"][1]["answer"]
    # the stand-in enforces vLLM's media limit, derived from the mini-bench (two turns, each with its track)
    assert """--limit-mm-per-prompt {"image": 0, "video": 2, "audio": 2}""" in out
    assert check["bench_media_items"] == {"image": 0, "video": 2, "audio": 2}
    assert check["records"][2]["control"] == "capacity" and check["records"][2]["http_status"] == 200
    # the server and its child are gone, and nothing listens on the port any more
    assert "stopped the server (process group" in out
    assert gone(int(pidfile.read_text())) and refuses(port)


def test_ctrl_c_mid_run_stops_the_server_and_the_step(small_bench, tmp_path):
    env, port, pidfile = setup(tmp_path, STANDIN_LATENCY="2", BENCH=str(small_bench.root))
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), "--dailyomni", str(tmp_path / "none")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job: Ctrl-C goes to the group
    )
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("[check-route] started"):
                break
        time.sleep(1.0)  # the route check's request is in flight on the slow stand-in
        os.killpg(proc.pid, signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, "".join(seen) + rest + err
    assert "interrupted: stopping what this check started" in err
    assert "stopped the server (process group" in rest
    assert "GPU-ready check:" not in rest  # no summary pretends the check ran
    assert gone(int(pidfile.read_text())) and refuses(port)


def test_a_server_that_dies_at_start_fails_fast_with_its_log(tmp_path):
    env, _port, _ = setup(tmp_path)
    fake = tmp_path / "bin" / "vllm"
    fake.write_text(
        "#!/bin/bash\necho 'loading weights'\necho 'torch.OutOfMemoryError: CUDA out of memory' >&2\nexit 1\n"
    )
    started = time.monotonic()
    result = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert time.monotonic() - started < 20
    assert "the server exited (status 1) before it served" in result.stderr
    assert "CUDA out of memory" in result.stderr and "loading weights" in result.stderr
    assert "[check-route]" not in result.stdout and not (tmp_path / "out" / "minibench").exists()


def test_a_failed_step_is_reported_with_its_log_never_as_a_figure(tmp_path):
    bad = tmp_path / "bad-bench"
    bad.mkdir()
    (bad / "bench.yaml").write_text("this is: [not a bench\n")
    env, port, pidfile = setup(tmp_path, BENCH=str(bad))
    result = subprocess.run(
        ["bash", str(SCRIPT), "--dailyomni", str(tmp_path / "absent")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    logs = tmp_path / "out" / "logs"
    assert re.search(rf"^eval +FAILED \(exit \d+\) +\d+\.\d  see {re.escape(str(logs / 'eval.log'))}$", out, re.M)
    assert re.search(rf"^ablate +FAILED \(exit \d+\) .* see {re.escape(str(logs / 'ablate.log'))}$", out, re.M)
    assert f"dailyomni       not run: no {tmp_path / 'absent'}/qa.json" in out
    assert "judge           not run: the mini-bench run does not exist" in out
    assert "Mean" not in out and "fusion gain" not in out
    assert "NOT READY: a step failed" in out
    assert (logs / "eval.log").read_text().strip()  # the log holds the reason
    assert gone(int(pidfile.read_text())) and refuses(port)
