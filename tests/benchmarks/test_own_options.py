"""A benchmark's own options (hf's --columns/--split, byo's and hf's --asr/--asr-wer, SocialOmni's --contexts,
--output and --judging) are validated against the model it declares before any work: an option given to a
benchmark that does not take it, or a value of the wrong type, is one error line naming the benchmark, the option
(as its flag) and what the benchmark takes; nothing is sent and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_factory import RED_SQUARE_SCENE
from typer.testing import CliRunner

from omnivchat.benchmarks import (
    BenchmarkOptionError,
    OwnOptions,
    ScoreOptions,
    Source,
    check_options,
    get_benchmark,
)
from omnivchat.benchmarks.byo import BYO
from omnivchat.benchmarks.hf import HF, HfSourceOptions
from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
WIDE = {"COLUMNS": "250"}
MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"  # served by a loopback server


@pytest.fixture(scope="module")
def byo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo JSON file of one open question on one real rendered clip: a run of it would send one request."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("own-options")
    render_clip(RED_SQUARE_SCENE, root / "media" / "red.mp4")
    row = {"qid": "q1", "question": "What colour is the square?", "answer": "red", "video": "media/red.mp4"}
    (root / "bench.json").write_text(json.dumps([{**row, "requires": ["video"], "category": "video-only"}]))
    return root / "bench.json"


def _eval(benchmark: str, data: Path, run_dir: Path, server: LoopbackServer, *extra: str) -> list[str]:
    return [
        "eval", "--benchmark", benchmark, "--data", str(data), "--model", MODEL, "-o", str(run_dir),
        "--base-url", server.base_url, "--no-key", "--no-progress", *extra,
    ]  # fmt: skip


def _line(output: str) -> str:
    return " ".join(output.split())  # the error panel wraps: compare the words


def test_split_and_columns_given_to_worldsense_are_refused_before_anything(tmp_path: Path) -> None:
    data = tmp_path / "worldsense"
    data.mkdir()
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="A")) as server:
        refused = runner.invoke(app, _eval("worldsense", data, run_dir, server, "--split", "test"), env=WIDE)
        both = runner.invoke(
            app, _eval("worldsense", data, run_dir, server, "--split", "test", "--columns", "q=Q"), env=WIDE
        )
        assert server.count == 0
    assert refused.exit_code != 0
    assert "the worldsense benchmark does not take --split (eval): it takes no options of its own" in _line(
        refused.output
    )
    assert "the worldsense benchmark does not take --columns, --split (eval)" in _line(both.output)
    assert not run_dir.exists()


def test_a_run_that_would_send_is_refused_an_option_its_benchmark_does_not_take(byo_data: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="red")) as server:
        refused = runner.invoke(app, _eval("byo", byo_data, run_dir, server, "--columns", "question=Q"), env=WIDE)
        assert server.count == 0 and not run_dir.exists()
        ran = runner.invoke(app, _eval("byo", byo_data, run_dir, server), env=WIDE)
        assert ran.exit_code == 0, ran.output
        assert server.count == 1  # the same run without the option sends its one request
    assert refused.exit_code != 0
    assert "the byo benchmark does not take --columns (eval): it takes no options of its own" in _line(refused.output)
    # Judging and scoring options SocialOmni takes are refused for a byo run, before anything is asked or written.
    judged = runner.invoke(app, ["judge", str(run_dir), "--contexts", str(byo_data)], env=WIDE)
    assert judged.exit_code != 0
    assert "the byo benchmark does not take --contexts (judge): it takes no options of its own" in _line(judged.output)
    scored = runner.invoke(app, ["score", str(run_dir), "--judging", str(tmp_path)], env=WIDE)
    assert scored.exit_code != 0 and not (run_dir / "scores.json").exists()
    assert "the byo benchmark does not take --judging (score): it takes --asr, --asr-wer" in _line(scored.output)
    for flag in (["--style-judge", "A"], ["--delivered-only"]):  # the native benchmark's, not byo's
        said = _line(runner.invoke(app, ["score", str(run_dir), *flag], env=WIDE).output)
        assert f"the byo benchmark does not take {flag[0]} (score): it takes --asr, --asr-wer" in said
    assert not (run_dir / "scores.json").exists()
    # The options it takes are still taken.
    assert runner.invoke(app, ["score", str(run_dir), "--asr-wer", "0.1"], env=WIDE).exit_code == 0


def test_media_and_tasks_given_to_a_benchmark_that_does_not_read_them_are_refused(
    byo_data: Path, tmp_path: Path
) -> None:
    from suite_factory import EXAMPLE

    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="red")) as server:
        native = runner.invoke(
            app, _eval("omnivchat", EXAMPLE, run_dir, server, "--tasks", "AOR", "--media", str(tmp_path)), env=WIDE
        )
        byo = runner.invoke(app, _eval("byo", byo_data, run_dir, server, "--media", str(tmp_path)), env=WIDE)
        grid = runner.invoke(
            app,
            ["ablate", "--bench", str(EXAMPLE), "--model", "sim:healthy", "-o", str(tmp_path / "grid"),
             "--media", str(tmp_path), "--no-progress"],
            env=WIDE,
        )  # fmt: skip
        assert server.count == 0
    assert native.exit_code != 0 and byo.exit_code != 0 and grid.exit_code != 0
    assert "the omnivchat benchmark does not take --media, --tasks (eval): it reads --data" in _line(native.output)
    assert "the byo benchmark does not take --media (eval): it reads --data, --tasks" in _line(byo.output)
    assert "the omnivchat benchmark does not take --media (eval)" in _line(grid.output)
    assert not run_dir.exists() and not (tmp_path / "grid").exists()


def test_a_wrong_typed_option_is_refused_naming_the_option_and_what_is_taken(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkOptionError) as err:
        HF.load(Source(data=tmp_path / "nowhere", options={"split": 3}))  # refused before the data is looked for
    assert str(err.value) == (
        "the hf benchmark: --split (eval): Input should be a valid string (given 3): it takes --columns, --split"
    )
    with pytest.raises(
        BenchmarkOptionError, match=r"^the byo benchmark: --asr-wer \(score\): Input should be a valid number"
    ):
        BYO.score(None, tmp_path, ScoreOptions(options={"asr_wer": "lots"}))
    with pytest.raises(
        BenchmarkOptionError, match=r"^the byo benchmark: --asr-wer \(score\): Input should be greater than"
    ):
        check_options(BYO, "score", {"asr_wer": -0.5})
    with pytest.raises(
        BenchmarkOptionError, match=r"^the omnivchat benchmark: --aliases \(judge\): Input should be a valid list"
    ):
        check_options(get_benchmark("omnivchat"), "judge", {"aliases": "gpt-4o"})
    with pytest.raises(
        BenchmarkOptionError, match=r"^the socialomni benchmark does not take --split \(judge\): it takes "
    ):
        check_options(get_benchmark("socialomni"), "judge", {"split": "test", "contexts": tmp_path})


def test_the_shipped_benchmarks_declare_their_own_options() -> None:
    assert isinstance(HF, OwnOptions) and HF.option_models["load"] is HfSourceOptions
    assert check_options(HF, "load", {"columns": "question=Q", "split": "test"}) == HfSourceOptions(
        columns="question=Q", split="test"
    )
    assert not isinstance(get_benchmark("worldsense"), OwnOptions)
    assert check_options(get_benchmark("worldsense"), "load", {}) is None  # none given, none taken: fine
