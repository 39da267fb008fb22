"""Turning clips into content parts: fit to the route's limits, then describe each part by content hash.

The request identity (its hash) uses the description, where each media part holds a placeholder naming its
sha256; the bytes are read and base64-encoded only when the request is sent. Two requests with the same media
and settings therefore have the same key, without encoding media just to look a result up.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat.routes._types import Delivered, RouteError

PLACEHOLDER = "omnivchat-media:"  # followed by "<sha256>"; replaced by a data URL at send time
PLACEHOLDER_RAW = "omnivchat-media-b64:"  # replaced by bare base64 (input_audio on vLLM)


@dataclass
class MediaStore:
    """The files behind the placeholders of one request: sha256 -> (path or bytes, MIME type)."""

    files: dict[str, tuple[Path | bytes, str]] = field(default_factory=dict)

    def add_file(self, path: Path, mime: str) -> str:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        self.files[digest] = (path, mime)
        return digest

    def add_bytes(self, data: bytes, mime: str) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self.files[digest] = (data, mime)
        return digest

    def _bytes(self, digest: str) -> tuple[bytes, str]:
        source, mime = self.files[digest]
        return (source.read_bytes() if isinstance(source, Path) else source), mime

    def materialize(self, value: Any) -> Any:
        """A copy of ``value`` with every placeholder replaced by its data URL or bare base64."""
        if isinstance(value, dict):
            return {k: self.materialize(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.materialize(v) for v in value]
        if isinstance(value, str):
            if value.startswith(PLACEHOLDER):
                data, mime = self._bytes(value[len(PLACEHOLDER) :])
                return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
            if value.startswith(PLACEHOLDER_RAW):
                data, _ = self._bytes(value[len(PLACEHOLDER_RAW) :])
                return base64.b64encode(data).decode("ascii")
        return value


def clip_parts(clip: Path, settings: Any, store: MediaStore) -> tuple[list[dict[str, Any]], Delivered]:
    """Content parts for one clip under ``settings`` (a RouteSettings), and which streams they deliver.

    Raises RouteError(kind="media") naming the file when the clip cannot be read or fitted, and
    RouteError(kind="unsupported") when the route takes no media.
    """
    from omnivchat import media

    if settings.media_input == "none":
        raise RouteError("unsupported", f"{clip}: this route takes text only and cannot deliver video or audio")
    from omnivchat.media._ops import fits

    try:
        # One probe when the clip already fits (the common case); fit_for_route re-encodes otherwise.
        info = media.probe(clip, energy=False)
        fitted = clip
        if not fits(info, settings.limits):
            fitted = media.fit_for_route(clip, settings.limits)
            info = media.probe(fitted, energy=False)
        parts: list[dict[str, Any]] = []
        if settings.media_input == "frames":
            for frame in media.sample_frames(fitted, fps=settings.frames_fps, max_frames=settings.max_frames):
                url = PLACEHOLDER + store.add_bytes(frame.to_bytes("jpeg", quality=85), "image/jpeg")
                parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            url = PLACEHOLDER + store.add_file(fitted, "video/mp4")
            if settings.media_input == "file":
                parts.append({"type": "file", "file": {"file_data": url, "filename": "clip.mp4"}})
            else:
                parts.append({"type": "video_url", "video_url": {"url": url}})
        audio_in_video = info.has_audio and settings.media_input != "frames" and settings.audio_delivery != "none"
        separate = info.has_audio and (
            settings.audio_delivery == "input_audio"
            or (settings.media_input == "frames" and settings.audio_delivery != "none")
        )
        if separate:
            wav = media.export_audio(fitted, fmt="wav", sr=settings.audio_sample_rate)
            data = PLACEHOLDER_RAW + store.add_file(wav, "audio/wav")
            parts.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
    except media.MediaError as err:
        raise RouteError("media", str(err)) from None
    audio = audio_in_video or separate
    dropped = ("audio",) if info.has_audio and not audio else ()
    return parts, Delivered(video=info.has_video, audio=audio, dropped=dropped)
