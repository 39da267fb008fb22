"""Which server serves a self-served model, and the delivery changed for what it really decodes: SGLang and llama.cpp
never decode the audio of a video, vLLM does only when asked (use_audio_in_video, for the Qwen-Omni names) and from
0.18 on; llama.cpp takes a video only in builds that say so, and a llama.cpp server without vision or audio is
refused. The stand-ins say what they are as the real servers do (their model owner, llama.cpp's Server header, the
/version, /server_info and /props pages, read in vLLM 0.34, SGLang 0.5.23 and llama.cpp's tools/server)."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.routes import ChatRequest, ServerInfo, ServerMismatch, describe_delivery, get_route, identify
from omnivchat.testing import API_KEY, LoopbackServer, llama_cpp_identity, sglang_identity, vllm_identity

QWEN = "Qwen/Qwen2.5-Omni-3B"
runner = CliRunner()


def clip_of(bench, item="s1"):
    return bench.media_path(bench.get(item).turns[-1])


def sent_parts(server, n=-1):
    return [p["type"] for p in server.chat_requests[n].json["messages"][-1]["content"]]


def send(route, request):
    async def go():
        try:
            return await route.send(await asyncio.to_thread(route.prepare, request))
        finally:
            await route.aclose()

    return asyncio.run(go())


def test_servers_are_identified_as_they_name_themselves():
    models = {"data": [{"id": "m", "owned_by": "vllm"}]}
    assert identify(models, None) == "vllm"
    assert identify({"data": [{"id": "m", "owned_by": "sglang"}]}, "uvicorn") == "sglang"
    assert identify({"data": [{"id": "m", "owned_by": "llamacpp"}]}, None) == "llama.cpp"
    assert identify({"object": "list", "data": []}, "llama.cpp") == "llama.cpp"  # every llama.cpp response says so
    for odd in ({"data": [{"id": "m", "owned_by": "openai"}]}, {"data": "x"}, [], None, {"data": [1, None]}):
        assert identify(odd, None) == "other"


@pytest.mark.parametrize(
    ("identity", "model", "delivery", "parts", "kwarg"),
    [
        (sglang_identity(), QWEN, "input_audio", ["video_url", "input_audio", "text"], False),
        (vllm_identity(), QWEN, "in_video", ["video_url", "text"], True),  # the defaults are vLLM's
        (vllm_identity("0.17.1"), QWEN, "input_audio", ["video_url", "input_audio", "text"], False),
        (vllm_identity(), "my-omni", "input_audio", ["video_url", "input_audio", "text"], False),
        (llama_cpp_identity(video=True), "my-omni", "input_audio", ["video_url", "input_audio", "text"], False),
        (None, "my-omni", "in_video", ["video_url", "text"], False),  # a server of no known kind: unchanged
    ],
    ids=["sglang", "vllm", "vllm-0.17", "vllm-other-name", "llama.cpp-video", "unknown"],
)
def test_the_audio_of_a_video_goes_as_the_server_hears_it(small_bench, identity, model, delivery, parts, kwarg):
    with LoopbackServer(identity=identity) as srv:
        route = get_route(model, base_url=srv.base_url, no_key=True, server="auto")
        assert route.settings.audio_delivery == delivery
        response = send(route, ChatRequest(item_id="s1", clip=clip_of(small_bench), text="What is said?"))
        body = srv.chat_requests[-1].json
        assert sent_parts(srv) == parts
        assert ("mm_processor_kwargs" in body) is kwarg
    assert response.delivered.audio and not response.delivered.dropped
    if identity is not None and delivery == "input_audio":
        assert route.server.adapted and "input_audio" in route.server.adapted[0]


def test_llama_cpp_without_video_gets_frames_and_the_track(small_bench):
    with LoopbackServer(identity=llama_cpp_identity()) as srv:
        route = get_route(QWEN, base_url=srv.base_url, no_key=True, server="auto")
        send(route, ChatRequest(item_id="s1", clip=clip_of(small_bench), text="What is said?"))
        parts = sent_parts(srv)
    assert route.settings.media_input == "frames" and describe_delivery(route.settings).startswith("separate")
    assert set(parts) == {"image_url", "input_audio", "text"} and parts.count("input_audio") == 1
    assert route.server.kind == "llama.cpp" and route.server.version == "b6500-0c1e570"
    assert route.server.modalities == {"vision": True, "video": False, "audio": True}
    assert any("frames" in change for change in route.server.adapted)


@pytest.mark.parametrize(
    ("identity", "flags", "says"),
    [
        (sglang_identity(), {"audio_delivery": "in_video"}, "SGLang drops the audio of a video"),
        (llama_cpp_identity(video=True), {"audio_delivery": "in_video"}, "llama.cpp decodes only the frames"),
        (llama_cpp_identity(), {"media_input": "video_url"}, "takes no video"),
        (llama_cpp_identity(vision=False), {}, "takes no images or video"),
        (llama_cpp_identity(audio=False), {}, "takes no audio"),
        (vllm_identity("0.9.2"), {"audio_delivery": "in_video"}, "vLLM 0.9.2 decodes no audio of a video"),
    ],
)
def test_a_delivery_the_server_cannot_take_is_refused_before_sending(identity, flags, says):
    with LoopbackServer(identity=identity) as srv:
        with pytest.raises(ServerMismatch, match=says):
            get_route(QWEN, base_url=srv.base_url, no_key=True, server="auto", **flags)
        assert srv.chat_requests == []


def test_what_can_be_sent_without_audio_or_vision_is_sent_and_said(small_bench):
    with LoopbackServer(identity=llama_cpp_identity(audio=False)) as srv:
        muted = get_route(QWEN, base_url=srv.base_url, no_key=True, server="auto", audio_delivery="none")
        response = send(muted, ChatRequest(item_id="s1", clip=clip_of(small_bench), text="q"))
    assert response.delivered.dropped == ("audio",)  # asked for, and recorded as dropped
    with LoopbackServer(identity=llama_cpp_identity(vision=False)) as srv:
        heard = get_route(QWEN, base_url=srv.base_url, no_key=True, server="auto", media_input="audio")
        response = send(heard, ChatRequest(item_id="s1", clip=clip_of(small_bench), text="q"))
    assert response.delivered.dropped == ("video",)


def test_a_server_that_cannot_be_asked_leaves_the_defaults_and_says_why():
    with LoopbackServer() as srv:  # no models listed at that path: 404
        route = get_route(QWEN, base_url=srv.base_url.replace("/v1", "/elsewhere/v1"), no_key=True, server="auto")
    assert route.server is None and route.settings.audio_delivery == "in_video"
    assert "answered HTTP 404" in route.server_note and "defaults apply unchanged" in route.server_note
    down = get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True, server="auto")
    assert down.server is None and "could not ask the server" in down.server_note
    given = get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True, server="sglang")  # as the flag says
    assert given.settings.audio_delivery == "input_audio" and given.server.source == "--server"
    assert get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True).server is None  # not asked by default


def test_the_key_is_sent_to_ask_and_never_shown(monkeypatch):
    monkeypatch.setenv("MY_KEY", API_KEY)
    with LoopbackServer(identity=sglang_identity(), api_key=API_KEY) as srv:
        route = get_route(QWEN, base_url=srv.base_url, server="auto", api_key_env="MY_KEY")
        asked = [r for r in srv.requests if r.method == "GET"]
    assert route.server.kind == "sglang" and route.server.version == "0.5.23"
    assert asked[0].headers["Authorization"] == f"Bearer {API_KEY}"
    assert API_KEY not in json.dumps(route.server.model_dump(mode="json"))


def test_eval_records_the_server_and_the_change_and_resumes(small_bench, tmp_path):
    out = tmp_path / "run"
    with LoopbackServer(identity=sglang_identity()) as srv:
        args = ["eval", "--bench", str(small_bench.root), "--model", QWEN, "--base-url", srv.base_url, "--no-key"]
        first = runner.invoke(app, [*args, "-o", str(out)])
        assert first.exit_code == 0, first.output
        assert "served by SGLang 0.5.23: audio_delivery in_video -> input_audio" in first.output
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["route"]["settings"]["audio_delivery"] == "input_audio"
        assert manifest["server"]["kind"] == "sglang" and manifest["server"]["source"] == "GET /v1/models"
        assert all("input_audio" in sent_parts(srv, n) for n in range(len(srv.chat_requests)))
        again = runner.invoke(app, [*args, "-o", str(out)])
        assert again.exit_code == 0 and "4 reused" in again.output, again.output
        exported = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "export.json")])
        assert exported.exit_code == 0, exported.output
    text = (tmp_path / "export.json").read_text()
    assert str(srv.port) not in text and '"sglang"' in text


def test_check_route_refuses_in_video_on_sglang_saying_why(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    with LoopbackServer(identity=sglang_identity()) as srv:
        args = ["check-route", "--model", QWEN, "--base-url", srv.base_url, "--no-key", "--audio-delivery", "in-video"]
        result = runner.invoke(app, args)
        assert srv.chat_requests == []
    assert result.exit_code == 2 and "SGLang drops the audio of a video" in result.output


def test_server_info_is_a_record_not_an_identity():
    info = ServerInfo(kind="vllm", version="0.34.0", source="GET /v1/models")
    assert info.label() == "vLLM 0.34.0" and ServerInfo(kind="other", source="--server").label().startswith("an ")


def test_a_hostile_server_cannot_put_the_key_or_a_novel_in_the_manifest(monkeypatch):
    from omnivchat.testing import Identity

    monkeypatch.setenv("MY_KEY", API_KEY)
    echo = Identity(owned_by="vllm", pages={"/version": {"version": f"0.34.0-{API_KEY}-" + "x" * 500}})
    with LoopbackServer(identity=echo) as srv:
        route = get_route(QWEN, base_url=srv.base_url, server="auto", api_key_env="MY_KEY")
    recorded = json.dumps(route.server.model_dump(mode="json"))
    assert API_KEY not in recorded and len(route.server.version) <= 80 and route.server.kind == "vllm"


@pytest.mark.parametrize(
    "page",
    [{"modalities": {"vision": "yes", "audio": None}}, {"modalities": []}, [], "not an object"],
)
def test_a_garbled_props_page_is_read_as_unknown(page):
    from omnivchat.testing import Identity

    odd = Identity(owned_by="llamacpp", server_header="llama.cpp", pages={"/props": page})
    with LoopbackServer(identity=odd) as srv:
        route = get_route("my-omni", base_url=srv.base_url, no_key=True, server="auto")
    assert route.server.kind == "llama.cpp" and not route.server.modalities
    assert route.settings.media_input == "frames" and route.settings.audio_delivery == "input_audio"


def test_a_run_without_the_video_says_so_and_runs_show_says_what_served_it(small_bench, tmp_path):
    out = tmp_path / "run"
    with LoopbackServer(identity=llama_cpp_identity(vision=False)) as srv:
        args = ["eval", "--bench", str(small_bench.root), "--model", "my-omni", "--base-url", srv.base_url]
        ran = runner.invoke(app, [*args, "--no-key", "--media-input-type", "audio", "-o", str(out), "--no-progress"])
    assert ran.exit_code == 0, ran.output
    assert "4 of 4 replies were made without the clip's video" in ran.output
    shown = runner.invoke(app, ["runs", "show", str(out)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "Audio delivery: separate (input_audio WAV part; the video is not delivered)" in shown.output
    assert "Server: llama.cpp b6500-0c1e570 (GET /v1/models)" in shown.output
    assert "4 of 4 replies were made without the clip's video" in shown.output


def test_props_keep_only_the_kinds_read_never_a_servers_own_names(monkeypatch):
    from omnivchat.testing import AUTHORIZATION, Identity

    monkeypatch.setenv("MY_KEY", API_KEY)
    props = {"modalities": {"vision": True, "audio": True, AUTHORIZATION: True, **{f"k{i}": True for i in range(2000)}}}
    hostile = Identity(owned_by="llamacpp", server_header="llama.cpp", pages={"/props": props})
    with LoopbackServer(identity=hostile) as srv:
        route = get_route("my-omni", base_url=srv.base_url, server="auto", api_key_env="MY_KEY")
    assert route.server.modalities == {"vision": True, "audio": True}
    assert API_KEY not in json.dumps(route.server.model_dump(mode="json"))


def test_a_redirect_is_not_followed_with_the_key(monkeypatch):
    from aiohttp import web

    from omnivchat.routes import ask_server

    monkeypatch.setenv("MY_KEY", API_KEY)
    with LoopbackServer(identity=sglang_identity()) as other:
        seen = []

        async def redirect(request):
            seen.append(request.path)
            raise web.HTTPFound(other.base_url + "/models")

        app_ = web.Application()
        app_.router.add_get("/v1/models", redirect)
        with _aiohttp_server(app_) as url:
            said = ask_server(url, API_KEY)
        assert [r for r in other.requests if r.method == "GET"] == []  # the other host was never asked
    assert isinstance(said, str) and "HTTP 302" in said and API_KEY not in said and seen == ["/v1/models"]


def test_a_server_that_trickles_its_answer_is_cut_at_the_bound():
    import asyncio as aio
    import time

    from aiohttp import web

    from omnivchat.routes import ask_server

    async def trickle(request):
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for _ in range(100):
            await response.write(b" ")
            await aio.sleep(0.2)
        return response

    app_ = web.Application()
    app_.router.add_get("/v1/models", trickle)
    with _aiohttp_server(app_) as url:
        started = time.monotonic()
        said = ask_server(url, timeout_s=1.0)
        took = time.monotonic() - started
    assert isinstance(said, str) and took < 5, (said, took)  # each read stays under its timeout: the total is cut


def test_replicas_of_different_servers_are_refused_and_all_are_asked(small_bench):
    with LoopbackServer(identity=vllm_identity()) as a, LoopbackServer(identity=sglang_identity()) as b:
        from omnivchat.routes import ReplicaSpec

        specs = [ReplicaSpec(s.base_url, None, s.base_url) for s in (a, b)]
        with pytest.raises(ServerMismatch, match="different servers"):
            get_route(QWEN, replicas=specs, no_key=True, server="auto")
    with LoopbackServer(identity=sglang_identity()) as a, LoopbackServer(identity=sglang_identity()) as b:
        specs = [ReplicaSpec(s.base_url, None, s.base_url) for s in (a, b)]
        route = get_route(QWEN, replicas=specs, no_key=True, server="auto")
        assert route.settings.audio_delivery == "input_audio"
        assert all(any(r.path.endswith("/models") for r in s.requests) for s in (a, b))


def test_a_name_of_a_hosted_model_sent_to_a_server_of_ones_own_is_asked_too(small_bench):
    # qwen*-omni-* is DashScope's row; with --base-url the server is one's own and says what it is
    with LoopbackServer(identity=sglang_identity()) as srv:
        route = get_route("qwen3-omni-30b-a3b-instruct", base_url=srv.base_url, no_key=True, server="auto")
        send(route, ChatRequest(item_id="s1", clip=clip_of(small_bench), text="q"))
        parts = sent_parts(srv)
    assert route.server.kind == "sglang" and "input_audio" in parts


def test_a_command_asks_once_and_sends_every_route_alike():
    from omnivchat.cli._options import RouteOptions

    with LoopbackServer(identity=sglang_identity()) as srv:
        options = RouteOptions(base_url=[srv.base_url], no_key=True)
        first, second = options.route(QWEN), options.route(QWEN)
        asked = [r for r in srv.requests if r.path.endswith("/models")]
    assert len(asked) == 1 and first.settings == second.settings
    assert second.server.adapted == first.server.adapted and len(first.server.adapted) == 1


@contextlib.contextmanager
def _aiohttp_server(app_):
    """An aiohttp app on 127.0.0.1 in a thread of its own; yields its base URL (``.../v1``)."""
    import asyncio as aio
    import threading

    from aiohttp import web

    ready, stop = threading.Event(), threading.Event()
    where = {}

    def serve():
        async def main():
            runner_ = web.AppRunner(app_)
            await runner_.setup()
            site = web.TCPSite(runner_, "127.0.0.1", 0)
            await site.start()
            where["port"] = site._server.sockets[0].getsockname()[1]
            ready.set()
            while not stop.is_set():
                await aio.sleep(0.05)
            await runner_.cleanup()

        aio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{where['port']}/v1"
    finally:
        stop.set()
        thread.join(10)
