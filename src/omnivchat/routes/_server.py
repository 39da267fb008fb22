"""What a self-served OpenAI-compatible server takes: the media items a request holds, as vLLM counts them against
its ``--limit-mm-per-prompt``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

MODALITIES = ("image", "video", "audio")
_PART_MODALITY = {"image_url": "image", "video_url": "video", "input_audio": "audio", "audio_url": "audio"}


def media_items(payload: Mapping[str, Any]) -> dict[str, int]:
    """The media items of a chat-completions ``payload`` per modality, as vLLM counts them: one per ``image_url``,
    ``video_url``, ``input_audio`` or ``audio_url`` part of every message, and with
    ``mm_processor_kwargs.use_audio_in_video`` one more audio item per video (the track vLLM takes out of it)."""
    counts = dict.fromkeys(MODALITIES, 0)
    for message in payload.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            modality = _PART_MODALITY.get(str(part.get("type"))) if isinstance(part, dict) else None
            if modality is not None:
                counts[modality] += 1
    kwargs = payload.get("mm_processor_kwargs")
    if isinstance(kwargs, dict) and kwargs.get("use_audio_in_video") is True:
        counts["audio"] += counts["video"]
    return counts


def most_items(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The most items of each modality any one request holds (each modality on its own)."""
    most = dict.fromkeys(MODALITIES, 0)
    for one in counts:
        for modality in MODALITIES:
            most[modality] = max(most[modality], one.get(modality, 0))
    return most


def limit_flag(counts: Mapping[str, int]) -> str:
    """vLLM's server flag that admits requests of up to ``counts`` items (a modality at 0 is turned off, which
    also spares the memory vLLM reserves for it)."""
    return "--limit-mm-per-prompt '" + json.dumps({m: counts.get(m, 0) for m in MODALITIES}) + "'"


def describe_items(counts: Mapping[str, int]) -> str:
    """``2 videos, 2 audio items`` (no media: ``no media``)."""
    names = {"image": ("image", "images"), "video": ("video", "videos"), "audio": ("audio item", "audio items")}
    said = [f"{counts[m]} {names[m][counts[m] != 1]}" for m in MODALITIES if counts.get(m)]
    return ", ".join(said) or "no media"
