"""What an import of recorded dialogues keeps under ``<output>/recorded/``: its settings, the trace of each
recording, and the outcome and summary it reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from omnivchat.studio.recorded._manifest import RecordedError
from omnivchat.studio.recorded._validation import PLACEHOLDER

MAX_ROUNDS = 3
"""Rounds of generation, validation and refinement before a recording is given up (Appendix D.2)."""


RECORDED_DIR = "recorded"
SETTINGS_FILE = "settings.json"


# ------------------------------------------------------------------------------------------- traces and results


class Round(BaseModel):
    """One round: the Director's answer, the problems validation found in it, and what was decided."""

    round: int
    decision: Literal["accept", "refine", "not imported"]
    problems: list[str] = Field(default_factory=list)
    answer: dict[str, Any] = Field(default_factory=dict)
    replayed: bool = False


class RecordedTrace(BaseModel):
    """How one recording was imported (``recorded/traces/<id>.json``)."""

    id: str
    subcategory: str
    language: str
    status: Literal["imported", "not imported"]
    input: str = Field(description="Recording.input_hash(): a changed entry or clip is imported again.")
    director: str
    rounds: list[Round] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="The last round's, when not imported.")
    delivered: dict[str, str] = Field(default_factory=dict, description="Bench clip -> the recording it copies.")


class ImportSettings(BaseModel):
    """What decides validation: a rerun in the same directory must use the same."""

    version: int = 1
    rounds: int = MAX_ROUNDS
    brands: list[str]
    placeholder: str = PLACEHOLDER


@dataclass(frozen=True)
class Outcome:
    """How one recording ended: imported, not imported (its last round's problems), or failed (the Director
    could not be reached; a rerun resumes it). ``already``: done by an earlier invocation."""

    id: str
    status: Literal["imported", "not imported", "failed"]
    rounds: int = 0
    problems: tuple[str, ...] = ()
    already: bool = False


@dataclass
class ImportSummary:
    outcomes: list[Outcome] = field(default_factory=list)
    bench: Path | None = None
    calls_made: int = 0
    calls_replayed: int = 0
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def complete(self) -> bool:
        return not self.count("failed")


def read_recorded_trace(path: Path) -> RecordedTrace:
    try:
        return RecordedTrace.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, UnicodeDecodeError) as err:
        raise RecordedError(f"{path}: not a recorded-dialogue trace ({str(err).splitlines()[0]})") from None


def _read_trace(output: Path, recording_id: str) -> RecordedTrace | None:
    path = _trace_path(output, recording_id)
    return read_recorded_trace(path) if path.is_file() else None


def _trace_path(output: Path, recording_id: str) -> Path:
    return output / RECORDED_DIR / "traces" / f"{recording_id}.json"


def _accepted_path(output: Path, recording_id: str) -> Path:
    return output / RECORDED_DIR / "accepted" / f"{recording_id}.json"
