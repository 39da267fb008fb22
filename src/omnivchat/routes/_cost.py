"""Prices and costs: what one attempt cost, from the usage the server reported, and what a request will cost before
it is sent (an estimate from its media durations and its max tokens).

Nothing here knows a provider's price list. A price is set in the route defaults (``price:`` under a model pattern:
the built-in table ships none for a hosted model, since the reference facts state none; a ``--defaults FILE``
sets yours). A model without one has its cost unknown ("no price"), never 0. See docs/costs.md.
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

MTOK = 1_000_000
DEFAULT_OUTPUT_TOKENS = 1024
"""Output tokens assumed for a request that sets no max tokens (an estimate needs some bound; the dry run says so)."""

# Why an attempt's cost is unknown, or how a known one was counted.
PRICED = "priced"
NO_PRICE = "no price"
NO_USAGE = "no usage"
IN_FLIGHT = "in flight"
REFUSED = "refused"  # the server answered an HTTP error status: nothing was generated, nothing billed


class Price(BaseModel):
    """A model's price in USD per million tokens. ``audio_input_per_mtok`` / ``video_input_per_mtok``: where a
    provider bills audio or video input tokens apart, they are priced so when the server's usage breaks them out
    (``prompt_tokens_details.audio_tokens`` / ``video_tokens``); without that breakdown the cost is unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # allow_inf_nan=False: an infinite price would make every cost inf or NaN, and a NaN spend never reaches a budget.
    input_per_mtok: float = Field(ge=0, allow_inf_nan=False, description="USD per million prompt tokens.")
    output_per_mtok: float = Field(
        ge=0, allow_inf_nan=False, description="USD per million output tokens (reasoning tokens included)."
    )
    audio_input_per_mtok: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="USD per million audio input tokens."
    )
    video_input_per_mtok: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="USD per million video input tokens."
    )


class TokenRates(BaseModel):
    """How many prompt tokens a route's media make, for estimates only (billing always uses the server's usage).

    A frame costs ``tokens_per_frame`` tokens, or, when that is None, one token per ``pixels_per_token`` pixels of
    the frame (a frame size in tokens). ``source`` says where the numbers come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    frames_per_s: float = Field(gt=0, description="Frames the model samples per second of video.")
    max_frames: int | None = Field(default=None, gt=0, description="Most frames the model samples from one video.")
    tokens_per_frame: float | None = Field(default=None, gt=0)
    pixels_per_token: float | None = Field(default=None, gt=0)
    audio_per_s: float = Field(ge=0, description="Audio tokens per second of audio.")
    chars_per_token: float = Field(default=4.0, gt=0, description="Text characters per token (CJK: one each).")
    source: str = ""

    @model_validator(mode="after")
    def _one_frame_rule(self) -> TokenRates:
        if (self.tokens_per_frame is None) == (self.pixels_per_token is None):
            raise ValueError("give exactly one of tokens_per_frame and pixels_per_token")
        return self

    def frame_tokens(self, width: int | None, height: int | None) -> float:
        if self.tokens_per_frame is not None:
            return self.tokens_per_frame
        assert self.pixels_per_token is not None
        return (width or 0) * (height or 0) / self.pixels_per_token


_QWEN_FRAME = "one token per 28x28 pixels per two frames (Qwen2.5-Omni's vision encoder: 14-px patches merged 2x2, two "
_QWEN_FRAME += "frames per temporal patch): an assumption, DashScope states no per-frame count"
QWEN_OMNI_FLASH = TokenRates(
    frames_per_s=2.0,
    max_frames=128,
    pixels_per_token=28 * 28 * 2,
    audio_per_s=12.5,
    source="2 fps, at most 128 frames, audio 12.5 tokens/s: DashScope's Qwen3-Omni-Flash documentation "
    f"(reference/model-routes.md B1); {_QWEN_FRAME}",
)
QWEN_OMNI_TURBO = QWEN_OMNI_FLASH.model_copy(
    update={
        "max_frames": 80,
        "audio_per_s": 25.0,
        "source": "2 fps, at most 80 frames, audio 25 tokens/s: DashScope's Qwen-Omni-Turbo documentation "
        f"(reference/model-routes.md B1); {_QWEN_FRAME}",
    }
)
GEMINI = TokenRates(
    frames_per_s=1.0,
    tokens_per_frame=258,
    audio_per_s=32.0,
    source="about 258 tokens per frame at default resolution (Gemini 2.x; about 70 on Gemini 3), about 32 audio "
    "tokens/s, 1 fps by default (the native route samples at its frames_fps): Gemini's documentation "
    "(reference/model-routes.md B3)",
)
ASSUMED = QWEN_OMNI_FLASH.model_copy(
    update={
        "max_frames": None,
        "audio_per_s": 25.0,
        "source": "assumed for a route with no documented rate: 2 fps with no frame cap, audio 25 tokens/s (the "
        f"higher of the two Qwen-Omni rates), {_QWEN_FRAME}",
    }
)
FRAME_IMAGE_PIXELS_PER_TOKEN = 28 * 28
"""A JPEG frame sent as an image part (``media_input: frames``) under pixel-based rates: no temporal merge."""


# --------------------------------------------------------------------------------------------------- usage, cost


MAX_TOKENS = 2**53
"""Larger counts are not token counts (a server's garbage): beyond them a float no longer holds an integer exactly,
and a count past ~1e308 cannot be priced at all (OverflowError)."""


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_TOKENS:
        return None  # also NaN, which compares false
    return int(value)


@dataclass(frozen=True)
class Tokens:
    """Token counts read from a usage object: ``output`` counts reasoning tokens (see :func:`usage_tokens`)."""

    prompt: int
    output: int
    reasoning: int = 0
    audio_in: int | None = None
    video_in: int | None = None


def usage_tokens(usage: dict[str, Any] | None) -> Tokens | None:
    """The prompt and output tokens of a server's usage object, or None when it reports neither.

    Output counts the reasoning tokens. OpenAI-style servers include them in ``completion_tokens`` and break them
    out in ``completion_tokens_details.reasoning_tokens``; others (Gemini's) report them beside it, and then
    ``total_tokens`` covers prompt, completion and reasoning together: reasoning is added exactly when the total
    says it was not already counted.
    """
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _count(usage.get("completion_tokens", usage.get("output_tokens")))
    if prompt is None or completion is None:
        return None
    details = usage.get("completion_tokens_details") or usage.get("output_tokens_details") or {}
    reasoning = _count(details.get("reasoning_tokens")) if isinstance(details, dict) else None
    reasoning = reasoning or 0
    total = _count(usage.get("total_tokens"))
    output = completion
    if reasoning and total is not None and total >= prompt + completion + reasoning:
        output = completion + reasoning
    prompt_details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
    audio = video = None
    if isinstance(prompt_details, dict):
        audio = _count(prompt_details.get("audio_tokens"))
        video = _count(prompt_details.get("video_tokens"))
    return Tokens(prompt=prompt, output=output, reasoning=reasoning, audio_in=audio, video_in=video)


@dataclass(frozen=True)
class AttemptCost:
    """What one attempt cost: ``usd`` None when unknown, with ``note`` saying why (or ``priced``/``refused``)."""

    usd: float | None
    note: str

    @property
    def known(self) -> bool:
        return self.usd is not None


def _priced(prompt: int, output: int, audio: int, video: int, price: Price) -> float:
    text = max(0, prompt - audio - video)
    usd = text * price.input_per_mtok + output * price.output_per_mtok
    usd += audio * (price.audio_input_per_mtok if price.audio_input_per_mtok is not None else price.input_per_mtok)
    usd += video * (price.video_input_per_mtok if price.video_input_per_mtok is not None else price.input_per_mtok)
    return usd / MTOK


def attempt_cost(usage: dict[str, Any] | None, price: Price | None, *, http_status: int | None = None) -> AttemptCost:
    """The cost of one attempt from the server's usage and the model's price.

    An attempt the server refused with an HTTP error status (429, 5xx, 4xx) generated nothing and costs 0
    ("refused"); any other attempt without token counts is unknown ("no usage"), and so is every attempt of a
    model without a price ("no price"). A price with separate audio or video rates needs the usage to break
    those tokens out; without that the cost is unknown too.
    """
    if http_status is not None and http_status >= 400:
        return AttemptCost(0.0, f"{REFUSED} (HTTP {http_status})")
    if price is None:
        return AttemptCost(None, NO_PRICE)
    tokens = usage_tokens(usage)
    if tokens is None:
        return AttemptCost(None, NO_USAGE)
    for rate, count, what in (
        (price.audio_input_per_mtok, tokens.audio_in, "audio"),
        (price.video_input_per_mtok, tokens.video_in, "video"),
    ):
        if rate is not None and count is None:
            return AttemptCost(None, f"no {what} token count in usage (the price bills {what} apart)")
    usd = _priced(tokens.prompt, tokens.output, tokens.audio_in or 0, tokens.video_in or 0, price)
    if not math.isfinite(usd):  # absurd counts at a huge price: unknown, never an inf spend
        return AttemptCost(None, "cost out of range (usage or price too large)")
    return AttemptCost(usd, PRICED)


# ------------------------------------------------------------------------------------------------------ estimates


@dataclass(frozen=True)
class RequestEstimate:
    """A request before it is sent: its media bytes and seconds, estimated prompt tokens (text, audio, video) and
    output tokens, and the estimated cost (None without a price)."""

    media_bytes: int
    media_seconds: float
    text_tokens: int
    audio_tokens: int
    video_tokens: int
    output_tokens: int
    usd: float | None

    @property
    def prompt_tokens(self) -> int:
        return self.text_tokens + self.audio_tokens + self.video_tokens


_PLACEHOLDER = re.compile(r"omnivchat-media(?:-b64)?:[0-9a-f]{64}")


def text_tokens(text: str, chars_per_token: float = 4.0) -> int:
    """Estimated tokens of ``text``: one per CJK character, one per ``chars_per_token`` other characters."""
    wide = sum(1 for c in text if ord(c) >= 0x2E80)
    return math.ceil(wide + (len(text) - wide) / chars_per_token)


def rates_for(settings: Any) -> TokenRates:
    """The token rates of a route (its settings' ``token_rates``, else the assumed ones); the native Gemini route
    samples video at its own ``frames_fps``."""
    rates: TokenRates = settings.token_rates or ASSUMED
    if settings.route == "gemini":
        rates = rates.model_copy(update={"frames_per_s": settings.frames_fps})
    return rates


def _image_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def estimate_prepared(prepared: Any, settings: Any, *, output_tokens: int | None = None) -> RequestEstimate:
    """Estimate one prepared request (a :class:`~omnivchat.routes.Prepared`, under its route's settings): text
    tokens from its payload (media placeholders left out), video and audio tokens from the durations of the media it
    carries under the route's :func:`rates_for`, output tokens from its max tokens (``output_tokens`` or
    :data:`DEFAULT_OUTPUT_TOKENS` when it sets none), and the cost at the route's price (None without one). Raises
    MediaError when a clip cannot be probed."""
    from omnivchat import media

    rates = rates_for(settings)
    text = _PLACEHOLDER.sub("", json.dumps(prepared.description, ensure_ascii=False))
    n_text = text_tokens(text, rates.chars_per_token)
    audio_tokens = video_tokens = 0.0
    size = 0
    seconds = 0.0
    audio_in_video = settings.audio_delivery == "in_video" or settings.route == "gemini"
    for source, mime in prepared.media.files.values():
        if isinstance(source, bytes):
            size += len(source)
            if mime.startswith("image/"):  # one sampled frame, sent as an image
                width, height = _image_size(source)
                if rates.tokens_per_frame is not None:
                    video_tokens += rates.tokens_per_frame
                else:
                    video_tokens += width * height / FRAME_IMAGE_PIXELS_PER_TOKEN
            continue
        info = prepared.media.probed.get(source) or media.probe(Path(source), energy=False, verify=False)
        size += info.size_bytes
        seconds += info.duration
        if mime.startswith("audio/"):
            audio_tokens += info.duration * rates.audio_per_s
            continue
        if info.has_video:
            frames = (info.video_duration or info.duration) * rates.frames_per_s
            if rates.max_frames is not None:
                frames = min(frames, rates.max_frames)
            video_tokens += math.ceil(frames) * rates.frame_tokens(info.width, info.height)
        if info.has_audio and audio_in_video:
            audio_tokens += (info.audio_duration or info.duration) * rates.audio_per_s
    out = output_tokens or prepared.request.sampling.max_tokens or DEFAULT_OUTPUT_TOKENS
    estimate = RequestEstimate(
        media_bytes=size,
        media_seconds=seconds,
        text_tokens=n_text,
        audio_tokens=math.ceil(audio_tokens),
        video_tokens=math.ceil(video_tokens),
        output_tokens=out,
        usd=None,
    )
    price: Price | None = settings.price
    if price is None:
        return estimate
    usd = _priced(
        estimate.prompt_tokens,
        out,
        estimate.audio_tokens if price.audio_input_per_mtok is not None else 0,
        estimate.video_tokens if price.video_input_per_mtok is not None else 0,
        price,
    )
    return RequestEstimate(**{**estimate.__dict__, "usd": usd})
