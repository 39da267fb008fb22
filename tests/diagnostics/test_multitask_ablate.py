"""The ablation grid over data with several multiple-choice tasks (a byo file with 3- and 4-option questions on a
real rendered clip, as WorldSense has mc3 and mc4): each task diagnosed and all pooled, every item against its
own chance (1/K); and every option checked before anything is sent or any folder made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_factory import RED_SQUARE_SCENE
from typer.testing import CliRunner

from omnivchat.cli import app

runner = CliRunner()
WIDE = {"COLUMNS": "200"}
SCENE = RED_SQUARE_SCENE


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 questions with three options (mc3) and 6 with four (mc4), all on one real clip."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("multitask")
    render_clip(SCENE, root / "media" / "red.mp4")
    rows: list[dict[str, Any]] = []
    for n in range(10):
        options = ["red", "blue", "green", "yellow"][: 3 if n < 4 else 4]
        rows.append(
            {
                "qid": f"q{n}",
                "question": "Which colour is the square?",
                "options": options,
                "answer": "A",
                "requires": ["video", "audio"],
                "category": "cross-modal",
                "video": "media/red.mp4",
            }
        )
    path = root / "mc.json"
    path.write_text(json.dumps(rows))
    return path


def ablate(data: Path, out: Path, *extra: str, model: str = "sim:healthy") -> Any:
    args = ["ablate", "--benchmark", "byo", "--data", str(data), "--model", model, "-o", str(out), "--no-progress"]
    return runner.invoke(app, [*args, *extra], env=WIDE)


def test_several_tasks_are_diagnosed_each_and_pooled_with_each_items_chance(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "grid"
    result = ablate(data, out)  # with the self-check, which runs on both tasks too
    assert result.exit_code == 0, result.output
    assert "self-check passed" in result.output
    grid = json.loads((out / "ablation.json").read_text())
    tasks = grid["tasks"]
    assert list(tasks) == ["mc3", "mc4"]
    assert tasks["mc3"]["chance"] == pytest.approx(1 / 3) and tasks["mc3"]["n_items"] == 4
    assert tasks["mc4"]["chance"] == pytest.approx(1 / 4) and tasks["mc4"]["n_items"] == 6
    pooled = grid["diagnosis"]
    assert pooled["n_items"] == 10 and grid["n_items_used"] == 10
    assert pooled["chance"] == pytest.approx((4 / 3 + 6 / 4) / 10)  # the mean of the items' chances
    assert pooled["means"]["both"] == 1.0 and pooled["verdict"] == "healthy"
    said = " ".join(result.output.split())
    assert "task mc3 (chance 0.333)" in said and "task mc4 (chance 0.250)" in said
    assert "pooled over mc3, mc4 (chance 0.283, the items' mean)" in said

    report = tmp_path / "report.html"
    assert runner.invoke(app, ["report", str(out), "-o", str(report)]).exit_code == 0
    html = report.read_text()
    assert "tasks.mc3.chance" in html and "tasks.mc4.means.both" in html and "pooled over 2 tasks" in html


def test_a_stream_blind_model_is_caught_per_task_and_pooled(data: Path, tmp_path: Path) -> None:
    result = ablate(data, tmp_path / "grid", "--skip-self-check", model="sim:video-blind")
    assert result.exit_code == 0, result.output
    grid = json.loads((tmp_path / "grid" / "ablation.json").read_text())
    assert "no_fusion" in grid["diagnosis"]["flags"]
    assert all("no_fusion" in t["flags"] for t in grid["tasks"].values())


def test_one_task_chosen_is_diagnosed_alone(data: Path, tmp_path: Path) -> None:
    result = ablate(data, tmp_path / "grid", "--task", "mc3", "--skip-self-check")
    assert result.exit_code == 0, result.output
    grid = json.loads((tmp_path / "grid" / "ablation.json").read_text())
    assert grid["tasks"] == {} and grid["diagnosis"]["chance"] == pytest.approx(1 / 3)
    assert grid["diagnosis"]["n_items"] == 4


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--chance", "0.3"), "--chance sets the chance level of one task, and this data has several (mc3, mc4)"),
        (("--task", "mc9"), "no items of task mc9 (tasks here: mc3, mc4)"),
        (("--neither", "grey"), "--neither is blank|none"),
        (("--panel", "nosuch"), "no panel 'nosuch'"),  # never the rule judge in its place
    ],
)
def test_options_are_checked_before_the_self_check_sends_anything(
    data: Path, tmp_path: Path, extra: tuple[str, ...], said: str
) -> None:
    out = tmp_path / "grid"
    result = ablate(data, out, *extra)
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.split())
    assert "self-check" not in result.output and "condition 1 of 4" not in result.output
    assert not out.exists()  # no partial folder


def test_a_judge_without_its_key_is_refused_before_the_first_condition(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judges = tmp_path / "judges.json"
    judges.write_text(json.dumps({"judges": [{"name": "g", "model": "gpt-4o"}], "panels": {"default": ["g"]}}))
    out = tmp_path / "grid"
    result = ablate(data, out, "--task", "mc4", "--judges", str(judges))
    assert result.exit_code == 2, result.output
    assert "judge 'g' needs its key in OPENAI_API_KEY" in " ".join(result.output.split())
    assert "condition 1 of 4" not in result.output and not out.exists()


def test_worldsense_with_three_and_four_candidates_ablates_per_task_and_pooled(tmp_path: Path) -> None:
    """As on the real release: one question with three candidates makes a second task (mc3) beside mc4."""
    from omnivchat.synth import render_clip

    root = tmp_path / "worldsense"
    render_clip(SCENE, root / "videos" / "vidA.mp4")
    render_clip(SCENE, root / "videos" / "vidB.mp4")

    def task(candidates: list[str]) -> dict[str, Any]:
        return {
            "question": "What colour is the shape?",
            "candidates": candidates,
            "answer": "A",
            "task_domain": "Recognition",
            "task_type": "Attribute Recognition",
        }

    four, three = ["A. Red", "B. Blue", "C. Green", "D. Grey"], ["A. Red", "B. Blue", "C. Green"]
    common = {"duration": "<1min", "domain": "Sports", "sub_category": "Basketball", "audio_class": ["Speech"]}
    rows = {
        "vidA": {**common, "task0": task(four), "task1": task(three), "task2": task(four)},
        "vidB": {**common, "task0": task(four), "task1": task(four)},
    }
    (root / "worldsense_qa.json").write_text(json.dumps(rows))
    out = tmp_path / "grid"
    args = ["ablate", "--benchmark", "worldsense", "--data", str(root), "--model", "sim:healthy", "-o", str(out)]
    result = runner.invoke(app, [*args, "--skip-self-check", "--no-progress"], env=WIDE)
    assert result.exit_code == 0, result.output
    grid = json.loads((out / "ablation.json").read_text())
    assert list(grid["tasks"]) == ["mc4", "mc3"]  # in the data's order
    assert grid["tasks"]["mc4"]["chance"] == 0.25 and grid["tasks"]["mc3"] is None  # one item: too few
    assert grid["diagnosis"]["n_items"] == 5
    assert grid["diagnosis"]["chance"] == pytest.approx((4 * 0.25 + 1 / 3) / 5)
    assert "task mc3: too few items to diagnose" in result.output
