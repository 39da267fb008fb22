"""A loopback OpenAI-compatible chat-completions server whose behaviour tests program.

Real HTTP and SSE over real sockets on 127.0.0.1 (never another interface): tests script latency, error
statuses with Retry-After, hangs, streams cut mid-way, malformed chunks and so on, then drive a real client
against it. Two ways to run it:

- `LoopbackServer`: in-process, on a background thread with its own event loop, so it works from plain
  pytest functions and from async code alike; it records every request.
- `spawn_loopback` / `python -m omnivchat.testing.loopback`: a separate process, for performance runs where
  client and server must not share one event loop (or one core).

It also answers Gemini's native `POST /{version}/models/{model}:generateContent` from the same `Behaviour`s,
and can echo the caller's own key back (the placeholders `API_KEY`, `AUTHORIZATION`...): a hostile server, to
prove a client never writes the key it was given (see `omnivchat.testing.hostile_behaviours`).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import hashlib
import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Self
from urllib.parse import quote

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

HOST = "127.0.0.1"
"""The only interface the server ever binds: tests never reach beyond the machine."""

DEFAULT_MODEL = "loopback-model"
DEFAULT_TEXT = "Hello from the loopback server."

TextSource = str | Callable[[dict[str, Any]], str]
"""Reply text, or a function of the request JSON returning it (so a test can answer from what was sent)."""

Rules = Callable[[dict[str, Any]], "Behaviour | None"]

# Placeholders a Behaviour's strings may hold (text, reasoning, error_message, error_body, bad_chunk,
# error_in_stream, headers, model, usage, finish_reason, retry_after): each answer replaces them with what that
# very request carried, so a test needs no copy of the key to make the server echo it.
API_KEY = "{{api_key}}"
"""The key the request sent: `Authorization: Bearer KEY`, else `x-goog-api-key`, else `?key=` ("" if none)."""
AUTHORIZATION = "{{authorization}}"
"""The whole `Authorization` header as received (`Bearer KEY`), else the bare key."""
API_KEY_URL = "{{api_key:url}}"
"""The key percent-encoded (every reserved character escaped)."""
API_KEY_BASE64 = "{{api_key:base64}}"
"""The key in base64."""
AUTHORIZATION_BASE64 = "{{authorization:base64}}"
"""The Authorization header in base64, as a proxy might log or echo it."""
API_KEY_SPACED = "{{api_key:spaced}}"
"""The key spelled out, one space between its characters."""
API_KEY_REVERSED = "{{api_key:reversed}}"
"""The key backwards."""
API_KEY_LINES = "{{api_key:lines}}"
"""The key in pieces of 5 characters, one per line: in a `bad_chunk`, one piece per `data:` line of one event."""

_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "model_not_found"),
    408: ("timeout_error", "timeout"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "overloaded"),
    504: ("server_error", "gateway_timeout"),
}


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How the server answers one chat-completions request (streaming or not, as the request asks)."""

    text: TextSource = DEFAULT_TEXT
    """Content of the reply; a callable receives the request JSON. "" gives a reply with no content."""
    reasoning: TextSource | None = None
    """Optional `reasoning_content`, streamed before the content (and set on the non-streaming message)."""
    latency: float = 0.0
    """Seconds before the first byte (headers included), for every status."""
    status: int = 200
    """HTTP status; anything but 200 answers an OpenAI error JSON `{"error": {message, type, code}}`."""
    retry_after: float | str | None = None
    """Sent as `Retry-After` (seconds as given, e.g. "2" or "0.05"; a str is sent verbatim, e.g. an HTTP
    date) and, when numeric, as `retry-after-ms` too, like OpenAI."""
    error_message: str | None = None
    """Message of the error JSON (a default names the status)."""
    finish_reason: str | None = "stop"
    """`finish_reason` of the last choice chunk / the message: "stop", "length", "content_filter", None."""
    cut_after: int | None = None
    """Stream cut mid-way: after this many content chunks (reasoning and content deltas) the connection is
    closed without a finish chunk, usage or [DONE]; the HTTP body is left incomplete, so clients see a
    payload error. Non-streaming: half the JSON body, then the connection closes."""
    cut_clean: bool = False
    """With `cut_after`: end the HTTP body properly instead, so only the missing finish/[DONE] tells."""
    stall_after: int | None = None
    """After this many content chunks, stop sending and keep the connection open until the client leaves
    (tests a client's read timeout mid-stream). Non-streaming: half the JSON body, then the stall."""
    malformed: bool = False
    """Streaming: send one `data:` line that is not valid JSON right after the role chunk, then continue
    normally. Non-streaming: the body is truncated, invalid JSON (with status 200)."""
    hang: bool = False
    """Never answer: no byte is sent until the client gives up (or the server stops)."""
    no_done: bool = False
    """Omit the final `data: [DONE]` (the stream otherwise ends cleanly)."""
    chunk_chars: int | None = 8
    """Split reasoning and content into deltas of this many characters; None sends each in one delta."""
    write_size: int | None = None
    """Raw-bytes mode: render the whole body, then write it in pieces of exactly this many bytes (e.g. 13),
    splitting SSE lines and UTF-8 characters anywhere, to prove a client reassembles across TCP reads.
    Pair with `chunk_interval` so that each piece really travels in its own read."""
    chunk_interval: float = 0.0
    """Seconds between writes (SSE events, or raw pieces with `write_size`). 0 writes the body at once."""
    usage: Mapping[str, Any] | None = None
    """Override of the usage object, sent as given (default: whitespace word counts, not real tokens; Gemini:
    `usageMetadata` with the same counts)."""
    error_in_stream: str | None = None
    """Streaming: after the first content chunk, send `data: {"error": {...}}` with this message, then
    [DONE] (as vLLM does); no finish chunk. Non-streaming: status 200 with an error JSON body."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers."""
    model: str | None = None
    """Model name put in the answer (default: the request's `model`; Gemini: `modelVersion`)."""
    system_fingerprint: str | None = None
    """`system_fingerprint` put in every chunk and in the non-streaming answer (None: left out, as many servers do)."""
    error_body: str | None = None
    """With a status other than 200: this raw body instead of the error JSON (e.g. a proxy's HTML page)."""
    error_content_type: str = "text/html"
    """Content type of `error_body`."""
    bad_chunk: str | None = None
    """Streaming: this text as one event (its lines as `data:` lines) right after the role chunk, where a JSON
    chunk belongs (a proxy's complaint, say), then the stream goes on. Non-streaming: the whole 200 body."""

    audio: bytes | str | None = None
    """A spoken reply (OpenAI's modalities ["text", "audio"]): bytes are sent base64-encoded, as `message.audio.data`
    or, streamed, as `delta.audio.data` pieces of `audio_chunk_bytes` each encoded on its own (OpenAI's and
    DashScope's way); a str is sent verbatim as the data (audio that is not base64, say). None: no audio object."""
    audio_transcript: str | None = None
    """The server's own transcript of `audio` (`message.audio.transcript`; streamed in `chunk_chars` pieces)."""
    audio_chunk_bytes: int = 4800
    """Streaming: audio bytes per `delta.audio` chunk (4800: 0.1 s of 24 kHz 16-bit PCM)."""

    def __post_init__(self) -> None:
        for name in ("chunk_chars", "write_size", "cut_after", "stall_after"):
            value = getattr(self, name)
            minimum = 0 if name in ("cut_after", "stall_after") else 1
            if value is not None and value < minimum:
                raise ValueError(f"Behaviour.{name} must be >= {minimum}, got {value}")
        if self.latency < 0 or self.chunk_interval < 0:
            raise ValueError("Behaviour.latency and chunk_interval must be >= 0")
        if not 100 <= self.status <= 599:
            raise ValueError(f"Behaviour.status must be an HTTP status, got {self.status}")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    """Path without the query string, e.g. "/v1/chat/completions"."""
    headers: CIMultiDictProxy[str]
    """Request headers (case-insensitive lookup)."""
    json: Any
    """Parsed JSON body; None when the body was empty or not JSON."""
    body: bytes
    time: float
    """Arrival time, `time.monotonic()` (comparable to the test's own monotonic clock)."""

    @property
    def stream(self) -> bool:
        """Whether the request asked for a streaming answer."""
        return isinstance(self.json, dict) and bool(self.json.get("stream"))

    @property
    def text(self) -> str:
        """All text of the request's messages (see `message_text`)."""
        return message_text(self.json) if isinstance(self.json, dict) else ""


def message_text(request_json: Mapping[str, Any]) -> str:
    """All text in a chat-completions request's messages, joined by newlines.

    Takes string contents and `{"type": "text"}` parts; media parts are skipped. Handy in `rules` and in
    callable `text` to answer based on what was asked.
    """
    texts: list[str] = []
    for message in request_json.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                part["text"]
                for part in content
                if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)
            )
    return "\n".join(texts)


class _Stopped(Exception):
    """The server is shutting down while a handler waits."""


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _split(text: str, size: int | None) -> list[str]:
    if not text:
        return []
    if size is None:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _google_error(status: int, message: str | None) -> dict[str, Any]:
    """Google's error JSON: `{"error": {code, message, status}}`."""
    text = message or f"loopback: scripted HTTP {status}"
    return {"error": {"code": status, "message": text, "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}}


def _error_body(status: int, message: str | None) -> dict[str, Any]:
    kind, code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message or f"loopback: scripted HTTP {status}", "type": kind, "code": code}}


@dataclass(frozen=True)
class Identity:
    """What the server says of itself, as the real ones do: the owner of its models in ``GET /v1/models``, a
    ``Server`` header on every response, and JSON pages at GET paths of the server's root (vLLM's ``/version``,
    SGLang's ``/server_info``, llama.cpp's ``/props``). Facts from their code: docs/self-serve.md."""

    owned_by: str = "loopback"
    server_header: str | None = None
    pages: Mapping[str, Any] = field(default_factory=dict)


def vllm_identity(version: str = "0.34.0") -> Identity:
    """vLLM's: models owned by ``vllm``, ``GET /version``."""
    return Identity(owned_by="vllm", pages={"/version": {"version": version}})


def sglang_identity(version: str = "0.5.23") -> Identity:
    """SGLang's: models owned by ``sglang``, ``GET /server_info`` (its server arguments and version)."""
    return Identity(owned_by="sglang", pages={"/server_info": {"version": version, "frontend": "python"}})


def llama_cpp_identity(*, vision: bool = True, audio: bool = True, video: bool = False) -> Identity:
    """llama.cpp's server: ``Server: llama.cpp`` on every response, models owned by ``llamacpp``, ``GET /props``
    with the input kinds its model takes (no multimodal projector: no vision, no audio)."""
    props = {"modalities": {"vision": vision, "video": video, "audio": audio}, "build_info": "b6500-0c1e570"}
    return Identity(owned_by="llamacpp", server_header="llama.cpp", pages={"/props": props})


class _Core:
    """State and handlers shared by the threaded server and the process mode."""

    def __init__(
        self,
        default: Behaviour,
        *,
        rules: Rules | None,
        models: Sequence[str],
        api_key: str | None,
        record: bool,
        identity: Identity | None = None,
    ) -> None:
        self.default = default
        self.identity = identity or Identity()
        self.rules = rules
        self.models = tuple(models) or (DEFAULT_MODEL,)
        self.api_key = api_key
        self.record = record
        # Handlers run on the server thread while tests read from theirs.
        self.lock = threading.Lock()
        self.queue: collections.deque[Behaviour] = collections.deque()
        self.requests: list[RecordedRequest] = []
        self.count = 0
        self.errors: list[BaseException] = []
        self._ids = itertools.count(1)
        self._stop: asyncio.Future[None] | None = None

    # -- lifecycle (on the server's loop) ---------------------------------------------------------------

    async def start(self, port: int) -> tuple[web.AppRunner, int]:
        """Bind 127.0.0.1:`port` (0: any free port); returns the runner and the bound port."""
        self._stop = asyncio.get_running_loop().create_future()
        app = web.Application(client_max_size=256 * 1024**2)  # requests carry base64 video
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/audio/transcriptions", self._transcribe)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
        app.router.add_post("/{version}/models/{model}", self._gemini)  # {model} is "NAME:generateContent"
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        app.on_response_prepare.append(self._name_server)
        # handler_cancellation: a client that gives up cancels its handler (hangs end with the client);
        # shutdown_timeout: waiting handlers are released by `_stop` first, so this is only a backstop.
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, HOST, port, backlog=2048, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        server = site._server  # the bound asyncio.Server: the only way to learn port 0's choice
        sockets = getattr(server, "sockets", None)
        assert sockets
        return runner, sockets[0].getsockname()[1]

    async def stop(self, runner: web.AppRunner) -> None:
        """Release every waiting handler, then close all connections."""
        if self._stop is not None and not self._stop.done():
            self._stop.set_result(None)
        await runner.cleanup()

    async def _pause(self, seconds: float | None) -> None:
        """Sleep `seconds` (None: until the server stops); raise `_Stopped` if the server stops first."""
        if seconds is not None and seconds <= 0:
            return
        assert self._stop is not None
        if self._stop.done():
            raise _Stopped
        # asyncio.wait leaves the shared future alone (no cancel), unlike wait_for.
        done, _ = await asyncio.wait((self._stop,), timeout=seconds)
        if done:
            raise _Stopped

    # -- recording and choice -----------------------------------------------------------------------------

    def _record(self, request: web.Request, payload: Any, body: bytes) -> None:
        entry = None
        if self.record:
            entry = RecordedRequest(
                method=request.method,
                path=request.path,
                headers=CIMultiDictProxy(CIMultiDict(request.headers)),
                json=payload,
                body=body,
                time=time.monotonic(),
            )
        with self.lock:
            # Model requests only: a client asking what the server is (GET /models, /props...) sends no request.
            self.count += request.method == "POST"
            if entry is not None:
                self.requests.append(entry)

    def _choose(self, payload: dict[str, Any]) -> Behaviour:
        if self.rules is not None:
            chosen = self.rules(payload)
            if chosen is not None:
                return chosen
        with self.lock:
            return self.queue.popleft() if self.queue else self.default

    # -- handlers -----------------------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.StreamResponse:
        self._record(request, None, b"")
        owner = self.identity.owned_by
        data = [{"id": m, "object": "model", "created": 0, "owned_by": owner} for m in self.models]
        return web.Response(body=_dumps({"object": "list", "data": data}), content_type="application/json")

    async def _name_server(self, request: web.Request, response: web.StreamResponse) -> None:
        if self.identity.server_header is not None:
            response.headers["Server"] = self.identity.server_header

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self._record(request, None, body)
        page = self.identity.pages.get(request.path) if request.method == "GET" else None
        if page is not None:
            return web.Response(body=_dumps(page), content_type="application/json")
        return _json_response(404, _error_body(404, f"loopback: no route {request.method} {request.path}"))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        self._record(request, payload, body)
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _json_response(401, _error_body(401, "loopback: missing or wrong API key"))
        if not isinstance(payload, dict):
            return _json_response(400, _error_body(400, "loopback: the body is not a JSON object"))
        chosen = self._resolve_all(request, payload)
        if isinstance(chosen, web.StreamResponse):
            return chosen
        try:
            return await self._respond(request, payload, *chosen)
        except _Stopped:
            # Server shutting down mid-answer: drop the connection rather than pretend to finish; aiohttp
            # treats a cancelled handler as a client gone, quietly.
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError from None

    def _resolve_all(
        self, request: web.Request, payload: dict[str, Any]
    ) -> tuple[Behaviour, str, str | None] | web.StreamResponse:
        """The behaviour for this request with its texts resolved and the caller's key echoed where asked;
        a 500 answer when a test's own callable failed."""
        try:
            behaviour = self._choose(payload)
            text = _resolve(behaviour.text, payload)
            reasoning = _resolve(behaviour.reasoning, payload) if behaviour.reasoning is not None else None
        except Exception as exc:  # a bug in a test's rules or text callable: report it, don't hide it
            with self.lock:
                self.errors.append(exc)
            return _json_response(500, _error_body(500, f"loopback: test callable raised {exc!r}"))
        echo = _echoer(request)
        return _echoed(behaviour, echo), echo(text), echo(reasoning)

    async def _transcribe(self, request: web.Request) -> web.StreamResponse:
        """OpenAI's ``/audio/transcriptions`` (multipart: file, model, language), answered from the same
        behaviours: ``{"text": text}``; status with error_message or error_body; ``malformed`` cuts the JSON;
        ``bad_chunk`` is sent as the whole 200 body. Rules and text callables see ``{"model", "language",
        "transcription": True, "file_sha256", "file_bytes"}``."""
        body = await request.read()
        payload: dict[str, Any] = {"transcription": True}
        form = _multipart_fields(request.headers.get("Content-Type", ""), body)
        if "file" in form:
            payload["file_sha256"] = hashlib.sha256(form["file"]).hexdigest()
            payload["file_bytes"] = len(form["file"])
        for name in ("model", "language", "response_format"):
            if name in form:
                payload[name] = form[name].decode("utf-8", "replace")
        self._record(request, payload, body)
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _json_response(401, _error_body(401, "loopback: missing or wrong API key"))
        if "file" not in form:
            return _json_response(400, _error_body(400, "loopback: no file part in the transcription request"))
        chosen = self._resolve_all(request, payload)
        if isinstance(chosen, web.StreamResponse):
            return chosen
        b, text, _reasoning = chosen
        failed = await self._wait_then_fail(request, b, _error_body)
        if failed is not None:
            return failed
        headers = _headers(b)
        if b.bad_chunk is not None:
            return _raw_response(200, b.bad_chunk, "text/plain", headers)
        answer = _dumps({"text": text})
        if b.malformed:
            answer = answer[: len(answer) // 2]
        return web.Response(status=200, body=answer, content_type="application/json", headers=headers)

    async def _wait_then_fail(
        self, request: web.Request, b: Behaviour, error_body: Callable[[int, str | None], dict[str, Any]]
    ) -> web.StreamResponse | None:
        """A non-streaming answer's wait (hang, latency; a server stopping meanwhile cuts the connection), then the
        behaviour's HTTP error in the route's own error form (``error_body``), or None to answer normally."""
        try:
            if b.hang:
                await self._pause(None)
            await self._pause(b.latency)
        except _Stopped:
            if request.transport is not None:
                request.transport.close()
            raise asyncio.CancelledError from None
        if b.status == 200:
            return None
        if b.error_body is not None:
            return _raw_response(b.status, b.error_body, b.error_content_type, _headers(b))
        return _json_response(b.status, error_body(b.status, b.error_message), _headers(b))

    async def _gemini(self, request: web.Request) -> web.StreamResponse:
        """Gemini's native generateContent (what the google-genai SDK calls), answered from the same
        behaviours: text, reasoning (a thought part), status with error_message or error_body, finish_reason,
        usage, model, headers, latency, hang and bad_chunk. Streaming-only fields do not apply."""
        body = await request.read()
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        self._record(request, payload, body)
        name, _, method = request.match_info["model"].partition(":")
        if method != "generateContent":
            return _json_response(404, _google_error(404, f"loopback: no method {method or '(none)'}"))
        if self.api_key is not None and request.headers.get("x-goog-api-key") != self.api_key:
            return _json_response(401, _google_error(401, "loopback: missing or wrong API key"))
        if not isinstance(payload, dict):
            return _json_response(400, _google_error(400, "loopback: the body is not a JSON object"))
        chosen = self._resolve_all(request, payload)
        if isinstance(chosen, web.StreamResponse):
            return chosen
        b, text, reasoning = chosen
        failed = await self._wait_then_fail(request, b, _google_error)
        if failed is not None:
            return failed
        headers = _headers(b)
        if b.bad_chunk is not None:
            return web.Response(body=b.bad_chunk.encode(), content_type="application/json", headers=headers)
        if b.error_in_stream is not None:
            return _json_response(200, _google_error(500, b.error_in_stream), headers)
        parts: list[dict[str, Any]] = [{"text": reasoning, "thought": True}] if reasoning else []
        parts.append({"text": text})
        finish = {"stop": "STOP", "length": "MAX_TOKENS"}.get(b.finish_reason or "", b.finish_reason)
        if b.usage is not None:
            usage = dict(b.usage)
        else:
            prompt = len(json.dumps(payload.get("contents", "")).split())
            completion = len(text.split())
            total = prompt + completion
            usage = {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": total}
        answer = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": b.model or name,
        }
        return _json_response(200, answer, headers)

    async def _respond(
        self, request: web.Request, payload: dict[str, Any], b: Behaviour, text: str, reasoning: str | None
    ) -> web.StreamResponse:
        if b.hang:
            await self._pause(None)
        await self._pause(b.latency)
        headers = _headers(b)
        if b.status != 200:
            if b.error_body is not None:
                return _raw_response(b.status, b.error_body, b.error_content_type, headers)
            return _json_response(b.status, _error_body(b.status, b.error_message), headers)

        model = b.model or str(payload.get("model") or self.models[0])
        ident = f"chatcmpl-loopback-{next(self._ids)}"
        created = int(time.time())
        if b.usage is not None:
            usage = dict(b.usage)
        else:
            prompt = len(message_text(payload).split())
            completion = len(text.split()) + len((reasoning or "").split())
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

        if not payload.get("stream"):
            return await self._complete(request, b, headers, ident, created, model, text, reasoning, usage)

        def event(obj: Any) -> bytes:
            return b"data: " + (obj if isinstance(obj, bytes) else _dumps(obj)) + b"\n\n"

        options = payload.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            obj: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if include_usage:  # OpenAI puts "usage": null on every chunk but the last
                obj["usage"] = None
            if b.system_fingerprint is not None:
                obj["system_fingerprint"] = b.system_fingerprint
            return event(obj)

        head = [chunk({"role": "assistant", "content": ""})]
        if b.bad_chunk is not None:
            head.append(b"".join(b"data: " + line.encode() + b"\n" for line in b.bad_chunk.split("\n")) + b"\n")
        if b.malformed:
            head.append(event(b'{"id":"' + ident.encode() + b'","choices":[{"index":0,"delta":{"content":"tru'))
        thoughts = [chunk({"reasoning_content": p}) for p in _split(reasoning or "", b.chunk_chars)]
        words = [chunk({"content": p}) for p in _split(text, b.chunk_chars)]
        pieces = thoughts + words + [chunk({"audio": a}) for a in _audio_deltas(b, ident)]
        tail: list[bytes] = []
        if b.error_in_stream is not None:
            pieces = [*thoughts, *words[:1], event(_error_body(500, b.error_in_stream))]
        else:
            tail.append(chunk({}, b.finish_reason))
            if include_usage:
                tail.append(
                    event(
                        {
                            "id": ident,
                            "object": "chat.completion.chunk",
                            "created": created,
                            "model": model,
                            "choices": [],
                            "usage": usage,
                        }
                    )
                )
        if not b.no_done:
            tail.append(b"data: [DONE]\n\n")

        limit = b.cut_after if b.cut_after is not None else b.stall_after
        events = head + pieces[:limit] if limit is not None else head + pieces + tail

        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", **headers}
        )
        await resp.prepare(request)
        await self._write(resp, events, b)
        if b.cut_after is not None and not b.cut_clean:
            return await self._cut(request, resp)
        if b.cut_after is None and b.stall_after is not None:
            await self._pause(None)
        await resp.write_eof()
        return resp

    async def _complete(
        self,
        request: web.Request,
        b: Behaviour,
        headers: dict[str, str],
        ident: str,
        created: int,
        model: str,
        text: str,
        reasoning: str | None,
        usage: dict[str, Any],
    ) -> web.StreamResponse:
        """The non-streaming answer: one `chat.completion` JSON."""
        if b.bad_chunk is not None:
            return web.Response(body=b.bad_chunk.encode(), content_type="application/json", headers=headers)
        if b.error_in_stream is not None:
            body = _dumps(_error_body(500, b.error_in_stream))
        else:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if reasoning is not None:
                message["reasoning_content"] = reasoning
            if b.audio is not None:
                message["audio"] = {
                    "id": f"audio-{ident}",
                    "data": b.audio if isinstance(b.audio, str) else base64.b64encode(b.audio).decode(),
                    "expires_at": created + 3600,
                    "transcript": b.audio_transcript or "",
                }
            body = _dumps(
                {
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": b.finish_reason}],
                    "usage": usage,
                    **({} if b.system_fingerprint is None else {"system_fingerprint": b.system_fingerprint}),
                }
            )
        if b.malformed:
            body = body[: max(1, len(body) // 2)]
        if b.stall_after is None and b.cut_after is None and b.write_size is None and not b.chunk_interval:
            return web.Response(body=body, content_type="application/json", headers=headers)
        resp = web.StreamResponse(headers={"Content-Type": "application/json", **headers})
        resp.content_length = len(body)
        await resp.prepare(request)
        if b.cut_after is not None or b.stall_after is not None:
            await resp.write(body[: len(body) // 2])
            if b.cut_after is not None:
                return await self._cut(request, resp)
            await self._pause(None)
        await self._write(resp, [body], b)
        await resp.write_eof()
        return resp

    async def _write(self, resp: web.StreamResponse, events: list[bytes], b: Behaviour) -> None:
        if b.write_size is not None:
            data = b"".join(events)
            events = [data[i : i + b.write_size] for i in range(0, len(data), b.write_size)]
        elif not b.chunk_interval:
            events = [b"".join(events)]  # one write: the cheapest path, for overhead measurements
        for i, piece in enumerate(events):
            if i and b.chunk_interval:
                await self._pause(b.chunk_interval)
            if piece:
                await resp.write(piece)

    async def _cut(self, request: web.Request, resp: web.StreamResponse) -> web.StreamResponse:
        """Close the connection mid-body: what a crashed upstream or a dropped proxy looks like."""
        if request.transport is not None:
            request.transport.close()  # close, not abort: what was written is still delivered first
        # The closed connection cancels this handler (handler_cancellation); wait for that.
        await self._pause(None)
        return resp


def _audio_deltas(b: Behaviour, ident: str) -> list[dict[str, Any]]:
    """The `delta.audio` objects of a streamed spoken reply: its transcript pieces, then its data pieces."""
    if b.audio is None:
        return []
    name = f"audio-{ident}"
    deltas: list[dict[str, Any]] = [
        {"id": name, "transcript": p} for p in _split(b.audio_transcript or "", b.chunk_chars)
    ]
    if isinstance(b.audio, str):
        deltas.append({"id": name, "data": b.audio})
    else:
        size = max(1, b.audio_chunk_bytes)
        deltas += [
            {"id": name, "data": base64.b64encode(b.audio[i : i + size]).decode()} for i in range(0, len(b.audio), size)
        ]
    return deltas


def _multipart_fields(content_type: str, body: bytes) -> dict[str, bytes]:
    """The parts of a multipart/form-data body by name (what a transcription request holds)."""
    import email.parser
    import email.policy

    if not content_type.startswith("multipart/form-data"):
        return {}
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            data = part.get_payload(decode=True)
            fields[name] = data if isinstance(data, bytes) else b""
    return fields


def _resolve(source: TextSource, payload: dict[str, Any]) -> str:
    text = source(payload) if callable(source) else source
    if not isinstance(text, str):
        raise TypeError(f"a Behaviour text callable must return str, got {type(text).__name__}")
    return text


def _json_response(status: int, obj: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=_dumps(obj), content_type="application/json", headers=headers)


def _raw_response(status: int, text: str, content_type: str, headers: Mapping[str, str]) -> web.Response:
    return web.Response(status=status, body=text.encode(), headers={**headers, "Content-Type": content_type})


def _headers(b: Behaviour) -> dict[str, str]:
    headers = dict(b.headers)
    if b.retry_after is not None:
        headers["Retry-After"] = b.retry_after if isinstance(b.retry_after, str) else f"{b.retry_after:g}"
        if not isinstance(b.retry_after, str):
            headers["retry-after-ms"] = str(round(b.retry_after * 1000))
    return headers


def _echoer(request: web.Request) -> Callable[[Any], Any]:
    """A function replacing the key placeholders, in strings and inside dicts and lists, with what ``request``
    carried: the server learns the key from the request it received, never from the test."""
    authorization = request.headers.get("Authorization", "")
    if authorization.startswith("Bearer "):
        key = authorization.removeprefix("Bearer ").strip()
    else:
        key = request.headers.get("x-goog-api-key") or request.query.get("key") or ""
    authorization = authorization or key
    table = {
        API_KEY: key,
        AUTHORIZATION: authorization,
        API_KEY_URL: quote(key, safe=""),
        API_KEY_BASE64: base64.b64encode(key.encode()).decode(),
        AUTHORIZATION_BASE64: base64.b64encode(authorization.encode()).decode(),
        API_KEY_SPACED: " ".join(key),
        API_KEY_REVERSED: key[::-1],
        API_KEY_LINES: "\n".join(key[i : i + 5] for i in range(0, len(key), 5)),
    }

    def echo(value: Any) -> Any:
        if isinstance(value, str):
            if "{{" in value:
                for placeholder, actual in table.items():
                    value = value.replace(placeholder, actual)
            return value
        if isinstance(value, Mapping):
            return {echo(k): echo(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [echo(v) for v in value]
        return value

    return echo


def _echoed(b: Behaviour, echo: Callable[[Any], Any]) -> Behaviour:
    """``b`` with the key placeholders of every string it sends replaced (the texts are resolved apart)."""
    names: tuple[str, ...] = ("error_message", "error_body", "bad_chunk", "error_in_stream", "model", "finish_reason")
    names += ("system_fingerprint", "audio_transcript")
    changes: dict[str, Any] = {n: echo(getattr(b, n)) for n in names if isinstance(getattr(b, n), str)}
    if b.headers:
        changes["headers"] = echo(b.headers)
    if b.usage is not None:
        changes["usage"] = echo(b.usage)
    if isinstance(b.retry_after, str):
        changes["retry_after"] = echo(b.retry_after)
    return replace(b, **changes) if changes else b


class LoopbackServer:
    """An OpenAI-compatible server on 127.0.0.1 (a free port), on its own thread and event loop.

    Answers `POST {base_url}/chat/completions` (streaming or not) and `GET {base_url}/models`, and Gemini's
    `POST {url}/{version}/models/{model}:generateContent` (point the Gemini route's base URL at `url`). Which
    `Behaviour` answers a request: `rules(request_json)` if it returns one, else the next scripted one
    (`script`, in arrival order), else `default`. Use it as a context manager, sync or async:

        with LoopbackServer(Behaviour(text="yes")) as server:
            ...  # point a client at server.base_url
            assert server.count == 1
    """

    def __init__(
        self,
        default: Behaviour | None = None,
        *,
        rules: Rules | None = None,
        models: Sequence[str] = (DEFAULT_MODEL,),
        api_key: str | None = None,
        record: bool = True,
        port: int = 0,
        identity: Identity | None = None,
    ) -> None:
        """`api_key`: if set, requests without `Authorization: Bearer <api_key>` get 401 (use a fake key).
        `record`: keep every request in `requests` (turn off for long perf runs; `count` still counts).
        `identity`: what it says of itself (:func:`vllm_identity`, :func:`sglang_identity`, :func:`llama_cpp_identity`;
        default: a server of no known kind)."""
        self._core = _Core(
            default or Behaviour(), rules=rules, models=models, api_key=api_key, record=record, identity=identity
        )
        self._port = port
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._shutdown: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self.port: int = 0
        """The bound port (after start)."""

    # -- programming ---------------------------------------------------------------------------------

    @property
    def default(self) -> Behaviour:
        """The behaviour used when no rule matches and the script is empty."""
        return self._core.default

    @default.setter
    def default(self, value: Behaviour) -> None:
        self._core.default = value

    @property
    def rules(self) -> Rules | None:
        """`callable(request_json) -> Behaviour | None`, consulted first for every chat request."""
        return self._core.rules

    @rules.setter
    def rules(self, value: Rules | None) -> None:
        self._core.rules = value

    def script(self, *behaviours: Behaviour) -> Self:
        """Queue behaviours for the next chat requests, in arrival order (after those already queued)."""
        with self._core.lock:
            self._core.queue.extend(behaviours)
        return self

    @property
    def pending(self) -> int:
        """Scripted behaviours not consumed yet."""
        with self._core.lock:
            return len(self._core.queue)

    # -- observing -----------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far (all paths), in arrival order."""
        with self._core.lock:
            return list(self._core.requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat-completions requests only."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def count(self) -> int:
        """Number of model requests (POSTs: chat, transcription, Gemini) received so far; the GETs that ask what
        the server is (``/models``, ``/props``...) are recorded in ``requests`` but not counted."""
        with self._core.lock:
            return self._core.count

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by the test's own `rules` or `text` callables (each also answered a 500)."""
        with self._core.lock:
            return list(self._core.errors)

    def clear(self) -> None:
        """Forget recorded requests, the count, errors and any scripted behaviours left."""
        with self._core.lock:
            self._core.requests.clear()
            self._core.queue.clear()
            self._core.errors.clear()
            self._core.count = 0

    @property
    def url(self) -> str:
        """Root URL, e.g. `http://127.0.0.1:PORT`."""
        if not self.port:
            raise RuntimeError("LoopbackServer is not started")
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL, e.g. `http://127.0.0.1:PORT/v1`."""
        return self.url + "/v1"

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start serving; returns once the port is bound."""
        if self._thread is not None:
            raise RuntimeError("LoopbackServer already started")
        self._thread = threading.Thread(target=self._run, name="omnivchat-loopback", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise self._startup_error
        return self

    def close(self) -> None:
        """Stop serving: release waiting handlers, close connections, join the thread. Idempotent."""
        thread, loop, shutdown = self._thread, self._loop, self._shutdown
        if thread is None:
            return
        if loop is not None and shutdown is not None:
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(shutdown.set)
        thread.join(timeout=30)
        if thread.is_alive():
            raise RuntimeError("LoopbackServer thread did not stop")
        self._thread = None

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._shutdown = asyncio.Event()
        try:
            runner, self.port = await self._core.start(self._port)
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._shutdown.wait()
        finally:
            await self._core.stop(runner)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        # Starting takes a thread hop; keep the caller's loop free meanwhile.
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.close)

    def __repr__(self) -> str:
        where = self.base_url if self.port else "not started"
        return f"LoopbackServer({where}, count={self.count}, pending={self.pending})"


# -- process mode -------------------------------------------------------------------------------------------


async def serve_forever(
    default: Behaviour, *, port: int = 0, announce: Callable[[str], None] = print, models: Sequence[str] = ()
) -> None:
    """Serve `default` for every request until SIGINT/SIGTERM (or cancellation); announce the base URL.

    This is the process mode behind `python -m omnivchat.testing.loopback`; nothing is recorded.
    """
    core = _Core(default, rules=None, models=models or (DEFAULT_MODEL,), api_key=None, record=False)
    runner, bound = await core.start(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread / no signals
            loop.add_signal_handler(sig, stop.set)
    try:
        announce(f"http://{HOST}:{bound}/v1")
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await core.stop(runner)


class LoopbackProcess:
    """A loopback server in a child process (see `spawn_loopback`); a context manager that stops it."""

    def __init__(self, base_url: str, process: subprocess.Popen[bytes]) -> None:
        self.base_url = base_url
        """e.g. `http://127.0.0.1:PORT/v1`."""
        self.process = process

    def close(self, timeout: float = 10.0) -> None:
        """Stop the child (SIGTERM, then SIGKILL after `timeout`) and reap it. Idempotent."""
        proc = self.process
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LoopbackProcess({self.base_url}, pid={self.process.pid})"


def process_args(
    *,
    latency: float = 0.0,
    text: str = DEFAULT_TEXT,
    reasoning: str | None = None,
    chunk_chars: int | None = 8,
    write_size: int | None = None,
    chunk_interval: float = 0.0,
    finish_reason: str = "stop",
    status: int = 200,
    retry_after: float | None = None,
    port: int = 0,
) -> list[str]:
    """Command-line arguments of `python -m omnivchat.testing.loopback` for these settings."""
    args = ["--port", str(port), "--latency", repr(latency), "--text", text, "--finish-reason", finish_reason]
    args += ["--chunk-chars", str(chunk_chars or 0), "--chunk-interval", repr(chunk_interval), "--status", str(status)]
    if reasoning is not None:
        args += ["--reasoning", reasoning]
    if write_size is not None:
        args += ["--write-size", str(write_size)]
    if retry_after is not None:
        args += ["--retry-after", repr(retry_after)]
    return args


def spawn_loopback(
    *, startup_timeout: float = 30.0, extra_args: Iterable[str] = (), **settings: Any
) -> LoopbackProcess:
    """Start `python -m omnivchat.testing.loopback` in a child process and wait for its base URL.

    `settings` are those of `process_args` (latency, text, chunk_chars, ...). Use the result as a context
    manager so that the child is always stopped:

        with spawn_loopback(latency=0.2) as server:
            ...  # server.base_url
    """
    command = [sys.executable, "-m", "omnivchat.testing.loopback", *process_args(**settings), *extra_args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    first: list[bytes] = []
    # readline has no timeout; a short-lived reader thread gives it one (it ends when the child does).
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]  # stdout is a pipe: the child was started with stdout=PIPE
    reader.start()
    reader.join(startup_timeout)
    line = first[0].decode().strip() if first else ""
    if not line.startswith("http://"):
        LoopbackProcess("", proc).close(timeout=2.0)
        reader.join(5)
        raise RuntimeError(f"loopback server process did not start (exit code {proc.returncode}, said {line!r})")
    return LoopbackProcess(line, proc)
