"""Per-model request defaults (route, thinking, media input, modalities, audio delivery, limits).

Facts from the providers' documentation (DashScope Qwen-Omni, Gemini's OpenAI-compatible endpoint, vLLM's
OpenAI server) and the SocialOmni hosted runner. Resolution order: the first
matching pattern of the built-in table, then a user file (same patterns), then explicit overrides (CLI flags).
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer

from omnivchat.errors import OmnivchatError
from omnivchat.media import MediaLimits
from omnivchat.routes._cost import GEMINI, QWEN_OMNI_FLASH, QWEN_OMNI_TURBO, Price, TokenRates

DASHSCOPE = "https://dashscope.aliyuncs.com/compatible-mode/v1"
GEMINI_OPENAI = "https://generativelanguage.googleapis.com/v1beta/openai"
MB = 1024 * 1024
PROVIDER_DEFAULT = "default"


class RouteSettings(BaseModel):
    """Everything that decides how a request is built and sent; recorded whole in each run manifest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    route: Literal["openai", "gemini", "sim", "cascade"] = "openai"
    base_url: str | None = Field(default=None, description="Server URL up to /v1; /chat/completions is appended.")
    api_key_env: str | None = Field(default=None, description="Environment variable holding the key.")
    thinking: bool | None = Field(default=None, description="enable_thinking; None leaves the provider default.")
    thinking_switch: Literal["enable_thinking", "chat_template_kwargs", "google"] = Field(
        default="enable_thinking",
        description="Where `thinking` is sent: the top-level enable_thinking field (DashScope reads it), "
        "chat_template_kwargs.enable_thinking, the chat template's own switch (vLLM, SGLang and llama.cpp's server "
        "read only that one), or google: Gemini's thinking_config in extra_body.google (its OpenAI-compatible "
        "endpoint). Left out of dumps at its default.",
    )
    reasoning_effort: str | None = None
    media_input: Literal["video_url", "file", "frames", "audio", "none"] = Field(
        default="video_url",
        description="video_url or file: the whole MP4 as a data URL; frames: JPEG frames (+ input_audio); "
        "audio: the clip's track alone as an input_audio WAV part (OpenAI's audio models take no video: the video "
        "is not delivered, and runs say so); none: a text-only model (a request with a clip fails).",
    )
    include_modalities: bool = Field(default=True, description='Send modalities=["text"].')
    audio_delivery: Literal["in_video", "input_audio", "none"] = Field(
        default="in_video",
        description="in_video (`--audio-delivery in-video`): the clip's own track, inside the video; input_audio "
        "(`separate`): also a separate 16 kHz mono WAV part (for servers that drop the audio of a video: SGLang, "
        "vLLM before 0.18); none: audio is not delivered, and runs say so.",
    )
    audio_in_video_kwarg: bool = Field(
        default=False,
        description='With in_video and video_url: send mm_processor_kwargs={"use_audio_in_video": true}, which vLLM '
        "(>= 0.18; from 0.31 only with --trust-request-mm-kwargs) needs to decode and interleave the clip's audio "
        "(Qwen-Omni). Left out of dumps when false, so manifests made before it existed stay the same.",
    )
    audio_in_video_max_bytes: int | None = Field(
        default=25 * MB,
        gt=0,
        description="With the in-video audio vLLM is asked to decode (audio_in_video_kwarg), the largest clip sent: "
        "vLLM reads the whole MP4 through its audio loader, which refuses more than VLLM_MAX_AUDIO_CLIP_FILESIZE_MB "
        "(25 MiB by default) with HTTP 400; a larger clip is re-encoded to fit (or refused when it cannot be). Set it "
        "to the server's value when raised; None: no cap. Left out of dumps at its default.",
    )
    reasoning_model: bool = Field(
        default=False,
        description="An OpenAI reasoning model (GPT-5 family, o1/o3/o4): max_tokens goes as max_completion_tokens, "
        "and temperature and top_p are left out (the API takes only their defaults and refuses any other value). "
        "Left out of dumps when false.",
    )
    audio_sample_rate: int = 16000
    limits: MediaLimits = MediaLimits()
    inline_max_bytes: int | None = Field(
        default=None, description="Gemini native: clips up to this size go inline, larger ones via the Files API."
    )
    frames_fps: float = 2.0
    max_frames: int = 16
    stream: bool = True
    timeout_s: float = Field(default=600.0, gt=0)
    max_concurrency: int = Field(default=8, gt=0)
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra fields merged into the payload.")
    # Cost accounting only: they change no request, so they are left out of dumps (manifests, route checks).
    price: Price | None = Field(
        default=None, exclude=True, description="USD per million tokens; None: cost unknown (docs/costs.md)."
    )
    token_rates: TokenRates | None = Field(
        default=None, exclude=True, description="Media tokens per second, for estimates (docs/costs.md)."
    )

    @model_serializer(mode="wrap")
    def _omit_later_defaults(self, handler: Any) -> Any:
        """Fields added after runs were recorded are left out of a dump while at their default: a manifest or a
        route check made before they existed still matches the same settings."""
        data = handler(self)
        if isinstance(data, dict):
            for name, default in _LATER_FIELDS.items():
                if name in data and getattr(self, name) == default:
                    del data[name]
            if self.thinking is None:  # where a switch left unset would go changes no request
                data.pop("thinking_switch", None)
        return data


_LATER_FIELDS: dict[str, Any] = {
    "audio_in_video_kwarg": False,
    "audio_in_video_max_bytes": 25 * MB,
    "reasoning_model": False,
    "thinking_switch": "enable_thinking",
}
# A self-served model (vLLM, SGLang, llama.cpp's server) is asked to think or not through its chat template.
_SELF_SERVED = {"thinking_switch": "chat_template_kwargs"}


def describe_delivery(settings: RouteSettings) -> str:
    """How the audio of a clip reaches the model under ``settings``, in words (route checks record it)."""
    if settings.route == "cascade":
        return "transcribed (the cascade's speech-recognition stage)"
    if settings.media_input == "none":
        return "none (text only)"
    if settings.media_input == "audio":
        return "separate (input_audio WAV part; the video is not delivered)"
    if settings.media_input == "frames":
        return "none (frames only)" if settings.audio_delivery == "none" else "separate (input_audio WAV part)"
    if settings.audio_delivery == "input_audio":
        return "separate (input_audio WAV part)"
    if settings.audio_delivery == "none":
        return "none"
    if settings.audio_in_video_kwarg and settings.media_input == "video_url":
        return "in-video (mm_processor_kwargs.use_audio_in_video)"
    return "in-video"


_QWEN_OMNI_HOSTED = {
    "base_url": DASHSCOPE,
    "api_key_env": "DASHSCOPE_API_KEY",
    "thinking": False,
    "media_input": "video_url",
    "include_modalities": True,
    "limits": {"max_duration_s": 150.0, "max_bytes": 256 * MB},
    "token_rates": QWEN_OMNI_FLASH.model_dump(),
}
_QWEN_OMNI_TURBO = {
    **_QWEN_OMNI_HOSTED,
    "thinking": None,
    "limits": {"max_duration_s": 40.0, "max_bytes": 150 * MB},
    "token_rates": QWEN_OMNI_TURBO.model_dump(),
}
# vLLM serving Qwen-Omni (the Hugging Face names): the clip's audio inside the video, which vLLM >= 0.18 decodes
# and interleaves when the request asks (mm_processor_kwargs); SGLang serves the same names but ignores the audio of
# a video: there, `--audio-delivery separate` (docs/self-serve.md). check-route says which one a server needs.
_VLLM_OMNI = {
    **_SELF_SERVED,
    "api_key_env": None,
    "media_input": "video_url",
    "include_modalities": False,
    "audio_delivery": "in_video",
    "audio_in_video_kwarg": True,
}
# MiniCPM-o on vLLM: audio items are separate inputs (no audio-in-video): the track goes as its own WAV part.
_VLLM_MINICPM_O = {
    **_SELF_SERVED,
    "api_key_env": None,
    "media_input": "video_url",
    "include_modalities": False,
    "audio_delivery": "input_audio",
}
# Gemini's OpenAI-compatible endpoint documents image_url and input_audio parts, no video: the clip goes as JPEG
# frames and its track as a WAV part (the native route, gemini:NAME, sends the MP4 itself).
_GEMINI_OPENAI = {
    "base_url": GEMINI_OPENAI,
    "api_key_env": "GEMINI_API_KEY",
    "media_input": "frames",
    "thinking_switch": "google",
    "include_modalities": False,
    "limits": {"max_bytes": 100 * MB},
    "token_rates": GEMINI.model_dump(),
}

_OPENAI = {
    "base_url": "https://api.openai.com/v1",
    "api_key_env": "OPENAI_API_KEY",
    "include_modalities": False,
    "media_input": "none",
}
# (pattern, settings), first match wins; patterns are fnmatch-style and case-sensitive. No hosted model has a
# price here: the reference facts state none, and a made-up price is worse than "cost unknown" (docs/costs.md).
DEFAULTS: list[tuple[str, dict[str, Any]]] = [
    ("sim:*", {"route": "sim", "max_concurrency": 64, "price": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}}),
    # A cascade's own attempt bills nothing: each stage's attempts carry their cost (routes._cascade).
    (
        "cascade:*",
        {
            "route": "cascade",
            "media_input": "none",
            "include_modalities": False,
            "max_concurrency": 8,
            "price": {"input_per_mtok": 0.0, "output_per_mtok": 0.0},
        },
    ),
    (
        "gemini:*",
        {
            "route": "gemini",
            "api_key_env": "GEMINI_API_KEY",
            "inline_max_bytes": 100 * MB,
            "token_rates": GEMINI.model_dump(),
        },
    ),
    ("qwen-omni-turbo*", _QWEN_OMNI_TURBO),
    ("dashscope/qwen-omni-turbo*", _QWEN_OMNI_TURBO),
    ("qwen*-omni-*", _QWEN_OMNI_HOSTED),
    ("dashscope/qwen*-omni-*", _QWEN_OMNI_HOSTED),
    ("Qwen/Qwen*-Omni-*", _VLLM_OMNI),
    ("openbmb/MiniCPM-o-*", _VLLM_MINICPM_O),
    ("gemini-*", _GEMINI_OPENAI),
    # DashScope's text models (qwen3-max, qwen-plus, ...): the judges of the README's example, no base URL needed.
    ("qwen*", {"base_url": DASHSCOPE, "api_key_env": "DASHSCOPE_API_KEY", "include_modalities": False}),
    # OpenAI's chat API has no video part: its audio models hear the clip's track (the video is not delivered, and
    # runs say so); its other models take no clip at all (a request with one fails before it is sent)
    *(
        (pattern, {**_OPENAI, "media_input": "audio"})
        for pattern in ("gpt-4o-audio*", "gpt-4o-mini-audio*", "gpt-audio*")
    ),
    # OpenAI's reasoning models refuse max_tokens and any temperature but 1 (gpt-5-chat-* is not one of them)
    ("gpt-5-chat*", _OPENAI),
    *((pattern, {**_OPENAI, "reasoning_model": True}) for pattern in ("gpt-5*", "o1*", "o3*", "o4*")),
    ("gpt-*", _OPENAI),
    ("*", _SELF_SERVED),  # any other name: most likely a server of your own
]


class SettingsError(OmnivchatError, ValueError):
    """A user defaults file or override is invalid; the message names the file or option."""


def _load_user_file(path: Path) -> dict[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SettingsError(f"{path}: cannot read ({err.strerror})") from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError) as err:  # RecursionError: nested too deeply
        raise SettingsError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'} ({err})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SettingsError(f"{path}: expected a mapping of model patterns to settings")
    return data


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_settings(
    model_id: str, *, user_file: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> RouteSettings:
    """Settings for ``model_id``: built-in table, then the user file's first matching pattern, then overrides.

    Overrides whose value is None are ignored (an unset CLI flag); the value PROVIDER_DEFAULT sets a field back
    to None (for example ``--thinking default``: leave enable_thinking out of the request).
    """
    settings: dict[str, Any] = next(dict(s) for pattern, s in DEFAULTS if fnmatch.fnmatchcase(model_id, pattern))
    source = "built-in defaults"
    if user_file is not None:
        path = Path(user_file)
        for pattern, values in _load_user_file(path).items():
            if fnmatch.fnmatchcase(model_id, pattern):
                settings = _merge(settings, values)
                source = f"{path} [{pattern}]"
                break
    given = {k: (None if v == PROVIDER_DEFAULT else v) for k, v in (overrides or {}).items() if v is not None}
    settings = _merge(settings, given)
    try:
        return RouteSettings.model_validate(settings)
    except ValidationError as err:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise SettingsError(f"settings for {model_id} ({source} and overrides): {details}") from None
