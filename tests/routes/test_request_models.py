"""The bodies omnivchat sends, checked by each receiver's own request code: vLLM 0.34's request model and content-part
parser, SGLang 0.5.23's request model, the openai SDK's request types (each in a venv of its own, made by
`.ci/request-models.sh`; the checkers under request_models/ run there). Each body is built and prepared exactly as a
run sends it (its clips' real bytes included), for the server the route's settings are meant for. Skipped where the
venvs were not made (a plain `uv sync`); `.ci/run` makes them.

Gemini's native bodies are built by google-genai's own types (which refuse an unknown field) in the route itself:
tests/routes/test_gemini_route.py sends them through the SDK to a loopback server.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from omnivchat import media
from omnivchat.routes import ChatRequest, HistoryTurn, Sampling, ServerInfo, get_route

HERE = Path(__file__).with_name("request_models")
QWEN = "Qwen/Qwen2.5-Omni-3B"
URL = "http://127.0.0.1:9/v1"  # nothing is sent: bodies are only built
SCHEMA = {"type": "object", "properties": {"hits": {"type": "array", "items": {"type": "integer"}}}}
JSON_SCHEMA = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}}


def checker(server: str) -> str:
    python = os.environ.get(f"OMNIVCHAT_{server.upper()}_PYTHON")
    if not python or not Path(python).is_file():
        pytest.skip(
            f"{server}'s request code is not installed (OMNIVCHAT_{server.upper()}_PYTHON: .ci/request-models.sh)"
        )
    return python


def body(model: str, request: ChatRequest, **settings: Any) -> dict[str, Any]:
    """The JSON body a run sends for ``request``, media included (as ``json.dumps`` of it would go)."""
    route = get_route(model, base_url=URL, no_key=True, **settings)
    prepared = route.prepare(request)
    return prepared.media.materialize(prepared.description)


def run_checker(server: str, cases: dict[str, dict[str, Any]], tmp_path: Path) -> dict[str, dict[str, Any]]:
    path = tmp_path / f"{server}-bodies.json"
    path.write_text(json.dumps([{"name": name, "body": b} for name, b in cases.items()]))
    done = subprocess.run(
        [checker(server), str(HERE / f"check_{server}.py"), str(path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {r["name"]: r for r in json.loads(done.stdout)}


@pytest.fixture
def clips(small_bench, tmp_path):
    single = small_bench.media_path(small_bench.get("s1").turns[-1])
    first, last = (small_bench.media_path(t) for t in small_bench.get("m1").turns)
    wav = media.export_audio(single, fmt="wav", out=tmp_path / "spoken.wav")
    return {"single": single, "first": first, "last": last, "wav": wav}


def ask(clip: Path, **more: Any) -> ChatRequest:
    return ChatRequest(item_id="i", clip=clip, text="What is said and shown?", system_prompt="Be brief.", **more)


def self_served_bodies(clips: dict[str, Path], server: ServerInfo | None = None) -> dict[str, dict[str, Any]]:
    """What a run sends to a self-served model, under the settings chosen for ``server``."""
    two_turns = ask(clips["last"], history=[HistoryTurn(clip=clips["first"], text="How many?", reply="One.")])
    judged = ChatRequest(
        item_id="j",
        text="Grade the reply.",
        response_format=JSON_SCHEMA,
        sampling=Sampling(temperature=0.0, max_tokens=256),
    )
    given = {"server": server} if server is not None else {}
    return {
        "qwen, the defaults": body(QWEN, ask(clips["single"]), **given),
        "qwen, two turns": body(QWEN, two_turns, **given),
        "qwen, separate": body(QWEN, ask(clips["single"]), audio_delivery="input_audio", **given),
        "qwen, frames": body(QWEN, two_turns, media_input="frames", **given),
        "qwen, thinking off": body(QWEN, ask(clips["single"]), thinking=False, **given),
        "qwen, an audio-only item": body(QWEN, ask(clips["wav"]), **given),
        "minicpm-o": body("openbmb/MiniCPM-o-4_5", ask(clips["single"]), **given),
        "a name of your own": body("my-omni", ask(clips["single"]), **given),
        "a judge's verdict": body("my-judge", judged, media_input="none", **given),
    }


def test_vllm_takes_every_body_a_run_sends_it(clips, tmp_path):
    bodies = self_served_bodies(clips, ServerInfo(kind="vllm", version="0.34.0", source="test"))
    results = run_checker("vllm", bodies, tmp_path)
    refused = {name: r["error"] for name, r in results.items() if not r["ok"]}
    assert not refused, refused
    # each clip's media went through vLLM's own parser: the in-video audio asked for, a WAV part where separate
    assert results["qwen, the defaults"]["media"] == ["parse_video"]
    assert bodies["qwen, the defaults"]["mm_processor_kwargs"] == {"use_audio_in_video": True}
    assert results["qwen, separate"]["media"] == ["parse_video", "parse_input_audio"]
    assert results["a name of your own"]["media"] == ["parse_video", "parse_input_audio"]  # vLLM would not decode it
    assert results["qwen, an audio-only item"]["media"] == ["parse_input_audio"]


def test_vllm_refuses_what_omnivchat_no_longer_sends(clips, tmp_path):
    # The controls: the checker is not a rubber stamp. Gemini's compatible endpoint once got a `file` part.
    sent = body("my-omni", ask(clips["single"]), media_input="file")
    assert sent["messages"][-1]["content"][0]["type"] == "file"
    results = run_checker("vllm", {"file part": sent}, tmp_path)
    assert (
        not results["file part"]["ok"] and "Unsupported chat content part type: 'file'" in results["file part"]["error"]
    )


def test_sglang_takes_every_body_a_run_sends_it_and_drops_nothing_that_matters(clips, tmp_path):
    bodies = self_served_bodies(clips, ServerInfo(kind="sglang", version="0.5.23", source="test"))
    results = run_checker("sglang", bodies, tmp_path)
    refused = {name: r["error"] for name, r in results.items() if not r["ok"]}
    assert not refused, refused
    for name, result in results.items():  # SGLang ignores what it does not know: only `modalities` may go
        assert set(result["dropped"]) <= {"modalities"}, (name, result["dropped"])
        assert "mm_processor_kwargs" not in bodies[name]  # it would be accepted and have no effect
    parts = [p["type"] for p in bodies["qwen, the defaults"]["messages"][-1]["content"]]
    assert parts == ["video_url", "input_audio", "text"]  # the track it would drop from the video, as a WAV part


def test_openai_takes_every_body_a_run_sends_it(clips, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + "o" * 40)
    verdict = ChatRequest(
        item_id="j", text="Grade it.", response_format=JSON_SCHEMA, sampling=Sampling(temperature=0.0, max_tokens=256)
    )
    cases = {
        "gpt-4o judge": body("gpt-4o", verdict),
        "gpt-5 judge": body("gpt-5-mini", verdict),
        "o4-mini judge": body("o4-mini", verdict),
        "gpt-4o audio model": body("gpt-4o-audio-preview", ask(clips["single"])),
        "gpt-audio, two turns": body(
            "gpt-audio", ask(clips["last"], history=[HistoryTurn(clip=clips["first"], text="How many?", reply="One.")])
        ),
    }
    assert "max_completion_tokens" in cases["gpt-5 judge"] and "temperature" not in cases["gpt-5 judge"]
    results = run_checker("openai", cases, tmp_path)
    refused = {name: r["error"] for name, r in results.items() if not r["ok"]}
    assert not refused, refused
    # the control: a video part is not an OpenAI part type (omnivchat never sends one there)
    control = run_checker(
        "openai", {"video part": body("my-omni", ask(clips["single"]), include_modalities=False)}, tmp_path
    )
    assert not control["video part"]["ok"]
