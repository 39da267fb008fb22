"""`studio run --shard I/N` synthesizes a part of the planned instances (by id), and `bench merge` joins the shards
into the bench the unsharded synthesis writes (offline backend: no key, real clips)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.runs import shard_of
from omnivchat.studio.engine._run import instance_id

runner = CliRunner()
ARGS = ("--config", "SVMR", "--config", "ER", "--n", "5", "--no-progress")


def run(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def studio(out: Path, *extra: str) -> Any:
    return run("studio", "run", *ARGS, "-o", str(out), *extra)


def files(root: Path) -> dict[str, str]:
    """Every file of the bench (not its studio/ folder) by path, with its sha256."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in ("studio", ".lock")  # .lock: a writer's, empty
    }


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("studio-shards")
    for i in (1, 2):
        result = studio(root / f"b{i}", "--shard", f"{i}/2")
        assert result.exit_code == 0, result.output
    assert studio(root / "whole").exit_code == 0
    return root / "b1", root / "b2", root / "whole"


def test_the_shards_split_the_planned_instances_by_id(shards: tuple[Path, Path, Path]) -> None:
    planned = [instance_id(0, code, i) for code in ("SVMR", "ER") for i in range(5)]
    for index, bench in enumerate(shards[:2], start=1):
        ids = [json.loads(line)["id"] for line in (bench / "instances.jsonl").read_text().splitlines()]
        assert ids == sorted(k for k in planned if shard_of(k, 2) == index) and ids
        assert json.loads((bench / "studio" / "manifest.json").read_text())["shard"] == f"{index}/2"
    other = studio(shards[0], "--shard", "2/2")
    assert other.exit_code == 2 and "shard differ" in other.output


def test_merged_shards_are_the_unsharded_bench(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    merged = run("bench", "merge", str(shards[0]), str(shards[1]), "-o", str(tmp_path / "bench"))
    assert merged.exit_code == 0, merged.output
    assert "merged 2 shards: 10 accepted of 10 planned instances" in merged.output
    # bench.yaml, instances.jsonl and every clip and file beside it: byte for byte the unsharded synthesis's
    assert files(tmp_path / "bench") == files(shards[2])
    assert json.loads((tmp_path / "bench" / "studio" / "manifest.json").read_text())["shard"] is None
    assert run("validate", str(tmp_path / "bench")).exit_code == 0
    again = studio(tmp_path / "bench")  # the unsharded command finds everything done: nothing called
    assert again.exit_code == 0 and "0 instance(s) synthesized now, 10 already done" in again.output
    assert "agent calls: 0 made" in again.output
    trace = run("studio", "trace", str(tmp_path / "bench"), instance_id(0, "ER", 4))
    assert trace.exit_code == 0
    exists = run("bench", "merge", str(shards[0]), str(shards[1]), "-o", str(tmp_path / "bench"))
    assert exists.exit_code == 2 and "exists" in exists.output


def test_a_missing_duplicated_or_foreign_shard_is_refused(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "bench"
    missing = run("bench", "merge", str(shards[0]), "-o", str(out))
    assert missing.exit_code == 2 and "shard 2/2 missing" in missing.output
    twice = run("bench", "merge", str(shards[0]), str(shards[0]), str(shards[1]), "-o", str(out))
    assert twice.exit_code == 2 and "shard 1/2 given twice" in twice.output
    whole = run("bench", "merge", str(shards[2]), str(shards[1]), "-o", str(out))
    assert whole.exit_code == 2 and "not a shard" in whole.output
    other = tmp_path / "seeded"
    assert studio(other, "--shard", "1/2", "--seed", "7").exit_code in (0, 1)  # may accept none: still a shard
    foreign = run("bench", "merge", str(other), str(shards[1]), "-o", str(out))
    assert foreign.exit_code == 2 and "another synthesis" in foreign.output and "seed" in foreign.output
    assert not out.exists()


def test_an_instance_not_ended_is_refused_unless_allowed(shards: tuple[Path, Path, Path], tmp_path: Path) -> None:
    copy = tmp_path / "b2"
    shutil.copytree(shards[1], copy, copy_function=shutil.copy2)
    gone = instance_id(0, "SVMR", 0)
    assert shard_of(gone, 2) == 2
    (copy / "studio" / "traces" / f"{gone}.json").unlink()
    refused = run("bench", "merge", str(shards[0]), str(copy), "-o", str(tmp_path / "bench"))
    assert refused.exit_code == 2 and f"instance {gone} (shard 2/2) has not ended" in refused.output
    allowed = run("bench", "merge", str(shards[0]), str(copy), "-o", str(tmp_path / "bench"), "--allow-incomplete")
    assert allowed.exit_code == 0 and "9 accepted of 10 planned instances (1 not ended, left out)" in allowed.output
    ids = [json.loads(line)["id"] for line in (tmp_path / "bench" / "instances.jsonl").read_text().splitlines()]
    assert gone not in ids and len(ids) == 9


@pytest.mark.parametrize("text", ["0/2", "3/2", "x"])
def test_a_bad_studio_shard_is_one_error_line(text: str, tmp_path: Path) -> None:
    result = studio(tmp_path / "b", "--shard", text)
    assert result.exit_code == 2 and result.output.startswith("error: --shard") and len(result.output.splitlines()) == 1
    assert not (tmp_path / "b").exists()
