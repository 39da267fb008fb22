"""What each provider documents, sent that way or refused before sending: Gemini's thinking switch per generation
(its native route and its OpenAI-compatible endpoint), Gemini's OpenAI-compatible media (frames and a WAV part, no
video part), DashScope's one media type per message, and a cascade stage's thinking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnivchat.routes import ChatRequest, SettingsError, get_route
from omnivchat.routes._openai import ConfigError
from omnivchat.routes._thinking import gemini_thinking
from omnivchat.testing import Behaviour, LoopbackServer

from .test_servers import send


@pytest.mark.parametrize(
    ("model", "thinking", "config"),
    [
        ("gemini-2.5-flash", False, {"thinking_budget": 0}),
        ("gemini-2.5-flash-lite", False, {"thinking_budget": 0}),
        ("gemini:gemini-2.5-flash", True, {"thinking_budget": -1}),
        ("gemini-2.5-pro", True, {"thinking_budget": -1}),
        ("gemini-3-pro-preview", True, {"thinking_level": "high"}),
        ("gemini-3.8-flash", True, {"thinking_level": "high"}),
        ("gemini-2.0-flash", False, None),  # it does not think: nothing to turn off
        ("gemini-exp-1206", False, {"thinking_budget": 0}),  # no known generation: the first documented switch
        ("gemini-2.5-pro", None, None),
    ],
)
def test_gemini_thinking_is_sent_as_each_generation_takes_it(model, thinking, config):
    assert gemini_thinking(model, thinking) == config


@pytest.mark.parametrize(
    ("model", "thinking", "says"),
    [
        ("gemini-2.5-pro", False, "cannot turn thinking off"),
        ("gemini-3-pro-preview", False, "cannot turn thinking off"),
        ("gemini-3.8-flash", False, "cannot turn thinking off"),
        ("gemini-2.0-flash", True, "does not think"),
    ],
)
def test_a_thinking_switch_the_model_cannot_honour_is_refused_at_the_route(model, thinking, says):
    with pytest.raises(SettingsError, match=says):
        gemini_thinking(model, thinking)
    with pytest.raises(SettingsError, match=says):  # the OpenAI-compatible endpoint: before any request
        get_route(model, base_url="http://127.0.0.1:9/v1", no_key=True, thinking=thinking)
    pytest.importorskip("google.genai")
    with pytest.raises(SettingsError, match=says):  # the native route
        get_route(f"gemini:{model}", api_key=None, no_key=True, thinking=thinking)


def test_gemini_openai_compatible_gets_frames_a_wav_part_and_its_own_thinking_switch(small_bench):
    clip = small_bench.media_path(small_bench.get("s1").turns[-1])
    with LoopbackServer(Behaviour(text="ok")) as srv:
        route = get_route("gemini-2.5-flash", base_url=srv.base_url, no_key=True, thinking=False)
        response = send(route, ChatRequest(item_id="s1", clip=clip, text="What is said?"))
        body = srv.chat_requests[0].json
    kinds = [p["type"] for p in body["messages"][-1]["content"]]
    assert set(kinds) == {"image_url", "input_audio", "text"} and "file" not in kinds and "video_url" not in kinds
    assert body["extra_body"] == {"google": {"thinking_config": {"thinking_budget": 0}}}
    assert "enable_thinking" not in body and "chat_template_kwargs" not in body
    assert response.delivered.video and response.delivered.audio


@pytest.mark.parametrize(
    "flags",
    [
        {"audio_delivery": "input_audio"},
        {"media_input": "frames"},
        {"media_input": "frames", "audio_delivery": "input_audio"},
    ],
)
def test_dashscope_gets_one_media_type_per_message_or_a_refusal(flags, monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-" + "d" * 32)
    with pytest.raises(ConfigError, match="one media type per message"):
        get_route("qwen3-omni-flash", **flags)


def test_dashscope_frames_without_audio_and_the_video_alone_are_sent(monkeypatch):
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-" + "d" * 32)
    assert get_route("qwen3-omni-flash", media_input="frames", audio_delivery="none").settings.media_input == "frames"
    assert get_route("qwen3-omni-flash").settings.audio_delivery == "in_video"


def _cascade(tmp_path: Path, base: str, *, asr_thinking: str = "") -> Path:
    path = tmp_path / "cascade.toml"
    path.write_text(
        f'[asr]\nmodel = "whisper-1"\nbase_url = "{base}"\nno_key = true\n{asr_thinking}\n'
        f'[llm]\nmodel = "text"\nbase_url = "{base}"\nno_key = true\nthinking = false\n'
    )
    return path


def test_a_cascade_stage_sends_its_thinking_switch(tmp_path):
    with LoopbackServer(Behaviour(text="A")) as srv:
        route = get_route(f"cascade:{_cascade(tmp_path, srv.base_url)}")
        send(route, ChatRequest(item_id="t", text="Which?"))
        llm = [r.json for r in srv.chat_requests if r.json and r.json.get("model") == "text"]
    assert llm and llm[0]["chat_template_kwargs"] == {"enable_thinking": False}  # a server of one's own
    identity = json.dumps(route.stage_identity())
    assert '"thinking": false' in identity


def test_a_cascade_asr_stage_with_thinking_is_refused(tmp_path):
    path = _cascade(tmp_path, "http://127.0.0.1:9/v1", asr_thinking="thinking = true")
    with pytest.raises(SettingsError, match=r"asr\.thinking"):
        get_route(f"cascade:{path}")
