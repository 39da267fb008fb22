"""The measured word error rate of an ASR, as ``asr measure`` and ``transcribe`` write it (``asr-wer.json``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from omnivchat._files import FileModel

WER_SCHEMA = "omnivchat-asr-wer-v1"
WER_FILE = "asr-wer.json"
"""Its name in a run directory: the WER that ``score`` puts beside a spoken run's accuracy."""


class WerFigure(BaseModel):
    """A corpus word error rate with its percentile-bootstrap interval over sentences."""

    wer: float | None = Field(description="Sum of word errors over sum of reference words; None without words.")
    low: float | None = None
    high: float | None = None
    sentences: int = 0
    words: int = 0
    errors: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0


class SentenceResult(BaseModel):
    """One known sentence: what was spoken, what the ASR heard, and the word errors between them."""

    language: str
    voice: str
    text: str
    transcript: str | None = Field(description="None when the clip could not be transcribed (error says why).")
    error: str | None = None
    words: int = 0
    errors: int = 0


class AsrWerFile(FileModel):
    """The WER of one ASR on clips rendered by omnivchat's TTS from sentences whose words are known."""

    schema_: str = Field(WER_SCHEMA, alias="schema")
    asr_id: str
    asr: dict[str, Any] = Field(description="The ASR's description (backend, model, its sha256, decoding).")
    tts: dict[str, Any] = Field(default_factory=dict, description="How the clips were made: engine, voices, rate.")
    overall: WerFigure
    languages: dict[str, WerFigure] = Field(default_factory=dict)
    bootstrap: dict[str, Any] = Field(default_factory=dict)
    sentences: list[SentenceResult] = Field(default_factory=list)
