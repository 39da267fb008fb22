"""Choosing an ASR backend by name, and transcribing an audio file with it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omnivchat.asr._protocol import SAMPLE_RATE, Asr, AsrError

DEFAULT_BACKEND = "faster-whisper"


def _faster_whisper(model: str | Path | None, vad: bool) -> Asr:
    from omnivchat.asr._whisper import FasterWhisperAsr

    return FasterWhisperAsr(model, vad=vad)


BACKENDS: dict[str, Callable[[str | Path | None, bool], Asr]] = {"faster-whisper": _faster_whisper}
"""Backend name -> factory(model, vad): the model is a directory or an installed package holding one (None: the
backend's default); ``vad``: drop the silence around speech before decoding (faster-whisper's Silero filter)."""


def get_asr(backend: str = DEFAULT_BACKEND, model: str | Path | None = None, *, vad: bool = False) -> Asr:
    """The ASR ``backend`` with ``model`` loaded (AsrError when it cannot be had, saying what to install).
    ``vad``: filter out silence first (recorded in its description, so its transcripts are stored apart)."""
    factory = BACKENDS.get(backend)
    if factory is None:
        raise AsrError(f"unknown ASR backend {backend!r}; choose from {', '.join(BACKENDS)}")
    return factory(model, vad)


def transcribe_file(asr: Asr, path: Path, language: str) -> str:
    """The words ``asr`` hears in the audio file ``path`` (any format ffmpeg reads), decoded to 16 kHz mono.

    Raises MediaError naming the file when it cannot be decoded or holds no audio."""
    from omnivchat import media

    samples = media.extract_audio(path, sr=SAMPLE_RATE)
    if samples.size == 0:
        raise media.MediaError(f"{path}: no audio samples")
    return asr.transcribe(samples, language)
