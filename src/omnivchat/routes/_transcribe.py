"""Speech-recognition routes, the first stage of a cascade (``routes._cascade``): the local faster-whisper of the
``asr`` extra, or any OpenAI-compatible ``/audio/transcriptions`` endpoint. Each is a Route like any other: a
request's clip in, the words heard out as a ChatResponse, so that the run store keeps, caches and prices it."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
import wave
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from omnivchat._canonical import sha256_json
from omnivchat.routes._base import Prepared
from omnivchat.routes._credentials import Secret
from omnivchat.routes._defaults import RouteSettings
from omnivchat.routes._redact import Redactor
from omnivchat.routes._types import ChatRequest, ChatResponse, RouteError, media_failure, retry_after_s, status_kind

SAMPLE_RATE = 16000
LOCAL_WHISPER = "whisper-tiny.en"
"""The model name of the local faster-whisper stage: Whisper tiny.en, shipped by the ``asr`` extra."""
ZERO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
"""What a local model bills: nothing (its attempts cost 0 USD, not "unknown")."""


def _clip_audio(request: ChatRequest) -> np.ndarray:
    """The request clip's audio as 16 kHz mono samples; RouteError("media") when it cannot be read."""
    from omnivchat import media

    if request.clip is None:
        raise RouteError("input", f"item {request.item_id}: a transcription needs a clip")
    try:
        return media.extract_audio(request.clip, sr=SAMPLE_RATE)
    except media.MediaError as err:
        raise media_failure(err) from None


def _clip_hash(request: ChatRequest) -> str:
    from omnivchat import media

    if request.clip is None:
        raise RouteError("input", f"item {request.item_id}: a transcription needs a clip")
    try:
        return media.content_hash(request.clip)
    except media.MediaError as err:
        raise media_failure(err) from None


class LocalWhisperRoute:
    """faster-whisper on the CPU (``omnivchat.asr``), loaded on first use; one transcription at a time."""

    def __init__(self, model_id: str, settings: RouteSettings, language: str, *, vad: bool = True) -> None:
        self.model_id = model_id
        self.settings = settings
        self.language = language
        self.vad = vad
        self._asr: Any = None
        self._lock = threading.Lock()  # one model, used by one thread at a time

    @property
    def endpoint(self) -> str:
        return f"local://faster-whisper/{self.model_id}"

    def _model(self) -> Any:
        with self._lock:
            if self._asr is None:
                from omnivchat.asr import get_asr  # the asr extra, imported only when a cascade uses it

                self._asr = get_asr(vad=self.vad)
            return self._asr

    def identity(self) -> dict[str, Any]:
        """What makes its transcripts: backend, model and the sha256 of its weights (no path)."""
        return {k: v for k, v in self._model().description.items() if k != "source"}

    def prepare(self, request: ChatRequest) -> Prepared:
        description = {"asr": self.identity(), "audio": _clip_hash(request), "language": self.language}
        key = sha256_json({"endpoint": self.endpoint, "payload": description})
        return Prepared(key=key, request=request, description=description)

    def _transcribe(self, request: ChatRequest) -> str:
        samples = _clip_audio(request)
        asr = self._model()
        with self._lock:
            return str(asr.transcribe(samples, self.language))

    async def send(self, prepared: Prepared) -> ChatResponse:
        started = time.perf_counter()
        text = await asyncio.to_thread(self._transcribe, prepared.request)
        return ChatResponse(
            text=text, usage=dict(ZERO_USAGE), model=self.model_id, latency_s=time.perf_counter() - started
        )

    async def aclose(self) -> None:
        return None


def wav_bytes(samples: np.ndarray, rate: int = SAMPLE_RATE) -> bytes:
    """16-bit mono WAV of float samples in [-1, 1]."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


class TranscriptionRoute:
    """An OpenAI-compatible ``POST {base_url}/audio/transcriptions`` (multipart: the clip's audio as a 16 kHz WAV,
    the model, the language); the answer's ``text`` is the transcript."""

    def __init__(self, model_id: str, settings: RouteSettings, api_key: Secret | None, language: str) -> None:
        from omnivchat.routes._openai import _check_base_url

        self.model_id = model_id
        self.settings = settings
        self.language = language
        self._base_url = _check_base_url(settings.base_url, model_id)
        self._api_key = api_key
        self._redactor = Redactor(api_key)
        self._session: Any = None
        self._audio: dict[str, bytes] = {}  # request key -> WAV, built in prepare (a thread), sent once

    @property
    def endpoint(self) -> str:
        parts = urlsplit(self._base_url)
        return f"{parts.scheme}://{parts.hostname}{parts.path.rstrip('/')}/audio/transcriptions"

    @property
    def _url(self) -> str:
        from omnivchat.routes._openai import _join

        return _join(self._base_url, "/audio/transcriptions")

    def prepare(self, request: ChatRequest) -> Prepared:
        description = {"model": self.model_id, "audio": _clip_hash(request), "language": self.language}
        key = sha256_json({"endpoint": self.endpoint, "payload": description})
        return Prepared(key=key, request=request, description=description)

    async def send(self, prepared: Prepared) -> ChatResponse:
        import aiohttp

        wav = await asyncio.to_thread(lambda: wav_bytes(_clip_audio(prepared.request)))
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        form = aiohttp.FormData()
        form.add_field("file", wav, filename="audio.wav", content_type="audio/wav")
        form.add_field("model", self.model_id)
        form.add_field("language", self.language)
        form.add_field("response_format", "json")
        headers = {} if self._api_key is None else {"Authorization": f"Bearer {self._api_key.reveal()}"}
        started = time.perf_counter()
        timeout = aiohttp.ClientTimeout(total=self.settings.timeout_s)
        failure: RouteError
        try:
            async with self._session.post(self._url, data=form, headers=headers, timeout=timeout) as response:
                body = await response.read()
                status = response.status
                retry_after = retry_after_s(response.headers.get("Retry-After"))
        except TimeoutError:
            failure = RouteError("timeout", f"no transcript within {self.settings.timeout_s:g} s")
        except (aiohttp.ClientError, OSError) as err:
            failure = RouteError("connection", self._redactor.cut(f"{type(err).__name__}: {err}", 300))
        else:
            if status != 200:
                failure = RouteError(
                    status_kind(status), f"HTTP {status} from the transcription endpoint", http_status=status,
                    retry_after=retry_after,
                )  # fmt: skip
            else:
                try:
                    data = json.loads(body)
                    text = data["text"] if isinstance(data, dict) else None
                except (ValueError, UnicodeDecodeError):
                    text = None
                if not isinstance(text, str):
                    failure = RouteError("malformed", "the transcription endpoint's answer has no text field")
                else:
                    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
                    answer = ChatResponse(
                        text=text, usage=usage, http_status=200, model=self.model_id,
                        latency_s=time.perf_counter() - started,
                    )  # fmt: skip
                    return self._redactor.response(answer)
        raise self._redactor.error(failure)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
