"""What a self-served OpenAI-compatible server takes: the media items a request holds, as vLLM counts them against
its ``--limit-mm-per-prompt``; which server it is (vLLM, SGLang, llama.cpp, as it says of itself), and the route
settings changed for what that server really decodes, so that no server drops the audio of a clip silently.

Facts from the servers' own code (vLLM 0.34, SGLang 0.5.23, llama.cpp's tools/server of 2026-10; docs/self-serve.md).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from omnivchat.routes._defaults import SettingsError

MODALITIES = ("image", "video", "audio")
_PART_MODALITY = {"image_url": "image", "video_url": "video", "input_audio": "audio", "audio_url": "audio"}


def media_items(payload: Mapping[str, Any]) -> dict[str, int]:
    """The media items of a chat-completions ``payload`` per modality, as vLLM counts them: one per ``image_url``,
    ``video_url``, ``input_audio`` or ``audio_url`` part of every message, and with
    ``mm_processor_kwargs.use_audio_in_video`` one more audio item per video (the track vLLM takes out of it)."""
    counts = dict.fromkeys(MODALITIES, 0)
    for message in payload.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            modality = _PART_MODALITY.get(str(part.get("type"))) if isinstance(part, dict) else None
            if modality is not None:
                counts[modality] += 1
    kwargs = payload.get("mm_processor_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("use_audio_in_video") is True:
        counts["audio"] += counts["video"]
    return counts


def most_items(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The most items of each modality any one request holds (each modality on its own)."""
    most = dict.fromkeys(MODALITIES, 0)
    for one in counts:
        for modality in MODALITIES:
            most[modality] = max(most[modality], one.get(modality, 0))
    return most


def limit_flag(counts: Mapping[str, int]) -> str:
    """vLLM's server flag that admits requests of up to ``counts`` items (a modality at 0 is turned off, which
    also spares the memory vLLM reserves for it)."""
    return "--limit-mm-per-prompt '" + json.dumps({m: counts.get(m, 0) for m in MODALITIES}) + "'"


def describe_items(counts: Mapping[str, int]) -> str:
    """``2 videos, 2 audio items`` (no media: ``no media``)."""
    names = {"image": ("image", "images"), "video": ("video", "videos"), "audio": ("audio item", "audio items")}
    said = [f"{counts[m]} {names[m][counts[m] != 1]}" for m in MODALITIES if counts.get(m)]
    return ", ".join(said) or "no media"


# ----------------------------------------------------------------------------------------------- which server

ServerKind = Literal["vllm", "sglang", "llama.cpp", "other"]
SERVER_KINDS: tuple[ServerKind, ...] = ("vllm", "sglang", "llama.cpp", "other")
ASK_TIMEOUT_S = 10.0
# vLLM decodes the audio of a video only when a request asks (mm_processor_kwargs.use_audio_in_video), from 0.18
_VLLM_AUDIO_IN_VIDEO = (0, 18)


class ServerInfo(BaseModel):
    """What serves a self-served model, as it says of itself (or as ``--server`` says), and what omnivchat changed
    in the route's settings for it. Recorded in run manifests and route checks for information."""

    model_config = ConfigDict(frozen=True)

    kind: ServerKind
    version: str | None = None
    modalities: dict[str, bool] | None = Field(
        default=None, description="The input kinds the server takes (llama.cpp's /props: vision, video, audio)."
    )
    source: str = Field(description="How it is known: the endpoint that said so, or the --server flag.")
    adapted: tuple[str, ...] = Field(default=(), description="What omnivchat changed for this server, and why.")

    def label(self) -> str:
        names = {"vllm": "vLLM", "sglang": "SGLang", "llama.cpp": "llama.cpp", "other": "an unrecognised server"}
        return names[self.kind] + (f" {self.version}" if self.version else "")


def identify(models: Any, server_header: str | None) -> ServerKind:
    """The server's kind from its ``GET /v1/models`` answer and its ``Server`` header: llama.cpp names itself in
    every response's header and owns its models as ``llamacpp``; vLLM's are owned by ``vllm``, SGLang's by
    ``sglang`` (their protocol modules)."""
    if server_header and "llama.cpp" in server_header.lower():
        return "llama.cpp"
    data = models.get("data") if isinstance(models, dict) else None
    owners = {m.get("owned_by") for m in data if isinstance(m, dict)} if isinstance(data, list) else set()
    for owner, kind in (("vllm", "vllm"), ("sglang", "sglang"), ("llamacpp", "llama.cpp")):
        if owner in owners:
            return kind  # type: ignore[return-value]  # each value of the table is a ServerKind
    return "other"


def _version_tuple(version: str | None) -> tuple[int, ...] | None:
    found = re.match(r"v?(\d+)\.(\d+)", (version or "").strip(), re.IGNORECASE)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _root(base_url: str) -> str:
    """The server's root URL: its OpenAI base URL without the trailing /v1."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{path.removesuffix('/v1')}"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer of its own (HTTP 3xx), never followed: the key would go to another host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _get_json(opener: Any, url: str, headers: dict[str, str], deadline: float) -> tuple[Any, str | None]:
    """GET ``url`` as JSON, the whole exchange within ``deadline`` (time.monotonic): a server that trickles its
    answer is cut there. At most 1 MiB is read."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no time left")
    with opener.open(urllib.request.Request(url, headers=headers), timeout=left) as response:
        body = b""
        while len(body) < 1 << 20:
            if time.monotonic() > deadline:
                raise TimeoutError("the answer did not end in time")
            block = response.read1(1 << 16)
            if not block:
                break
            body += block
        return json.loads(body), response.headers.get("Server")


def _under(base_url: str, suffix: str) -> str:
    """``base_url`` (up to /v1, maybe with a query) with ``suffix`` appended to its path, the query kept."""
    parts = urlsplit(base_url)
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}{suffix}{query}"


def ask_server(
    base_url: str, api_key: str | None = None, *, trust_env: bool = False, timeout_s: float = ASK_TIMEOUT_S
) -> ServerInfo | str:
    """Ask the server at ``base_url`` what it is: ``GET /v1/models`` (its owner names and ``Server`` header), then
    the version (vLLM ``/version``, SGLang ``/server_info``) or the input kinds (llama.cpp ``/props``), all within
    ``timeout_s`` in all. Returns why not, in words, when it cannot be asked (down, slow, an HTTP error or a
    redirect, not JSON): the caller says so and goes on."""
    handlers: list[Any] = [_NoRedirects()]
    if not trust_env:
        handlers.append(urllib.request.ProxyHandler({}))  # a model under test goes direct
    opener = urllib.request.build_opener(*handlers)
    headers = {"Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    deadline = time.monotonic() + timeout_s
    models_url = _under(base_url, "/models")
    try:
        models, header = _get_json(opener, models_url, headers, deadline)
    except urllib.error.HTTPError as err:
        return f"GET {_public(models_url)} answered HTTP {err.code}"
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", None) or err
        return f"GET {_public(models_url)} failed ({type(reason).__name__ if not isinstance(reason, str) else reason})"
    kind = identify(models, header)
    root = _root(base_url)
    version: str | None = None
    modalities: dict[str, bool] | None = None
    extra = {"vllm": ("/version",), "sglang": ("/server_info", "/get_server_info"), "llama.cpp": ("/props",)}
    for path in extra.get(kind, ()):
        try:
            data, _ = _get_json(opener, root + path, headers, deadline)
        except (urllib.error.URLError, OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("version"), str):
            version = data["version"]
        if isinstance(data.get("build_info"), str):
            version = data["build_info"]
        if isinstance(data.get("modalities"), dict):  # only the kinds read: a server's own names are never kept
            said = data["modalities"]
            modalities = {k: said[k] for k in ("vision", "video", "audio") if isinstance(said.get(k), bool)}
        break
    # The path only: a manifest (and so an export) never locates a server.
    source = f"GET {urlsplit(models_url).path}"
    return ServerInfo(kind=kind, version=version, modalities=modalities, source=source)


def _public(url: str) -> str:
    """A URL as it may be shown: scheme, host, port and path (a query can hold a token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


class ServerMismatch(SettingsError):
    """The flags ask for a delivery the server is known not to take (SGLang or llama.cpp and in-video audio, a
    llama.cpp server without vision or audio): refused before anything is sent."""


def adapt_to_server(settings: Any, server: ServerInfo, explicit: Mapping[str, Any]) -> tuple[Any, ServerInfo]:
    """``settings`` (a RouteSettings) changed for what ``server`` really takes, and the server info with what was
    changed and why. ``explicit``: the settings the user set on the command line; one that the server cannot honour
    is refused (ServerMismatch) instead of changed, and nothing is ever silently dropped:

    - the audio of a video is decoded by vLLM >= 0.18 only when asked (use_audio_in_video, asked for the Qwen-Omni
      names), never by SGLang (its Qwen-Omni processor fixes it to false) or llama.cpp (it decodes a video's frames
      only): there the track goes as a separate input_audio WAV part;
    - llama.cpp takes a video only in builds whose /props say ``video``; otherwise the clip goes as JPEG frames (its
      image parts); a llama.cpp server with no vision or no audio (no multimodal projector) is refused.
    """
    server = server.model_copy(update={"adapted": ()})  # what is changed now (a server passed on says it again)
    if server.kind == "other":
        return settings, server
    update: dict[str, Any] = {}
    reasons: list[str] = []
    video = settings.media_input in ("video_url", "file")
    delivery = settings.audio_delivery
    if server.kind == "llama.cpp":
        if explicit.get("audio_delivery") == "in_video":
            raise ServerMismatch(
                "--audio-delivery in-video: llama.cpp decodes only the frames of a video, never its audio; use "
                "--audio-delivery separate (the track as a WAV part), or none to run without audio (runs say so)"
            )
        update, reasons = _llama_cpp(settings, server, explicit)
        video = update.get("media_input", settings.media_input) in ("video_url", "file")
    if delivery == "in_video" and video:
        why = _drops_audio_in_video(settings, server)
        if why is not None:
            if explicit.get("audio_delivery") == "in_video":
                raise ServerMismatch(
                    f"--audio-delivery in-video: {why}, so the model would never hear the clip; use "
                    "--audio-delivery separate (the track as a WAV part), or none to run without audio (runs say so)"
                )
            update |= {"audio_delivery": "input_audio", "audio_in_video_kwarg": False}
            reasons.append(f"audio_delivery in_video -> input_audio ({why})")
    if not update:
        return settings, server
    return settings.model_copy(update=update), server.model_copy(update={"adapted": tuple(reasons)})


def _drops_audio_in_video(settings: Any, server: ServerInfo) -> str | None:
    """Why ``server`` would not decode the audio track of a video sent under ``settings`` (None: it does)."""
    if server.kind == "sglang":
        return "SGLang drops the audio of a video (its Qwen-Omni processor fixes use_audio_in_video to false)"
    if server.kind == "llama.cpp":
        return "llama.cpp decodes only the frames of a video, never its audio"
    if server.kind == "vllm":
        if not settings.audio_in_video_kwarg:
            return (
                "vLLM decodes the audio of a video only when the request asks (use_audio_in_video), which omnivchat "
                "asks for the Qwen-Omni names only"
            )
        known = _version_tuple(server.version)
        if known is not None and known < _VLLM_AUDIO_IN_VIDEO:
            return f"vLLM {server.version} decodes no audio of a video (use_audio_in_video online came in 0.18)"
    return None


def _llama_cpp(settings: Any, server: ServerInfo, explicit: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """llama.cpp's media: what /props says it takes (unknown: images and audio, which every multimodal build
    takes), the clip as frames when it takes no video."""
    can = server.modalities or {}
    vision, audio, takes_video = can.get("vision", True), can.get("audio", True), can.get("video", False)
    media_input = settings.media_input
    if not vision and media_input not in ("audio", "none"):
        raise ServerMismatch(
            "llama.cpp at this URL takes no images or video (/props: vision false; it was started without the "
            "model's multimodal projector, --mmproj): pass --media-input-type audio to send the clip's audio alone "
            "(the video is not delivered, and runs say so), or serve a model with vision"
        )
    if not audio and settings.audio_delivery != "none" and media_input != "none":
        raise ServerMismatch(
            "llama.cpp at this URL takes no audio (/props: audio false), so the model would never hear the "
            "question: serve a model with an audio encoder (its --mmproj), or pass --audio-delivery none to run "
            "without audio (runs say so)"
        )
    update: dict[str, Any] = {}
    reasons: list[str] = []
    if media_input in ("video_url", "file") and not takes_video:
        if explicit.get("media_input") in ("video_url", "file"):
            raise ServerMismatch(
                f"--media-input-type {explicit['media_input']}: this llama.cpp build takes no video (/props: video "
                "false or unknown); use --media-input-type frames (JPEG frames and the track as a WAV part)"
            )
        update["media_input"] = "frames"
        reasons.append(f"media_input {media_input} -> frames ({server.label()} takes no video: JPEG frames instead)")
        if settings.audio_delivery == "in_video":  # frames carry no track: it goes as a WAV part, and says so
            update |= {"audio_delivery": "input_audio", "audio_in_video_kwarg": False}
            reasons.append("audio_delivery in_video -> input_audio (JPEG frames carry no audio track)")
    return update, reasons
