"""The native Gemini route (google-genai) against a loopback server speaking the generateContent REST API."""

from __future__ import annotations

import asyncio
import base64
import threading

import pytest

pytest.importorskip("google.genai")

from aiohttp import web

from omnivchat.routes import ChatRequest, RouteError, Sampling, Secret, get_route


class FakeGemini:
    """generateContent on 127.0.0.1, answering from a queue of (status, body) and recording requests."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.answers: list[tuple[int, dict]] = []
        self.uploaded = b""
        self.polls = 0
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{version}/models/{model}", self._generate)
        # The Files API's resumable upload: start, then chunks to the session URL, then polling the file's state.
        app.router.add_post("/upload/{version}/files", self._start_upload)
        app.router.add_post("/upload-session/{id}", self._upload_chunk)
        app.router.add_get("/{version}/files/{id}", self._get_file)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _generate(self, request: web.Request) -> web.Response:
        self.requests.append({"path": request.path, "headers": dict(request.headers), "json": await request.json()})
        status, body = self.answers.pop(0) if self.answers else (200, reply("A red square, and you asked a question."))
        return web.json_response(body, status=status)

    def _file(self, state: str) -> dict:
        uri = f"http://127.0.0.1:{self.port}/v1beta/files/clip1"
        return {"name": "files/clip1", "uri": uri, "mimeType": "video/mp4", "state": state}

    async def _start_upload(self, request: web.Request) -> web.Response:
        url = f"http://127.0.0.1:{self.port}/upload-session/clip1"
        return web.json_response({}, headers={"x-goog-upload-url": url})

    async def _upload_chunk(self, request: web.Request) -> web.Response:
        self.uploaded += await request.read()
        if "finalize" in request.headers.get("X-Goog-Upload-Command", ""):
            headers = {"X-Goog-Upload-Status": "final"}
            return web.json_response({"file": self._file("PROCESSING")}, headers=headers)
        return web.json_response({}, headers={"X-Goog-Upload-Status": "active"})

    async def _get_file(self, request: web.Request) -> web.Response:
        self.polls += 1
        return web.json_response(self._file("ACTIVE" if self.polls > 1 else "PROCESSING"))

    def __enter__(self) -> FakeGemini:
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def reply(text: str, finish: str = "STOP") -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 8, "totalTokenCount": 108},
    }


def ask(route, request):
    async def go():
        try:
            return await route.send(route.prepare(request))
        finally:
            await route.aclose()

    return asyncio.run(go())


def test_clip_goes_inline_with_its_audio_and_fps(small_bench):
    clip = small_bench.media_path(small_bench.get("s1").turns[0])
    with FakeGemini() as server:
        route = get_route(
            "gemini:gemini-test", api_key=Secret("g-key"), base_url=f"http://127.0.0.1:{server.port}", thinking=False
        )
        response = ask(
            route,
            ChatRequest(
                item_id="s1",
                system_prompt="Be brief.",
                clip=clip,
                text="Answer.",
                sampling=Sampling(temperature=0.0, max_tokens=100),
            ),
        )
    assert response.text == "A red square, and you asked a question."
    assert response.usage == {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108}
    assert response.delivered.video and response.delivered.audio
    sent = server.requests[0]
    assert sent["path"].endswith("/models/gemini-test:generateContent")
    assert sent["headers"].get("x-goog-api-key") == "g-key"
    video, text = sent["json"]["contents"][-1]["parts"]
    inline = video["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "video/mp4" and video["videoMetadata"]["fps"] == 2.0
    data = inline["data"]  # the SDK sends URL-safe base64 without padding
    assert base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)) == clip.read_bytes()
    assert text == {"text": "Answer."}
    config = sent["json"]["generationConfig"]
    assert config["temperature"] == 0.0 and config["maxOutputTokens"] == 100
    thinking = config["thinkingConfig"]
    assert thinking.get("thinkingBudget", thinking.get("thinking_budget")) == 0
    assert sent["json"]["systemInstruction"]["parts"][0]["text"] == "Be brief."


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ((429, {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}), "rate_limited"),
        ((503, {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}), "server_error"),
        ((400, {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}), "http_error"),
        ((200, reply("cut", "MAX_TOKENS")), "length"),
        ((200, reply("", "SAFETY")), "bad_finish"),
    ],
)
def test_failures_are_classified(answer, kind):
    with FakeGemini() as server:
        server.answers.append(answer)
        route = get_route("gemini:gemini-test", api_key=Secret("g-key"), base_url=f"http://127.0.0.1:{server.port}")
        with pytest.raises(RouteError) as info:
            ask(route, ChatRequest(item_id="t", text="hello"))
    assert info.value.kind == kind
    assert "g-key" not in info.value.message


def test_a_large_clip_goes_through_the_files_api_and_waits_for_active(small_bench):
    clip = small_bench.media_path(small_bench.get("s1").turns[0])
    with FakeGemini() as server:
        route = get_route(
            "gemini:gemini-test",
            api_key=Secret("g-key"),
            base_url=f"http://127.0.0.1:{server.port}",
            inline_max_bytes=1000,
        )  # anything bigger is uploaded
        response = ask(route, ChatRequest(item_id="s1", clip=clip, text="Answer."))
    assert response.text and server.uploaded == clip.read_bytes() and server.polls == 2
    video = server.requests[0]["json"]["contents"][-1]["parts"][0]
    data = video.get("fileData") or video.get("file_data")
    assert data[next(k for k in data if k.lower().replace("_", "") == "fileuri")].endswith("/files/clip1")


def test_an_audio_only_item_goes_as_a_wav_part(tmp_path):
    """A WAV or MP3 item (byo allows them) is its track alone, as audio/wav: never 'no video stream'."""
    from omnivchat import media

    clip = tmp_path / "tone.mp3"
    media.run_ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "libmp3lame", str(clip)])
    with FakeGemini() as server:
        route = get_route("gemini:gemini-test", api_key=Secret("g-key"), base_url=f"http://127.0.0.1:{server.port}")
        response = ask(route, ChatRequest(item_id="a1", clip=clip, text="What do you hear?"))
    assert response.delivered.audio and not response.delivered.video
    audio, text = server.requests[0]["json"]["contents"][-1]["parts"]
    inline = audio["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "audio/wav" and "videoMetadata" not in audio
    data = base64.urlsafe_b64decode(inline["data"] + "=" * (-len(inline["data"]) % 4))
    sent = tmp_path / "sent.wav"
    sent.write_bytes(data)
    info = media.probe(sent)
    assert not info.has_video and info.sample_rate == 16000 and info.duration == pytest.approx(2.0, abs=0.1)
    assert text == {"text": "What do you hear?"}
