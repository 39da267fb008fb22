"""A rerun of a finished `studio run` checks each delivered clip against the stamp recorded when it was delivered
(size and mtime, then the sha256): a changed or missing clip is restored (from its work clip, else rendered
again) and reported as restored, never as tail repair; an untouched bench reads no clip."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import load_bench
from omnivchat.benchmarks.native import BenchClipChecker
from omnivchat.cli import app

runner = CliRunner()
ARGS = ["--config", "SVMR", "--n", "2", "--seed", "3", "--no-progress"]


def _run(out: Path) -> str:
    result = runner.invoke(app, ["studio", "run", *ARGS, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("resume") / "bench"
    _run(out)
    return out


@pytest.fixture
def bench(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "bench"
    shutil.copytree(finished, out)  # copy2: sizes and mtimes kept, as an untouched bench has them
    return out


def _clips(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in (out / "media").glob("*/turn*.mp4"))


def _valid(out: Path) -> None:
    load_bench(out, check_media=BenchClipChecker())  # what `omnivchat validate` runs


def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    import omnivchat.studio.engine._run as run_module

    read: list[Path] = []
    real = run_module._clip_sha256

    def counting(path: Path) -> str:
        read.append(path)
        return real(path)

    monkeypatch.setattr(run_module, "_clip_sha256", counting)
    return read


def test_a_truncated_clip_is_restored_and_reported_as_restored(bench: Path):
    clip = _clips(bench)[0]
    original = (bench / clip).read_bytes()
    with (bench / clip).open("r+b") as handle:
        handle.truncate(5000)
    printed = _run(bench)
    assert f"restored: 1 clip(s) changed or missing since delivery ({clip})" in printed
    assert "tail repair fixed 0 clip(s)" in printed
    assert "0 instance(s) synthesized now, 2 already done" in printed
    assert (bench / clip).read_bytes() == original
    _valid(bench)


def test_a_deleted_clip_is_restored_and_not_called_tail_repair(bench: Path):
    clip = _clips(bench)[1]
    original = (bench / clip).read_bytes()
    (bench / clip).unlink()
    printed = _run(bench)
    assert f"restored: 1 clip(s) changed or missing since delivery ({clip})" in printed
    assert "tail repair fixed 0 clip(s)" in printed
    assert (bench / clip).read_bytes() == original
    _valid(bench)


def test_an_untouched_bench_reruns_without_reading_a_clip(bench: Path, monkeypatch: pytest.MonkeyPatch):
    read = _count_hashes(monkeypatch)
    printed = _run(bench)
    assert read == []  # size and mtime matched the stamps: no clip was hashed
    assert "restored" not in printed and "0 instance(s) synthesized now, 2 already done" in printed


def test_a_touched_clip_is_hashed_once_and_kept(bench: Path, monkeypatch: pytest.MonkeyPatch):
    clip = _clips(bench)[0]
    os.utime(bench / clip, ns=(1_000_000_000, 1_000_000_000))  # new mtime, same bytes
    read = _count_hashes(monkeypatch)
    assert "restored" not in _run(bench)
    assert read == [bench / clip]
    read.clear()
    _run(bench)
    assert read == []  # its new mtime was recorded


def test_a_clip_whose_work_clip_is_gone_too_is_rendered_again(bench: Path):
    clip = _clips(bench)[0]
    instance_id = clip.split("/")[1]
    before = (bench / "instances.jsonl").read_bytes()
    original = (bench / clip).read_bytes()
    for work in (bench / "studio" / "work" / instance_id).glob("*.mp4"):
        work.unlink()
    with (bench / clip).open("r+b") as handle:
        handle.truncate(5000)
    printed = _run(bench)
    assert f"restored: 1 clip(s) changed or missing since delivery ({clip})" in printed
    assert "1 instance(s) synthesized now, 1 already done; accepted 2 of 2" in printed
    assert "agent calls: 1 made" in printed  # the render only: every other call is answered from the store
    assert (bench / "instances.jsonl").read_bytes() == before
    assert (bench / clip).read_bytes() == original  # the offline renderer is deterministic
    _valid(bench)


def test_a_bench_from_before_stamps_resumes_checks_its_clips_and_records_them(bench: Path):
    for trace in (bench / "studio" / "traces").glob("*.json"):
        data = json.loads(trace.read_text(encoding="utf-8"))
        assert data.pop("clips")
        trace.write_text(json.dumps(data), encoding="utf-8")
    bad, good = _clips(bench)
    with (bench / bad).open("r+b") as handle:
        handle.truncate(5000)
    printed = _run(bench)
    assert f"restored: 1 clip(s) changed or missing since delivery ({bad})" in printed
    _valid(bench)
    for trace in (bench / "studio" / "traces").glob("*.json"):
        clips = json.loads(trace.read_text(encoding="utf-8"))["clips"]
        assert set(clips) & {bad, good} and all(len(c["sha256"]) == 64 for c in clips.values())
    assert not (bench / "studio" / "check").exists()
