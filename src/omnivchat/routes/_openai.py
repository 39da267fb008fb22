"""The route for every server speaking OpenAI chat completions: DashScope, vLLM, SGLang, llama.cpp, Gemini's
compatible endpoint. A lean aiohttp client with its own SSE parsing (chosen by measurement: see the routes issue).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from omnivchat._canonical import sha256_json
from omnivchat.errors import OmnivchatError
from omnivchat.routes._audio import AudioCollector
from omnivchat.routes._base import Prepared
from omnivchat.routes._credentials import Secret
from omnivchat.routes._defaults import RouteSettings
from omnivchat.routes._media_parts import MediaStore, clip_parts
from omnivchat.routes._redact import Redactor
from omnivchat.routes._replicas import Failure, Replica, ReplicaSet
from omnivchat.routes._server import ServerInfo
from omnivchat.routes._sse import SSEParser
from omnivchat.routes._thinking import gemini_thinking
from omnivchat.routes._types import ChatRequest, ChatResponse, Delivered, RouteError, retry_after_s, status_kind


class ConfigError(OmnivchatError, ValueError):
    """The route is misconfigured (a URL with credentials, no base URL...)."""


class _Unreachable(RouteError):
    """No connection could be made (refused, unresolvable, TLS): a replica that is down."""


class _Refused(Exception):
    """A replica refused the connection and is drained: send the same request to another (internal)."""


# Failures that say a replica is unwell (counted towards draining it); a refused connection drains it at once.
_UNHEALTHY = frozenset({"server_error", "request_timeout", "timeout", "connection", "stream_cut", "malformed"})


def _health(err: RouteError) -> Failure:
    if isinstance(err, _Unreachable):
        return "refused"
    return "unhealthy" if err.kind in _UNHEALTHY else "other"


def _join(base_url: str, suffix: str) -> str:
    """``base_url`` (up to /v1, maybe with a query) with ``suffix`` appended to its path, the query kept."""
    parts = urlsplit(base_url)
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}{suffix}{query}"


def _check_provider(settings: RouteSettings, model_id: str) -> None:
    """What a provider documents it refuses, refused before anything is sent: DashScope's Qwen-Omni takes one
    media type per user message (help.aliyun.com/zh/model-studio/qwen-omni), so a clip cannot go with a second,
    separate track (it reads the video's own)."""
    host = (urlsplit(settings.base_url or "").hostname or "").rstrip(".")
    if not host.endswith("aliyuncs.com"):
        return
    separate = settings.audio_delivery == "input_audio" and settings.media_input in ("video_url", "file")
    if separate or (settings.media_input == "frames" and settings.audio_delivery != "none"):
        what = "the video and a WAV part" if separate else "JPEG frames and a WAV part"
        raise ConfigError(
            f"{model_id} on DashScope takes one media type per message, and these settings would send {what}: use "
            "--audio-delivery in-video with the video (DashScope reads its own track), or frames with "
            "--audio-delivery none (runs say the audio was not delivered)"
        )


def _check_base_url(base_url: str | None, model_id: str) -> str:
    if not base_url:
        raise ConfigError(f"no base URL for {model_id}: pass --base-url (e.g. http://127.0.0.1:8000/v1)")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base URL must be http(s)://host/...; got scheme {parts.scheme!r}")
    if parts.username or parts.password:
        raise ConfigError("base URL must not embed credentials; use --key-file/--key-field or the environment")
    return base_url


class OpenAIRoute:
    """An OpenAI-compatible chat-completions endpoint; one aiohttp session per route."""

    def __init__(
        self,
        model_id: str,
        settings: RouteSettings,
        api_key: Secret | None = None,
        *,
        trust_env: bool = False,
        replicas: ReplicaSet | None = None,
    ) -> None:
        """``trust_env``: send through HTTP_PROXY / HTTPS_PROXY (NO_PROXY honoured), as judges do; a model under
        test goes direct by default. Not a setting of the run: a proxy changes the path, never the request.

        ``replicas``: send to these servers instead of ``settings.base_url`` (see :mod:`omnivchat.routes._replicas`);
        the endpoint, and so request keys, then name the API path only, not where it is served."""
        self.model_id = model_id
        self.settings = settings
        self.trust_env = trust_env
        self.replicas = replicas
        self._base_url = replicas.replicas[0].url if replicas else _check_base_url(settings.base_url, model_id)
        _check_provider(settings, model_id)
        # Gemini's switch, refused here for a model that cannot honour it (before any request)
        self._google_thinking = (
            gemini_thinking(model_id, settings.thinking) if settings.thinking_switch == "google" else None
        )
        self._api_key = api_key
        self._redactor = Redactor(api_key)
        self._session: Any = None
        self._environment: dict[str, _Trusted] = {}  # URL -> what trust_env adds to a request to it
        self._failed_on: dict[str, str] = {}  # request key -> the replica its last attempt failed on
        self.server: ServerInfo | None = None
        """What serves the model, when known (``get_route(server=...)``): recorded in manifests and route checks."""
        self.server_note: str | None = None
        """Why the server could not be asked what it is, when it could not."""

    @property
    def endpoint(self) -> str:
        if self.replicas is not None:
            return self.replicas.identity
        parts = urlsplit(self._base_url)
        return f"{parts.scheme}://{parts.hostname}{parts.path.rstrip('/')}/chat/completions"

    @property
    def key_is_placeholder(self) -> bool:
        """The key sent is a placeholder (EMPTY, none...), not a secret: replies are not masked for it."""
        return self._redactor.placeholder

    @property
    def capacity(self) -> int:
        """Requests this route can have in flight: the replicas' concurrencies together, or the model's."""
        return self.replicas.capacity if self.replicas is not None else self.settings.max_concurrency

    @property
    def _url(self) -> str:
        return _join(self._base_url, "/chat/completions")

    # ------------------------------------------------------------------------------------------ building

    def prepare(self, request: ChatRequest) -> Prepared:
        """Fit and describe the media, build the payload with placeholders, and hash it with the endpoint."""
        store = MediaStore()
        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        clips: list[Delivered] = []  # what each clip of the request delivers, history included
        for turn in request.history:
            parts: list[dict[str, Any]] = []
            if turn.clip is not None:
                parts, got = clip_parts(turn.clip, self.settings, store)
                clips.append(got)
            if turn.text:
                parts.append({"type": "text", "text": turn.text})
            # A turn left without media (the "neither: none" ablation) is an empty user turn, not an empty list,
            # which servers refuse.
            messages.append({"role": "user", "content": parts or ""})
            messages.append({"role": "assistant", "content": turn.reply})
        delivered = Delivered()
        final: list[dict[str, Any]] = []
        if request.clip is not None:
            final, delivered = clip_parts(request.clip, self.settings, store)
            clips.append(delivered)
        if request.text:
            final.append({"type": "text", "text": request.text})
        if not final:
            raise RouteError("unsupported", f"item {request.item_id}: a request needs a clip or a text part")
        text_only = all(part["type"] == "text" for part in final) and not request.history
        # A text-only request is sent as a plain string: every server, llama.cpp included, reads that.
        messages.append({"role": "user", "content": request.text if text_only else final})
        payload = self._payload(messages, request, audio_in_video=self._ask_audio_in_video(request, clips))
        key = sha256_json({"endpoint": self.endpoint, "payload": payload})
        return Prepared(key=key, request=request, description=payload, media=store, delivered=delivered)

    def _ask_audio_in_video(self, request: ChatRequest, clips: list[Delivered]) -> bool:
        """Whether to ask the server to decode the audio of the videos (vLLM's use_audio_in_video): with in-video
        delivery on a route that needs asking, when a clip has audio. The flag covers every video of a request, and
        vLLM refuses it for a video without an audio track: a request mixing both cannot be sent this way."""
        s = self.settings
        if not (s.audio_in_video_kwarg and s.audio_delivery == "in_video" and s.media_input == "video_url"):
            return False
        if not any(c.audio for c in clips):
            return False
        if not all(c.audio for c in clips if c.video):
            raise RouteError(
                "unsupported",
                f"item {request.item_id}: some clips of this request have no audio track and others do; "
                "use_audio_in_video applies to every video of a request: use --audio-delivery separate",
            )
        return True

    def _payload(
        self, messages: list[dict[str, Any]], request: ChatRequest, *, audio_in_video: bool = False
    ) -> dict[str, Any]:
        s = self.settings
        payload: dict[str, Any] = {"model": self.model_id, "messages": messages, "stream": s.stream}
        if s.stream:
            payload["stream_options"] = {"include_usage": True}
        sampling = request.sampling.model_dump(exclude_none=True)
        if s.reasoning_model:  # the API refuses max_tokens, and any temperature or top_p but the default
            if "max_tokens" in sampling:
                sampling["max_completion_tokens"] = sampling.pop("max_tokens")
            sampling.pop("temperature", None)
            sampling.pop("top_p", None)
        payload.update(sampling)
        if request.reply_audio is not None:  # a spoken reply is asked for whatever include_modalities says
            payload["modalities"] = ["text", "audio"]
            payload["audio"] = {"voice": request.reply_audio.voice, "format": request.reply_audio.format}
        elif s.include_modalities:
            payload["modalities"] = ["text"]
        if s.thinking is not None and s.thinking_switch == "chat_template_kwargs":
            payload["chat_template_kwargs"] = {"enable_thinking": s.thinking}
        elif s.thinking_switch == "google":
            if self._google_thinking is not None:  # Gemini's documented form on its OpenAI-compatible endpoint
                payload["extra_body"] = {"google": {"thinking_config": self._google_thinking}}
        elif s.thinking is not None:
            payload["enable_thinking"] = s.thinking
        if s.reasoning_effort is not None:
            payload["reasoning_effort"] = s.reasoning_effort
        if request.response_format is not None:
            payload["response_format"] = request.response_format
        if audio_in_video:  # vLLM then decodes the track from the same video_url and interleaves it (Qwen-Omni)
            payload["mm_processor_kwargs"] = {"use_audio_in_video": True}
        payload.update(s.extra_body)
        return payload

    # ------------------------------------------------------------------------------------------- sending

    async def _get_session(self) -> Any:
        if self._session is None:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            # trust_env is applied by _from_environment, once per URL: aiohttp's own looks the proxy and the netrc
            # file up again on every request, in two thread hops (about 40% of a judge request's CPU, measured).
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    async def _from_environment(self, url: str) -> _Trusted:
        """What ``trust_env`` adds to a request to ``url``: the HTTP(S)_PROXY that NO_PROXY does not bypass, with
        its credentials, and, for a route that sends no key, the host's netrc credentials (a key is never combined
        with them). Looked up on the first request to the URL, kept for the route's life; nothing without it."""
        if not self.trust_env:
            return _UNTRUSTED
        if url not in self._environment:
            self._environment[url] = await asyncio.to_thread(_trusted_environment, url, self._api_key is None)
        return self._environment[url]

    async def send(self, prepared: Prepared) -> ChatResponse:
        """One attempt. Returns only a completed answer (finish reason `stop`); raises RouteError otherwise.

        With replicas, the attempt goes to the replica with the fewest requests outstanding (not the one its last
        attempt failed on, when another can take it), waiting while all are busy or drained. A replica that refuses
        the connection is drained and the request goes to another (nothing reached a server: it is still the same
        attempt), or waits for one to come back. The response or error names the replica (``replica``). Whatever
        the server sent leaves here redacted of the key (see `omnivchat.routes._redact`)."""
        if self.replicas is None:
            return await self._attempt(prepared, None)
        while True:
            failed_on = self._failed_on.get(prepared.key)
            replica = await self.replicas.acquire(self._probe, () if failed_on is None else (failed_on,))
            try:
                return await self._attempt(prepared, replica)
            except _Refused:
                continue

    async def _attempt(self, prepared: Prepared, replica: Replica | None) -> ChatResponse:
        url = self._url if replica is None else _join(replica.url, "/chat/completions")
        try:
            response = await self._send(prepared, url)
        except _Unreachable as err:
            if replica is None:
                failure: RouteError = err
            else:  # drained; the caller sends the request elsewhere
                self._give_back(replica, prepared.key, err)
                raise _Refused from None
        except RouteError as err:
            failure = err
            if replica is not None:
                self._give_back(replica, prepared.key, failure)
        except BaseException:  # cancelled (Ctrl-C) or a bug: the replica's slot is free again
            if replica is not None and self.replicas is not None:
                self.replicas.release(replica, "other")
            raise
        else:
            if replica is not None:
                self._give_back(replica, prepared.key, None)
            redacted = self._redactor.response(response)
            redacted.replica = replica.label if replica is not None else None
            return redacted
        # Raised outside the handler so that the unredacted original is not chained to it as __context__.
        error = self._redactor.error(failure)
        error.replica = replica.label if replica is not None else None
        raise error

    def _give_back(self, replica: Replica, key: str, failure: RouteError | None) -> None:
        assert self.replicas is not None
        self.replicas.release(replica, None if failure is None else _health(failure))
        if failure is None:
            self._failed_on.pop(key, None)
        else:
            self._failed_on[key] = replica.label

    async def _probe(self, replica: Replica) -> bool:
        """Whether a drained replica answers again: ``GET {base}/models`` gets any status below 500."""
        import aiohttp

        session = await self._get_session()
        headers = {} if self._api_key is None else {"Authorization": f"Bearer {self._api_key.reveal()}"}
        assert self.replicas is not None
        timeout = aiohttp.ClientTimeout(total=self.replicas.policy.probe_timeout_s)
        probe = _join(replica.url, "/models")
        extra = await self._from_environment(probe)
        try:
            headers.update(extra.headers)
            async with session.get(probe, headers=headers, timeout=timeout, **extra.proxy) as response:
                return bool(response.status < 500)
        except (aiohttp.ClientError, OSError, TimeoutError):
            return False

    def _cut(self, text: str, limit: int) -> str:
        return self._redactor.cut(text, limit)

    async def _send(self, prepared: Prepared, url: str) -> ChatResponse:
        import aiohttp

        session = await self._get_session()
        try:  # built once per attempt, streamed: media are read and encoded as the socket drains
            body = prepared.media.body(prepared.description)
        except OSError as err:
            item = prepared.request.item_id
            raise RouteError("media", f"item {item}: a clip cannot be read ({err.strerror})") from None
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream, application/json",
            "Content-Length": str(body.size),
        }
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
        started = time.perf_counter()
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        extra = await self._from_environment(url)
        refused: list[RouteError] = []  # what the body refused mid-upload (aiohttp wraps it as a client error)

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for chunk in body.chunks():
                    yield chunk
            except RouteError as err:
                refused.append(err)
                raise

        try:
            try:
                whole = body.whole
                data = chunks() if whole is None else whole
                headers.update(extra.headers)
                async with session.post(url, data=data, headers=headers, timeout=timeout, **extra.proxy) as response:
                    if response.status != 200:
                        raise await self._http_error(response)
                    if self.settings.stream:
                        result = await self._read_stream(response, prepared.request)
                    else:
                        result = await self._read_json(response, prepared.request)
            except TimeoutError:
                raise RouteError("timeout", f"no complete answer within {self.settings.timeout_s:g} s") from None
            except aiohttp.ClientPayloadError as err:
                raise RouteError("stream_cut", self._cut(f"connection closed mid-answer ({err})", 300)) from None
            except aiohttp.ClientConnectorError as err:  # no connection at all: the server is down or unreachable
                raise _Unreachable("connection", self._cut(f"{type(err).__name__}: {err}", 300)) from None
            except (aiohttp.ClientError, OSError) as err:
                raise RouteError("connection", self._cut(f"{type(err).__name__}: {err}", 300)) from None
        except RouteError:
            if refused:  # a clip that changed since it was prepared, say: that, not the connection it broke
                raise refused[0] from None
            raise
        result.latency_s = time.perf_counter() - started
        result.delivered = prepared.delivered
        return result

    async def _http_error(self, response: Any) -> RouteError:
        # Keep the provider's short error message only, never the body: it can echo request content.
        message: Any = ""
        try:
            data = json.loads(await response.read())
            error = data.get("error") if isinstance(data, dict) else None
            message = (error.get("message") if isinstance(error, dict) else error) or ""
        except (ValueError, UnicodeDecodeError):
            pass
        if not isinstance(message, str):
            message = json.dumps(self._redactor.data(message), ensure_ascii=False)
        message = self._cut(message, 300)
        return RouteError(
            status_kind(response.status),
            f"HTTP {response.status}" + (f": {message}" if message else ""),
            http_status=response.status,
            retry_after=retry_after_s(response.headers.get("Retry-After")),
        )

    async def _read_stream(self, response: Any, request: ChatRequest) -> ChatResponse:
        parser = SSEParser()
        text: list[str] = []
        reasoning: list[str] = []
        finish: str | None = None
        usage: dict[str, Any] = {}
        model: str | None = None
        fingerprint: str | None = None
        done = False
        audio = AudioCollector(request.item_id, request.reply_audio) if request.reply_audio else None
        async for chunk in response.content.iter_any():
            for data in parser.feed(chunk):
                if data.strip() == "[DONE]":
                    done = True
                    continue
                try:
                    event = json.loads(data)
                except ValueError:
                    # Redacted before the cut: a proxy's complaint can echo the Authorization header.
                    raise RouteError("malformed", f"stream chunk is not JSON: {self._cut(data, 80)!r}") from None
                if not isinstance(event, dict):
                    raise RouteError("malformed", f"stream chunk is not an object: {self._cut(data, 80)!r}")
                if "error" in event:
                    # Redacted as data first: str() of a dict escapes what it quotes, which could hide a key.
                    shown = str(self._redactor.data(event["error"]))
                    raise RouteError("stream_error", "error in stream: " + self._cut(shown, 300))
                if isinstance(event.get("model"), str) and event["model"]:
                    model = event["model"]
                if isinstance(event.get("system_fingerprint"), str) and event["system_fingerprint"]:
                    fingerprint = event["system_fingerprint"]
                if isinstance(event.get("usage"), dict):
                    usage = event["usage"]
                try:
                    for choice in event.get("choices") or []:
                        delta = choice.get("delta") or {}
                        text.append(_text(delta.get("content")))
                        reasoning.append(_text(delta.get("reasoning_content") or delta.get("reasoning")))
                        if audio is not None:
                            audio.add(delta.get("audio"))
                        finish = choice.get("finish_reason") or finish
                except (AttributeError, TypeError):
                    raise RouteError("malformed", "stream chunk is not a chat.completion.chunk") from None
        if not done:
            raise RouteError("stream_cut", "the stream ended before [DONE]", partial_text="".join(text))
        result = self._complete(
            "".join(text), "".join(reasoning), finish, usage, model, response.status, request, audio, streamed=True
        )
        result.system_fingerprint = fingerprint
        return result

    async def _read_json(self, response: Any, request: ChatRequest) -> ChatResponse:
        try:
            data = json.loads(await response.read())
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = _text(message.get("content"))
            reasoning = _text(message.get("reasoning_content") or message.get("reasoning"))
            finish = choice.get("finish_reason")
            audio = AudioCollector(request.item_id, request.reply_audio) if request.reply_audio else None
            if audio is not None:
                audio.add(message.get("audio"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise RouteError("malformed", "response is not a chat.completion object") from None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        model = data.get("model") if isinstance(data.get("model"), str) else None
        result = self._complete(text, reasoning, finish, usage, model, response.status, request, audio, streamed=False)
        fingerprint = data.get("system_fingerprint")
        result.system_fingerprint = fingerprint if isinstance(fingerprint, str) and fingerprint else None
        return result

    def _complete(
        self,
        text: str,
        reasoning: str,
        finish: str | None,
        usage: dict[str, Any],
        model: str | None,
        status: int,
        request: ChatRequest,
        audio: AudioCollector | None = None,
        *,
        streamed: bool = False,
    ) -> ChatResponse:
        if finish == "length":
            message = "the reply was cut at max_tokens (finish reason `length`)"
            raise RouteError("length", message, partial_text=text, usage=usage)
        if finish != "stop":
            shown = finish if finish is None else self._cut(str(finish), 80)
            raise RouteError("bad_finish", f"finish reason {shown!r}, not 'stop'", partial_text=text, usage=usage)
        if request.require_text and not text.strip():
            raise RouteError("empty", "empty reply where text is required", usage=usage)
        spoken = audio.finish(streamed=streamed) if audio is not None else None
        return ChatResponse(
            text=text,
            reasoning=reasoning,
            finish_reason=finish,
            usage=usage,
            http_status=status,
            model=model,
            audio=spoken,
        )

    async def aclose(self) -> None:
        if self.replicas is not None:
            await self.replicas.aclose()
        if self._session is not None:
            await self._session.close()
            self._session = None


class _Trusted(NamedTuple):
    headers: dict[str, str]  # the netrc login, as an Authorization header
    proxy: dict[str, Any]  # proxy= and proxy_auth= of the request


_UNTRUSTED = _Trusted({}, {})  # a route without trust_env: nothing added (never changed)


def _trusted_environment(url: str, netrc: bool) -> _Trusted:
    """The proxy (and its credentials) the environment gives a request to ``url``, and with ``netrc`` the host's
    netrc credentials, as aiohttp's ``trust_env`` finds them (it reads files: call it off the event loop)."""
    from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
    from yarl import URL

    parsed = URL(url)
    found = _Trusted({}, {})
    if netrc and parsed.host is not None:
        with contextlib.suppress(LookupError):
            found.headers["Authorization"] = basicauth_from_netrc(netrc_from_env(), parsed.host).encode()
    with contextlib.suppress(LookupError):
        found.proxy["proxy"], found.proxy["proxy_auth"] = get_env_proxy_for_url(parsed)
    return found


def _text(value: Any) -> str:
    """A content or reasoning field: a string, or nothing; anything else is not the protocol."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value
