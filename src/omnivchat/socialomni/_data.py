"""SocialOmni items: the released Level 1 (Who) and Level 2 (When / How) annotation files, and their media.

- ``level_1/dataset.json``: a list of 2,000 objects ``{id, video_path, question, options, correct_answer,
  asr_content, metadata}``; ``options`` are four strings that already carry their letter ("A. ...").
- ``level_2/annotations_200.json``: ``{"dataset_name", "total_items": 200, "data": [...]}`` (a bare list is
  accepted too) of ``{video_id, video_file, question_1: {question, timestamp, option_A, option_B,
  correct_answer}, question_2: {question: "What should <participant> say?", answer}, metadata, full_asr}``.

Transcripts (``asr_content``, ``full_asr``) are reference fields only and are never read into an item. Every
selected item is validated (gold label, participant, media path) before a loader returns, and all problems are
reported together in one :class:`SocialOmniError`, so nothing is billed for a run that would stop half-way. A
cut-off that cannot be read (a Who question's time, a When timestamp) is one item's ``problem`` instead: that
item is recorded as failed (kind ``input``), counted in the summary, never sent, and the run goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict

from omnivchat._canonical import sha256_file
from omnivchat.socialomni._errors import SocialOmniError
from omnivchat.socialomni._time import seconds, who_cutoff

#: Item counts of the release: Who items, When items (the 200-item core split), and gold-YES When items (How).
WHO_COUNT = 2000
WHEN_COUNT = 200
HOW_COUNT = 128

Level = Literal["level_1", "level_2"]

_PARTICIPANT = re.compile(r"What should (.+?) say\?", re.I)


class WhoItem(BaseModel):
    """One Level 1 (Who) item, validated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """``str(id)`` of the release record; also the item file's sample id."""
    video: Path
    """The source clip, resolved inside the media root."""
    question: str
    """The question as released, with its marked interval in free text."""
    options: list[str]
    """The four options, each already carrying its letter ("A. ...")."""
    gold: Literal["A", "B", "C", "D"]
    """``correct_answer``."""
    cutoff: float | None
    """Seconds at which the clip is cut (:func:`omnivchat.socialomni._time.who_cutoff` of the question); None
    when the question's time cannot be read (see ``problem``)."""
    problem: str | None = None
    """Why the item cannot be sent (its cut-off cannot be read): the run records it as this item's error
    (kind ``input``) and goes on; None for an item that can be sent."""


class WhenItem(BaseModel):
    """One Level 2 item: the When question, and the How generation when the gold label is YES."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """``video_id`` ("video_0001")."""
    video: Path
    """The source clip, resolved inside the media root."""
    question: str
    """``question_1.question`` (informational: the When request text is the card with the participant)."""
    timestamp: float | None
    """Seconds at which the clip is cut (``seconds(question_1.timestamp)``, > 0); None when it cannot be read
    (see ``problem``)."""
    gold: Literal["YES", "NO"]
    """``question_1.option_<correct_answer>``, upper-cased."""
    participant: str
    """The target participant, from ``question_2.question`` = "What should <participant> say?"."""
    how_question: str
    """``question_2.question`` as released."""
    reference: str
    """``question_2.answer``: the reference next utterance ("" for gold-NO items)."""
    problem: str | None = None
    """Why the item cannot be sent (its timestamp cannot be read): the run records it as this item's error (kind
    ``input``, for When and How) and goes on; None for an item that can be sent."""


file_sha256 = sha256_file  # the project's one file hash, under the name this module's callers use


def source_hash(path: Path) -> str:
    """sha256 of an annotation file (the manifest's ``source_sha256``); SocialOmniError naming it if unreadable."""
    try:
        return file_sha256(path)
    except OSError as err:
        raise SocialOmniError(f"{path}: cannot read ({err.strerror or err})") from None


def resolve_media(media_root: Path, level: Level, file: str) -> Path:
    """The clip ``file`` of ``level``, found under ``media_root`` and resolved (symlinks too).

    Tries ``ROOT/data/<level>/videos/<file>``, ``ROOT/data/<level>/<file>``, ``ROOT/<level>/videos/<file>``,
    ``ROOT/<level>/<file>`` and then ``ROOT/<file>``; the first that exists is used. Raises SocialOmniError for
    an empty name, an absolute path, a ``..`` component, a found path whose resolution leaves ROOT (a symlink
    out), something that is not a file, or no candidate at all.
    """
    if not isinstance(file, str) or not file.strip():
        raise SocialOmniError(f"media file name {file!r}: empty or not a string")
    if "\x00" in file:
        raise SocialOmniError(f"media file {file!r}: NUL in the name")
    posix = PurePosixPath(file.replace("\\", "/"))
    if posix.is_absolute() or PureWindowsPath(file).is_absolute() or PureWindowsPath(file).drive:
        raise SocialOmniError(f"media file {file!r}: absolute path; media must be relative to the media root")
    if ".." in posix.parts:
        raise SocialOmniError(f"media file {file!r}: '..' is not allowed in media paths")
    root = Path(media_root).resolve()
    if not root.is_dir():
        raise SocialOmniError(f"media root {media_root}: not a directory")
    bases = (root / "data" / level / "videos", root / "data" / level, root / level / "videos", root / level, root)
    for base in bases:
        candidate = base.joinpath(*posix.parts)
        if not candidate.exists():
            continue
        resolved = candidate.resolve()
        if not resolved.is_relative_to(root):
            raise SocialOmniError(f"media file {file!r}: {candidate} resolves to {resolved}, outside {root}")
        if not resolved.is_file():
            raise SocialOmniError(f"media file {file!r}: {resolved} is not a file")
        return resolved
    tried = ", ".join(str(b.relative_to(root) / posix) if b != root else str(posix) for b in bases)
    raise SocialOmniError(f"media file {file!r}: not found under {root} (tried {tried})")


# ------------------------------------------------------------------------------------------------ loading


class _Problems:
    """Problems found while loading one file, each as 'FILE: item ID: FIELD: what'."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    def add(self, item: str | None, field: str | None, message: str) -> None:
        where = [str(self.path)]
        if item is not None:
            where.append(f"item {item}")
        if field is not None:
            where.append(field)
        self.lines.append(": ".join([*where, message]))

    def raise_if_any(self) -> None:
        if self.lines:
            head = f"{self.path}: {len(self.lines)} problem{'s' if len(self.lines) > 1 else ''}"
            raise SocialOmniError(head + "\n  " + "\n  ".join(self.lines), self.lines)


def _read_json(path: Path) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise SocialOmniError(f"{path}: cannot read ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise SocialOmniError(f"{path}: not UTF-8 ({err.reason})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SocialOmniError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SocialOmniError(f"limit {limit!r}: must be a positive integer or None")


def _media(
    problems: _Problems, root_ok: bool, media_root: Path, level: Level, item: str, field: str, file: Any
) -> Path | None:
    if not root_ok:
        return None
    try:
        return resolve_media(media_root, level, file)
    except SocialOmniError as err:
        problems.add(item, field, str(err))
        return None


def _root_ok(problems: _Problems, media_root: Path) -> bool:
    if Path(media_root).is_dir():
        return True
    problems.add(None, None, f"media root {media_root} is not a directory (no clip can be checked)")
    return False


def _text(problems: _Problems, item: str, record: dict[str, Any], field: str) -> Any:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        problems.add(item, field, f"expected a non-empty string, found {value!r}")
        return None
    return value


def load_who(dataset_json: Path, media_root: Path, *, limit: int | None = None) -> list[WhoItem]:
    """The Who items of ``level_1/dataset.json``, validated, with their clips under ``media_root``.

    Without ``limit`` the file must hold exactly 2,000 items; with it, the first ``limit`` items are taken (no
    count check). Every taken item must have an int or string ``id`` (unique), a ``question``, four non-empty
    ``options``, ``correct_answer`` A-D and a ``video_path`` found by :func:`resolve_media`. All problems are
    raised together in one SocialOmniError. A question whose marked interval gives no cut-off
    (:func:`who_cutoff`) is that item's ``problem``: the item is kept, and the run records it as failed.
    """

    _check_limit(limit)
    path = Path(dataset_json)
    data = _read_json(path)
    problems = _Problems(path)
    if not isinstance(data, list):
        raise SocialOmniError(f"{path}: expected a list of Who items, found {type(data).__name__}")
    if limit is None and len(data) != WHO_COUNT:
        problems.add(None, None, f"expected {WHO_COUNT} Who items, found {len(data)}")
    records = data if limit is None else data[:limit]
    root_ok = _root_ok(problems, media_root)
    items: list[WhoItem] = []
    seen: set[str] = set()
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            problems.add(f"#{index}", None, f"expected an object, found {type(record).__name__}")
            continue
        raw_id = record.get("id")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or str(raw_id).strip() == "":
            problems.add(f"#{index}", "id", f"expected an integer or string id, found {raw_id!r}")
            item_id = f"#{index}"
        else:
            item_id = str(raw_id)
            if item_id in seen:
                problems.add(item_id, "id", "duplicate id")
            seen.add(item_id)
        question = _text(problems, item_id, record, "question")
        cutoff = problem = None
        if question is not None:
            try:
                cutoff = who_cutoff(question)
            except SocialOmniError as err:  # this item's error, never the run's (it is counted, not sent)
                problem = f"question: {err}"
        options = record.get("options")
        if not (
            isinstance(options, list) and len(options) == 4 and all(isinstance(o, str) and o.strip() for o in options)
        ):
            problems.add(item_id, "options", f"expected a list of 4 non-empty strings, found {options!r}")
            options = None
        answer = record.get("correct_answer")
        gold = answer.strip().upper() if isinstance(answer, str) else None
        if gold not in ("A", "B", "C", "D"):
            problems.add(item_id, "correct_answer", f"expected A, B, C or D, found {answer!r}")
            gold = None
        video = _media(problems, root_ok, media_root, "level_1", item_id, "video_path", record.get("video_path"))
        if None not in (question, options, gold, video):
            items.append(
                WhoItem(
                    id=item_id, video=video, question=question, options=options, gold=gold, cutoff=cutoff,
                    problem=problem,
                )
            )  # fmt: skip
    problems.raise_if_any()
    return items


def _level2_records(path: Path, data: Any, problems: _Problems) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        total = data.get("total_items")
        if total is not None and total != len(data["data"]):
            problems.add(None, "total_items", f"says {total!r} but 'data' holds {len(data['data'])} items")
        return cast("list[Any]", data["data"])
    raise SocialOmniError(f"{path}: expected a list of items or an object with a 'data' list")


def _when_item(
    problems: _Problems, root_ok: bool, media_root: Path, index: int, record: Any, seen: set[str]
) -> tuple[WhenItem | None, str | None]:
    """(the item or None, its gold label or None) for one Level 2 record; problems go to ``problems``."""

    if not isinstance(record, dict):
        problems.add(f"#{index}", None, f"expected an object, found {type(record).__name__}")
        return None, None
    item_id = record.get("video_id")
    if not isinstance(item_id, str) or not item_id.strip():
        problems.add(f"#{index}", "video_id", f"expected a non-empty string, found {item_id!r}")
        item_id = f"#{index}"
    elif item_id in seen:
        problems.add(item_id, "video_id", "duplicate id")
    seen.add(item_id)
    q1, q2 = record.get("question_1"), record.get("question_2")
    question = timestamp = gold = participant = how_question = reference = problem = None
    if not isinstance(q1, dict):
        problems.add(item_id, "question_1", f"expected an object, found {q1!r}")
    else:
        question = q1.get("question")
        if not isinstance(question, str):
            problems.add(item_id, "question_1.question", f"expected a string, found {question!r}")
            question = None
        try:  # a timestamp that cannot be read is this item's error, never the run's (counted, not sent)
            timestamp = seconds(q1.get("timestamp"))
            if timestamp <= 0:
                problem = f"question_1.timestamp: {q1.get('timestamp')!r}: cut-off must be > 0"
                timestamp = None
        except SocialOmniError as err:
            problem = f"question_1.timestamp: {err}"
        answer = q1.get("correct_answer")
        letter = answer.strip().upper() if isinstance(answer, str) else None
        if letter not in ("A", "B"):
            problems.add(item_id, "question_1.correct_answer", f"expected A or B, found {answer!r}")
        else:
            option = q1.get(f"option_{letter}")
            gold = option.strip().upper() if isinstance(option, str) else None
            if gold not in ("YES", "NO"):
                problems.add(item_id, f"question_1.option_{letter}", f"expected YES or NO, found {option!r}")
                gold = None
    if not isinstance(q2, dict):
        problems.add(item_id, "question_2", f"expected an object, found {q2!r}")
    else:
        how_question = q2.get("question")
        match = _PARTICIPANT.fullmatch(how_question.strip()) if isinstance(how_question, str) else None
        if match is None or not match.group(1).strip():
            problems.add(
                item_id, "question_2.question", f"expected 'What should <participant> say?', found {how_question!r}"
            )
            how_question = None
        else:
            participant = match.group(1).strip()
        reference = q2.get("answer", "")
        reference = "" if reference is None else reference
        if not isinstance(reference, str):
            problems.add(item_id, "question_2.answer", f"expected a string, found {reference!r}")
            reference = None
    video = _media(problems, root_ok, media_root, "level_2", item_id, "video_file", record.get("video_file"))
    values = (question, gold, participant, how_question, reference, video)
    if None in values:
        return None, gold
    item = WhenItem(
        id=item_id,
        video=video,
        question=question,
        timestamp=timestamp,
        gold=gold,
        participant=participant,
        how_question=how_question,
        reference=reference,
        problem=problem,
    )
    return item, gold


def load_when(annotations_json: Path, media_root: Path, *, limit: int | None = None) -> list[WhenItem]:
    """The When items of ``level_2/annotations_200.json`` (object with ``data``, or a bare list), validated.

    Without ``limit`` the file must hold exactly 200 items of which exactly 128 are gold YES (the How items);
    with it, the first ``limit`` items are taken (no count check). Every taken item needs a unique ``video_id``,
    a ``question_1.timestamp`` (one that :func:`seconds` cannot read as > 0 is the item's ``problem``, recorded
    as failed by the run), ``correct_answer`` A/B naming an option that
    upper-cases to YES/NO, a ``question_2.question`` of the form "What should <participant> say?" and a
    ``video_file`` found by :func:`resolve_media`. All problems are raised together in one SocialOmniError.
    Use :func:`how_items` for the How subset.
    """
    _check_limit(limit)
    path = Path(annotations_json)
    problems = _Problems(path)
    records = _level2_records(path, _read_json(path), problems)
    root_ok = _root_ok(problems, media_root)
    taken = records if limit is None else records[:limit]
    items: list[WhenItem] = []
    golds: list[str | None] = []
    seen: set[str] = set()
    for index, record in enumerate(taken):
        item, gold = _when_item(problems, root_ok, media_root, index, record, seen)
        golds.append(gold)
        if item is not None:
            items.append(item)
    if limit is None:
        yes = golds.count("YES")
        if len(records) != WHEN_COUNT or yes != HOW_COUNT:
            problems.add(
                None,
                None,
                f"expected {WHEN_COUNT} When items with {HOW_COUNT} gold YES, found {len(records)} items"
                f" with {yes} gold YES",
            )
    problems.raise_if_any()
    return items


def how_items(when_items: Sequence[WhenItem], limit: int | None = None) -> list[WhenItem]:
    """The gold-YES items of ``when_items`` in order (the forced How generations), the first ``limit`` if given.

    For a limited smoke run, pass all When items (``load_when`` with a limit at least the file's length skips
    only the count check) so that the first gold-YES items are found even past the first When items.
    """
    _check_limit(limit)
    chosen = [item for item in when_items if item.gold == "YES"]
    return chosen if limit is None else chosen[:limit]
