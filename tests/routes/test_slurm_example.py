"""The SLURM example (examples/slurm/eval_replicas.sbatch) run as bash on this machine, with a stand-in `vllm` that
starts the loopback server on the port it is given: N replicas come up, eval runs against all of them, a second
job resumes without sending anything again, and every replica process is stopped at the end."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "examples" / "slurm" / "eval_replicas.sbatch"
FAKE_VLLM = """#!/bin/bash
# a stand-in for `vllm serve MODEL ... --port P ...`: the loopback server on port P
port=""
printf '%s\n' "$@" > "$(dirname "$0")/args-$$.txt"
while (( $# )); do
    if [[ $1 == --port ]]; then port=$2; fi
    shift
done
exec {python} -m omnivchat.testing.loopback --port "$port" --text "A reply from port $port."
"""


def free_base_port(n: int) -> int:
    """A port p such that p .. p+n-1 are free now."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            held = []
            for port in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                held.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no free ports")


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs bash and curl")
def test_the_sbatch_script_starts_replicas_runs_and_resumes(small_bench, tmp_path):
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir()
    fake.write_text(FAKE_VLLM.format(python=sys.executable))
    fake.chmod(0o755)
    base = free_base_port(2)
    out = tmp_path / "run"
    env = {
        **os.environ,
        "MODEL": "omni-test",
        "BENCH": str(small_bench.root),
        "OUT": str(out),
        "GPUS": "2",
        "BASE_PORT": str(base),
        "CONCURRENCY": "2",
        "AUDIO_DELIVERY": "default",  # the loopback cannot pass the audio check; a real server is checked
        "VLLM": str(fake),
        "OMNIVCHAT": str(Path(sys.executable).parent / "omnivchat"),
        "HEALTH_TIMEOUT": "60",
    }
    first = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "replica 0 ready" in first.stdout and "replica 1 ready" in first.stdout
    assert "4 done (0 reused)" in first.stdout
    # vLLM's media limit, derived from the bench: m1 sends two videos (the default delivery of a name outside the
    # defaults table asks vLLM for no track), and each replica is started with it
    limit = '{"image": 0, "video": 2, "audio": 0}'
    assert f"vLLM media limit: --limit-mm-per-prompt {limit}" in first.stdout
    started = [p.read_text().split("\n") for p in fake.parent.glob("args-*.txt")]
    assert len(started) == 2 and all(a[a.index("--limit-mm-per-prompt") + 1] == limit for a in started)
    endpoints = (Path(f"{out}.logs") / "endpoints.txt").read_text().split("\n")
    assert endpoints[:2] == [f"http://127.0.0.1:{base}/v1 2", f"http://127.0.0.1:{base + 1}/v1 2"]
    assert f"Replica http://127.0.0.1:{base}/v1" in first.stdout
    for port in (base, base + 1):  # every replica was stopped at the end
        with socket.socket() as s, pytest.raises(OSError):
            s.connect(("127.0.0.1", port))
    again = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 done (4 reused), 0 failed, 0 requests sent" in again.stdout


def test_a_replica_that_dies_at_start_stops_the_job(small_bench, tmp_path):
    fake = tmp_path / "vllm"
    fake.write_text("#!/bin/bash\necho 'CUDA out of memory' >&2\nexit 1\n")
    fake.chmod(0o755)
    env = {
        **os.environ,
        "MODEL": "omni-test",
        "BENCH": str(small_bench.root),
        "OUT": str(tmp_path / "run"),
        "GPUS": "1",
        "BASE_PORT": str(free_base_port(1)),
        "VLLM": str(fake),
        "OMNIVCHAT": str(Path(sys.executable).parent / "omnivchat"),
    }
    result = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "replica 0 exited before it was ready" in result.stderr and "CUDA out of memory" in result.stderr
    assert not (tmp_path / "run").exists()
