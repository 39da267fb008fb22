"""Outputs never destroy: not onto an input, not onto a run's or a bench's own files, not over an existing file
unless --force, not into a folder that holds something else."""

from __future__ import annotations

import hashlib

import pytest
from typer.testing import CliRunner

from omnivchat._files import OutputError, check_output_dir, check_output_file, write_text_atomic
from omnivchat.cli import app

runner = CliRunner()


def _snapshot(root):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def run_dir(small_bench, tmp_path):
    out = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(out), "--no-progress"]
    assert runner.invoke(app, args).exit_code == 0
    return out


@pytest.mark.parametrize(
    "name", ["store.sqlite", "manifest.json", "invocations.jsonl", "scores.json", "agreement.json"]
)
def test_export_refuses_to_write_onto_the_runs_own_files_even_with_force(run_dir, name):
    before = _snapshot(run_dir)
    result = runner.invoke(app, ["export", str(run_dir), "-o", str(run_dir / name), "--force"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and f"is a file of {run_dir}" in result.output and "--force never" in result.output
    assert _snapshot(run_dir) == before


def test_an_existing_output_needs_force(run_dir, tmp_path):
    out = tmp_path / "export.json"
    out.write_text("the user's file\n")
    refused = runner.invoke(app, ["export", str(run_dir), "-o", str(out)])
    assert refused.exit_code == 2 and "exists; pass --force" in refused.output
    assert out.read_text() == "the user's file\n"
    assert runner.invoke(app, ["export", str(run_dir), "-o", str(out), "--force"]).exit_code == 0


def test_outputs_onto_a_bench_or_an_input_are_refused(small_bench, tmp_path):
    hits = tmp_path / "hits.jsonl"
    hits.write_text("{}\n")
    bench_files = ("instances.jsonl", "inspection.jsonl", "media/s1/turn1.mp4")
    for target in (*(small_bench.root / f for f in bench_files), hits):
        with pytest.raises(OutputError):
            check_output_file(target, inputs=[hits], force=True)


def test_output_paths_of_the_wrong_kind(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OutputError, match="is a directory"):
        check_output_file(tmp_path)
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output_file(tmp_path / "a-file" / "out.json")
    with pytest.raises(OutputError, match="null byte"):
        check_output_file(tmp_path / "o\x00ut.json")
    with pytest.raises(OutputError, match="is not a directory"):
        check_output_dir(tmp_path / "a-file", ours=lambda _: True, kind="a run directory")


def test_eval_and_ablate_refuse_a_folder_that_holds_something_else(small_bench, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep me")
    for command in (["eval"], ["ablate", "--skip-self-check"]):
        args = [*command, "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(notes)]
        result = runner.invoke(app, [*args, "--no-progress"])
        assert result.exit_code == 2 and "is not empty and is not" in result.output
    assert [p.name for p in notes.iterdir()] == ["todo.txt"]


def test_atomic_write_keeps_the_old_file_when_interrupted(tmp_path, monkeypatch):
    path = tmp_path / "scores.json"
    write_text_atomic(path, "old")

    class Boom(Exception):
        pass

    def explode(*_args):
        raise Boom

    monkeypatch.setattr("os.replace", explode)
    with pytest.raises(Boom):
        write_text_atomic(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["scores.json"]
