"""``data:`` URLs for media, the way OpenAI-compatible routes take inline video, audio and images."""

from __future__ import annotations

import base64
import io
import mimetypes
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnivchat.media._ffmpeg import MediaError

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

_MIME = {
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".mov": "video/quicktime",
    ".webm": "video/webm",
    ".mkv": "video/x-matroska",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".ogg": "audio/ogg",
    ".flac": "audio/flac",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".webp": "image/webp",
}


def mime_type(path: str | os.PathLike[str]) -> str:
    """The MIME type for a media file name (``video/mp4`` for ``.mp4``, ...)."""
    suffix = Path(path).suffix.lower()
    return _MIME.get(suffix) or mimetypes.guess_type(str(path))[0] or "application/octet-stream"


def to_data_url(
    source: str | os.PathLike[str] | bytes | np.ndarray | Image.Image,
    *,
    mime: str | None = None,
    image_format: str = "jpeg",
    max_bytes: int | None = None,
) -> str:
    """``data:<mime>;base64,<...>`` for a file path, raw bytes (give ``mime``), an RGB array or a Pillow image.

    Arrays and images are encoded as ``image_format`` (jpeg or png). ``max_bytes`` caps the encoded payload
    (before base64): larger input raises MediaError naming the file, so a route's limit is caught here rather
    than as an HTTP 413.
    """
    name = "<bytes>"
    payload: bytes
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        name = str(p)
        try:
            payload = p.read_bytes()
        except FileNotFoundError:
            raise MediaError(f"{p}: no such file") from None
        except OSError as exc:
            raise MediaError(f"{p}: cannot read ({exc.strerror})") from None
        mime = mime or mime_type(p)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        payload = bytes(source)
        mime = mime or "application/octet-stream"
    else:
        payload, mime = _encode_image(source, image_format)
        name = "<image>"
    if max_bytes is not None and len(payload) > max_bytes:
        raise MediaError(f"{name}: {len(payload)} bytes exceeds the {max_bytes}-byte limit for inline media")
    return f"data:{mime};base64,{base64.b64encode(payload).decode('ascii')}"


def _encode_image(source: Any, image_format: str) -> tuple[bytes, str]:
    from PIL import Image

    img = source if isinstance(source, Image.Image) else Image.fromarray(source)
    fmt = "JPEG" if image_format.lower() in ("jpg", "jpeg") else image_format.upper()
    if fmt == "JPEG" and img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue(), f"image/{fmt.lower()}"
