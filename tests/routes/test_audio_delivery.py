"""How a clip's audio reaches a self-served model: in the video, with vLLM asked to decode it
(mm_processor_kwargs.use_audio_in_video), or as a separate WAV part. The default for vLLM's Qwen-Omni names is
in-video; the route check says which one a server really hears, and records it; the manifest holds it."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from omnivchat import media
from omnivchat.benchmarks.native import run_eval
from omnivchat.cli import app
from omnivchat.cli._options import AudioDelivery, RouteOptions
from omnivchat.routes import ChatRequest, HistoryTurn, RouteError, describe_delivery, get_route, resolve_settings
from omnivchat.runs import ManifestMismatch, RetryPolicy
from omnivchat.testing import Behaviour, LoopbackServer

QWEN = "Qwen/Qwen2.5-Omni-3B"
runner = CliRunner()


@pytest.fixture
def server():
    with LoopbackServer() as srv:
        yield srv


def send(route, request):
    async def go():
        try:
            prepared = await asyncio.to_thread(route.prepare, request)
            return await route.send(prepared)
        finally:
            await route.aclose()

    return asyncio.run(go())


def clip_of(bench, item="s1"):
    return bench.media_path(bench.get(item).turns[-1])


def kinds(body):
    return [p["type"] for p in body["messages"][-1]["content"]]


def test_in_video_delivery_asks_vllm_to_decode_the_audio(server, small_bench, tmp_path):
    route = get_route(QWEN, base_url=server.base_url, no_key=True)
    response = send(route, ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    body = server.chat_requests[0].json
    assert body["mm_processor_kwargs"] == {"use_audio_in_video": True}
    assert kinds(body) == ["video_url"]  # no input_audio part: the model interleaves the video's own track
    sent = tmp_path / "sent.mp4"
    sent.write_bytes(base64.b64decode(body["messages"][-1]["content"][0]["video_url"]["url"].split(",", 1)[1]))
    assert media.probe(sent).has_audio
    assert response.delivered.audio and not response.delivered.dropped


def test_separate_delivery_and_hosted_routes_send_no_kwarg(server, small_bench):
    separate = get_route(QWEN, base_url=server.base_url, no_key=True, audio_delivery="input_audio")
    send(separate, ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    hosted = get_route("qwen3-omni-flash", base_url=server.base_url, no_key=True)  # DashScope reads the track
    send(hosted, ChatRequest(item_id="s1", clip=clip_of(small_bench)))
    first, second = (r.json for r in server.chat_requests)
    assert kinds(first) == ["video_url", "input_audio"] and "mm_processor_kwargs" not in first
    assert kinds(second) == ["video_url"] and "mm_processor_kwargs" not in second


def test_a_clip_without_audio_is_sent_without_the_flag(server, small_bench):
    silent = media.strip_audio(clip_of(small_bench))
    route = get_route(QWEN, base_url=server.base_url, no_key=True)
    response = send(route, ChatRequest(item_id="s1", clip=silent))
    assert "mm_processor_kwargs" not in server.chat_requests[0].json  # vLLM refuses it for a video without audio
    assert not response.delivered.audio


def test_a_request_mixing_clips_with_and_without_audio_is_refused(server, small_bench):
    history = (HistoryTurn(clip=clip_of(small_bench), reply="One square."),)
    final = media.strip_audio(clip_of(small_bench, "s3"))
    route = get_route(QWEN, base_url=server.base_url, no_key=True)
    with pytest.raises(RouteError) as info:
        send(route, ChatRequest(item_id="m1", history=history, clip=final))
    assert info.value.kind == "unsupported" and "m1" in info.value.message
    assert "--audio-delivery separate" in info.value.message and server.count == 0


def test_cli_spellings_of_the_delivery():
    assert RouteOptions(audio_delivery=AudioDelivery.separate).overrides()["audio_delivery"] == "input_audio"
    assert RouteOptions(audio_delivery=AudioDelivery.in_video).overrides()["audio_delivery"] == "in_video"
    assert RouteOptions(audio_delivery=AudioDelivery.input_audio).overrides()["audio_delivery"] == "input_audio"
    assert describe_delivery(resolve_settings(QWEN)) == "in-video (mm_processor_kwargs.use_audio_in_video)"
    assert describe_delivery(resolve_settings(QWEN, overrides={"audio_delivery": "input_audio"})).startswith("separate")


def test_the_delivery_is_part_of_the_run_identity(server, small_bench, tmp_path):
    fast = RetryPolicy(max_attempts=1)
    out = tmp_path / "run"
    run_eval(small_bench, get_route(QWEN, base_url=server.base_url, no_key=True), out, system_prompt="x", retry=fast)
    settings = json.loads((out / "manifest.json").read_text())["route"]["settings"]
    assert (settings["audio_delivery"], settings["audio_in_video_kwarg"]) == ("in_video", True)
    other = get_route(QWEN, base_url=server.base_url, no_key=True, audio_delivery="input_audio")
    with pytest.raises(ManifestMismatch, match="audio_delivery"):
        run_eval(small_bench, other, out, system_prompt="x", retry=fast)
    # settings added later are left out at their default: a hosted run's manifest is what it was before
    hosted = resolve_settings("qwen3-omni-flash").model_dump(mode="json")
    assert "audio_in_video_kwarg" not in hosted and hosted["audio_delivery"] == "in_video"


def _server_that_hears(audible_b64: str, *, reads_kwarg: bool) -> Callable[[dict], Behaviour]:
    """A stand-in for a real server: it 'hears' the audible clip only through the delivery it supports (vLLM reads
    the flag; SGLang ignores it and hears a separate part only)."""

    def rules(payload):
        parts = payload["messages"][-1]["content"]
        video = next(p["video_url"]["url"] for p in parts if p["type"] == "video_url")
        flagged = bool((payload.get("mm_processor_kwargs") or {}).get("use_audio_in_video"))
        heard = (flagged and reads_kwarg) or any(p["type"] == "input_audio" for p in parts)
        if heard and video.endswith(audible_b64):
            return Behaviour(text="A red square. The password is copper meadow and the number is 53.")
        return Behaviour(text="A red square on blue. I cannot hear any speech: the audio is unavailable.")

    return rules


@pytest.mark.parametrize(
    ("server_kind", "delivery", "passes"),
    [
        ("vllm", None, True),
        ("vllm", "separate", True),
        ("sglang", None, False),
        ("sglang", "separate", True),
    ],
)
def test_the_route_check_proves_which_delivery_a_server_hears(tmp_path, monkeypatch, server_kind, delivery, passes):
    from omnivchat.diagnostics.route_check import check_clips

    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    audible, _ = check_clips()
    audible_b64 = base64.b64encode(audible.read_bytes()).decode()
    with LoopbackServer() as srv:
        srv.rules = _server_that_hears(audible_b64, reads_kwarg=server_kind == "vllm")
        args = ["check-route", "--model", QWEN, "--base-url", srv.base_url, "-o", str(tmp_path / "c.json")]
        result = runner.invoke(app, args + (["--audio-delivery", delivery] if delivery else []))
    assert result.exit_code == (0 if passes else 1), result.output
    record = json.loads((tmp_path / "c.json").read_text())
    expected = "separate (input_audio WAV part)" if delivery else "in-video (mm_processor_kwargs.use_audio_in_video)"
    assert record["audio_delivery"] == expected and f"audio delivery: {expected}" in result.output
    if not passes:
        assert record["reasons"][0].startswith("audio missing:") and "--audio-delivery separate" in record["reasons"][0]


def _vllm_audio_cap(cap: int) -> Callable[[dict], Behaviour]:
    """vLLM's audio loader: with use_audio_in_video it reads the video's data URL itself and refuses base64 longer
    than VLLM_MAX_AUDIO_CLIP_FILESIZE_MB allows (vllm/multimodal/media/audio.py, load_base64)."""

    def rules(payload):
        if not (payload.get("mm_processor_kwargs") or {}).get("use_audio_in_video"):
            return None
        for part in payload["messages"][-1]["content"]:
            if part["type"] == "video_url" and len(part["video_url"]["url"].split(",", 1)[1]) > 4 * ((cap + 2) // 3):
                return Behaviour(status=400, error_message="Maximum file size exceeded (parameter=audio_filesize_mb)")
        return None

    return rules


def _sent_video(server, tmp_path, n=0):
    part = next(p for p in server.chat_requests[n].json["messages"][-1]["content"] if p["type"] == "video_url")
    sent = tmp_path / f"sent{n}.mp4"
    sent.write_bytes(base64.b64decode(part["video_url"]["url"].split(",", 1)[1]))
    return sent


def test_a_clip_over_vllms_audio_cap_is_reencoded_to_fit_for_in_video_delivery(server, small_bench, tmp_path):
    clip = clip_of(small_bench)
    cap = clip.stat().st_size * 2 // 3
    server.rules = _vllm_audio_cap(cap)
    route = get_route(QWEN, base_url=server.base_url, no_key=True, audio_in_video_max_bytes=cap)
    response = send(route, ChatRequest(item_id="s1", clip=clip))  # refused with HTTP 400 before the cap existed
    sent = _sent_video(server, tmp_path)
    assert sent.stat().st_size <= cap and media.probe(sent).has_audio and response.delivered.audio
    # a separate WAV part does not pass the MP4 through the audio loader: the clip goes as it is
    separate = get_route(
        QWEN, base_url=server.base_url, no_key=True, audio_in_video_max_bytes=cap, audio_delivery="input_audio"
    )
    send(separate, ChatRequest(item_id="s1", clip=clip))
    assert _sent_video(server, tmp_path, 1).read_bytes() == clip.read_bytes()
    # vLLM's default cap, 25 MiB, left out of the manifest's settings at its default (runs made before it resume)
    default = resolve_settings(QWEN)
    assert default.audio_in_video_max_bytes == 25 * 1024 * 1024
    assert "audio_in_video_max_bytes" not in default.model_dump(mode="json")


def test_a_clip_that_cannot_fit_the_cap_is_refused_naming_it(server, small_bench):
    clip = clip_of(small_bench)
    route = get_route(QWEN, base_url=server.base_url, no_key=True, audio_in_video_max_bytes=2000)
    with pytest.raises(RouteError) as caught:
        send(route, ChatRequest(item_id="s1", clip=clip))
    assert caught.value.kind == "media" and str(clip) in caught.value.message
    assert server.chat_requests == []  # nothing was sent
