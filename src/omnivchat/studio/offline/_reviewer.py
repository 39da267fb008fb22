"""The offline Reviewer (paper, Section 2: Video Caption 9 / g and Video Q-A 10 / h; Appendix C.2.2).

It inspects a clip made by the procedural renderer for real and reports what is in it:

- **From the file itself:** the streams, the duration, the audio level, clipping and the audio tail (Appendix
  D.1.2). It also decodes a few frames and reads from their pixels the colour inside each object's box, the
  backdrop, cuts, a blank or frozen picture, the brightness, the figure, its face and its moving mouth.
- **From the render's timeline** (``<stem>.timeline.json``): where each object, the figure and each placard is
  drawn and when, and the word timings of the speech. The timing of a line is reported only where the audio
  holds energy for it, and only up to the real end of the file.

It never reads the spec (``<stem>.spec.json``, the script), and it never uses the colour the timeline says an
object was asked to have: every colour it reports comes from the pixels. Observation is kept apart from
judgement. The Reviewer says what it saw and heard; the Director compares that with the script and decides.

The caption is always in plain English. ASR (faster-whisper) is not used: the transcript is the timeline's,
restricted to the speech the audio holds.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from omnivchat.media import MediaError
from omnivchat.studio.engine._types import Answer, Aspect, Caption, QualityReport, Question

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from omnivchat.media import MediaInfo
    from omnivchat.synth import TailScores

    Frame = NDArray[np.uint8]

CANNOT_TELL = "cannot tell from the clip"

MAX_SPEAKING_RATE: dict[str, float] = {"en": 3.2, "zh": 5.5}
"""Words per second (en) or characters per second (zh) at most, as the Validator's default rule."""

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
    diff = np.abs(ra.astype(np.int16) - rb.astype(np.int16)).max(axis=1)
    return int((diff > _PIXEL_CHANGE).sum())


def _luma(frame: Frame) -> NDArray[np.float32]:
    f = frame.astype(np.float32)
    return 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]


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
    from omnivchat.synth import content_end, tail_scores

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


# ----------------------------------------------------------------------------------------------- the inspection


@dataclass
class _Thing:
    """Something drawn at a known box for a time (an object, a placard): what the timeline says and the plan."""

    kind: str
    index: int
    name: str
    shape: str
    box: Box  # analysis pixels
    start: float
    end: float | None
    label: str | None = None
    sample_t: float | None = None
    occluded: bool = False


@dataclass
class _Inspection:
    """Everything the Reviewer measured in one clip; the caption and the answers are built from it."""

    path: Path
    info: MediaInfo
    audio: _Audio
    timeline: dict[str, Any] | None
    timeline_note: str
    duration: float
    size: tuple[int, int]
    scale: tuple[float, float] = (1.0, 1.0)
    frames: dict[float, Frame] = field(default_factory=dict, repr=False)
    uniform: list[float] = field(default_factory=list)
    light: float = 1.0
    objects: list[dict[str, Any]] = field(default_factory=list)
    object_refs: dict[int, NDArray[np.float64]] = field(default_factory=dict, repr=False)
    things: list[_Thing] = field(default_factory=list, repr=False)
    placards: list[dict[str, Any]] = field(default_factory=list)
    person: dict[str, Any] | None = None
    speech: list[dict[str, Any]] = field(default_factory=list)
    not_heard: list[dict[str, Any]] = field(default_factory=list)
    transcript: str = ""
    backdrop: dict[str, Any] = field(default_factory=dict)
    camera: str | None = None
    camera_tag: bool = False
    cuts: list[float] = field(default_factory=list)
    uniform_frames: int = 0
    still: bool = False
    changes: dict[str, Any] = field(default_factory=dict)
    brightness: dict[str, float] = field(default_factory=dict)
    artifact_kinds: list[str] = field(default_factory=list)

    @property
    def has_video(self) -> bool:
        return self.info.has_video and bool(self.frames)

    @property
    def fps(self) -> float:
        fps = self.info.fps or (self.timeline or {}).get("fps") or 25.0
        return float(fps)

    def frame(self, t: float) -> Frame | None:
        return self.frames.get(_t(t))

    def sx(self, box: Sequence[float]) -> Box:
        """A timeline box scaled to analysis pixels."""
        kx, ky = self.scale
        return (float(box[0]) * kx, float(box[1]) * ky, float(box[2]) * kx, float(box[3]) * ky)


def _lit_mask(ins: _Inspection, t: float) -> NDArray[np.bool_]:
    """The pixels of the lit scene at ``t``: the frame without its overlays (placards shown at ``t`` and the
    corner where a camera tag is written)."""
    w, h = ins.size
    mask = np.ones((h, w), bool)
    mask[: math.ceil(0.12 * h), : math.ceil(0.45 * w)] = False
    for th in ins.things:
        if th.kind == "placard" and _shown(t, th.start, th.end):
            x0, y0, x1, y1 = (round(v) for v in th.box)
            mask[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)] = False
    return mask


def _strips(ins: _Inspection) -> dict[str, Box]:
    """Border strips that show the backdrop (left, right, top) and the floor band (lower left and right)."""
    w, h = ins.size
    sw = max(2.0, 0.04 * w)
    return {
        "left": (0, 0.15 * h, sw, 0.65 * h),
        "right": (w - sw, 0.15 * h, w, 0.65 * h),
        "top": (0.5 * w, 0, w, max(2.0, 0.02 * h)),
        "floor_left": (0, 0.8 * h, sw, 0.96 * h),
        "floor_right": (w - sw, 0.8 * h, w, 0.96 * h),
    }


class OfflineReviewer:
    """The Reviewer agent for offline runs: captions and answers questions about procedurally rendered clips by
    inspecting the file, its pixels and its audio, with the render's timeline for where things are drawn."""

    name = "offline-reviewer"

    def __init__(self, *, max_speaking_rate: Mapping[str, float] | None = None) -> None:
        self.max_speaking_rate = dict(MAX_SPEAKING_RATE if max_speaking_rate is None else max_speaking_rate)
        self._cache: dict[tuple[str, int, int, int], _Inspection] = {}

    # ------------------------------------------------------------------------------------------- the API

    def caption(self, clip: Path, *, language: str = "en") -> Caption:
        """A caption, the transcript heard and the seven-part quality report of ``clip``.

        ``language`` is the language expected of the speech: the rate limit of a line the timeline gives no
        language for. Raises MediaError naming the file when it is missing, unreadable or corrupt."""
        ins = self._inspect(Path(clip))
        report = QualityReport(
            cuts=self._cuts(ins),
            realism=self._realism(ins),
            delivery_speed=self._delivery(ins, language),
            body_structure=self._body(ins),
            appearance=self._appearance(ins),
            artifacts=self._artifacts(ins),
            on_screen_text=self._on_screen_text(ins),
        )
        return Caption(text=_caption_text(ins), transcript=ins.transcript, report=report, observed=_observed(ins))

    def answer(self, clip: Path, questions: Sequence[Question]) -> list[Answer]:
        """Answers to focused questions about ``clip`` (Video Q-A). Each question's ``about`` names what is asked:
        ``{"object": NAME, "ask": "colour" | "side" | "visible_at", "t": seconds}``, or ``{"ask": "speech_end" |
        "camera" | "transcript" | "person"}``. Anything else is answered "cannot tell from the clip"."""
        ins = self._inspect(Path(clip))
        extra = [
            _t(_num(q.about.get("t"), -1.0))
            for q in questions
            if q.about.get("ask") == "visible_at" and 0 <= _num(q.about.get("t"), -1.0) <= ins.duration
        ]
        missing = [t for t in extra if t not in ins.frames]
        if missing and ins.info.has_video:
            ins.frames.update(_decode_frames(ins.path, missing, ins.size))
        return [_answer(ins, q) for q in questions]

    # ------------------------------------------------------------------------------------------- inspection

    def _inspect(self, path: Path) -> _Inspection:
        from omnivchat.media import probe

        info = probe(path, energy=False, verify=True)  # MediaError naming the file if missing or corrupt
        _, timeline_path = _sidecar(path)
        st = path.stat()
        t_mtime = timeline_path.stat().st_mtime_ns if timeline_path.exists() else 0
        key = (str(path.resolve()), st.st_mtime_ns, st.st_size, t_mtime)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        ins = _build(path, info)
        if len(self._cache) >= 8:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = ins
        return ins

    # ------------------------------------------------------------------------------------------- the report

    def _cuts(self, ins: _Inspection) -> Aspect:
        if not ins.has_video:
            return Aspect(ok=True, note="no video to check for cuts")
        n = len(ins.uniform)
        if ins.cuts:
            at = ", ".join(f"{t:.2f} s" for t in ins.cuts)
            return Aspect(ok=False, note=f"{len(ins.cuts)} cut(s): the backdrop jumps near {at} ({n} frames sampled)")
        return Aspect(ok=True, note=f"one continuous shot: the backdrop stays the same across {n} sampled frames")

    def _realism(self, ins: _Inspection) -> Aspect:
        if not ins.info.has_video:
            return Aspect(ok=False, note="no video stream")
        n = len(ins.uniform)
        if ins.uniform_frames == n:
            mean = ins.brightness.get("mean_luma", 0.0)
            return Aspect(
                ok=False, note=f"blank video: all {n} sampled frames are one flat colour (mean luma {mean:.0f})"
            )
        notes: list[str] = []
        ok = True
        if ins.uniform_frames:
            ok = False
            notes.append(f"{ins.uniform_frames} of {n} sampled frames are blank (one flat colour)")
        ch = ins.changes
        expected, seen = ch.get("expected", 0), ch.get("seen", 0)
        mouth = ch.get("mouth")
        if expected:
            if seen == 0:
                ok = False
                notes.append(
                    f"frozen picture: none of the {expected} changes the timeline records (things appearing or "
                    "going, the mouth moving) shows in the frames"
                )
            else:
                notes.append(f"{seen} of {expected} recorded changes show in the frames")
        elif ins.still:
            if ins.timeline is None:
                ok = False
                notes.append(f"frozen picture: no change across {n} sampled frames")
            else:
                notes.append(f"a still scene: no change across {n} sampled frames, and none is recorded")
        if mouth is True:
            notes.append("the mouth moves while the figure speaks")
        elif mouth is False:
            notes.append("the mouth does not move while the figure speaks")
        if not notes:
            notes.append(f"the picture changes between the {n} sampled frames")
        return Aspect(ok=ok, note="; ".join(notes))

    def _delivery(self, ins: _Inspection, language: str) -> Aspect:
        if ins.timeline is None:
            return Aspect(ok=True, note=f"cannot tell the speech timing: {ins.timeline_note}")
        if not ins.speech:
            return Aspect(ok=True, note="no speech heard")
        ok = True
        parts: list[str] = []
        for i, sp in enumerate(ins.speech, start=1):
            lang = sp.get("language") or language
            limit = self.max_speaking_rate.get(lang, self.max_speaking_rate.get("en", 3.2))
            unit = "chars" if lang == "zh" else "words"
            span = sp["end"] - sp["start"]
            rate = sp["units"] / span if span > 0 else 0.0
            desc = f"line {i} ({lang}): {sp['units']} {unit} in {span:.2f} s = {rate:.2f} {unit}/s"
            if sp["cut_by_clip_end"]:
                parts.append(f"{desc} (cut off by the end of the clip, not judged)")
            elif span < _MIN_RATE_SPAN_S or sp["units"] < _MIN_RATE_UNITS:
                parts.append(f"{desc} (too short to judge)")
            elif rate > limit:
                ok = False
                parts.append(f"{desc}, faster than {limit:g}")
            else:
                parts.append(f"{desc} (limit {limit:g})")
        return Aspect(ok=ok, note="; ".join(parts))

    def _body(self, ins: _Inspection) -> Aspect:
        if ins.timeline is None:
            return Aspect(ok=True, note=f"cannot tell whether a person is drawn: {ins.timeline_note}")
        p = ins.person
        if p is None:
            return Aspect(ok=True, note="no person in the scene")
        if not p.get("shown"):
            return Aspect(ok=True, note="the person is not on screen before the clip ends")
        notes: list[str] = []
        ok = True
        if p.get("head_drawn"):
            notes.append("a head-and-shoulders figure is drawn: its head stands out from the backdrop")
        elif p.get("head_in_frame"):
            ok = False
            notes.append("the person's box looks like the backdrop: no head is drawn there")
        if p.get("torso_drawn") is True:
            notes.append("shoulders drawn")
        elif p.get("torso_drawn") is False:
            notes.append("no shoulders seen below the head")
        out = p.get("out_of_frame")
        if out:
            notes.append(f"partly out of frame ({out})")
        if not p.get("head_in_frame"):
            ok = False
            notes.append("the head is cut off by the frame")
        return Aspect(ok=ok, note="; ".join(notes))

    def _appearance(self, ins: _Inspection) -> Aspect:
        if not ins.has_video:
            return Aspect(ok=False, note="no video to look at")
        b = ins.brightness
        mean, top = b.get("mean_luma", 0.0), b.get("brightest", 0.0)
        level = f"mean luminance {mean:.0f}/255, brightest {top:.0f}/255"
        ok = True
        if top < _DARK_BRIGHTEST or mean < _DARK_MEAN:
            ok = False
            notes = [f"too dark: {level}"]
        elif top < _DIM_BRIGHTEST:
            notes = [f"dim: {level}"]
        else:
            notes = [f"well lit: {level}"]
        p = ins.person
        if p is not None and p.get("shown"):
            facing = p.get("facing_seen")
            if facing == "camera":
                notes.append("the person faces the camera (face visible)")
            elif facing == "away":
                notes.append("the person is seen from behind (no face visible)")
        return Aspect(ok=ok, note="; ".join(notes))

    def _artifacts(self, ins: _Inspection) -> Aspect:
        a = ins.audio
        notes: list[str] = []
        kinds: list[str] = []  # what failed, by name, so a Director can tell a tail artifact from a broken track
        ok = True
        lines = (ins.timeline or {}).get("lines") or []
        if not a.present:
            ok = False
            kinds.append("no_audio")
            notes.append("no audio track")
        elif a.silent:
            expects_sound = ins.timeline is None or bool(lines)
            ok = ok and not expects_sound
            kinds += ["silent"] if expects_sound else []
            notes.append(f"silent audio ({a.rms_dbfs:.0f} dBFS)")
        else:
            notes.append(f"audio at {a.rms_dbfs:.1f} dBFS RMS, peak {a.peak:.2f}")
        if a.present and a.clipped > _CLIP_FRACTION:
            ok = False
            kinds.append("clipping")
            notes.append(f"clipping: {100 * a.clipped:.2f}% of samples at full scale")
        if a.tail is not None and a.tail.flagged:
            ok = False
            kinds += ["tail_click"] * a.tail.transient_flag + ["tail_truncation"] * a.tail.truncation_flag
            what = [
                *(["a click"] if a.tail.transient_flag else []),
                *(["an abrupt ending without a fade"] if a.tail.truncation_flag else []),
            ]
            notes.append(f"the sound's tail has {' and '.join(what)} ({a.tail.describe()})")
        expected = _num((ins.timeline or {}).get("duration"), 0.0)
        tol = max(0.2, 2.0 / ins.fps)
        if ins.timeline is not None and expected and ins.duration < expected - tol:
            ok = False
            kinds.append("truncated")
            notes.append(f"truncated: the file lasts {ins.duration:.2f} s, its timeline {expected:.2f} s")
        if a.present and ins.info.video_duration and abs(a.duration - ins.info.video_duration) > 0.25:
            ok = False
            kinds.append("av_length_mismatch")
            notes.append(f"audio lasts {a.duration:.2f} s but video {ins.info.video_duration:.2f} s")
        if a.present and not a.silent:
            for miss in ins.not_heard:
                if miss["reason"] == "no speech energy in the audio":
                    ok = False
                    kinds.append("speech_missing")
                    notes.append(f"no speech in the audio at {miss['start']:.2f}-{miss['end']:.2f} s")
        ins.artifact_kinds = list(dict.fromkeys(kinds))
        return Aspect(ok=ok, note="; ".join(notes))

    def _on_screen_text(self, ins: _Inspection) -> Aspect:
        if ins.timeline is None:
            note = f"cannot tell where text is drawn: {ins.timeline_note}"
            return Aspect(ok=True, note=note + ("; a camera tag is drawn in the corner" if ins.camera_tag else ""))
        shown = [p for p in ins.placards if p.get("shown") and p.get("seen", True)]
        labels = [o for o in ins.objects if o.get("label") and o.get("visible") and o.get("label_seen", True)]
        parts = [f'placard "{p["text"]}" from {p["start"]:.1f} to {p["end"]:.1f} s' for p in shown]
        unseen = [p["text"] for p in ins.placards if p.get("shown") and not p.get("seen", True)]
        parts += [
            f'label "{o["label"]}" under the {o["colour_seen"] or ""} {o["shape"]}'.replace("  ", " ") for o in labels
        ]
        tag = "; a camera tag (FRONT CAM / REAR CAM) is drawn in the top-left corner" if ins.camera_tag else ""
        if unseen:
            tag += "; the timeline places " + _list([f'"{t}"' for t in unseen]) + " but no text shows there"
        if parts:
            return Aspect(ok=False, note="on-screen text: " + "; ".join(parts) + tag)
        return Aspect(ok=True, note="no on-screen text" + tag)


# ----------------------------------------------------------------------------------------------- building


def _sidecar(path: Path) -> tuple[Path, Path]:
    from omnivchat.synth import sidecar_paths

    return sidecar_paths(path)


def _load_timeline(path: Path) -> tuple[dict[str, Any] | None, str]:
    timeline_path = _sidecar(path)[1]
    if not timeline_path.exists():
        return None, f"no timeline file {timeline_path.name} beside the clip"
    try:
        data = json.loads(timeline_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"the timeline file {timeline_path.name} cannot be read ({exc})"
    if not isinstance(data, dict):
        return None, f"the timeline file {timeline_path.name} is not a JSON object"
    return data, ""


def _build(path: Path, info: MediaInfo) -> _Inspection:
    audio = _analyse_audio(path, info)
    timeline, note = _load_timeline(path)
    duration = float(info.video_duration or info.duration or audio.duration or 0.0)
    w, h = int(info.width or 0), int(info.height or 0)
    if info.has_video and w and h and max(w, h) > _ANALYSIS_MAX_SIDE:
        k = _ANALYSIS_MAX_SIDE / max(w, h)
        w, h = max(2, round(w * k / 2) * 2), max(2, round(h * k / 2) * 2)
    ins = _Inspection(path, info, audio, timeline, note, duration, (w, h))
    if timeline is not None:
        size = timeline.get("size") or [w, h]
        ins.scale = (w / max(1.0, _num(size[0], w)), h / max(1.0, _num(size[1], h))) if w and h else (1.0, 1.0)
        ins.camera = str(timeline.get("camera")) if timeline.get("camera") else None
        _plan_things(ins)
    _speech(ins)
    if info.has_video and w and h:
        times = _plan_times(ins)
        ins.frames = _decode_frames(path, times, (w, h))
        _look(ins)
    return ins


def _plan_things(ins: _Inspection) -> None:
    tl = ins.timeline or {}
    for i, obj in enumerate(tl.get("objects") or []):
        ins.things.append(
            _Thing(
                "object",
                i,
                str(obj.get("name") or f"object {i + 1}"),
                str(obj.get("shape") or "square"),
                ins.sx(obj.get("box") or (0, 0, 0, 0)),
                _num(obj.get("appear")),
                _opt(obj.get("disappear")),
                label=obj.get("label") or None,
            )
        )
    for i, pl in enumerate(tl.get("placards") or []):
        ins.things.append(
            _Thing(
                "placard",
                i,
                str(pl.get("text") or ""),
                "placard",
                ins.sx(pl.get("box") or (0, 0, 0, 0)),
                _num(pl.get("start")),
                _opt(pl.get("end")),
            )
        )
    # Each object's colour is read at a time when nothing drawn over it (a later object, a placard) is shown.
    for th in ins.things:
        end = min(th.end if th.end is not None else ins.duration, ins.duration)
        if end - th.start < 0.5 / ins.fps:
            continue
        if th.kind == "placard":
            th.sample_t = _t((th.start + end) / 2)
            continue
        cx, cy, half = _core(th.shape, th.box)
        core = _patch(cx, cy, half)
        covers = [
            o
            for o in ins.things
            if (o.kind == "placard" or o.index > th.index) and o is not th and _overlaps(o.box, core)
        ]
        cuts = sorted(
            {th.start, end, *(v for o in covers for v in (o.start, o.end) if v is not None and th.start < v < end)}
        )
        best: tuple[float, float, bool] | None = None
        for a, b in itertools.pairwise(cuts):
            mid = (a + b) / 2
            hidden = any(_shown(mid, o.start, o.end) for o in covers)
            cand = (b - a, mid, hidden)
            if best is None or (best[2] and not hidden) or (best[2] == hidden and cand[0] > best[0]):
                best = cand
        if best is not None:
            th.sample_t, th.occluded = _t(best[1]), best[2]


def _person_geometry(ins: _Inspection) -> dict[str, Any] | None:
    p = (ins.timeline or {}).get("person")
    if not isinstance(p, dict):
        return None
    x0, y0, x1, y1 = ins.sx(p.get("box") or (0, 0, 0, 0))
    fh = y1 - y0
    r = 0.17 * fh
    cx, hy = (x0 + x1) / 2, y0 + r
    return {"box": (x0, y0, x1, y1), "cx": cx, "hy": hy, "r": r, "raw": p}


def _plan_times(ins: _Inspection) -> list[float]:
    dur = max(ins.duration, 1e-3)
    n = min(_MAX_SAMPLES, max(_MIN_SAMPLES, round(dur * _SAMPLES_PER_S)))
    ins.uniform = [_t((i + 0.5) * dur / n) for i in range(n)]
    times = list(ins.uniform)
    times += [th.sample_t for th in ins.things if th.sample_t is not None]
    step = 1.0 / ins.fps
    # Before and after each recorded change, to see whether the picture follows the timeline.
    events: list[tuple[float, Box]] = []
    for th in ins.things:
        for e in (th.start, th.end):
            if e is not None and 1.5 * step < e < dur - 1.5 * step:
                events.append((e, th.box))
    geo = _person_geometry(ins)
    if geo is not None:
        raw = geo["raw"]
        start, end = _num(raw.get("appear")), _opt(raw.get("disappear"))
        stop = min(end if end is not None else dur, dur)
        if stop - start > 0.5 * step:
            geo_t = _t((start + stop) / 2)
            times.append(geo_t)
            ins.changes["person_t"] = geo_t
        for e in (start, end):
            if e is not None and 1.5 * step < e < dur - 1.5 * step:
                events.append((e, geo["box"]))
        pairs = _mouth_pairs(ins, raw, step)
        ins.changes["mouth_pairs"] = pairs
        times += [t for pair in pairs for t in pair]
    events = events[:8]
    ins.changes["events"] = [(_t(e - step), _t(e + step), box) for e, box in events]
    times += [t for a, b, _ in ins.changes["events"] for t in (a, b)]
    return times


def _mouth_pairs(ins: _Inspection, person: dict[str, Any], step: float) -> list[tuple[float, float]]:
    """Times at which the figure's mouth is open (early in a word) and closed again, for up to three words."""
    if person.get("facing") == "away" or person.get("speaker") is None or person.get("expression") == "surprised":
        return []  # no face to see, no voice, or a mouth drawn open all along (surprise)
    speaker = person.get("speaker")
    heard = [(sp["start"], sp["end"]) for sp in ins.speech if sp["speaker"] == speaker]
    words = sorted(
        (_num(w.get("start")), _num(w.get("end")))
        for w in (ins.timeline or {}).get("words") or []
        if w.get("speaker") == speaker
    )
    pairs: list[tuple[float, float]] = []
    for i, (a, b) in enumerate(words):
        nxt = words[i + 1][0] if i + 1 < len(words) else math.inf
        if b - a < 0.22 or nxt < a + 0.25 or a + 0.2 > ins.duration:
            continue
        if not any(s <= a < e for s, e in heard):
            continue
        pairs.append((_t(a + 0.06), _t(a + 0.19)))
        if len(pairs) == 3:
            break
    return pairs


def _speech(ins: _Inspection) -> None:
    tl = ins.timeline
    a = ins.audio
    if tl is None:
        return
    from omnivchat.scoring import word_count

    lines = sorted(tl.get("lines") or [], key=lambda ln: (_num(ln.get("start")), _num(ln.get("index"))))
    end_of_audio = a.duration if a.present else 0.0
    complete = True
    for ln in lines:
        start, end = _num(ln.get("start")), _num(ln.get("end"))
        base = {"speaker": ln.get("speaker", "user"), "start": round(start, 2), "end": round(end, 2)}
        base["text"] = str(ln.get("text", ""))
        if not a.present:
            ins.not_heard.append({**base, "reason": "no audio track"})
            complete = False
            continue
        if start >= end_of_audio - 0.05:
            ins.not_heard.append({**base, "reason": "starts after the audio ends"})
            complete = False
            continue
        heard_end = min(end, end_of_audio)
        if a.active_fraction(start, heard_end) < _HEARD_FRACTION:
            ins.not_heard.append({**base, "reason": "no speech energy in the audio"})
            complete = False
            continue
        cut_by_clip = end > end_of_audio + 0.02
        language = str(ln.get("language") or "")
        text = base["text"]
        if cut_by_clip or ln.get("cut"):
            complete = False
            joiner = "" if language == "zh" else " "
            words = [str(w.get("text", "")) for w in ln.get("words") or [] if _num(w.get("start")) < heard_end - 0.03]
            text = joiner.join(words)
        ins.speech.append(
            {
                **base,
                "end": round(heard_end, 2),
                "text": text,
                "language": language or None,
                "units": word_count(text),
                "cut": bool(ln.get("cut")) or cut_by_clip,
                "cut_by_clip_end": cut_by_clip,
            }
        )
    if complete:
        ins.transcript = str(tl.get("transcript") or "")
    else:
        ins.transcript = " ".join(sp["text"] for sp in ins.speech if sp["text"])


# ----------------------------------------------------------------------------------------------- looking


def _look(ins: _Inspection) -> None:
    uniform = [ins.frames[t] for t in ins.uniform]
    masks = [_lit_mask(ins, t) for t in ins.uniform]
    top = _brightest(uniform, masks)
    ins.uniform_frames = sum(float(_luma(f).std()) < _UNIFORM_STD for f in uniform)
    # Colours are read relative to the brightest lit thing; a blank picture has nothing to calibrate against.
    ins.light = 1.0 if ins.uniform_frames == len(uniform) else min(1.0, max(0.2, top / 255.0))
    _brightness(ins, uniform, masks, top)
    _backdrop_and_cuts(ins, uniform)
    _objects(ins)
    _placards(ins)
    _person(ins)
    _changes(ins, uniform)
    _camera_tag(ins)


def _brightness(ins: _Inspection, frames: list[Frame], masks: list[NDArray[np.bool_]], top: float) -> None:
    lumas = [_luma(f) for f in frames]
    means = [float(lu[m].mean()) if m.any() else float(lu.mean()) for lu, m in zip(lumas, masks, strict=True)]
    ins.brightness = {
        "mean_luma": round(float(np.mean(means)), 1),
        "brightest": round(top, 1),
        "light_level": round(ins.light, 3),
    }


def _backdrop_and_cuts(ins: _Inspection, frames: list[Frame]) -> None:
    strips = _strips(ins)
    mid = frames[len(frames) // 2]
    back = _median(mid, strips["left"], strips["right"])
    floor = _median(mid, strips["floor_left"], strips["floor_right"])
    top = 255.0 * ins.light

    def light_for(c: NDArray[np.float64]) -> float:
        # A backdrop about as bright as anything in the scene cannot be calibrated against the scene.
        return 1.0 if float(c.max()) >= 0.8 * top else ins.light

    ins.backdrop = {"colour": colour_name(back, light_for(back)) if back is not None else None, "rgb": _rgb_list(back)}
    if floor is not None and _dist(back, floor) > _DIFFERENT:
        ins.backdrop["floor"] = colour_name(floor, light_for(floor))
        ins.backdrop["floor_rgb"] = _rgb_list(floor)
    names = ("left", "right", "top")
    sigs = [[_median(f, strips[k]) for k in names] for f in frames]
    for i in range(1, len(frames)):
        jumps = sum(_dist(a, b) > _CUT_JUMP for a, b in zip(sigs[i - 1], sigs[i], strict=True))
        if jumps >= 2:
            ins.cuts.append(round((ins.uniform[i - 1] + ins.uniform[i]) / 2, 2))
    ins.still = all(_changed(frames[i - 1], frames[i]) < _MIN_CHANGED_PIXELS for i in range(1, len(frames)))


def _ring(box: Box, margin: float) -> list[Box]:
    x0, y0, x1, y1 = box
    m, t = margin, 2.0
    return [
        (x0, y0 - m - t, x1, y0 - m),
        (x0, y1 + m, x1, y1 + m + t),
        (x0 - m - t, y0, x0 - m, y1),
        (x1 + m, y0, x1 + m + t, y1),
    ]


def _objects(ins: _Inspection) -> None:
    w = ins.size[0] or 1
    for th in ins.things:
        if th.kind != "object":
            continue
        x0, _, x1, _ = th.box
        side = _side((x0 + x1) / 2 / w)
        end = min(th.end if th.end is not None else ins.duration, ins.duration)
        entry: dict[str, Any] = {
            "name": th.name,
            "shape": th.shape,
            "colour_seen": None,
            "image_side": side,
            "user_side": _user_side(side, ins.camera),
            "visible": [round(th.start, 2), round(end, 2)] if th.sample_t is not None else None,
            "label": th.label,
        }
        frame = ins.frame(th.sample_t) if th.sample_t is not None else None
        if frame is not None:
            cx, cy, half = _core(th.shape, th.box)
            core = _median(frame, _patch(cx, cy, half))
            ring = _median(frame, *_ring(th.box, max(2.0, 0.08 * (th.box[3] - th.box[1]))))
            if core is not None:
                ins.object_refs[th.index] = core
                entry.update(
                    colour_seen=colour_name(core, ins.light),
                    rgb=_rgb_list(core),
                    seen_at=th.sample_t,
                    drawn=_dist(core, ring) > _DIFFERENT,
                )
                if th.occluded:
                    entry["occluded"] = True
            if th.label:
                x0, _, x1, y1 = th.box
                below = _region(frame, (x0, y1 + 1, x1, y1 + 1 + max(6.0, 0.08 * ins.size[1])))
                entry["label_seen"] = bool(below is not None and float(_luma(below[None]).std()) > 20.0)
        if entry["visible"] is None:
            entry["note"] = "not on screen before the clip ends"
        elif entry.get("drawn") is False:
            entry["note"] = "its box looks like its surroundings: the object is not seen there"
        ins.objects.append(entry)


def _placards(ins: _Inspection) -> None:
    for th in ins.things:
        if th.kind != "placard":
            continue
        end = th.end if th.end is not None else ins.duration
        shown = th.sample_t is not None
        entry: dict[str, Any] = {"text": th.name, "start": round(th.start, 2), "end": round(min(end, ins.duration), 2)}
        entry["shown"] = shown
        frame = ins.frame(th.sample_t) if th.sample_t is not None else None
        if frame is not None:
            region = _region(frame, th.box)
            entry["seen"] = bool(region is not None and float(_luma(region[None]).std()) > 25.0)
        ins.placards.append(entry)


def _person(ins: _Inspection) -> None:
    geo = _person_geometry(ins)
    if geo is None:
        return
    raw = geo["raw"]
    w, h = ins.size
    x0, y0, x1, _ = geo["box"]
    cx, hy, r = geo["cx"], geo["hy"], geo["r"]
    side = _side(cx / max(1, w))
    p: dict[str, Any] = {
        "image_side": side,
        "user_side": _user_side(side, ins.camera),
        "expression": raw.get("expression"),
        "expression_source": "timeline",
        "speaker": raw.get("speaker"),
        "shown": "person_t" in ins.changes,
    }
    head_in = 0 <= cx < w and hy - r >= -0.5 and hy < h
    p["head_in_frame"] = head_in
    outside = []
    bw = max(1e-6, x1 - x0)
    if x0 < 0:
        outside.append(f"{100 * -x0 / bw:.0f}% of its width past the left edge")
    if x1 > w:
        outside.append(f"{100 * (x1 - w) / bw:.0f}% of its width past the right edge")
    if y0 < 0:
        outside.append("the top of its box above the frame")
    p["out_of_frame"] = ", ".join(outside) or None
    frame = ins.frame(ins.changes["person_t"]) if p["shown"] else None
    if frame is not None and head_in:
        head = _median(frame, _patch(cx, hy, 0.2 * r))
        beside = _median(frame, _patch(cx - 1.6 * r, hy, 0.2 * r), _patch(cx + 1.6 * r, hy, 0.2 * r))
        p["head_drawn"] = _dist(head, beside) > _DIFFERENT
        face = _median(frame, _patch(cx, hy + 0.25 * r, 0.12 * r))
        hair = _median(frame, _patch(cx, hy - 0.75 * r, 0.1 * r))
        if p["head_drawn"]:
            p["facing_seen"] = "camera" if _dist(face, hair) > 35.0 else "away"
            p["hair_colour"] = colour_name(hair, ins.light) if hair is not None else None
        row = hy + 1.55 * r
        if row < min(h, 0.68 * h):
            qw = (x1 - x0) / 4
            objects = [th.box for th in ins.things if th.kind == "object"]
            body = [
                b
                for b in (_patch(cx - qw, row, 0.15 * r), _patch(cx + qw, row, 0.15 * r))
                if not any(_overlaps(b, o) for o in objects)
            ]
            around = [_patch(x0 - 0.1 * (x1 - x0), row, 0.15 * r), _patch(x1 + 0.1 * (x1 - x0), row, 0.15 * r)]
            shirt, back = (_median(frame, *body) if body else None), _median(frame, *around)
            if shirt is not None and back is not None:
                p["torso_drawn"] = _dist(shirt, back) > _DIFFERENT
                p["shirt_colour"] = colour_name(shirt, ins.light)
    ins.person = p


def _changes(ins: _Inspection, frames: list[Frame]) -> None:
    expected = seen = 0
    for before, after, box in ins.changes.get("events", []):
        fa, fb = ins.frame(before), ins.frame(after)
        if fa is None or fb is None:
            continue
        expected += 1
        seen += _changed(fa, fb, box) >= _MIN_CHANGED_PIXELS
    geo = _person_geometry(ins)
    pairs = ins.changes.get("mouth_pairs") or []
    if geo is not None and pairs:
        cx, hy, r = geo["cx"], geo["hy"], geo["r"]
        mouth_box = (cx - 0.6 * r, hy + 0.25 * r, cx + 0.6 * r, hy + 0.8 * r)
        moved = False
        for a, b in pairs:
            fa, fb = ins.frame(a), ins.frame(b)
            if fa is not None and fb is not None and _changed(fa, fb, mouth_box) >= 3:
                moved = True
        expected += 1
        seen += moved
        ins.changes["mouth"] = moved
    ins.changes["expected"], ins.changes["seen"] = expected, seen


def _camera_tag(ins: _Inspection) -> None:
    """Whether the red dot of a FRONT CAM / REAR CAM tag is in the top-left corner (drawn over the lighting)."""
    h = ins.size[1]
    th = _num((ins.timeline or {}).get("size", [0, h])[1], h) if ins.timeline else h
    size = max(8, round(0.06 * th)) * ins.scale[1]
    centre = 0.75 * size
    frame = ins.frames[ins.uniform[len(ins.uniform) // 2]]
    dot = _median(frame, _patch(centre, centre, max(1.0, 0.12 * size)))
    ins.camera_tag = bool(dot is not None and dot[0] > 150 and dot[1] < 100 and dot[2] < 100)


# ----------------------------------------------------------------------------------------------- words


def _list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _an(word: str) -> str:
    from omnivchat.studio.minibench._kit import article  # the one a/an rule of every Studio template

    return article(word)


def _where(side: str) -> str:
    return "in the centre" if side == "center" else f"on the image's {side}"


def _caption_text(ins: _Inspection) -> str:
    dur = _an(f"{ins.duration:.1f} s clip").capitalize()
    if not ins.info.has_video:
        scene = f"{dur} with no video"
    elif ins.uniform_frames == len(ins.uniform):
        scene = f"{dur} showing a blank {ins.backdrop.get('colour') or ''} picture".replace("  ", " ")
    else:
        back = ins.backdrop.get("colour")
        scene = f"{dur} with {_an(back) if back else 'a'} backdrop"
        if ins.backdrop.get("floor"):
            scene += f" and {_an(ins.backdrop['floor'])} table or floor band"
        groups: dict[str, list[str]] = {"left": [], "center": [], "right": []}
        for o in ins.objects:
            if o.get("visible") is None or not o.get("drawn"):
                continue
            what = f"{o['colour_seen']} {o['shape']}" if o.get("colour_seen") else o["shape"]
            groups[o["image_side"]].append(_an(what))
        placed = [f"{_list(items)} {_where(side)}" for side, items in groups.items() if items]
        if placed:
            scene += ": " + "; ".join(placed)
        p = ins.person
        if p is not None and p.get("shown") and p.get("head_drawn"):
            facing = {"camera": "facing the camera", "away": "seen from behind"}.get(p.get("facing_seen") or "", "")
            who = f"a person {_where(p['image_side'])}"
            if facing:
                who += f" {facing}"
            if p.get("expression") and p.get("facing_seen") == "camera":
                who += f" with {_an(str(p['expression']))} expression"
            scene += f"; {who}"
        shown = [pl for pl in ins.placards if pl.get("shown") and pl.get("seen", True)]
        if shown:
            scene += "; on-screen text " + _list([f'"{pl["text"]}"' for pl in shown])
        if ins.camera:
            scene += ";" if placed or shown or (p is not None and p.get("head_drawn")) else ","
        if ins.camera:
            scene += (
                " filmed with the front (selfie) camera, so left and right are mirrored for the user"
                if ins.camera == "front"
                else " filmed with the rear camera"
            )
    scene += "."
    if not ins.audio.present:
        sound = "There is no audio track."
    elif ins.timeline is None:
        if ins.audio.silent:
            sound = "The audio is silent."
        else:
            spans = _list([f"{a:.1f}-{b:.1f} s" for a, b in ins.audio.active[:4]])
            sound = f"Sound is heard at {spans}; the speech timing is unknown (no timeline)."
    elif not ins.speech:
        sound = "No speech is heard."
    else:
        by_speaker: dict[str, list[str]] = {}
        for sp in ins.speech:
            span = f"{sp['start']:.2f}-{sp['end']:.2f} s" + (", cut off" if sp["cut"] else "")
            by_speaker.setdefault(str(sp["speaker"]), []).append(f'"{sp["text"]}" ({span})')
        said = [f"{'the user' if who == 'user' else who} says {_list(lines)}" for who, lines in by_speaker.items()]
        sound = "; ".join(said)
        sound = sound[0].upper() + sound[1:] + "."
    return f"{scene} {sound}"


def _observed(ins: _Inspection) -> dict[str, Any]:
    a = ins.audio
    info = ins.info
    last = max((sp["end"] for sp in ins.speech), default=None)
    asr = "skipped: faster-whisper is not installed"
    if importlib.util.find_spec("faster_whisper") is not None:
        asr = "skipped: the offline reviewer reads the render's timeline"
    observed: dict[str, Any] = {
        "reviewer": OfflineReviewer.name,
        "file": os.fspath(ins.path),
        "duration_s": round(ins.duration, 3),
        "timeline_duration_s": _opt((ins.timeline or {}).get("duration")),
        "has_video": info.has_video,
        "has_audio": info.has_audio,
        "size": [info.width, info.height],
        "fps": info.fps,
        "audio": {
            "present": a.present,
            "duration_s": round(a.duration, 3) if a.present else None,
            "rms_dbfs": None if a.rms_dbfs is None else round(a.rms_dbfs, 1),
            "peak": None if a.peak is None else round(a.peak, 3),
            "silent": a.silent,
            "sound": [list(iv) for iv in a.active],
            "content_end_s": a.content_end_s,
            "tail": None
            if a.tail is None
            else {"transient_db": round(a.tail.transient, 1), "truncation_db": round(a.tail.truncation, 1)},
        },
        "artifacts": ins.artifact_kinds,
        "timeline": ins.timeline is not None,
        "backdrop": ins.backdrop,
        "light_level": round(ins.light, 3),
        "camera": ins.camera,
        "camera_tag": ins.camera_tag,
        "objects": [{k: v for k, v in o.items() if k != "label" or v} for o in ins.objects],
        "person": ins.person,
        "placards": ins.placards,
        "speech": [{k: sp[k] for k in ("speaker", "start", "end", "text", "language", "cut")} for sp in ins.speech],
        "speech_not_heard": ins.not_heard,
        "last_speech_end_s": last,
        "transcript_source": "sidecar" if ins.timeline is not None else None,
        "asr": asr,
        "cuts": ins.cuts,
        "frames_sampled": len(ins.uniform),
    }
    if ins.timeline is None:
        observed["speech_timing"] = f"unknown: {ins.timeline_note}"
    elif not a.present:
        observed["speech_timing"] = "no audio track: no speech heard"
    return observed


# ----------------------------------------------------------------------------------------------- answers


def _find_object(ins: _Inspection, name: str) -> int | None:
    """The index (in ``ins.objects``) of the object called ``name``: an exact match, else the one name containing it."""
    wanted = name.strip().lower()
    names = [o["name"].lower() for o in ins.objects]
    if wanted in names:
        return names.index(wanted)
    loose = [i for i, n in enumerate(names) if wanted and wanted in n]
    return loose[0] if len(loose) == 1 else None


def _answer(ins: _Inspection, q: Question) -> Answer:
    about = q.about
    ask = about.get("ask")
    if "object" in about and ask in ("colour", "color", "side", "visible_at"):
        return _object_answer(ins, q, str(about["object"]), str(ask))
    if ask == "speech_end":
        if ins.timeline is None:
            return Answer(question=q, answer=CANNOT_TELL, observed={"reason": ins.timeline_note})
        last = max((sp["end"] for sp in ins.speech), default=None)
        if last is None:
            return Answer(question=q, answer="No speech is heard in the clip.", observed={"last_speech_end_s": None})
        text = f"The speech ends at {last:.2f} s; the clip lasts {ins.duration:.2f} s."
        return Answer(question=q, answer=text, observed={"last_speech_end_s": last, "duration_s": ins.duration})
    if ask == "camera":
        if ins.camera is None:
            return Answer(question=q, answer=CANNOT_TELL, observed={"reason": ins.timeline_note or "no camera mode"})
        text = (
            "The front (selfie) camera: the image's left is the user's right."
            if ins.camera == "front"
            else "The rear camera: the image's left is the user's left."
        )
        return Answer(question=q, answer=text, observed={"camera": ins.camera, "camera_tag": ins.camera_tag})
    if ask == "transcript":
        if ins.timeline is None:
            return Answer(question=q, answer=CANNOT_TELL, observed={"reason": ins.timeline_note})
        text = f'"{ins.transcript}"' if ins.transcript else "Nothing is said."
        return Answer(question=q, answer=text, observed={"transcript": ins.transcript, "source": "sidecar"})
    if ask == "person":
        return _person_answer(ins, q)
    return Answer(question=q, answer=CANNOT_TELL, observed={"unsupported": True})


def _object_answer(ins: _Inspection, q: Question, name: str, ask: str) -> Answer:
    i = _find_object(ins, name)
    if i is None:
        names = [o["name"] for o in ins.objects]
        return Answer(question=q, answer=CANNOT_TELL, observed={"object": name, "found": False, "objects": names})
    obj = ins.objects[i]
    th = [t for t in ins.things if t.kind == "object"][i]
    label = f"The {obj['name']}"
    if ask in ("colour", "color"):
        colour = obj.get("colour_seen")
        if colour is None:
            return Answer(question=q, answer=f"{CANNOT_TELL}: it is not on screen", observed={"object": obj["name"]})
        observed = {"object": obj["name"], "colour_seen": colour, "rgb": obj.get("rgb"), "drawn": obj.get("drawn")}
        if not obj.get("drawn"):
            text = f"{label} is not seen: its place shows {colour}, like its surroundings."
            return Answer(question=q, answer=text, observed=observed)
        return Answer(question=q, answer=f"{label} looks {colour}.", observed=observed)
    if ask == "side":
        image, user = obj["image_side"], obj["user_side"]
        if image == "center":
            text = f"{label} is in the centre of the image."
        else:
            text = f"{label} is on the image's {image}, which is the user's {user}."
        return Answer(question=q, answer=text, observed={"object": obj["name"], "image_side": image, "user_side": user})
    t = _num(q.about.get("t"), -1.0)
    frame = ins.frame(t) if 0 <= t <= ins.duration else None
    ref = ins.object_refs.get(th.index) if obj.get("drawn") else None
    if frame is None or ref is None:
        why = "the time is outside the clip" if frame is None else "the object is never seen"
        return Answer(question=q, answer=f"{CANNOT_TELL}: {why}", observed={"object": obj["name"], "t": t})
    cx, cy, half = _core(th.shape, th.box)
    now = _median(frame, _patch(cx, cy, half))
    visible = _dist(now, ref) <= 45.0
    seen = colour_name(now, ins.light) if now is not None else None
    text = (
        f"Yes: at {t:.2f} s the {obj['name']} is on screen ({seen})."
        if visible
        else f"No: at {t:.2f} s its place shows {seen}, not the object's {obj['colour_seen']}."
    )
    observed = {"object": obj["name"], "t": t, "visible": visible, "colour_there": seen}
    return Answer(question=q, answer=text, observed=observed)


def _person_answer(ins: _Inspection, q: Question) -> Answer:
    if ins.timeline is None:
        return Answer(question=q, answer=CANNOT_TELL, observed={"reason": ins.timeline_note})
    p = ins.person
    if p is None or not p.get("shown") or not p.get("head_drawn"):
        return Answer(question=q, answer="No person is seen in the clip.", observed={"person": p})
    facing = {"camera": "facing the camera", "away": "seen from behind"}.get(p.get("facing_seen") or "", "")
    text = f"A person {_where(p['image_side'])}"
    text += f", {facing}" if facing else ""
    if p.get("facing_seen") == "camera" and p.get("expression"):
        text += f", with {_an(str(p['expression']))} expression"
    if p.get("shirt_colour"):
        text += f", in {_an(p['shirt_colour'])} top"
    return Answer(question=q, answer=text + ".", observed={"person": p})
