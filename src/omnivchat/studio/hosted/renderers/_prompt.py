"""The one text prompt a video generator gets for a script (module 8 / f): the scene, the timed segments (speech
quoted, with its language), the final silent wait, the selected rendering fragments, and what each reference
medium sent with the request is for.

Video generators take a single free-text prompt; timing is asked for in words ("from 0.4 s to 2.6 s, ..."),
because no provider exposes a timeline field."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from omnivchat.studio.engine import Script, Segment

Role = Literal["first_frame", "reference_image", "reference_audio", "extend"]

LANGUAGE_NAMES = {
    "en": "English",
    "zh": "Mandarin Chinese",
    "yue": "Cantonese",
    "ja": "Japanese",
    "ko": "Korean",
    "fr": "French",
    "de": "German",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "ru": "Russian",
    "ar": "Arabic",
    "hi": "Hindi",
}

FINAL_WAIT_MIN_S = 0.1
"""A gap shorter than this after the last sound is not worth a line of its own."""


@dataclass(frozen=True)
class Placeholder:
    """One reference medium as the prompt names it: ``label`` ("Image 1") stands for ``media_id`` in the role the
    request gives it."""

    media_id: str
    role: Role
    label: str
    purpose: str = ""


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code.lower().split("-")[0], code)


def _seconds(t: float) -> str:
    return f"{t:.1f}"


def _quote(text: str) -> str:
    # Straight double quotes inside the line would end the quotation early for the model.
    return '"' + " ".join(text.split()).replace('"', "'") + '"'


def scene_text(scene: dict[str, Any]) -> str:
    """The scene dict in words: a ``description`` (or ``prompt``) first, then the other fields as ``name: value``."""
    parts: list[str] = []
    for key in ("description", "prompt"):
        value = scene.get(key)
        if isinstance(value, str) and value.strip():
            parts.append(value.strip().rstrip(".") + ".")
    for key, value in scene.items():
        if key in ("description", "prompt") and isinstance(value, str):
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        parts.append(f"{key.replace('_', ' ')}: {shown}.")
    return " ".join(parts)


def _segment_line(segment: Segment, language: str) -> str:
    span = f"{_seconds(segment.start)}-{_seconds(segment.end)} s"
    who = "the user" if segment.speaker in ("", "user") else segment.speaker
    if segment.kind == "speech":
        return f"{span}: {who} says, in {language_name(language)}: {_quote(segment.text)}"
    if segment.kind == "silence":
        return f"{span}: silence; nobody speaks." + (f" {segment.text.strip()}" if segment.text.strip() else "")
    if segment.kind == "text":
        return f"{span}: on-screen text in the scene itself (a sign, a screen or a page): {_quote(segment.text)}"
    return f"{span}: {segment.kind}: {segment.text.strip()}"


def timeline(script: Script, clip_s: float) -> list[str]:
    """The segments in time order, then the final silent wait up to the end of the clip (``clip_s`` seconds,
    which may be longer than the script when a provider only renders whole or fixed durations)."""
    segments = sorted(script.segments, key=lambda s: (s.start, s.end))
    sounding = [s for s in segments if s.kind != "silence"]
    last = max((s.end for s in sounding), default=0.0)
    lines = []
    for segment in segments:
        if segment.kind == "silence" and segment.start >= last - 1e-6:
            continue  # a trailing silence is the final wait, said once below
        lines.append(_segment_line(segment, script.language))
    if clip_s - last >= FINAL_WAIT_MIN_S:
        lines.append(
            f"{_seconds(last)}-{_seconds(clip_s)} s: the user has finished and waits in silence for a reply, still "
            "in the shot, until the clip ends; nobody speaks and nothing new happens."
        )
    return lines


def _reference_line(p: Placeholder) -> str:
    why = f" ({p.purpose})" if p.purpose else ""
    if p.role == "first_frame" and not p.media_id.startswith("turn"):
        return f"{p.label} is the first frame{why}: start exactly from it, with the same person, room and light."
    if p.role == "first_frame":
        return (
            f"{p.label} is the first frame: the last frame of the earlier clip ({p.media_id}){why}. Start exactly "
            "from it and continue the same shot, with the same person, clothes, room and light."
        )
    if p.role == "extend":
        return f"{p.label} is the earlier clip ({p.media_id}){why}: continue it from its last frame, same shot."
    if p.role == "reference_audio":
        return f"{p.label} ({p.media_id}) is how the user sounded before{why}: keep the same voice."
    return f"{p.label} ({p.media_id}) shows the person and place from before{why}: keep the same person and room."


def build_prompt(
    script: Script, fragments: Sequence[str], *, clip_s: float, placeholders: Sequence[Placeholder] = ()
) -> str:
    """The whole prompt: length, scene, timeline, rendering rules and references, one block each."""
    blocks = [f"One continuous {clip_s:g}-second video clip with its own sound (speech and the sounds of the scene)."]
    scene = scene_text(script.scene)
    if scene:
        blocks.append(f"Scene: {scene}")
    blocks.append("Timeline (seconds from the start):\n" + "\n".join(f"- {line}" for line in timeline(script, clip_s)))
    rules = [f.strip() for f in fragments if f.strip()]
    if rules:
        blocks.append("Rendering:\n" + "\n".join(f"- {rule}" for rule in rules))
    if placeholders:
        blocks.append("References:\n" + "\n".join(f"- {_reference_line(p)}" for p in placeholders))
    return "\n\n".join(blocks)
