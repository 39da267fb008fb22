"""Runs for the viewer's tests, made once per session by the real commands: a native run judged by two LLM
judges on the loopback server (one item failed, one never run, one unscored, the judges disagreeing), a public
multiple-choice run (WorldSense's released layout), and a hostile run whose ids and replies hold HTML."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()


def verdicts(request_json: dict[str, Any]) -> Behaviour:
    """Judge A: every criterion met; judge B: only the gate (so they disagree), and garbage on s3."""
    text = message_text(request_json)
    if "checklist of 7" in text:
        return Behaviour(text='{"hits": [1, 2, 3, 4, 5], "reasoning": "most"}')
    if request_json["model"] == "judge-a":
        return Behaviour(text='{"hits": [1, 2, 3], "reasoning": "all"}')
    if "reference reply for s3" in text:
        return Behaviour(text="I am not a judge")
    return Behaviour(text='{"hits": [1], "reasoning": "gate only"}')


def invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args), terminal_width=200)
    return result


@pytest.fixture(scope="session")
def native_run(small_bench_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """s1 scored (A 1.0, B 0.0: they disagree), s2 failed (its clip is broken: media), s3 unscored (B's verdict
    does not parse), m1 never run (--limit 3)."""
    root = tmp_path_factory.mktemp("view-native")
    bench = root / "bench"
    shutil.copytree(small_bench_dir, bench)
    (bench / "media" / "s2" / "turn1.mp4").write_bytes(b"not a video at all")
    run = root / "run"
    args = ["eval", "--bench", str(bench), "--model", "sim:healthy", "-o", str(run), "--limit", "3", "--no-progress"]
    assert invoke(*args).exit_code == 1  # s2 failed
    with LoopbackServer(rules=verdicts) as server:
        judges = [
            {"name": "A", "model": "judge-a", "base_url": server.base_url},
            {"name": "B", "model": "judge-b", "base_url": server.base_url},
        ]
        path = root / "judges.json"
        path.write_text(json.dumps({"judges": judges, "panels": {"default": ["A", "B"]}}))
        judged = invoke("judge", str(run), "--judges", str(path), "--style-judge", "A", "--no-progress")
        assert judged.exit_code in (0, 1), judged.output
    scored = invoke(
        "score", str(run), "--judges", str(path), "--style-judge", "A", "--allow-incomplete", "--panel", "default"
    )
    assert (run / "scores.json").is_file(), scored.output
    return run


@pytest.fixture(scope="session")
def worldsense_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """WorldSense's released layout (our own content): three questions on two rendered clips, run and scored."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("view-worldsense")
    release = root / "release"

    def scene(color: str, shape: str, text: str) -> dict[str, Any]:
        return {
            "size": [160, 90],
            "background": "navy",
            "objects": [{"shape": shape, "color": color, "position": "left"}],
            "speech": [{"text": text, "language": "en", "start": 0.1}],
        }

    render_clip(scene("red", "square", "Which colour?"), release / "videos" / "vidA.mp4")
    render_clip(scene("blue", "circle", "What shape?"), release / "videos" / "vidB.mp4")

    def task(question: str, answer: str) -> dict[str, Any]:
        options = ["A. Red", "B. Blue", "C. A square", "D. A circle"]
        return {
            "question": question,
            "candidates": options,
            "answer": answer,
            "task_domain": "Recognition",
            "task_type": "Attribute Recognition",
        }

    rows = {
        "vidA": {
            "duration": "<1min",
            "domain": "Sports",
            "sub_category": "Basketball",
            "audio_class": ["Speech"],
            "task0": task("What colour is the shape?", "A"),
            "task1": task("What shape is on screen?", "C"),
        },
        "vidB": {
            "duration": "1-2min",
            "domain": "Music",
            "sub_category": "Concert",
            "audio_class": ["Music"],
            "task0": task("Which colour is shown?", "B"),
        },
    }
    (release / "worldsense_qa.json").write_text(json.dumps(rows))
    run = root / "run"
    args = ["eval", "--benchmark", "worldsense", "--data", str(release), "--model", "sim:healthy", "-o", str(run)]
    assert invoke(*args, "--no-progress").exit_code == 0
    assert invoke("score", str(run)).exit_code == 0
    return run


HOSTILE_ID = "<img src=x onerror=window.pwned=1>"
HOSTILE_QUESTION = "<script>window.pwned=2</script>\x07 what & <b>why</b>?"
HOSTILE_REPLY = "<b>bold</b><script>window.pwned=3</script>\x1b[31m red \x00 The answer is A."


@pytest.fixture(scope="session")
def hostile_run(tmp_path_factory: pytest.TempPathFactory, worldsense_run: Path) -> Path:
    """A WorldSense-layout run whose video id and question hold HTML and control characters, answered by a
    loopback model whose reply holds a script tag."""
    root = tmp_path_factory.mktemp("view-hostile")
    release = root / "release"
    (release / "videos").mkdir(parents=True)
    source = worldsense_run.parent / "release" / "videos" / "vidA.mp4"
    shutil.copyfile(source, release / "videos" / f"{HOSTILE_ID}.mp4")
    question = {
        "question": HOSTILE_QUESTION,
        "candidates": ["A. <i>Red</i>", "B. Blue", "C. A square", "D. A circle"],
        "answer": "A",
        "task_domain": "<u>Recognition</u>",
        "task_type": "Attribute Recognition",
    }
    rows = {HOSTILE_ID: {"duration": "<1min", "domain": "Sports", "audio_class": ["Speech"], "task0": question}}
    (release / "worldsense_qa.json").write_text(json.dumps(rows))
    run = root / "run"
    with LoopbackServer(rules=lambda _request: Behaviour(text=HOSTILE_REPLY)) as server:
        args = ["eval", "--benchmark", "worldsense", "--data", str(release), "-o", str(run), "--no-progress"]
        model = ["--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--base-url", server.base_url, "--no-key"]
        made = invoke(*args, *model)
        assert made.exit_code == 0, made.output
    assert invoke("score", str(run)).exit_code == 0
    return run


@pytest.fixture(scope="session")
def socialomni_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SocialOmni When run of four items (its released layout, our clips): each request sent a cut prefix."""
    from socialomni_factory import make_socialomni

    annotations, media, _ = make_socialomni(tmp_path_factory.mktemp("view-socialomni"))
    run = annotations.parent / "run"
    args = ["eval", "--benchmark", "socialomni", "--data", str(annotations), "--media", str(media), "--tasks", "when"]
    made = invoke(*args, "--limit", "4", "--model", "sim:healthy", "-o", str(run), "--no-progress")
    assert made.exit_code == 0, made.output
    return run


@pytest.fixture(scope="session")
def spoken_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo run of the simulated model answering aloud (eval --reply-audio): each reply's audio in RUN/audio/."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("view-spoken")
    scene = {"size": [160, 90], "objects": [{"shape": "square", "color": "red", "position": "left"}]}
    render_clip(scene, root / "media" / "red.mp4")
    rows = [
        {"qid": "q1", "question": "What colour is the square?", "answer": "red", "requires": ["video"]},
        {"qid": "q2", "question": "How many squares?", "answer": "one", "requires": ["video"]},
    ]
    data = [{**row, "video": "media/red.mp4", "category": "video-only"} for row in rows]
    (root / "bench.json").write_text(json.dumps(data))
    run = root / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(root / "bench.json"), "--model", "sim:healthy"]
    made = invoke(*args, "-o", str(run), "--reply-audio", "auto", "--no-progress")
    assert made.exit_code == 0, made.output
    return run
