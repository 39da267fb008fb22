"""Decoding to numpy with PyAV, in process: mono audio at a chosen rate, and frames sampled at a steady rate."""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from omnivchat.media._bounded import bounded
from omnivchat.media._ffmpeg import MediaError
from omnivchat.media._probe import decode_audio, open_container, probe, require_video

if TYPE_CHECKING:
    from PIL import Image


def extract_audio(path: str | os.PathLike[str], sr: int | None = 16000) -> np.ndarray:
    """The audio track of ``path`` as mono float32 samples in [-1, 1] at ``sr`` Hz (None keeps the source rate).

    Use :func:`extract_audio_with_rate` to also get the rate. A clip without an audio track raises MediaError
    ("no audio track") naming the file, instead of ffmpeg's exit 234.
    """
    return decode_audio(Path(path), sr=sr)[0]


def extract_audio_with_rate(path: str | os.PathLike[str], sr: int | None = 16000) -> tuple[np.ndarray, int]:
    """Like :func:`extract_audio`, returning ``(samples, sample_rate)``; useful with ``sr=None``."""
    return decode_audio(Path(path), sr=sr)


@dataclass(frozen=True)
class FrameSample:
    """One frame taken from a clip: its presentation time and its pixels (H x W x 3, uint8 RGB)."""

    time: float
    array: np.ndarray

    def to_pil(self) -> Image.Image:
        """The frame as a Pillow image."""
        from PIL import Image

        return Image.fromarray(self.array, "RGB")

    def to_bytes(self, fmt: str = "jpeg", quality: int = 90) -> bytes:
        """The frame encoded as JPEG or PNG bytes."""
        buf = io.BytesIO()
        self.to_pil().save(buf, format=fmt.upper(), quality=quality)
        return buf.getvalue()

    def to_data_url(self, fmt: str = "jpeg", quality: int = 90) -> str:
        """The frame as a ``data:image/...;base64,`` URL."""
        mime = "image/jpeg" if fmt.lower() in ("jpeg", "jpg") else f"image/{fmt.lower()}"
        return f"data:{mime};base64,{base64.b64encode(self.to_bytes(fmt, quality)).decode('ascii')}"


def sample_times(duration: float, fps: float, max_frames: int) -> list[float]:
    """Times at which :func:`sample_frames` takes frames: the middle of each 1/fps slot, or of ``max_frames``
    equal slots when the clip is longer than ``max_frames / fps`` (so the whole clip stays covered)."""
    if fps <= 0 or max_frames <= 0:
        raise ValueError("fps and max_frames must be positive")
    n = max(1, round(duration * fps))
    if n <= max_frames:
        return [(i + 0.5) / fps for i in range(n) if (i + 0.5) / fps < duration] or [duration / 2]
    step = duration / max_frames
    return [(i + 0.5) * step for i in range(max_frames)]


@bounded("sampling frames")
def sample_frames(
    path: str | os.PathLike[str], fps: float = 2.0, max_frames: int = 16, *, max_side: int | None = None
) -> list[FrameSample]:
    """Frames of ``path`` at ``fps`` (at most ``max_frames``, spread evenly over longer clips) as RGB arrays.

    Each frame is the one on screen at its sample time. ``max_side`` shrinks frames (keeping the aspect ratio)
    so their longer side is at most that many pixels.
    """
    import av

    p = Path(path)
    info = probe(p, energy=False, verify=True)
    require_video(info)
    assert info.width and info.height
    times = sample_times(info.video_duration or info.duration, fps, max_frames)
    width, height = info.width, info.height
    if max_side and max(width, height) > max_side:
        scale = max_side / max(width, height)
        width, height = max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)
    out: list[FrameSample] = []
    pending = list(times)
    last = None
    try:
        with open_container(p) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            start = float(stream.start_time * stream.time_base) if stream.start_time is not None else 0.0
            for frame in container.decode(stream):
                t = (float(frame.time) - start) if frame.time is not None else 0.0
                # The frame on screen at time x is the last one whose time is <= x.
                while pending and t > pending[0] + 1e-6:
                    out.append(_grab(last if last is not None else frame, pending.pop(0), width, height))
                last = frame
                if not pending:
                    break
            while pending and last is not None:
                out.append(_grab(last, pending.pop(0), width, height))
    except av.FFmpegError as exc:
        raise MediaError(f"{p}: cannot decode video ({exc})") from None
    if not out:
        raise MediaError(f"{p}: no decodable video frames")
    return out


def _grab(frame: Any, time: float, width: int, height: int) -> FrameSample:
    rgb = frame.to_ndarray(format="rgb24", width=width, height=height)
    return FrameSample(time=round(time, 6), array=np.ascontiguousarray(rgb))
