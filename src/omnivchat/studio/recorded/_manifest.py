"""The manifest of recorded dialogues: one recording a line, every line, field and clip checked before anything
is written (:func:`load_recordings`)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from omnivchat.errors import OmnivchatError

LANGUAGES = ("en", "zh")


_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class RecordedError(OmnivchatError, ValueError):
    """A manifest that cannot be imported, or an output this import cannot use; ``problems`` lists every problem
    found (each naming the file, the line and the field)."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems) or [message]


# ------------------------------------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class RecordedTurn:
    """One recorded turn: the clip (as given and as found), its checked caption, the user's speech, and for a
    turn before the last the reply the user heard."""

    video: str
    path: Path
    caption: str
    transcript: str | None
    reply: str | None
    sha256: str
    duration_s: float


@dataclass(frozen=True)
class Recording:
    """One line of the manifest, checked: its clips exist and hold video and sound."""

    id: str
    subcategory: str
    language: str
    turns: tuple[RecordedTurn, ...]
    line: int

    @property
    def final(self) -> RecordedTurn:
        return self.turns[-1]

    def input_hash(self) -> str:
        """What the import of this recording depends on: its texts and the bytes of its clips (not where the clips
        lie, so moving the originals redoes nothing)."""
        blob = {
            "id": self.id,
            "subcategory": self.subcategory,
            "language": self.language,
            "turns": [
                {"clip": t.sha256, "caption": t.caption, "transcript": t.transcript, "reply": t.reply}
                for t in self.turns
            ],
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class _TurnEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    video: str
    caption: str
    transcript: str | None = None
    reply: str | None = None


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    subcategory: str
    language: str
    video: str | None = None
    caption: str | None = None
    transcript: str | None = None
    turns: list[_TurnEntry] | None = None


def load_recordings(manifest: Path) -> list[Recording]:
    """The recordings of a manifest JSONL file, every clip probed. RecordedError listing every problem (each as
    ``file:line: field: what``) when any line, field or clip is wrong: nothing is imported from a bad manifest."""
    from omnivchat._files import read_json_lines

    try:
        data = manifest.read_bytes()
    except IsADirectoryError:
        raise RecordedError(f"{manifest}: a directory, not a manifest file") from None
    except OSError as err:
        raise RecordedError(f"{manifest}: cannot read the manifest: {err.strerror or err}") from None
    problems: list[str] = []
    recordings: list[Recording] = []
    seen: dict[str, int] = {}
    for number, raw in read_json_lines(
        data, str(manifest), problems, not_json="not JSON", not_object="a recording is a JSON object"
    ):
        where = f"{manifest}:{number}"
        try:
            entry = _Entry.model_validate(raw)
        except ValidationError as err:
            problems.extend(f"{where}: {_loc(e['loc'])}: {_message(e)}" for e in err.errors())
            continue
        if entry.id in seen:
            problems.append(f"{where}: id: {entry.id!r} repeats line {seen[entry.id]}")
            continue
        seen[entry.id] = number
        found = _check_entry(entry, manifest, where)
        if isinstance(found, list):
            problems.extend(found)
            continue
        recordings.append(Recording(entry.id, found[0], entry.language, found[1], number))
    if len(problems) == 1:
        raise RecordedError(problems[0], problems)
    if problems:
        head = f"{manifest}: {len(problems)} problems; nothing imported"
        raise RecordedError("\n".join([head, *problems]), problems)
    if not recordings:
        raise RecordedError(f"{manifest}: no recordings (one JSON object a line)")
    return recordings


def _check_entry(entry: _Entry, manifest: Path, where: str) -> tuple[str, tuple[RecordedTurn, ...]] | list[str]:
    """(subcategory code, turns) of a parsed line, or its problems."""
    from omnivchat.bench import resolve_subcategory

    problems: list[str] = []
    if not _ID.match(entry.id):
        problems.append(f"{where}: id: {entry.id!r} must be letters, digits, '_', '-' or '.', starting alphanumeric")
    code, kind = "", ""
    try:
        subcategory = resolve_subcategory(entry.subcategory)
        code, kind = subcategory.code, subcategory.kind
    except KeyError as err:
        problems.append(f"{where}: subcategory: {err.args[0]}")
    if entry.language not in LANGUAGES:
        problems.append(f"{where}: language: {entry.language!r} is not one of {', '.join(LANGUAGES)}")
    single = [name for name in ("video", "caption", "transcript") if getattr(entry, name) is not None]
    if entry.turns is not None:
        if single:
            problems.append(f"{where}: {single[0]}: give it inside each turn when the recording has turns")
        given = entry.turns
        prefix = "turns[{}]."
    elif entry.video is None or entry.caption is None:
        missing = "video" if entry.video is None else "caption"
        problems.append(f"{where}: {missing}: missing (or give turns: [{{video, caption, ...}}])")
        given = []
        prefix = ""
    else:
        given = [_TurnEntry(video=entry.video, caption=entry.caption, transcript=entry.transcript)]
        prefix = ""
    if entry.turns is not None and not given:
        problems.append(f"{where}: turns: empty; a recording has at least one turn")
    if code and given:
        if kind == "single" and len(given) != 1:
            problems.append(f"{where}: turns: {code} is single-turn but {len(given)} turns are given")
        if kind == "multi" and len(given) < 2:
            problems.append(f"{where}: turns: {code} is multi-turn but only one turn is given")
    turns: list[RecordedTurn] = []
    for index, turn in enumerate(given):
        name = prefix.format(index)
        last = index == len(given) - 1
        if not turn.caption.strip():
            problems.append(f"{where}: {name}caption: empty; give the corrected caption of the clip")
        if turn.transcript is not None and not turn.transcript.strip():
            problems.append(f"{where}: {name}transcript: empty; leave it out when there is none")
        if not last and not (turn.reply or "").strip():
            problems.append(f"{where}: {name}reply: missing; a turn before the last needs the reply the user heard")
        if last and turn.reply is not None:
            problems.append(f"{where}: {name}reply: the last turn's reply is what the import writes; leave it out")
        clip = _clip(manifest, turn.video)
        duration, wrong = _probe_clip(clip)
        if duration is None:
            problems.append(f"{where}: {name}video: {wrong}")
            continue
        from omnivchat._canonical import sha256_file

        turns.append(
            RecordedTurn(
                video=turn.video,
                path=clip,
                caption=turn.caption.strip(),
                transcript=turn.transcript.strip() if turn.transcript is not None else None,
                reply=turn.reply.strip() if turn.reply is not None else None,
                sha256=sha256_file(clip),
                duration_s=round(duration, 3),
            )
        )
    return problems if problems else (code, tuple(turns))


def _clip(manifest: Path, video: str) -> Path:
    path = Path(video)
    return (path if path.is_absolute() else manifest.parent / path).absolute()


def _probe_clip(path: Path) -> tuple[float | None, str]:
    """(duration, "") for a clip with video and sound, else (None, what is wrong with it)."""
    from omnivchat.media import MediaError, probe

    if not path.is_file():
        return None, f"{path}: no such file" if not path.exists() else f"{path}: not a file"
    try:
        info = probe(path, energy=True, verify=True)
    except MediaError as err:
        return None, f"cannot read the clip: {err}"
    if not info.has_video:
        return None, f"{path}: no video stream; a recording is a video clip"
    if not info.has_audio:
        return None, f"{path}: no audio track; a recording's question is spoken"
    if info.is_silent:
        return None, f"{path}: the audio track is silent (below -60 dBFS); a recording's question is spoken"
    return info.duration, ""


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the line)"


def _message(error: Any) -> str:
    if error["type"] == "missing":
        return "missing"
    if error["type"] == "extra_forbidden":
        return "not a field of a recording (id, video, subcategory, language, caption, transcript, turns)"
    return str(error["msg"])
