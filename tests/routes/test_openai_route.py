"""The OpenAI-compatible route over real sockets against the loopback server."""

from __future__ import annotations

import asyncio
import base64
import io
import wave

import pytest

from omnivchat.media import probe
from omnivchat.routes import PROVIDER_DEFAULT, ChatRequest, HistoryTurn, RouteError, Sampling, Secret, get_route
from omnivchat.routes._openai import ConfigError
from omnivchat.testing import Behaviour, LoopbackServer

SECRET = "test-key-0123456789-not-a-real-one"


@pytest.fixture
def server():
    with LoopbackServer() as srv:
        yield srv


def route_for(server, model="some-omni-model", **overrides):
    return get_route(model, base_url=server.base_url, api_key=Secret(SECRET), **{"timeout_s": 5.0, **overrides})


def ask(route, request):
    async def go():
        try:
            prepared = await asyncio.to_thread(route.prepare, request)
            return prepared, await route.send(prepared)
        finally:
            await route.aclose()

    return asyncio.run(go())


def ask_error(route, request) -> RouteError:
    with pytest.raises(RouteError) as info:
        ask(route, request)
    return info.value


def clip_of(bench, item="s1"):
    instance = bench.get(item)
    return bench.media_path(instance.turns[-1])


def test_streamed_answer_is_reassembled_from_13_byte_writes(server, small_bench):
    server.default = Behaviour(text="The red square is on your right. 你好！", write_size=13, chunk_interval=0.001)
    request = ChatRequest(
        item_id="s1",
        system_prompt="Be brief.",
        clip=clip_of(small_bench),
        sampling=Sampling(temperature=0.3, max_tokens=64),
    )
    prepared, response = ask(route_for(server), request)
    assert response.text == "The red square is on your right. 你好！"
    assert response.finish_reason == "stop" and response.usage["total_tokens"] > 0
    assert response.delivered.video and response.delivered.audio and not response.delivered.dropped
    sent = server.chat_requests[0]
    assert sent.headers["Authorization"] == f"Bearer {SECRET}"
    body = sent.json
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.3 and body["max_tokens"] == 64 and body["modalities"] == ["text"]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert len(prepared.key) == 64


def test_video_url_carries_the_audio_track(server, small_bench, tmp_path):
    ask(route_for(server), ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    part = server.chat_requests[0].json["messages"][-1]["content"][0]
    assert part["type"] == "video_url"
    header, data = part["video_url"]["url"].split(",", 1)
    assert header == "data:video/mp4;base64"
    sent = tmp_path / "sent.mp4"
    sent.write_bytes(base64.b64decode(data))
    info = probe(sent)
    assert info.has_video and info.has_audio and not info.is_silent


def test_separate_delivery_sends_audio_as_its_own_part(server, small_bench):
    route = route_for(server, model="Qwen/Qwen3-Omni-30B-A3B-Instruct", audio_delivery="input_audio")
    _, response = ask(route, ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    assert "mm_processor_kwargs" not in server.chat_requests[0].json
    body = server.chat_requests[0].json
    assert "modalities" not in body
    kinds = [p["type"] for p in body["messages"][-1]["content"]]
    assert kinds == ["video_url", "input_audio"]
    audio = body["messages"][-1]["content"][1]["input_audio"]
    assert audio["format"] == "wav"
    with wave.open(io.BytesIO(base64.b64decode(audio["data"]))) as wav:
        assert wav.getframerate() == 16000 and wav.getnchannels() == 1 and wav.getnframes() > 16000
    assert response.delivered.audio


def test_file_part_thinking_and_reasoning_effort(server, small_bench):
    route = route_for(server, media_input="file", thinking=False, reasoning_effort="none", include_modalities=False)
    ask(route, ChatRequest(item_id="s1", clip=clip_of(small_bench), text="What do you see?"))
    body = server.chat_requests[0].json
    first, second = body["messages"][-1]["content"]
    assert first["type"] == "file" and first["file"]["filename"] == "clip.mp4"
    assert first["file"]["file_data"].startswith("data:video/mp4;base64,")
    assert second == {"type": "text", "text": "What do you see?"}
    assert body["chat_template_kwargs"] == {"enable_thinking": False}  # a server of one's own: its chat template's
    assert "enable_thinking" not in body and body["reasoning_effort"] == "none" and "modalities" not in body


@pytest.mark.parametrize(
    ("model", "where"),
    [
        ("Qwen/Qwen3-Omni-30B-A3B-Instruct", "chat_template_kwargs"),  # vLLM / SGLang / llama.cpp read only that
        ("openbmb/MiniCPM-o-4_5", "chat_template_kwargs"),
        ("my-own-model", "chat_template_kwargs"),
        ("qwen3-omni-flash", "enable_thinking"),  # DashScope reads the top-level field
    ],
)
def test_thinking_goes_where_the_server_reads_it(model: str, where: str) -> None:
    with LoopbackServer() as server:
        for thinking in (False, True, None):
            asked = PROVIDER_DEFAULT if thinking is None else thinking  # `--thinking default`: left to the server
            route = get_route(model, base_url=server.base_url, api_key=Secret("sk-t"), thinking=asked)
            ask(route, ChatRequest(item_id="t", text="Hi."))
            dumped = route.settings.model_dump()
            assert ("thinking_switch" in dumped) == (thinking is not None and where != "enable_thinking")
        sent = [r.json for r in server.chat_requests]
    for body, thinking in zip(sent, (False, True), strict=False):
        if where == "enable_thinking":
            assert body["enable_thinking"] is thinking and "chat_template_kwargs" not in body
        else:
            assert body["chat_template_kwargs"] == {"enable_thinking": thinking} and "enable_thinking" not in body
    assert "enable_thinking" not in sent[2] and "chat_template_kwargs" not in sent[2]  # unset: the server's default


def test_frames_mode_sends_images_and_audio(server, small_bench):
    route = route_for(server, media_input="frames", frames_fps=2.0, max_frames=3)
    _, response = ask(route, ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    kinds = [p["type"] for p in server.chat_requests[0].json["messages"][-1]["content"]]
    assert kinds == ["image_url"] * 3 + ["input_audio"]
    assert response.delivered.audio


def test_a_route_that_cannot_deliver_audio_says_so(server, small_bench):
    _, response = ask(
        route_for(server, audio_delivery="none", media_input="frames"),
        ChatRequest(item_id="s1", clip=clip_of(small_bench)),
    )
    assert response.delivered.dropped == ("audio",) and not response.delivered.audio


def test_text_only_route_refuses_clips(server, small_bench):
    err = ask_error(route_for(server, media_input="none"), ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    assert err.kind == "unsupported" and "text only" in err.message
    assert server.count == 0


def test_history_turns_become_user_and_assistant_messages(server, small_bench):
    m1 = small_bench.get("m1")
    first, last = (small_bench.media_path(t) for t in m1.turns)
    request = ChatRequest(item_id="m1", history=(HistoryTurn(clip=first, reply="One square."),), clip=last)
    ask(route_for(server), request)
    roles = [m["role"] for m in server.chat_requests[0].json["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert server.chat_requests[0].json["messages"][1]["content"] == "One square."


def test_same_request_same_key_and_settings_change_it(server, small_bench):
    request = ChatRequest(item_id="s1", clip=clip_of(small_bench))
    a = route_for(server).prepare(request)
    b = route_for(server).prepare(request)
    c = route_for(server, include_modalities=False).prepare(request)
    assert a.key == b.key != c.key
    assert SECRET not in str(a.description)


@pytest.mark.parametrize(
    ("behaviour", "kind", "retryable"),
    [
        (Behaviour(status=429, retry_after="2"), "rate_limited", True),
        (Behaviour(status=500), "server_error", True),
        (Behaviour(status=503), "server_error", True),
        (Behaviour(status=408), "request_timeout", True),
        (Behaviour(status=400, error_message="bad request"), "http_error", False),
        (Behaviour(status=401), "http_error", False),
        (Behaviour(text="a long answer cut short", cut_after=1), "stream_cut", True),
        (Behaviour(text="a long answer cut short", cut_after=1, cut_clean=True), "stream_cut", True),
        (Behaviour(no_done=True), "stream_cut", True),
        (Behaviour(finish_reason="length"), "length", False),
        (Behaviour(finish_reason="content_filter"), "bad_finish", False),
        (Behaviour(malformed=True), "malformed", True),
        (Behaviour(error_in_stream="model overloaded"), "stream_error", False),
        (Behaviour(hang=True), "timeout", True),
    ],
)
def test_failures_are_classified(server, behaviour, kind, retryable):
    server.default = behaviour
    # A short bound only where the timeout is the point: on a loaded machine a cut stream can take over a second.
    route = route_for(server, timeout_s=1.0 if behaviour.hang else 30.0)
    err = ask_error(route, ChatRequest(item_id="t", text="hello"))
    assert (err.kind, err.retryable) == (kind, retryable)
    assert SECRET not in err.message


def test_retry_after_and_error_message(server):
    server.default = Behaviour(status=429, retry_after="2", error_message="slow down")
    err = ask_error(route_for(server), ChatRequest(item_id="t", text="hello"))
    assert err.retry_after == 2.0 and err.http_status == 429 and "slow down" in err.message


def test_empty_text_is_an_answer_unless_text_is_required(server):
    server.default = Behaviour(text="")
    _, response = ask(route_for(server), ChatRequest(item_id="t", text="hello"))
    assert response.text == ""
    err = ask_error(route_for(server), ChatRequest(item_id="t", text="hello", require_text=True))
    assert err.kind == "empty"


def test_non_streaming_and_reasoning(server):
    server.default = Behaviour(text="fine", reasoning="thinking...")
    _, response = ask(route_for(server, stream=False), ChatRequest(item_id="t", text="hello"))
    assert (response.text, response.reasoning) == ("fine", "thinking...")
    assert server.chat_requests[0].json["stream"] is False
    _, streamed = ask(route_for(server), ChatRequest(item_id="t", text="hello"))
    assert streamed.reasoning == "thinking..."


def test_connection_refused_is_a_connection_error():
    route = get_route("m", base_url="http://127.0.0.1:9/v1", timeout_s=2.0)
    err = ask_error(route, ChatRequest(item_id="t", text="hi"))
    assert err.kind == "connection" and err.retryable


def test_endpoint_and_url_checks():
    route = get_route("m", base_url="http://127.0.0.1:8123/v1/?tenant=a")
    assert route.endpoint == "http://127.0.0.1/v1/chat/completions"
    with pytest.raises(ConfigError, match="must not embed credentials"):
        get_route("m", base_url="http://user:pw@host/v1")
    with pytest.raises(ConfigError, match="http"):
        get_route("m", base_url="ftp://host/v1")
    with pytest.raises(ConfigError, match="no base URL"):
        get_route("Qwen/Qwen3-Omni-30B-A3B-Instruct")


def test_corrupt_clip_is_a_media_error_naming_the_file(server, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 100)
    err = ask_error(route_for(server), ChatRequest(item_id="x", clip=bad))
    assert err.kind == "media" and "broken.mp4" in err.message
    assert server.count == 0


def test_a_history_turn_without_media_is_an_empty_user_turn(server, small_bench):
    m1 = small_bench.get("m1")
    last = small_bench.media_path(m1.turns[-1])
    ask(route_for(server), ChatRequest(item_id="m1", history=(HistoryTurn(clip=None, reply="One."),), clip=last))
    assert server.chat_requests[0].json["messages"][0] == {"role": "user", "content": ""}


@pytest.mark.parametrize("model", ["gpt-5-mini", "gpt-5.2", "o3-mini", "o4-mini"])
def test_openai_reasoning_models_get_the_fields_they_accept(model: str) -> None:
    """GPT-5-family and o-series judges: max_completion_tokens, and no temperature or top_p (the API refuses
    max_tokens and any value but their default); the settings, recorded in manifests, say so."""
    with LoopbackServer() as server:
        route = get_route(model, base_url=server.base_url, api_key=Secret("sk-test"))
        assert route.settings.reasoning_model and route.settings.model_dump()["reasoning_model"] is True
        ask(
            route,
            ChatRequest(
                item_id="j1", text="Grade.", sampling=Sampling(temperature=0.0, top_p=0.9, max_tokens=300, seed=7)
            ),
        )
        body = server.chat_requests[0].json
    assert body["max_completion_tokens"] == 300 and body["seed"] == 7
    assert not {"max_tokens", "temperature", "top_p"} & set(body)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-5-chat-latest", "qwen3-max"])
def test_other_models_keep_their_sampling_fields(model: str) -> None:
    with LoopbackServer() as server:
        route = get_route(model, base_url=server.base_url, api_key=Secret("sk-test"))
        assert "reasoning_model" not in route.settings.model_dump()  # manifests made before the field stay the same
        ask(route, ChatRequest(item_id="j1", text="Grade.", sampling=Sampling(temperature=0.0, max_tokens=300)))
        body = server.chat_requests[0].json
    assert (body["max_tokens"], body["temperature"]) == (300, 0.0) and "max_completion_tokens" not in body
