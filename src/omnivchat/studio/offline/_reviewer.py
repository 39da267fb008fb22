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

This module holds the agent and its seven-part report; the work is done beside it: ``_measure`` (pixels, sound,
thresholds), ``_inspection`` (what one clip holds, planned from its timeline), ``_looking`` (reading the frames)
and ``_caption`` (the caption, the observations and the answers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omnivchat.studio.engine import Answer, Aspect, Caption, QualityReport, Question
from omnivchat.studio.offline._caption import REVIEWER, _answer, _caption_text, _list, _observed
from omnivchat.studio.offline._inspection import (
    _Inspection,
    _load_timeline,
    _plan_things,
    _plan_times,
    _sidecar,
    _speech,
)
from omnivchat.studio.offline._looking import _look
from omnivchat.studio.offline._measure import (
    _ANALYSIS_MAX_SIDE,
    _CLIP_FRACTION,
    _DARK_BRIGHTEST,
    _DARK_MEAN,
    _DIM_BRIGHTEST,
    _MIN_RATE_SPAN_S,
    _MIN_RATE_UNITS,
    _analyse_audio,
    _decode_frames,
    _num,
    _t,
)

if TYPE_CHECKING:
    from omnivchat.media import MediaInfo


MAX_SPEAKING_RATE: dict[str, float] = {"en": 3.2, "zh": 5.5}
"""Words per second (en) or characters per second (zh) at most, as the Validator's default rule."""


class OfflineReviewer:
    """The Reviewer agent for offline runs: captions and answers questions about procedurally rendered clips by
    inspecting the file, its pixels and its audio, with the render's timeline for where things are drawn."""

    name = REVIEWER

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
