"""An audio-only item (a WAV or an MP3, as byo allows) reaches the model as its track alone: one ``input_audio``
WAV part on the OpenAI-compatible routes, an ``audio/wav`` part on Gemini's native one; never "no video stream",
and a route that delivers no audio refuses it in one line instead of sending it silent."""

from __future__ import annotations

import base64
import io
import json
import wave
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from omnivchat import media
from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()


def write_tone(path: Path, seconds: float, rate: int = 44100) -> None:
    t = np.arange(int(rate * seconds)) / rate
    samples = (0.3 * np.sin(2 * np.pi * 440 * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.repeat(samples, 2).tobytes())


@pytest.fixture
def audio_release(tmp_path: Path) -> Path:
    """A byo dataset of two audio-only items: a stereo 44.1 kHz WAV and an MP3 made from it by ffmpeg."""
    folder = tmp_path / "release"
    (folder / "media").mkdir(parents=True)
    write_tone(folder / "media" / "tone.wav", 2.0)
    media.run_ffmpeg(
        ["-i", str(folder / "media" / "tone.wav"), "-c:a", "libmp3lame", str(folder / "media" / "tone.mp3")]
    )
    rows = [
        {"qid": f"q{n}", "question": "What do you hear?", "answer": "a tone", "requires": ["audio"],
         "category": "audio-only", "audio": f"media/tone.{ext}"}
        for n, ext in enumerate(("wav", "mp3"), start=1)
    ]  # fmt: skip
    (folder / "bench.json").write_text(json.dumps(rows))
    return folder / "bench.json"


def _wav(part: dict) -> wave.Wave_read:
    data = part["input_audio"]["data"]
    return wave.open(io.BytesIO(base64.b64decode(data.split(",", 1)[-1])))


def test_audio_only_items_go_as_their_track_alone(audio_release: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with LoopbackServer(rules=lambda request: Behaviour(text="A steady tone.")) as server:
        args = ["eval", "--benchmark", "byo", "--data", str(audio_release), "-o", str(run_dir), "--no-progress"]
        model = ["--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--base-url", server.base_url, "--no-key"]
        result = runner.invoke(app, [*args, *model], terminal_width=200)
        bodies = [r.json for r in server.chat_requests]
    assert result.exit_code == 0, result.output
    assert "2 done" in result.output and "no video stream" not in result.output
    assert len(bodies) == 2
    for body in bodies:
        content = body["messages"][-1]["content"]
        audio = [p for p in content if p["type"] == "input_audio"]
        assert [p["type"] for p in content if p["type"] != "text"] == ["input_audio"]  # no video part at all
        assert audio[0]["input_audio"]["format"] == "wav"
        with _wav(audio[0]) as sent:  # the route's rate, mono, the whole two seconds
            assert (sent.getframerate(), sent.getnchannels()) == (16000, 1)
            assert sent.getnframes() / 16000 == pytest.approx(2.0, abs=0.06)
    scored = runner.invoke(app, ["score", str(run_dir)], terminal_width=200)
    assert scored.exit_code == 0, scored.output  # both answered, nothing unscored


def test_a_route_that_delivers_no_audio_refuses_an_audio_only_item(audio_release: Path, tmp_path: Path) -> None:
    with LoopbackServer() as server:
        args = [
            "eval",
            "--benchmark",
            "byo",
            "--data",
            str(audio_release),
            "-o",
            str(tmp_path / "run"),
            "--no-progress",
        ]
        model = ["--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--base-url", server.base_url, "--no-key"]
        result = runner.invoke(app, [*args, *model, "--audio-delivery", "none"], terminal_width=250)
        assert server.chat_requests == []  # nothing sent silent
    assert result.exit_code == 1
    flat = " ".join(result.output.split())
    assert "unsupported: 2" in flat and "an audio-only clip, and this route delivers no audio" in flat


def test_a_route_limit_cuts_an_audio_only_item_and_says_so(tmp_path: Path) -> None:
    from omnivchat.media import MediaLimits
    from omnivchat.routes import resolve_settings
    from omnivchat.routes._media_parts import MediaStore, clip_parts

    clip = tmp_path / "long.wav"
    write_tone(clip, 3.0)
    settings = resolve_settings(
        "Qwen/Qwen3-Omni-30B-A3B-Instruct", overrides={"limits": MediaLimits(max_duration_s=1.0)}
    )
    store = MediaStore()
    parts, delivered = clip_parts(clip, settings, store)
    assert delivered.audio and not delivered.video and delivered.cut_from_s == pytest.approx(3.0, abs=0.01)
    with _wav(store.materialize(parts[0])) as sent:  # the first second, as a clip is cut to keep its start
        assert sent.getnframes() / sent.getframerate() == pytest.approx(1.0, abs=0.03)


def test_openai_audio_models_hear_the_track_and_the_others_refuse_a_clip(small_bench) -> None:
    """OpenAI's chat API has no video part: gpt-4o-audio-* gets the clip's track as input_audio (the video reported
    as not delivered); gpt-4o and gpt-5 refuse the clip before anything is sent."""
    import asyncio

    from omnivchat.routes import ChatRequest, RouteError, Secret, get_route

    clip = small_bench.media_path(small_bench.instances[0].turns[-1])

    def ask(route):
        async def go():
            try:
                prepared = await asyncio.to_thread(route.prepare, ChatRequest(item_id="s1", clip=clip, text="Hi."))
                return await route.send(prepared)
            finally:
                await route.aclose()

        return asyncio.run(go())

    with LoopbackServer() as server:
        response = ask(get_route("gpt-4o-audio-preview", base_url=server.base_url, api_key=Secret("sk-t")))
        body = server.chat_requests[0].json
        for model in ("gpt-4o", "gpt-5-mini"):
            with pytest.raises(RouteError) as refused:
                ask(get_route(model, base_url=server.base_url, api_key=Secret("sk-t")))
            assert refused.value.kind == "unsupported" and "takes text only" in refused.value.message
        assert len(server.chat_requests) == 1  # the refusals sent nothing
    kinds = [p["type"] for p in body["messages"][-1]["content"]]
    assert kinds == ["input_audio", "text"]
    assert response.delivered.audio and not response.delivered.video and response.delivered.dropped == ("video",)
