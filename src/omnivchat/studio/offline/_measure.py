"""What the offline Reviewer measures in a clip: colour names, frame regions and their decoding, the audio
level, clipping and tail, box geometry; and the thresholds it judges by."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from omnivchat.media import MediaError, bounded

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from omnivchat.media import MediaInfo
    from omnivchat.synth import TailScores

    Frame = NDArray[np.uint8]

# Colour words the Reviewer uses: every mini-bench colour word, plus black, gray, brown and pink.
PALETTE = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "white", "gray", "black")

_ANALYSIS_MAX_SIDE = 640  # larger frames are shrunk before analysis
_SAMPLES_PER_S = 4.0  # evenly spaced frames for cuts, blank and frozen checks
_MIN_SAMPLES, _MAX_SAMPLES = 6, 40
_CUT_JUMP = 40.0  # RGB distance of a backdrop strip's median between consecutive samples
_DIFFERENT = 30.0  # RGB distance at which two regions count as different colours
_PIXEL_CHANGE = 40  # a pixel changed between two frames (largest channel difference)
_MIN_CHANGED_PIXELS = 6
_UNIFORM_STD = 2.5  # luminance standard deviation of a blank (uniform) frame
_DARK_BRIGHTEST, _DIM_BRIGHTEST, _DARK_MEAN = 110.0, 180.0, 20.0
_SILENT_DBFS = -60.0
_HEARD_FRACTION = 0.2  # a line is heard when this share of its 20 ms frames holds sound
_MIN_RATE_SPAN_S, _MIN_RATE_UNITS = 1.0, 3  # shorter lines are too short for a stable rate
_CLIP_LEVEL, _CLIP_FRACTION = 0.99, 5e-4


# ----------------------------------------------------------------------------------------------- colours


def colour_name(rgb: Sequence[float] | NDArray[Any], light: float = 1.0) -> str:
    """The palette word for an (r, g, b) colour seen under a light level of ``light`` (0-1: the scene's brightest
    lit pixels over 255). Hue picks the colour; saturation and value (divided by ``light``) pick white, gray,
    black, brown and pink. So a dim or tinted render still names red, orange and white as such."""
    r, g, b = (float(c) / 255.0 for c in rgb)
    hi, lo = max(r, g, b), min(r, g, b)
    chroma = hi - lo
    value = min(1.0, hi / max(light, 0.05))
    sat = chroma / hi if hi > 0 else 0.0
    if value < 0.2:
        return "black"
    hue = _hue(r, g, b, hi, chroma)
    if sat < 0.25:
        if sat >= 0.16 and (hue >= 330 or hue < 12) and value > 0.7:
            return "pink"
        return "white" if value > 0.78 else "gray" if value > 0.3 else "black"
    if hue < 12 or hue >= 340:
        return "pink" if sat < 0.5 and value > 0.75 else "red"
    if hue < 46:
        return "brown" if value < 0.66 else "orange"
    if hue < 70:
        return "yellow"
    if hue < 180:
        return "green"
    if hue < 258:
        return "blue"
    if hue < 310:
        return "purple"
    return "pink"


def _hue(r: float, g: float, b: float, hi: float, chroma: float) -> float:
    if chroma <= 0:
        return 0.0
    if hi == r:
        h = ((g - b) / chroma) % 6
    elif hi == g:
        h = (b - r) / chroma + 2
    else:
        h = (r - g) / chroma + 4
    return 60.0 * h


def _brightest(frames: Iterable[Frame], masks: Iterable[NDArray[np.bool_] | None] = ()) -> float:
    """The 99.5th percentile of the brightest channel over the lit pixels of ``frames`` (each frame's mask keeps
    the lit pixels, leaving out overlays such as placards)."""
    best = 0.0
    mask_list = list(masks)
    for i, frame in enumerate(frames):
        mask = mask_list[i] if i < len(mask_list) else None
        top = np.maximum(np.maximum(frame[::2, ::2, 0], frame[::2, ::2, 1]), frame[::2, ::2, 2])
        values = top[mask[::2, ::2]] if mask is not None else top.reshape(-1)
        if values.size:
            best = max(best, float(np.percentile(values, 99.5)))
    return best


def _dist(a: NDArray[Any] | None, b: NDArray[Any] | None) -> float:
    if a is None or b is None:
        return math.inf
    return float(np.linalg.norm(a.astype(np.float64) - b.astype(np.float64)))


def _rgb_list(c: NDArray[Any] | None) -> list[int] | None:
    return None if c is None else [round(float(v)) for v in c]


# ----------------------------------------------------------------------------------------------- frames


Box = tuple[float, float, float, float]


def _region(frame: Frame, box: Box) -> NDArray[np.uint8] | None:
    """The pixels of ``box`` (x0, y0, x1, y1 in frame pixels, clipped to the frame) as an (n, 3) array."""
    h, w = frame.shape[:2]
    x0, y0 = max(0, math.floor(box[0])), max(0, math.floor(box[1]))
    x1, y1 = min(w, math.ceil(box[2])), min(h, math.ceil(box[3]))
    if x1 <= x0 or y1 <= y0:
        return None
    return frame[y0:y1, x0:x1].reshape(-1, 3)


def _median(frame: Frame, *boxes: Box) -> NDArray[np.float64] | None:
    parts = [p for p in (_region(frame, b) for b in boxes) if p is not None]
    if not parts:
        return None
    return np.median(np.concatenate(parts).astype(np.float64), axis=0)


def _patch(x: float, y: float, half: float) -> Box:
    half = max(1.0, half)
    return (x - half, y - half, x + half + 1, y + half + 1)


def _changed(a: Frame, b: Frame, box: Box | None = None) -> int:
    """How many pixels of ``box`` (default: the whole frame) differ between two frames."""
    if box is not None:
        ra, rb = _region(a, box), _region(b, box)
        if ra is None or rb is None:
            return 0
    else:
        ra, rb = a.reshape(-1, 3), b.reshape(-1, 3)
    # |a - b| per channel in uint8 (larger minus smaller: no overflow), then the largest of the three channels as
    # two element-wise maxima: a reduction over an axis of length 3 (``.max(axis=1)``) is many times slower.
    diff = np.maximum(ra, rb) - np.minimum(ra, rb)
    largest = np.maximum(np.maximum(diff[:, 0], diff[:, 1]), diff[:, 2])
    return int(np.count_nonzero(largest > _PIXEL_CHANGE))


def _luma(frame: Frame) -> NDArray[np.float32]:
    f = frame.astype(np.float32)
    return cast("NDArray[np.float32]", 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2])


@bounded("decoding frames")
def _decode_frames(path: Path, times: Iterable[float], size: tuple[int, int]) -> dict[float, Frame]:
    """The frame on screen at each of ``times`` (seconds), as (h, w, 3) RGB arrays of ``size`` = (w, h).

    One pass over the stream (a 10 s 320x180 clip decodes in about 50 ms); only the frames asked for are
    converted. A time past the last frame gets the last frame."""
    import av

    pending = sorted(set(times))
    out: dict[float, Frame] = {}
    if not pending:
        return out
    width, height = size

    def grab(frame: Any) -> Frame:
        return np.ascontiguousarray(frame.to_ndarray(format="rgb24", width=width, height=height))

    last: Any = None
    try:
        with av.open(str(path), mode="r") as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            base = stream.time_base
            start = float(stream.start_time * base) if stream.start_time is not None and base is not None else 0.0
            for frame in container.decode(stream):
                t = float(frame.time) - start if frame.time is not None else 0.0
                while pending and t > pending[0] + 1e-6:
                    out[pending.pop(0)] = grab(last if last is not None else frame)
                last = frame
                if not pending:
                    break
            if pending and last is not None:
                arr = grab(last)
                for t in pending:
                    out[t] = arr
    except (av.FFmpegError, OSError) as exc:
        raise MediaError(f"{path}: cannot decode video ({exc})") from None
    if not out:
        raise MediaError(f"{path}: no decodable video frames")
    return out


def _t(x: float) -> float:
    return round(max(0.0, x), 4)


# ----------------------------------------------------------------------------------------------- audio


@dataclass
class _Audio:
    """What the audio track holds: level, peak, clipping, where there is sound, the tail scores."""

    present: bool
    samples: NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, np.float32), repr=False)
    sr: int = 0
    duration: float = 0.0
    rms_dbfs: float | None = None
    peak: float | None = None
    clipped: float = 0.0
    frame_db: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0), repr=False)
    threshold_db: float = -50.0
    active: list[tuple[float, float]] = field(default_factory=list)
    tail: TailScores | None = None
    content_end_s: float | None = None

    FRAME_S = 0.02

    @property
    def silent(self) -> bool:
        return not self.present or self.rms_dbfs is None or self.rms_dbfs < _SILENT_DBFS

    def active_fraction(self, start: float, end: float) -> float:
        """The share of 20 ms frames in [start, end) that hold sound."""
        a = max(0, math.floor(start / self.FRAME_S))
        b = min(self.frame_db.size, math.ceil(end / self.FRAME_S))
        if b <= a:
            return 0.0
        return float((self.frame_db[a:b] > self.threshold_db).mean())


def _analyse_audio(path: Path, info: MediaInfo) -> _Audio:
    if not info.has_audio:
        return _Audio(present=False)
    from omnivchat.media import extract_audio_with_rate
    from omnivchat.synth import content_end, decode_channels, mono_mix, tail_scores

    if info.channels == 1:  # decoded once for this Reviewer and the tail repair of the clip delivered
        decoded = decode_channels(path)
        samples, sr = mono_mix(decoded.samples), decoded.sr
    else:  # several channels: FFmpeg's downmix, as before (mono_mix is the channels' mean)
        samples, sr = extract_audio_with_rate(path, sr=None)
    samples = samples.astype(np.float32, copy=False)
    n = samples.size
    audio = _Audio(present=True, samples=samples, sr=sr, duration=n / sr if sr else 0.0)
    if n == 0:
        audio.rms_dbfs, audio.peak = -120.0, 0.0
        return audio
    x = samples.astype(np.float64)
    rms = math.sqrt(float(np.mean(x * x)))
    audio.rms_dbfs = max(-120.0, 20 * math.log10(rms)) if rms > 0 else -120.0
    audio.peak = float(np.abs(x).max())
    audio.clipped = float((np.abs(x) >= _CLIP_LEVEL).mean())
    hop = max(1, round(_Audio.FRAME_S * sr))
    k = n // hop
    if k:
        blocks = x[: k * hop].reshape(k, hop)
        db = 10 * np.log10(np.mean(blocks * blocks, axis=1) + 1e-12)
        audio.frame_db = db
        floor = float(np.percentile(db, 10))
        audio.threshold_db = max(_SILENT_DBFS, min(max(-50.0, floor + 12.0), float(db.max()) - 15.0))
        audio.active = _intervals(db > audio.threshold_db, _Audio.FRAME_S)
    end = content_end(samples, sr)
    audio.content_end_s = round(end / sr, 3)
    audio.tail = tail_scores(samples, sr, end)
    return audio


def _intervals(
    on: NDArray[np.bool_], step: float, gap: float = 0.3, shortest: float = 0.08
) -> list[tuple[float, float]]:
    """Runs of True in ``on`` (frames of ``step`` seconds) as (start, end) seconds, joining gaps under ``gap``."""
    runs: list[list[float]] = []
    idx = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(np.int8), [0]])))
    for a, b in zip(idx[::2], idx[1::2], strict=True):
        s, e = a * step, b * step
        if runs and s - runs[-1][1] < gap:
            runs[-1][1] = e
        else:
            runs.append([s, e])
    return [(round(s, 2), round(e, 2)) for s, e in runs if e - s >= shortest]


# ----------------------------------------------------------------------------------------------- geometry


def _side(x_fraction: float) -> str:
    return "left" if x_fraction < 0.4 else "right" if x_fraction > 0.6 else "center"


def _user_side(image_side: str, camera: str | None) -> str:
    if camera == "front" and image_side != "center":
        return "right" if image_side == "left" else "left"
    return image_side


def _core(shape: str, box: Box) -> tuple[float, float, float]:
    """A point well inside a shape drawn in ``box`` and the half-size of a patch around it that stays inside
    its main face (a cube's front, a cylinder's body, a star's centre)."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    small = min(w, h)
    if shape == "cube":
        depth = 0.28 * h
        return (x0 + x1 - depth) / 2, (y0 + depth + y1) / 2, 0.2 * min(w - depth, h - depth)
    if shape == "triangle":
        return cx, y0 + 0.68 * h, 0.12 * small
    if shape == "star":
        return cx, cy + 0.08 * h, 0.09 * h
    if shape == "diamond":
        return cx, cy, 0.15 * small
    return cx, cy, 0.2 * small


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _shown(t: float, start: float, end: float | None) -> bool:
    return start <= t and (end is None or t < end)


def _num(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _opt(value: Any) -> float | None:
    return None if value is None else _num(value)
