"""One clip's inspection by the offline Reviewer: everything it measured (``_Inspection``), planned from the
render's timeline (the things drawn and when, the frames to decode, the speech the audio holds)."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from omnivchat.studio.offline._measure import (
    _HEARD_FRACTION,
    _MAX_SAMPLES,
    _MIN_SAMPLES,
    _SAMPLES_PER_S,
    Box,
    _Audio,
    _core,
    _num,
    _opt,
    _overlaps,
    _patch,
    _shown,
    _t,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from omnivchat.media import MediaInfo
    from omnivchat.studio.offline._measure import Frame

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
