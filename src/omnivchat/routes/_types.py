"""What a route is asked and what it answers: one request and one response shape for every model route."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ErrorKind = Literal[
    "rate_limited",  # HTTP 429
    "server_error",  # HTTP 5xx
    "request_timeout",  # HTTP 408
    "http_error",  # any other HTTP status: not retried
    "timeout",  # no answer in time
    "connection",  # could not connect, or the connection dropped
    "stream_cut",  # the stream ended before [DONE]
    "malformed",  # a chunk or body that is not the protocol
    "stream_error",  # the server reported an error inside the stream
    "length",  # finish reason `length`: the reply was cut by max_tokens
    "bad_finish",  # any other finish reason but `stop`
    "empty",  # empty text where text is required (judges)
    "media",  # a clip could not be read or fitted: the item fails, others go on
    "media_timeout",  # an ffmpeg or PyAV call on the clip ran past its bound: the item fails, others go on
    "input",  # the item's own data cannot make a request (a cut-off that cannot be read): it fails, others go on
    "unsupported",  # the route cannot deliver what the request holds
    "unparseable",  # a complete answer the caller cannot use (a judge verdict that does not parse)
]

RETRYABLE: frozenset[str] = frozenset(
    {
        "rate_limited",
        "server_error",
        "request_timeout",
        "timeout",
        "connection",
        "stream_cut",
        "malformed",
        "unparseable",
    }
)


def status_kind(status: int) -> ErrorKind:
    """The failure kind of an HTTP error status (every client of an HTTP API: routes, video renderers)."""
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "request_timeout"
    if status >= 500:
        return "server_error"
    return "http_error"


def retry_after_s(value: str | None) -> float | None:
    """A Retry-After header as seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


class RouteError(Exception):
    """One failed attempt. ``kind`` says what failed; ``retryable`` whether trying again can help."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
        partial_text: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        """``usage``: what the server reported for an answer that is still a failure (cut at max_tokens, a bad
        finish, a verdict that does not parse): it was generated, so it is billed (docs/costs.md)."""
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.http_status = http_status
        self.retry_after = retry_after
        self.partial_text = partial_text
        self.usage = usage
        self.replica: str | None = None
        """Which replica of a replica set the attempt went to (set by the route; None for a single server)."""

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


def media_failure(err: Exception, prefix: str = "") -> RouteError:
    """A media error as an item's failure: kind "media_timeout" for a call stopped at its bound (the clip may make
    the decoder hang), else "media"; ``prefix`` goes before the message (e.g. "item 3: ")."""
    from omnivchat.media import MediaTimeout

    return RouteError("media_timeout" if isinstance(err, MediaTimeout) else "media", f"{prefix}{err}")


class Sampling(BaseModel):
    """Decoding settings sent with a request; None leaves a field out (the provider's default)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    seed: int | None = None


class HistoryTurn(BaseModel):
    """An earlier turn of a multi-turn dialogue: the user's clip and the reference reply given as history."""

    model_config = ConfigDict(frozen=True)

    clip: Path | None
    reply: str
    text: str | None = None


class SimOracle(BaseModel):
    """What a *simulated* model may know about an instance. Real routes never read or send it."""

    model_config = ConfigDict(frozen=True)

    reference: str
    language: str = "en"
    requires: tuple[str, ...] | None = None
    wrong_reply: str | None = None


class ReplyAudio(BaseModel):
    """Spoken output asked of the model: OpenAI's ``modalities: ["text", "audio"]`` with ``audio: {voice, format}``.

    A server sends the speech base64-encoded: whole in ``message.audio.data``, or streamed in ``delta.audio.data``
    pieces. A streamed reply, and a ``pcm16`` one, are headerless 16-bit mono PCM at ``pcm_rate`` Hz (OpenAI's
    pcm16 and DashScope's Qwen-Omni streams are 24 kHz): the route wraps them in a WAV header.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    voice: str = Field(min_length=1, description="The server's voice name (OpenAI: alloy; Qwen-Omni: Cherry, Ethan).")
    format: Literal["wav", "pcm16", "mp3", "flac", "opus"] = Field(
        default="wav", description="Sent as audio.format. DashScope takes wav only; OpenAI streams pcm16 only."
    )
    pcm_rate: int = Field(default=24000, gt=0, description="Sample rate of headerless PCM replies, in Hz.")


class ChatRequest(BaseModel):
    """One request: system prompt, history, the final clip (None: no media at all) and an optional text part."""

    model_config = ConfigDict(frozen=True)

    item_id: str = ""
    system_prompt: str | None = None
    history: tuple[HistoryTurn, ...] = ()
    clip: Path | None = None
    text: str | None = None
    sampling: Sampling = Sampling()
    require_text: bool = Field(default=False, description="Empty text is a failure (judges), not an empty answer.")
    response_format: dict[str, Any] | None = Field(default=None, description="e.g. a JSON schema, for judges.")
    oracle: SimOracle | None = None
    reply_audio: ReplyAudio | None = Field(default=None, description="Ask for a spoken reply too (None: text only).")


class Delivered(BaseModel):
    """Which streams of the final clip actually reached the model."""

    model_config = ConfigDict(frozen=True)

    video: bool = False
    audio: bool = False
    dropped: tuple[str, ...] = Field(default=(), description="Streams the clip had that the route did not deliver.")
    cut_from_s: float | None = Field(
        default=None,
        description="The clip's duration when the route's duration limit cut it (its start kept); None: sent whole.",
    )


class SpokenReply(BaseModel):
    """The speech of a reply, checked: a non-empty WAV (PCM wrapped in a header) or the compressed format asked
    for. ``transcript`` is the server's own transcript of it, kept apart: it is never an ASR result."""

    model_config = ConfigDict(frozen=True)

    data: bytes
    format: str = Field(description="The file format of ``data``: wav, mp3, flac or opus.")
    transcript: str | None = None


class ChatResponse(BaseModel):
    """A completed answer (finish reason `stop`)."""

    text: str
    reasoning: str = ""
    finish_reason: str = "stop"
    usage: dict[str, Any] = Field(default_factory=dict)
    latency_s: float = 0.0
    http_status: int | None = None
    model: str | None = Field(default=None, description="The model name the server reported.")
    delivered: Delivered = Delivered()
    audio: SpokenReply | None = Field(default=None, description="The spoken reply, when one was asked for.")
    system_fingerprint: str | None = Field(
        default=None, description="The server's system_fingerprint (its build and configuration), when it sends one."
    )
    replica: str | None = Field(
        default=None, description="The replica of a replica set that answered (scheme, host, port, path); else None."
    )
    redacted: bool = Field(
        default=False,
        description="The reply (text, reasoning, transcript or audio) held the key and was masked: not what the "
        "model sent (routes._redact).",
    )
