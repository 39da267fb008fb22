"""The offline Reviewer's words: the caption and the observations of an inspection, and its answers to focused
questions (Video Q-A)."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from omnivchat.studio.engine import Answer, Question
from omnivchat.studio.offline._inspection import _Inspection
from omnivchat.studio.offline._measure import _core, _dist, _median, _num, _opt, _patch, colour_name

CANNOT_TELL = "cannot tell from the clip"
REVIEWER = "offline-reviewer"
"""The offline Reviewer's agent name, which its observations carry."""


# ----------------------------------------------------------------------------------------------- words


def _list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _an(word: str) -> str:
    from omnivchat.studio.minibench import article  # the one a/an rule of every Studio template

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
        "reviewer": REVIEWER,
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
