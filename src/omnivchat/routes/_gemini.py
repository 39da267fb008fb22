"""Gemini through its native SDK (`google-genai`, the optional extra `omnivchat[gemini]`), imported only here.

The MP4 goes whole, audio track included: inline up to ``inline_max_bytes``, else through the Files API,
polled until ACTIVE. ``frames_fps`` is sent as the video's sampling rate (Gemini's default is 1 fps).
"""

from __future__ import annotations

import asyncio
import time
import warnings
from pathlib import Path
from typing import Any

from omnivchat._canonical import sha256_json
from omnivchat.routes._base import Prepared
from omnivchat.routes._credentials import Secret
from omnivchat.routes._defaults import RouteSettings
from omnivchat.routes._media_parts import MediaStore, audio_only_wav, duration_cut, read_unchanged
from omnivchat.routes._redact import Redactor
from omnivchat.routes._thinking import gemini_thinking
from omnivchat.routes._types import ChatRequest, ChatResponse, Delivered, RouteError, media_failure

GEMINI_API = "https://generativelanguage.googleapis.com"
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


def _sdk() -> tuple[Any, Any, Any]:
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError:
        from omnivchat.routes._openai import ConfigError

        raise ConfigError(
            "the gemini route needs google-genai: pip install 'omnivchat[gemini]' (in a clone: uv sync --extra gemini)"
        ) from None
    # The SDK warns "<value> is not a valid <Enum>" with whatever the server sent (a finish reason, say), which
    # would print a server-chosen string, key included, to stderr; our own error reports the value, redacted.
    warnings.filterwarnings("ignore", r"(?s).* is not a valid \w+$", UserWarning, r"google\.genai")
    return genai, types, errors


class GeminiRoute:
    """A Gemini model through the native API (`gemini:<model>` ids)."""

    def __init__(self, model_id: str, settings: RouteSettings, api_key: Secret | None) -> None:
        self._genai, self._types, self._errors = _sdk()
        self.model_id = model_id
        self.model_name = model_id.removeprefix("gemini:")
        self.settings = settings
        self._thinking = gemini_thinking(self.model_name, settings.thinking)  # refused here, before any request
        self._api_key = api_key
        self._redactor = Redactor(api_key)
        self._client: Any = None

    @property
    def key_is_placeholder(self) -> bool:
        """The key sent is a placeholder (EMPTY, none...), not a secret: replies are not masked for it."""
        return self._redactor.placeholder

    @property
    def endpoint(self) -> str:
        from urllib.parse import urlsplit

        base = urlsplit(self.settings.base_url or GEMINI_API)
        return f"{base.scheme}://{base.hostname}{base.path.rstrip('/')}/models/{self.model_name}:generateContent"

    def _clip(self, clip: Path, media: MediaStore) -> tuple[dict[str, Any], Delivered]:
        from omnivchat import media as m

        try:
            found = m.probe(clip, energy=False)
            cut = duration_cut(found.duration, self.settings.limits)  # the limit keeps the start
            if not found.has_video and found.has_audio:  # an audio-only item (a WAV, an MP3): its track alone
                wav, cut = audio_only_wav(clip, found.duration, self.settings)
                digest = m.content_hash(wav)
                media.files[digest] = (wav, "audio/wav")
                return {"audio": digest}, Delivered(video=False, audio=True, cut_from_s=cut)
            fitted = m.fit_for_route(clip, self.settings.limits)
            info = m.probe(fitted, energy=False)
            digest = m.content_hash(fitted)
        except m.MediaError as err:
            raise media_failure(err) from None
        media.files[digest] = (fitted, "video/mp4")
        media.probed[fitted] = info
        part = {"video": digest, "bytes": info.size_bytes, "fps": self.settings.frames_fps}
        return part, Delivered(video=info.has_video, audio=info.has_audio, cut_from_s=cut)

    def prepare(self, request: ChatRequest) -> Prepared:
        if request.reply_audio is not None:
            raise RouteError("unsupported", f"item {request.item_id}: the Gemini route asks for text replies only")
        media = MediaStore()
        contents: list[dict[str, Any]] = []
        for turn in request.history:
            parts = [self._clip(turn.clip, media)[0]] if turn.clip is not None else []
            contents += [
                {"role": "user", "parts": [*parts, *([{"text": turn.text}] if turn.text else [])]},
                {"role": "model", "parts": [{"text": turn.reply}]},
            ]
        final: list[dict[str, Any]] = []
        delivered = Delivered()
        if request.clip is not None:
            part, delivered = self._clip(request.clip, media)
            final.append(part)  # video before text, as Gemini's docs advise
        if request.text:
            final.append({"text": request.text})
        if not final:
            raise RouteError("unsupported", f"item {request.item_id}: a request needs a clip or a text part")
        contents.append({"role": "user", "parts": final})
        description = {
            "model": self.model_name,
            "contents": contents,
            "system": request.system_prompt,
            "sampling": request.sampling.model_dump(exclude_none=True),
            "thinking": self.settings.thinking,
            "response_format": request.response_format,
        }
        key = sha256_json({"endpoint": self.endpoint, "payload": description})
        return Prepared(key=key, request=request, description=description, media=media, delivered=delivered)

    def _get_client(self) -> Any:
        if self._client is None:
            options = self._types.HttpOptions(base_url=self.settings.base_url) if self.settings.base_url else None
            key = self._api_key.reveal() if self._api_key else None
            self._client = self._genai.Client(api_key=key, http_options=options)
        return self._client

    async def _file_part(self, client: Any, path: Path, mime: str, fps: float | None = None, digest: str = "") -> Any:
        """A clip (``video/mp4``, sampled at ``fps``) or an audio-only item's track (``audio/wav``): inline up to
        ``inline_max_bytes``, else through the Files API."""
        types = self._types
        metadata = types.VideoMetadata(fps=fps) if fps is not None else None
        size = path.stat().st_size
        if self.settings.inline_max_bytes is None or size <= self.settings.inline_max_bytes:
            blob = types.Blob(data=read_unchanged(path, digest) if digest else path.read_bytes(), mime_type=mime)
            return types.Part(inline_data=blob, video_metadata=metadata)
        uploaded = await client.aio.files.upload(file=str(path), config=types.UploadFileConfig(mime_type=mime))
        deadline = time.monotonic() + self.settings.timeout_s
        while str(getattr(uploaded.state, "name", uploaded.state)) != "ACTIVE":
            if str(getattr(uploaded.state, "name", uploaded.state)) == "FAILED":
                raise RouteError("media", f"{path}: the Files API could not process the upload")
            if time.monotonic() > deadline:
                raise RouteError("timeout", f"{path}: upload not ACTIVE after {self.settings.timeout_s:g} s")
            await asyncio.sleep(1.0)
            uploaded = await client.aio.files.get(name=uploaded.name)
        return types.Part(file_data=types.FileData(file_uri=uploaded.uri, mime_type=mime), video_metadata=metadata)

    async def send(self, prepared: Prepared) -> ChatResponse:
        """One attempt; whatever the server sent leaves here redacted of the key (see `omnivchat.routes._redact`)."""
        try:
            response = await self._send(prepared)
        except RouteError as err:
            failure = err
        else:
            return self._redactor.response(response)
        # Raised outside the handler so that the unredacted original is not chained to it as __context__.
        raise self._redactor.error(failure)

    async def _send(self, prepared: Prepared) -> ChatResponse:
        types, errors = self._types, self._errors
        client = self._get_client()
        request = prepared.request
        started = time.perf_counter()
        try:
            contents = []
            for content in prepared.description["contents"]:
                parts = []
                for part in content["parts"]:
                    if "video" in part or "audio" in part:
                        digest = part.get("video") or part["audio"]
                        path, mime = prepared.media.files[digest]
                        if isinstance(path, bytes):  # only audio parts are held in memory; a clip is a file
                            raise RouteError("media", f"item {prepared.request.item_id}: the clip is not a file")
                        parts.append(await self._file_part(client, path, mime, part.get("fps"), digest))
                    else:
                        parts.append(types.Part(text=part["text"]))
                contents.append(types.Content(role=content["role"], parts=parts))
            sampling = request.sampling
            config: dict[str, Any] = {
                "system_instruction": request.system_prompt,
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "max_output_tokens": sampling.max_tokens,
                "seed": sampling.seed,
            }
            if self._thinking is not None:
                config["thinking_config"] = types.ThinkingConfig(**self._thinking)
            if request.response_format is not None:
                config["response_mime_type"] = "application/json"
                schema = _schema_of(request.response_format)
                if schema is not None:  # a verdict's JSON schema, in either OpenAI-style form
                    config["response_json_schema"] = schema
            generate = client.aio.models.generate_content(
                model=self.model_name,
                contents=contents,
                config=types.GenerateContentConfig(**{k: v for k, v in config.items() if v is not None}),
            )
            response = await asyncio.wait_for(generate, timeout=self.settings.timeout_s)
        except RouteError:
            raise
        except TimeoutError:
            raise RouteError("timeout", f"no answer within {self.settings.timeout_s:g} s") from None
        except errors.APIError as err:
            code = int(getattr(err, "code", 0) or 0)
            kind = (
                "rate_limited"
                if code == 429
                else "request_timeout"
                if code == 408
                else ("server_error" if code >= 500 else "http_error")
            )
            # Redacted before the cut: the SDK's message can be a whole error page echoing the key.
            message = self._redactor.cut(f"HTTP {code}: {getattr(err, 'message', '') or ''}", 300)
            raise RouteError(kind, message, http_status=code) from None  # type: ignore[arg-type]  # kind is one of RouteError's kinds, chosen above
        except Exception as err:  # the SDK's transport (httpx) errors: connection trouble, retryable
            raise RouteError("connection", self._redactor.cut(f"{type(err).__name__}: {err}", 300)) from None
        try:
            return self._complete(response, request, time.perf_counter() - started, prepared.delivered)
        except (AttributeError, TypeError):  # an answer the SDK parsed but that lacks what a reply needs
            raise RouteError("malformed", "the answer is not a generateContent response") from None

    def _complete(self, response: Any, request: ChatRequest, latency: float, delivered: Delivered) -> ChatResponse:
        candidates = getattr(response, "candidates", None) or []
        if not candidates:
            raise RouteError("bad_finish", "no candidate in the answer (blocked prompt?)")
        reason = str(getattr(candidates[0].finish_reason, "name", candidates[0].finish_reason))
        finish = _FINISH.get(reason, reason.lower())
        text = "".join(p.text or "" for p in (candidates[0].content.parts or []) if not getattr(p, "thought", False))
        usage = _usage(getattr(response, "usage_metadata", None))
        if finish == "length":
            raise RouteError("length", "the reply was cut at max_output_tokens", partial_text=text, usage=usage)
        if finish != "stop":
            message = f"finish reason {self._redactor.cut(reason, 80)}"
            raise RouteError("bad_finish", message, partial_text=text, usage=usage)
        if request.require_text and not text.strip():
            raise RouteError("empty", "empty reply where text is required", usage=usage)
        return ChatResponse(
            text=text,
            finish_reason="stop",
            usage=usage,
            latency_s=latency,
            model=self.model_name,
            delivered=delivered,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            close = getattr(self._client.aio, "aclose", None)
            if close is not None:
                await close()
            self._client = None


def _usage(meta: Any) -> dict[str, Any]:
    """usageMetadata in the OpenAI form: thinking tokens (billed as output, counted apart by Gemini, so
    ``total_tokens`` includes them) as ``completion_tokens_details.reasoning_tokens``, and the prompt's audio and
    video tokens as ``prompt_tokens_details`` where Gemini breaks them out by modality."""
    if meta is None:
        return {}
    usage: dict[str, Any] = {
        "prompt_tokens": getattr(meta, "prompt_token_count", None) or 0,
        "completion_tokens": getattr(meta, "candidates_token_count", None) or 0,
        "total_tokens": getattr(meta, "total_token_count", None) or 0,
    }
    thoughts = getattr(meta, "thoughts_token_count", None)
    if isinstance(thoughts, int) and thoughts > 0:
        usage["completion_tokens_details"] = {"reasoning_tokens": thoughts}
    by_modality: dict[str, int] = {}
    for entry in getattr(meta, "prompt_tokens_details", None) or []:
        modality = getattr(entry, "modality", None)
        name = str(getattr(modality, "name", modality) or "").lower()
        count = getattr(entry, "token_count", None)
        if name in ("audio", "video", "text", "image") and isinstance(count, int):
            by_modality[f"{name}_tokens"] = by_modality.get(f"{name}_tokens", 0) + count
    if by_modality:
        usage["prompt_tokens_details"] = by_modality
    return usage


def _schema_of(response_format: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema inside an OpenAI-style response_format (``json_schema.schema``, or llama.cpp's
    ``schema`` beside ``json_object``), or None."""
    inner = response_format.get("json_schema")
    schema = inner.get("schema") if isinstance(inner, dict) else response_format.get("schema")
    return schema if isinstance(schema, dict) else None
