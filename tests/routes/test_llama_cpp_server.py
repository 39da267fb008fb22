"""llama.cpp's own server (tools/server, the C++ ``llama-server`` built by `.ci/llama-server.sh` from the llama
group's llama.cpp sources) on SmolLM2, a text model with no multimodal projector: a real peer for what omnivchat
asks a server (what are you, what do you take) and for the requests it then sends.

Before: a model name outside the defaults table sent the clip as a ``video_url`` part; this server answers that with
HTTP 500 ("video input is not supported"), which was retried four times per item. Now the route asks the server,
learns it is llama.cpp without vision or audio (``/props``) and refuses before anything is sent.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from llama_server import LLAMA_SERVER_ENV, gguf, llama_cpp_binary, llama_cpp_server

from omnivchat.routes import ChatRequest, RouteError, Sampling, ServerMismatch, ask_server, get_route

if llama_cpp_binary() is None or gguf() is None:
    pytest.skip(
        f"llama.cpp's llama-server is not built ({LLAMA_SERVER_ENV}: `.ci/run` builds it with .ci/llama-server.sh) "
        "or the llama group's GGUF is absent (uv sync --group llama)",
        allow_module_level=True,
    )

MODEL = "my-omni"  # a name outside the defaults table: what a user serving a GGUF of their own passes


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-cpp-server") / "server.log"
    try:
        with llama_cpp_server(log, alias=MODEL) as base_url:
            yield base_url
    except RuntimeError as err:
        pytest.fail(str(err))


def _post(base_url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def test_the_server_says_what_it_is_and_takes(server):
    info = ask_server(server)
    assert not isinstance(info, str), info
    assert info.kind == "llama.cpp" and info.source == "GET /v1/models"
    assert info.modalities == {"vision": False, "video": False, "audio": False}  # no --mmproj
    assert info.version and info.version.startswith("b")


def test_what_it_does_with_media_it_cannot_take(server):
    # What the old default sent, answered by the real server: a server error (retried), never a useful reply.
    video = {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}}
    status, body = _post(server, {"model": MODEL, "messages": [{"role": "user", "content": [video]}]})
    assert status == 500 and "video input is not supported" in body["error"]["message"]
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    status, body = _post(server, {"model": MODEL, "messages": [{"role": "user", "content": [audio]}]})
    assert status == 500 and "audio input is not supported" in body["error"]["message"]
    # omnivchat now asks first, and refuses in one line before any clip is read or sent
    with pytest.raises(ServerMismatch, match="takes no images or video"):
        get_route(MODEL, base_url=server, no_key=True, server="auto")
    with pytest.raises(ServerMismatch, match="takes no audio"):
        get_route(MODEL, base_url=server, no_key=True, server="auto", media_input="audio")


def test_a_text_request_with_every_field_omnivchat_sends_is_answered(server):
    # The defaults of a name outside the table (modalities, stream_options) and the self-served thinking switch.
    route = get_route(MODEL, base_url=server, no_key=True, server="auto", media_input="none", thinking=False)
    request = ChatRequest(item_id="t", text="Say hello.", sampling=Sampling(max_tokens=8, temperature=0.0))

    async def go():
        try:
            prepared = await asyncio.to_thread(route.prepare, request)
            assert prepared.description["chat_template_kwargs"] == {"enable_thinking": False}
            assert prepared.description["modalities"] == ["text"]
            return await route.send(prepared)
        finally:
            await route.aclose()

    try:
        response = asyncio.run(go())
    except RouteError as err:  # a reply cut at max_tokens: the server took the body and streamed an answer
        assert err.kind == "length", err
    else:
        assert response.http_status == 200 and response.text
