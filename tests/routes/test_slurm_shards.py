"""The sharded SLURM example (examples/slurm/submit_shards.sh: the array job eval_shards.sbatch, then
merge_shards.sbatch after it) run as bash on this machine, with a stand-in `sbatch` that runs each job at once (the
array's tasks one after another, a dependent job only when every task it waits on ended well) and the stand-in
`vllm` of the replica example: each shard is served by its own loopback server, and the merged run holds every item."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.routes.test_slurm_example import FAKE_VLLM, free_base_port

SUBMIT = Path(__file__).parents[2] / "examples" / "slurm" / "submit_shards.sh"
FAKE_SBATCH = """#!/bin/bash
# a stand-in for sbatch: runs the job now (an array's tasks in order); --dependency=afterok:ID runs it only if every
# task of job ID exited 0. Prints the job id (--parsable).
state=${STANDIN_STATE:?}
array=""; dep=""; script=""
while (( $# )); do
    case $1 in
        --array=*) array=${1#--array=} ;;
        --dependency=afterok:*) dep=${1#--dependency=afterok:} ;;
        --parsable|--export=*) ;;
        *) script=$1 ;;
    esac
    shift
done
id=$(( $(find "$state" -name 'job-*' | wc -l) + 1 ))
touch "$state/job-$id"
echo "$id"
if [[ -n $dep && -e $state/failed-$dep ]]; then
    echo never > "$state/never-$id"
    exit 0
fi
first=1; last=1
[[ -n $array ]] && { first=${array%-*}; last=${array#*-}; }
for ((i = first; i <= last; i++)); do
    if [[ -n $array ]]; then
        export SLURM_ARRAY_TASK_ID=$i SLURM_ARRAY_TASK_COUNT=$((last - first + 1)) SLURM_ARRAY_JOB_ID=$id
    fi
    SLURM_SUBMIT_DIR=$PWD bash "$script" > "$state/out-$id-$i.txt" 2>&1 || touch "$state/failed-$id"
done
"""


def setup(tmp_path: Path, small_bench: object, fake_vllm: str) -> tuple[dict[str, str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("vllm", fake_vllm), ("sbatch", FAKE_SBATCH)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "slurm"
    state.mkdir()
    base = free_base_port(2 * 16)
    env = {
        **os.environ,
        "SHARDS": "2",
        "SBATCH": str(bin_dir / "sbatch"),
        "STANDIN_STATE": str(state),
        "MODEL": "omni-test",
        "BENCH": str(small_bench.root),  # type: ignore[attr-defined]  # the conftest's Bench
        "OUT": str(tmp_path / "runs" / "omni"),
        "GPUS": "1",
        "BASE_PORT": str(base),
        "CONCURRENCY": "2",
        "AUDIO_DELIVERY": "default",  # the loopback cannot pass the audio check; a real server is checked
        "VLLM": str(bin_dir / "vllm"),
        "OMNIVCHAT": str(Path(sys.executable).parent / "omnivchat"),
        "HEALTH_TIMEOUT": "60",
    }
    return env, state


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs bash and curl")
def test_the_array_runs_the_shards_and_the_dependent_job_merges_them(small_bench, tmp_path):
    env, state = setup(tmp_path, small_bench, FAKE_VLLM.format(python=sys.executable))
    submitted = subprocess.run(["bash", str(SUBMIT)], env=env, capture_output=True, text=True, timeout=600)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert (
        "shards: job 1 (array 1-2)" in submitted.stdout
        and "merge: job 2, after every shard of job 1" in submitted.stdout
    )
    logs = {p.name: p.read_text() for p in state.glob("out-*.txt")}
    assert not (state / "failed-1").exists(), logs
    assert "of shard 1/2" in logs["out-1-1.txt"] and "of shard 2/2" in logs["out-1-2.txt"]
    assert "merged 2 shards: 4 of 4 items done" in logs["out-2-1.txt"], logs["out-2-1.txt"]
    out = tmp_path / "runs" / "omni"
    manifest = json.loads((out / "manifest.json").read_text())
    assert "shard" not in manifest
    shards = [json.loads((tmp_path / "runs" / f"omni.shards/shard-{i}/manifest.json").read_text()) for i in (1, 2)]
    held = sorted(k for s in shards for k in s["shard"]["items"].get("candidate", []))
    assert held == sorted(i.id for i in small_bench.instances)  # every instance, once
    exported = subprocess.run(
        [env["OMNIVCHAT"], "export", str(out), "-o", str(tmp_path / "export.json")], capture_output=True, text=True
    )
    assert exported.returncode == 0, exported.stderr
    records = json.loads((tmp_path / "export.json").read_text())["records"]
    replies = {r["id"]: r["reply"] for r in records}
    assert len(replies) == 4 and all(r and r.startswith("A reply from port") for r in replies.values())
    # each shard was served by its own server (ports PORT_STRIDE apart), and its replies kept as they were
    assert len(set(replies.values())) == 2


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None, reason="needs bash and curl")
def test_a_failed_shard_keeps_the_merge_from_running(small_bench, tmp_path):
    dies_on_second = FAKE_VLLM.format(python=sys.executable).replace(
        "exec ", 'if (( port >= FAIL_FROM )); then echo "CUDA out of memory" >&2; exit 1; fi\nexec ', 1
    )
    env, state = setup(tmp_path, small_bench, dies_on_second)
    env["FAIL_FROM"] = str(int(env["BASE_PORT"]) + 16)  # the second shard's server (its ports 16 further)
    submitted = subprocess.run(["bash", str(SUBMIT)], env=env, capture_output=True, text=True, timeout=600)
    assert submitted.returncode == 0, submitted.stderr
    assert (state / "failed-1").exists() and (state / "never-2").exists()
    assert "replica 0 exited before it was ready" in (state / "out-1-2.txt").read_text()
    assert not (tmp_path / "runs" / "omni").exists()  # no merged run from a missing shard
