"""The public benchmarks' readers on real release rows (../shared/realdata, skipped when absent): a question the
release holds twice is said at load by id, recorded in the manifest and scored twice; WorldSense has 3- and
4-candidate questions and a sub_category breakdown; LVOmniBench keeps the release's integer question_id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bench_factory import realdata
from typer.testing import CliRunner

from omnivchat.benchmarks import ScoreOptions, Source, get_benchmark
from omnivchat.benchmarks.dailyomni import read as read_dailyomni
from omnivchat.benchmarks.mcq import McqError, duplicates
from omnivchat.cli import app
from omnivchat.media import export_audio

runner = CliRunner()


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from omnivchat.synth import render_clip

    path = tmp_path_factory.mktemp("readers") / "clip.mp4"
    scene = {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": "circle", "color": "red", "position": "left"}],
        "speech": [{"text": "What do you see?", "language": "en", "start": 0.1}],
    }
    render_clip(scene, path)
    return path


def place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def eval_sim(name: str, data: Path, run_dir: Path, *extra: str) -> Any:
    args = ["eval", "--benchmark", name, "--data", str(data), "--model", "sim:healthy", "-o", str(run_dir)]
    return runner.invoke(app, [*args, *extra, "--no-progress"], env={"COLUMNS": "250"})


# --- a question the release holds twice ----------------------------------------------------------------------


def test_the_real_daily_omni_release_repeats_one_question_and_it_is_found_by_id() -> None:
    release = read_dailyomni(Source(data=realdata("dailyomni/qa.json")))
    assert len(release.items) == 1197 and not release.problems
    assert duplicates(release.items) == {"qF_bybWcUoE-2": "qF_bybWcUoE-1"}


def test_a_repeated_question_is_said_at_load_recorded_and_scored_twice(clip: Path, tmp_path: Path) -> None:
    rows = [r for r in json.loads(realdata("dailyomni/qa.json").read_text()) if r["video_id"] == "qF_bybWcUoE"]
    assert len(rows) == 2 and rows[0] == rows[1]  # the release's own two rows: same question, options, answer
    data = tmp_path / "Daily-Omni" / "qa.json"
    data.parent.mkdir()
    data.write_text(json.dumps(rows))
    videos = data.parent / "Videos" / "qF_bybWcUoE"
    place(clip, videos / "qF_bybWcUoE_video.mp4")
    export_audio(clip, fmt="wav", out=videos / "qF_bybWcUoE_audio.wav")

    loaded = get_benchmark("dailyomni").load(Source(data=data))
    assert loaded.duplicates == {"qF_bybWcUoE-2": "qF_bybWcUoE-1"}
    run_dir = tmp_path / "run"
    result = eval_sim("dailyomni", data, run_dir)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "warning:" in out and "item 'qF_bybWcUoE-2' repeats item 'qF_bybWcUoE-1'" in out
    assert "this question counts twice" in out
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["duplicates"] == {"qF_bybWcUoE-2": "qF_bybWcUoE-1"}
    scores = get_benchmark("dailyomni").score(None, run_dir, ScoreOptions())
    assert [(i.key, i.score) for i in scores.items] == [("qF_bybWcUoE-1", 1.0), ("qF_bybWcUoE-2", 1.0)]
    assert scores.metrics["overall"]["n"] == 2
    assert scores.metrics["repeated in the release (each copy scored)"]["count"] == 1
    scored = runner.invoke(app, ["score", str(run_dir)], env={"COLUMNS": "250"})
    assert "repeated in the release (each copy scored): 1, qF_bybWcUoE-2 repeats qF_bybWcUoE-1" in scored.output


def test_a_release_without_repeats_keeps_its_manifest_as_it_was(clip: Path, tmp_path: Path) -> None:
    rows = json.loads(realdata("dailyomni/qa.json").read_text())[:1]
    data = tmp_path / "qa.json"
    data.write_text(json.dumps(rows))
    vid = rows[0]["video_id"]
    place(clip, tmp_path / "Videos" / vid / f"{vid}_video.mp4")
    export_audio(clip, fmt="wav", out=tmp_path / "Videos" / vid / f"{vid}_audio.wav")
    result = eval_sim("dailyomni", data, tmp_path / "run")
    assert result.exit_code == 0 and "warning:" not in result.output
    assert "duplicates" not in json.loads((tmp_path / "run" / "manifest.json").read_text())


# --- WorldSense: three candidates, sub_category ----------------------------------------------------------------


def test_worldsense_real_rows_have_mc3_and_mc4_tasks_and_a_sub_category_breakdown(clip: Path, tmp_path: Path) -> None:
    data = realdata("worldsense/worldsense_qa.excerpt.json")
    media = tmp_path / "videos"
    for vid in json.loads(data.read_text()):
        place(clip, media / f"{vid}.mp4")
    loaded = get_benchmark("worldsense").load(Source(data=data, media=media))
    tasks = {i.id: i.task for i in loaded.items}
    assert tasks == {
        "dvOkwKAs/task0": "mc4",
        "UYkFSXsh/task0": "mc3",
        "UYkFSXsh/task1": "mc4",
        "hHwdqJxc/task0": "mc4",
    }
    assert {i.id: i.breakdown["sub_category"] for i in loaded.items}["UYkFSXsh/task0"] == ("Politics",)
    run_dir = tmp_path / "run"
    result = eval_sim("worldsense", data, run_dir, "--media", str(media))
    assert result.exit_code == 0, result.output
    metrics = get_benchmark("worldsense").score(None, run_dir, ScoreOptions()).metrics
    assert metrics["sub_category: Politics"]["n"] == 2 and metrics["sub_category: Covers"]["n"] == 1
    assert get_benchmark("worldsense").chance("mc3") == pytest.approx(1 / 3)


# --- LVOmniBench: the release's question_id --------------------------------------------------------------------


def lv_row(qid: Any, vid: str = "video_1") -> dict[str, Any]:
    row = {"question_id": qid, "video_id": vid, "question": "What is said first?", "correct_option": "B"}
    row |= {"options": ["A. Hello.", "B. Welcome.", "C. Goodbye.", "D. Nothing."], "question_type": "Counting"}
    return row | {"audio_type": "Speech", "difficulty": "Low", "video_category": "Sports"}


def test_lvomnibench_items_keep_the_release_question_id(clip: Path, tmp_path: Path) -> None:
    place(clip, tmp_path / "videos" / "video_1.mp4")
    data = tmp_path / "data.json"
    data.write_text(json.dumps([lv_row(17), lv_row(3)]))
    loaded = get_benchmark("lvomnibench").load(Source(data=data))
    assert [i.id for i in loaded.items] == ["17", "3"]
    data.write_text(json.dumps([lv_row(17), lv_row(17)]))
    with pytest.raises(McqError, match=r"item 1 \(id '17'\): duplicate id '17'"):
        get_benchmark("lvomnibench").load(Source(data=data))
    data.write_text(json.dumps([lv_row(1.5)]))
    with pytest.raises(McqError, match=r"item 0: 'question_id' must be an integer \(got 1.5\)"):
        get_benchmark("lvomnibench").load(Source(data=data))
