"""The offline Reviewer's looking: brightness, backdrop and cuts, object colours, placards, the figure and the
changes over time, read from the decoded frames of an inspection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from omnivchat.studio.offline._inspection import _Inspection, _lit_mask, _person_geometry, _strips
from omnivchat.studio.offline._measure import (
    _CUT_JUMP,
    _DIFFERENT,
    _MIN_CHANGED_PIXELS,
    _UNIFORM_STD,
    Box,
    _brightest,
    _changed,
    _core,
    _dist,
    _luma,
    _median,
    _num,
    _overlaps,
    _patch,
    _region,
    _rgb_list,
    _side,
    _user_side,
    colour_name,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from omnivchat.studio.offline._measure import Frame

# ----------------------------------------------------------------------------------------------- looking


def _look(ins: _Inspection) -> None:
    uniform = [ins.frames[t] for t in ins.uniform]
    masks = [_lit_mask(ins, t) for t in ins.uniform]
    top = _brightest(uniform, masks)
    lumas = [_luma(f) for f in uniform]  # computed once: the blank check and the brightness both read them
    ins.uniform_frames = sum(float(lu.std()) < _UNIFORM_STD for lu in lumas)
    # Colours are read relative to the brightest lit thing; a blank picture has nothing to calibrate against.
    ins.light = 1.0 if ins.uniform_frames == len(uniform) else min(1.0, max(0.2, top / 255.0))
    _brightness(ins, lumas, masks, top)
    _backdrop_and_cuts(ins, uniform)
    _objects(ins)
    _placards(ins)
    _person(ins)
    _changes(ins, uniform)
    _camera_tag(ins)


def _brightness(ins: _Inspection, lumas: list[NDArray[np.float32]], masks: list[NDArray[np.bool_]], top: float) -> None:
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
