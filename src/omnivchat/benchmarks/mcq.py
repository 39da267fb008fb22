"""Multiple-choice questions on media: the one implementation of the Benchmark protocol behind the public omni
benchmarks (WorldSense, Daily-Omni, OmniBench, AV-Odyssey, Video-MME, LVOmniBench; see docs/benchmarks.md).

A benchmark module only reads its release into :class:`McqItem` s (question, option texts, gold letter, media,
cluster, breakdown values) and names its breakdowns; :class:`McqBenchmark` does the rest, the same for all:

- **Load:** every problem of the release is listed, one line each, naming the file and the item: a missing field,
  a gold letter outside the options, a missing or unreadable media file, and a video that should carry its
  soundtrack but has no audio stream (it would reach the model silent: never sent).
- **Media:** every item reaches the model with its sound, in one clip. A video with its soundtrack is sent as
  released; media released apart (a video and an audio file, a picture and an audio file, several of them) are
  composed into one clip by :func:`omnivchat.media.compose_clip`, cached by content in the run's ``clips/``
  folder; the manifest records each item's layout and source hashes, the store each clip's sha256.
- **Prompt:** a prompt card (``{question}``, ``{options}``, ``{letters}``, ``{media}``) asking for the letter
  only: the benchmark's own default (``cards/<name>.txt``), or ``--prompts FILE``; its sha256 is in the manifest.
- **Parse:** strict (:func:`omnivchat.benchmarks._choice.parse_strict`: one option stated, by its letter as a
  standalone token or by its text; never "the first capital letter", so "Based on..." is never B) is the headline;
  the lenient parse is reported apart; an unparsed reply is wrong, counted, and stays in every denominator.
- **Metrics:** accuracy overall and per breakdown value (a multi-label item counts in each of its labels), each
  with a seeded cluster-bootstrap 95% interval and the cluster-robust standard error (clusters: the videos, since
  several questions share one; :func:`omnivchat.scoring.statistics.clustered_se`), beside the naive one.
- **Beside the headline:** the accuracy as the benchmark's own scorer counts it (its letter reading, what it leaves
  out of the denominator; :mod:`omnivchat.benchmarks._official`), labelled as such, to set a run beside a
  leaderboard. A question the release holds twice is said at load, recorded in the manifest, and scored twice.
- **Chance:** 1/K for a task ``mcK`` (K options), the ablation grid's prior floor.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from omnivchat._files import path_escape
from omnivchat.benchmarks import _tables
from omnivchat.benchmarks._choice import (
    LETTERS,
    clustered_accuracy,
    parse_lenient,
    parse_strict,
)
from omnivchat.benchmarks._generic import manifest_tasks, scores_of
from omnivchat.benchmarks._official import Answered, OfficialRule, official_figure, official_letter
from omnivchat.benchmarks._protocol import (
    Item,
    ItemResult,
    RunOptions,
    ScoreOptions,
    Scores,
    Source,
)
from omnivchat.benchmarks._registry import read_run_manifest
from omnivchat.errors import OmnivchatError
from omnivchat.routes import ChatRequest, Route, SimOracle
from omnivchat.runs import STORE_FILE, RunStore, package_record, route_identity
from omnivchat.scoring.statistics import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

__all__ = [  # the kit a multiple-choice benchmark builds on, in omnivchat or in a package of its own
    "CLIPS",
    "LETTERS",
    "MISSING",
    "OFFICIAL_METRIC",
    "Answered",
    "Card",
    "McqBenchmark",
    "McqData",
    "McqError",
    "McqItem",
    "McqMedia",
    "OfficialRule",
    "Reader",
    "Release",
    "add_item",
    "annotations_file",
    "cards_beside",
    "first_existing",
    "gold_letter",
    "inside",
    "label_field",
    "load_card",
    "mcq_metrics",
    "object_rows",
    "option_texts",
    "parquet_columns",
    "path_list",
    "read_json",
    "read_rows",
    "score_reply",
    "text_field",
]

CLIPS = "clips"
"""The folder of a run directory where composed clips are cached."""
OFFICIAL_METRIC = "official counting (not the headline)"
"""The metric holding the figure under the benchmark's own published counting rule (benchmarks._official)."""
MISSING = "(missing)"
"""The breakdown value of an item whose release leaves that field out."""
Layout = Literal["video", "video+audio", "images+audio"]
LAYOUT_WORDS: dict[str, str] = {
    "video": "the released video with its own soundtrack, sent as it is",
    "video+audio": "the released video with the released audio file(s) as its soundtrack, composed into one clip",
    "images+audio": "the released image(s) shown in turn while the released audio file(s) play, composed into one clip",
}
CARD_FIELDS = frozenset({"question", "options", "letters", "media"})
_MEDIA_SLOT = "\x00omnivchat-media\x00"  # stands for an empty {media} while the card is filled in


class McqError(OmnivchatError):
    """A public benchmark's release that cannot be run: every problem, one line each, naming the file and item."""


# --- items ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McqMedia:
    """What an item shows and plays, as released. ``visual_tags``/``audio_tags``: the names the question uses for
    each file (AV-Odyssey's ``[img1]``, ``[audio1]``), explained to the model in the request; empty: none."""

    layout: Layout
    visuals: tuple[Path, ...]
    audios: tuple[Path, ...] = ()
    visual_tags: tuple[str, ...] = ()
    audio_tags: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[Path, ...]:
        return (*self.visuals, *self.audios)


@dataclass(frozen=True)
class McqItem:
    """One multiple-choice question: option texts without their letters, the gold letter, its media, its cluster
    (the video or source it shares with other questions) and its breakdown values (several for a multi-label key)."""

    id: str
    question: str
    options: tuple[str, ...]
    gold: str
    media: McqMedia
    cluster: str
    breakdown: dict[str, tuple[str, ...]]
    where: str  # "FILE: item N (id X)", for messages

    @property
    def letters(self) -> str:
        return LETTERS[: len(self.options)]

    @property
    def task(self) -> str:
        return f"mc{len(self.options)}"


@dataclass
class Release:
    """What a benchmark module read from its release: the items, every problem found, and the items it will not
    send (id -> reason), counted in the manifest and the scores."""

    path: Path
    media_root: Path
    items: list[McqItem] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Card:
    """A prompt card: a template with ``{question}`` and ``{options}`` (``{letters}`` and ``{media}`` optional;
    other braces doubled), where it came from and its sha256."""

    text: str
    source: str
    sha256: str

    def render(self, item: McqItem, note: str = "") -> str:
        """The request text of ``item``: the card filled in; ``note`` explains the clip's parts (its line is left
        out when there is none; a card without ``{media}`` gets a note on a line of its own before it)."""
        template = self.text
        if note and "media" not in _fields(template):
            template = "{media}\n" + template
        options = "\n".join(f"{letter}. {text}" for letter, text in zip(item.letters, item.options, strict=True))
        letters = ", ".join(item.letters[:-1]) + f" or {item.letters[-1]}"
        text = template.format(question=item.question, options=options, letters=letters, media=note or _MEDIA_SLOT)
        return text.replace(_MEDIA_SLOT + "\n", "").replace(_MEDIA_SLOT, "")


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def cards_beside(module: str) -> Traversable:
    """The ``cards`` folder beside a module: in its package (``mylab/cards`` for ``mylab.bench``), or beside a
    top-level module's file."""
    found = sys.modules[module]
    if found.__package__:
        return resources.files(found.__package__).joinpath("cards")
    return Path(found.__file__ or ".").parent / "cards"


def load_card(path: Path | None, default: str, cards: Traversable | None = None) -> Card:
    """The card of ``--prompts FILE``, used as it is (one final newline dropped), else ``default`` in the
    benchmark's ``cards`` folder (omnivchat's own by default); an unreadable file or a template without
    ``{question}`` and ``{options}`` (or with another field) is an error naming the file."""
    if path is None:
        folder = cards if cards is not None else resources.files(__package__).joinpath("cards")
        card = folder.joinpath(default)
        source = f"omnivchat:benchmarks/cards/{default}" if cards is None else str(card)
        try:
            text = card.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            reason = "no such file" if isinstance(err, FileNotFoundError) else str(err)
            raise McqError(
                f"{source}: cannot read the benchmark's prompt card ({reason}); a benchmark ships its card as "
                f"cards/{default} beside its module (or McqBenchmark(cards=...)), or pass --prompts FILE"
            ) from None
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as err:
            raise McqError(f"{path}: cannot read the prompt card ({err.strerror or err})") from None
        except UnicodeDecodeError as err:
            raise McqError(f"{path}: the prompt card is not UTF-8 text ({err})") from None
        source = str(path)
    text = text.removesuffix("\n")
    try:
        names = _fields(text)
    except ValueError as err:
        raise McqError(f"{source}: not a valid prompt card template ({err}; double any literal brace)") from None
    missing = sorted({"question", "options"} - names)
    extra = sorted(names - CARD_FIELDS)
    if missing or extra:
        said = [f"needs {', '.join('{' + m + '}' for m in missing)}"] if missing else []
        said += [f"unknown field {', '.join('{' + e + '}' for e in extra)}"] if extra else []
        raise McqError(
            f"{source}: {'; '.join(said)} (a card holds {{question}} and {{options}}, and may hold {{letters}} and "
            "{media}; double any literal brace)"
        )
    return Card(text=text, source=source, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


# --- reading releases ----------------------------------------------------------------------------------------


def annotations_file(data: Path, default: str) -> Path:
    """``data`` when it is a file; ``data/<default>`` when it is the release's folder; an error naming it else."""
    data = Path(data)
    if data.is_dir():
        data = data / default
    if not data.is_file():
        raise McqError(f"{data}: no such file (give --data the release's {Path(default).name}, or its folder)")
    return data


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except OSError as err:
        raise McqError(f"{path}: cannot read ({err.strerror or err})") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as err:  # RecursionError: nested too deeply
        raise McqError(f"{path}: not valid JSON ({err})") from None


def read_rows(path: Path, *, columns: Sequence[str] | None = None) -> list[tuple[str, Any]]:
    """The rows of a JSON list (``item N``), a JSON-lines file (``line N``, from 1) or a parquet file (``row N``,
    from 0; only ``columns`` when given, those present), each with its label for messages."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return [(f"row {n}", row) for n, row in enumerate(_parquet_rows(path, columns))]
    if suffix == ".jsonl":
        rows: list[tuple[str, Any]] = []
        problems: list[str] = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise McqError(f"{path}: cannot read ({err})") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"line {number}", json.loads(line)))
            except (ValueError, RecursionError) as err:
                problems.append(f"{path}: line {number}: not valid JSON ({err})")
        if problems:
            raise McqError("\n".join(problems))
        return rows
    data = read_json(path)
    if not isinstance(data, list):
        raise McqError(f"{path}: expected a JSON list of items, got {type(data).__name__}")
    return [(f"item {n}", row) for n, row in enumerate(data)]


def object_rows(
    release: Release, path: Path, *, columns: Sequence[str] | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The rows of ``path`` (see :func:`read_rows`) that are objects, each with ``FILE: LABEL`` to name it; any other
    row is a problem of ``release``."""
    for label, row in read_rows(path, columns=columns):
        where = f"{path}: {label}"
        if isinstance(row, dict):
            yield where, row
        else:
            release.problems.append(f"{where}: expected an object, got {type(row).__name__}")


def _parquet_rows(path: Path, columns: Sequence[str] | None) -> list[dict[str, Any]]:
    names = _tables.table_columns(path)
    return list(_tables.iter_rows(path, [c for c in columns if c in names] if columns is not None else names))


def parquet_columns(path: Path) -> list[str]:
    """The column names of a parquet file (an empty list for any other file)."""
    return _tables.table_columns(path) if path.suffix.lower() == ".parquet" else []


def text_field(row: dict[str, Any], name: str, problems: list[str]) -> str:
    """A required non-empty string (a number is taken as its text)."""
    value = row.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"missing or empty {name!r} (a string)")
        return ""
    return value.strip()


def label_field(row: dict[str, Any], name: str, problems: list[str]) -> tuple[str, ...]:
    """A breakdown value: a string (or number), or a list of strings for a multi-label field; absent or null is
    :data:`MISSING` (counted under that label, never an error); anything else is a problem."""
    value = row.get(name)
    if value is None:
        return (MISSING,)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (str(value),)
    if isinstance(value, str):
        return (value.strip() or MISSING,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(dict.fromkeys(v.strip() for v in value)) or (MISSING,)
    problems.append(f"{name!r} must be a string or a list of strings (got {value!r})")
    return (MISSING,)


_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[.):]\s*")


def option_texts(value: Any, problems: list[str], *, prefixed: bool | None, name: str = "options") -> tuple[str, ...]:
    """Option texts without letters from a released list. ``prefixed``: True when the release writes each option
    as ``"A. text"`` (the letters must run A, B, C... in order), False when it gives bare texts, None when that is
    unconfirmed (prefixes stripped only when every option has the right one)."""
    if not isinstance(value, list | tuple) or not 2 <= len(value) <= len(LETTERS):
        problems.append(f"{name!r} must be a list of 2 to {len(LETTERS)} options")
        return ()
    if not all(isinstance(o, str) and o.strip() for o in value):
        problems.append(f"{name!r} holds an empty or non-string option")
        return ()
    options = [o.strip() for o in value]
    matches = [_PREFIX.match(o) for o in options]
    right = [m is not None and m.group(1) == LETTERS[k] for k, m in enumerate(matches)]
    if prefixed is True and not all(right):
        bad = next(k for k, ok in enumerate(right) if not ok)
        problems.append(f"{name!r}: option {bad + 1} {options[bad]!r} lacks its letter prefix {LETTERS[bad]!r}")
        return ()
    if prefixed is True or (prefixed is None and all(right)):
        texts = [o[m.end() :].strip() for o, m in zip(options, matches, strict=True) if m is not None]
        if not all(texts):
            problems.append(f"{name!r}: an option has a letter but no text")
            return ()
        return tuple(texts)
    return tuple(options)


def gold_letter(row: dict[str, Any], name: str, options: tuple[str, ...], problems: list[str]) -> str:
    """The gold letter of field ``name``, which must be one of the options' letters."""
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"missing or empty {name!r} (the letter of the right option)")
        return ""
    letter = value.strip().rstrip(".").strip("()").upper()
    letters = LETTERS[: len(options)]
    if not options:
        return ""
    if len(letter) != 1 or letter not in letters:
        problems.append(f"{name!r} {value!r} is not one of the option letters {letters[0]}-{letters[-1]}")
        return ""
    return letter


def add_item(
    release: Release,
    where: str,
    problems: list[str],
    *,
    id: str,
    question: str,
    options: tuple[str, ...],
    gold: str,
    media: McqMedia,
    cluster: str,
    breakdown: dict[str, tuple[str, ...]],
) -> None:
    """Add the item read at ``where`` to ``release``, or its ``problems`` (one line each, prefixed by ``where``)."""
    if problems:
        release.problems.extend(f"{where}: {p}" for p in problems)
        return
    release.items.append(McqItem(id, question, options, gold, media, cluster, breakdown, where))


def path_list(row: dict[str, Any], name: str, problems: list[str]) -> list[str]:
    """A list of relative paths (absent or null: none)."""
    value = row.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v.strip() for v in value):
        problems.append(f"{name!r} must be a list of relative paths (got {value!r})")
        return []
    return [v.strip() for v in value]


def inside(root: Path, relative: str, problems: list[str], name: str) -> Path:
    """``root / relative`` for a path the release gives; an absolute path or one with ``..`` is a problem (a
    release never reaches outside its media folder). Symlinks are followed as they are: media may live elsewhere."""
    if path_escape(relative):  # the check byo, hf and the native bench make (omnivchat._files)
        problems.append(f"{name} {relative!r} leaves the media folder (an absolute path or '..')")
    return root / relative


def first_existing(*candidates: Path) -> Path:
    """The first of ``candidates`` that exists, else the first (whose absence the media check reports)."""
    return next((c for c in candidates if c.exists()), candidates[0])


# --- media checks --------------------------------------------------------------------------------------------


def _check_media(items: Sequence[McqItem]) -> tuple[list[str], dict[str, str]]:
    """(problems, sha256 by file) for every item's media: a missing or unreadable file, a picture file without
    one, an audio file without sound, and a video released with its soundtrack that has no audio stream."""
    from omnivchat.media import cached_probe

    paths = list(dict.fromkeys(p for i in items for p in i.media.files))
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="mcq-probe") as pool:
        results = dict(zip(paths, pool.map(lambda p: cached_probe(p, energy=False, verify=False), paths), strict=True))
    problems: list[str] = []
    for item in items:
        media = item.media
        roles = [("video" if media.layout != "images+audio" else "image", p) for p in media.visuals]
        roles += [("audio", p) for p in media.audios]
        for role, path in roles:
            result = results[path]
            if result.error is not None or result.info is None:
                problems.append(f"{item.where}: {role} {path}: {result.error or 'unreadable'}")
                continue
            info = result.info
            if role != "audio" and (not info.has_video or not info.width):
                problems.append(f"{item.where}: {role} {path} has no picture")
            if role == "audio" and not info.has_audio:
                problems.append(f"{item.where}: audio {path} has no audio stream")
            if media.layout == "video" and role == "video" and info.has_video and not info.has_audio:
                problems.append(
                    f"{item.where}: video {path} has no audio stream: this benchmark's videos carry their "
                    "soundtrack, and this one would reach the model silent"
                )
    hashes = {str(p): r.sha256 for p, r in results.items() if r.sha256 is not None}
    return problems, hashes


# --- the benchmark -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class McqData:
    """A loaded release: its annotations file and sha256, its items, its prompt card, what it refuses, and the
    sha256 of every media file (what a run records)."""

    name: str
    path: Path
    sha256: str
    media_root: Path
    items: tuple[McqItem, ...]
    card: Card
    refused: dict[str, str]
    media_sha256: dict[str, str]
    duplicates: dict[str, str] = field(default_factory=dict)
    """Items the release repeats (id -> the id of its first copy): each is run and scored, and said at load."""

    @property
    def notes(self) -> list[str]:
        """What a person should know about the release before it runs (printed by `eval`)."""
        return [
            f"{self.path}: item {copy!r} repeats item {first!r} (same media, question and options); both are run "
            "and scored, so this question counts twice"
            for copy, first in self.duplicates.items()
        ]


def duplicates(items: Iterable[McqItem]) -> dict[str, str]:
    """The items that repeat an earlier one (same media files, question and options), id -> the first one's id.
    A release may hold a question twice (Daily-Omni's qa.json does): kept, run and scored, but never silently."""
    first: dict[tuple[Any, ...], str] = {}
    repeated: dict[str, str] = {}
    for item in items:
        key = (item.media.files, item.question, item.options)
        if key in first:
            repeated[item.id] = first[key]
        else:
            first[key] = item.id
    return repeated


Reader = Callable[[Source], Release]


class McqBenchmark:
    """A public multiple-choice benchmark on media, implementing :class:`omnivchat.benchmarks.Benchmark`; a module
    gives its reader and metadata (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        title: str,
        read: Reader,
        breakdowns: Sequence[str],
        group: str,
        official: OfficialRule | None,
        orders: dict[str, Sequence[str]] | None = None,
        cards: Traversable | None = None,
    ) -> None:
        """``official``: how the benchmark's own published scorer counts (:class:`OfficialRule`: its letter reading,
        what it leaves out of the denominator), reported beside the headline; None for a benchmark with no
        published scorer (then no such figure). Every benchmark declares it, so none is left out by accident.
        ``cards``: the folder of its prompt card ``NAME.txt`` (default: ``cards`` beside the module of ``read``, which
        for omnivchat's own benchmarks is ``omnivchat:benchmarks/cards``)."""
        self.name = name
        self.title = title
        self.protocols: tuple[str, ...] = (f"{name}-run-v1",)
        self.sampling: Mapping[str, Any] = MappingProxyType({"temperature": 0.0})  # greedy: the answer is a letter
        self.read = read
        self.breakdowns = tuple(breakdowns)
        self.group = group  # the breakdown key the ablation grid diagnoses per value
        self.orders = {k: tuple(v) for k, v in (orders or {}).items()}  # values in the paper's order
        self.official = official
        # omnivchat's own cards keep their short source name (it is in every manifest: a run resumes only as it was)
        shipped = read.__module__.rpartition(".")[0] == __package__
        self.cards = cards if cards is not None or shipped else cards_beside(read.__module__)

    # - protocol ---------------------------------------------------------------------------------------------

    def chance(self, task: str) -> float:
        if task.startswith("mc") and task[2:].isdigit() and int(task[2:]) > 0:
            return 1.0 / int(task[2:])
        raise OmnivchatError(f"{self.name}: unknown task {task!r} (tasks are mcK, K options)")

    def load(self, source: Source) -> McqData:
        """The release's items, every field of every item checked (each problem one line naming file and item),
        then the media of the items chosen by ``--tasks`` and ``--limit`` probed and hashed."""
        release = self.read(source)
        problems = list(release.problems)
        seen: dict[str, str] = {}
        for item in release.items:
            if item.id in seen:
                problems.append(f"{item.where}: duplicate id {item.id!r} (also {seen[item.id]})")
            seen.setdefault(item.id, item.where)
        if problems:
            raise McqError("\n".join(problems))
        if not release.items:
            raise McqError(f"{release.path}: no items to run")
        repeated = duplicates(release.items)
        items = list(release.items)
        if source.tasks:
            known = {i.task for i in items}
            unknown = sorted(set(source.tasks) - known)
            if unknown:
                raise McqError(
                    f"{release.path}: no items of task {', '.join(unknown)} (tasks here: {', '.join(sorted(known))})"
                )
            items = [i for i in items if i.task in source.tasks]
        if source.limit:
            items = items[: source.limit]
        card = load_card(source.prompts, f"{self.name}.txt", self.cards)
        # The media of the items to run (a --limit smoke run hashes and probes only its own), every problem listed.
        media_problems, hashes = _check_media(items)
        if media_problems:
            raise McqError("\n".join(media_problems))
        return McqData(
            name=self.name,
            path=release.path,
            sha256=_sha256(release.path),
            media_root=release.media_root,
            items=tuple(items),
            card=card,
            refused=dict(release.refused),
            media_sha256=hashes,
            duplicates=repeated,
        )

    def items(self, dataset: McqData, options: RunOptions) -> list[Item]:
        rows = dataset.items[: options.limit] if options.limit else dataset.items
        return [Item(i.id, i.task, i, _meta(i)) for i in rows]

    def manifest(self, dataset: McqData, route: Route, options: RunOptions) -> dict[str, Any]:
        layouts: dict[str, int] = {}
        for i in dataset.items:
            layouts[i.media.layout] = layouts.get(i.media.layout, 0) + 1
        from omnivchat.media import COMPOSE_RECIPE, GAP_S, IMAGE_FPS, MIN_IMAGE_S

        return {
            "protocol": self.protocols[0],
            "benchmark": self.name,
            "data": str(dataset.path.resolve()),
            "data_sha256": dataset.sha256,
            "media_root": str(dataset.media_root.resolve()),
            "items": {i.id: i.task for i in dataset.items},
            "media_sha256": {
                i.id: {_relative(p, dataset.media_root): dataset.media_sha256[str(p)] for p in i.media.files}
                for i in dataset.items
            },
            "delivery": {
                "layouts": {layout: {"items": n, "what": LAYOUT_WORDS[layout]} for layout, n in layouts.items()},
                "per_item": {i.id: i.media.layout for i in dataset.items},
                "compose": {
                    "recipe": COMPOSE_RECIPE,
                    "gap_s": GAP_S,
                    "image_fps": IMAGE_FPS,
                    "min_image_s": MIN_IMAGE_S,
                },
            },
            "refused": dataset.refused,
            # recorded only when there are some: the manifests of releases without any stay as they were
            **({"duplicates": dataset.duplicates} if dataset.duplicates else {}),
            "prompt_card": {"source": dataset.card.source, "sha256": dataset.card.sha256},
            "route": route_identity(route).model_dump(),  # another server or other settings: another run
            "sampling": options.sampling.model_dump(),
            "condition": options.condition,
            "simulated": options.simulated,
            "package": package_record(),
            **options.manifest_extra,
        }

    def request(
        self, dataset: McqData, item: Item, options: RunOptions, work_dir: Path, meta: dict[str, Any]
    ) -> ChatRequest:
        """The item's clip (its video as released, or its media composed into one clip, cached in RUN/clips) and
        the card's text; a media file that cannot be read or composed fails this item alone (a MediaError)."""
        i: McqItem = item.record
        note = ""
        if i.media.layout == "video":
            clip = i.media.visuals[0]
            meta["clip_sha256"] = dataset.media_sha256.get(str(clip))
        else:
            from omnivchat.media import compose_clip

            kind: Literal["video", "image"] = "video" if i.media.layout == "video+audio" else "image"
            composed = compose_clip(i.media.visuals, i.media.audios, visual_kind=kind, cache_dir=Path(work_dir) / CLIPS)
            clip = composed.path
            meta["clip_sha256"] = composed.sha256
            note = legend(i.media, composed)
        sent = options.transform(clip) if options.transform else clip
        oracle = None
        if options.simulated:  # only a simulated model is told the answer (the harness self-check runs on it)
            wrong = next(c for c in i.letters if c != i.gold)
            oracle = SimOracle(
                reference=f"The answer is {i.gold}.",
                language="en",
                requires=("video", "audio"),
                wrong_reply=f"The answer is {wrong}.",
            )
        text = dataset.card.render(i, note)
        return ChatRequest(item_id=i.id, clip=sent, text=text, sampling=options.sampling, oracle=oracle)

    def score(self, dataset: Any, run_dir: Path, options: ScoreOptions) -> Scores:
        """Every declared item: 1 right, 0 wrong or unparsed (counted), None for a failed request or an item never
        run (counted apart; the run is then incomplete). Metrics: see :func:`mcq_metrics`."""
        run_dir = Path(run_dir)
        results: list[ItemResult] = []
        cut: list[str] = []
        rule = self.official
        answered: list[Answered] = []  # for the figure under the benchmark's own counting rule
        failed = 0
        with RunStore(run_dir / STORE_FILE, read_only=True) as store:
            for task, keys in manifest_tasks(run_dir).items():
                for key in keys:
                    row = store.item(key, task)
                    if row is None:
                        results.append(ItemResult(key=key, task=task, score=None, reason="not run", ran=False))
                        continue
                    meta = row["meta"] or {}
                    group = _first(meta.get("breakdown", {}).get(self.group))
                    result = store.result(row["key"]) if row["status"] == "done" and row["key"] else None
                    if result is None:
                        reason = f"request failed: {row['error']}" if row["status"] == "failed" else "no reply"
                        detail = _detail(meta)
                        results.append(
                            ItemResult(key=key, task=task, score=None, reason=reason, group=group, detail=detail)
                        )
                        failed += 1
                        continue
                    scored = score_reply(key, task, result.text, meta, group, rule)
                    if rule is not None:
                        answered.append(
                            Answered(result.text, str(meta.get("gold")), tuple(meta.get("options") or ()),
                                     scored.detail["strict"])
                        )  # fmt: skip
                    if result.delivered.get("cut_from_s") is not None:
                        cut.append(f"{key} ({result.delivered['cut_from_s']:.0f} s)")
                    results.append(scored)
        refused = read_run_manifest(run_dir).value("refused") or {}
        metrics = mcq_metrics(results, self.breakdowns, self.orders, refused=dict(refused))
        if rule is not None:  # beside the headline, for setting a run beside a leaderboard; never the headline
            metrics[OFFICIAL_METRIC] = official_figure(rule, answered, failed)
        # A clip cut by the route's duration limit was answered from its start only: said beside every figure.
        metrics["clips cut to the route's duration limit"] = {"count": len(cut), "items": cut[:20]}
        repeated = read_run_manifest(run_dir).value("duplicates") or {}
        if repeated:  # the release holds these questions twice: each copy was run and is scored
            metrics["repeated in the release (each copy scored)"] = {
                "count": len(repeated),
                "items": [f"{copy} repeats {first}" for copy, first in dict(repeated).items()],
            }
        return scores_of(self.name, results, metrics, [r for r in results if r.ran and r.score is None])


def _meta(i: McqItem) -> dict[str, Any]:
    """What the store keeps with an item: what its scoring reads (gold, options, cluster, breakdown)."""
    return {
        "gold": i.gold,
        "letters": i.letters,
        "options": list(i.options),
        "cluster": i.cluster,
        "breakdown": {k: list(v) for k, v in i.breakdown.items()},
        "layout": i.media.layout,
    }


def legend(media: McqMedia, composed: Any) -> str:
    """One sentence naming each tagged part of a composed clip and when it is on screen or plays (AV-Odyssey's
    ``[img1]``, ``[audio1]``...); "" when the question names no parts."""
    if not media.visual_tags and not media.audio_tags:
        return ""
    parts = [
        f"{tag} is on screen from {span.start:.1f} s to {span.end:.1f} s"
        for tag, span in zip(media.visual_tags, composed.visuals, strict=True)
    ]
    parts += [
        f"{tag} plays from {span.start:.1f} s to {span.end:.1f} s"
        for tag, span in zip(media.audio_tags, composed.audios, strict=True)
    ]
    sound = " (the video's own sound, if any, is replaced by the audio recordings)"
    return f"In the clip{sound if composed.layout == 'video+audio' else ''}: " + "; ".join(parts) + "."


def score_reply(
    key: str, task: str, reply: str, meta: dict[str, Any], group: str | None = None, rule: OfficialRule | None = None
) -> ItemResult:
    """An answered item's result: strict parse (the headline: 1 right, 0 wrong or unparsed), lenient apart, and
    what the benchmark's own scorer reads (``official``, when it has a rule)."""
    letters, options = meta.get("letters") or "ABCD", meta.get("options")
    texts = tuple(options) if options else None
    strict = parse_strict(reply, letters, texts)
    loose = parse_lenient(reply, letters, texts)
    gold = meta.get("gold")
    detail = {**_detail(meta), "gold": gold, "strict": strict, "lenient": loose, "unparsed": strict is None}
    if rule is not None:
        detail["official"] = official_letter(rule, reply, texts or ())
    reason = "unparsed (counts as wrong)" if strict is None else "parsed"
    return ItemResult(key=key, task=task, score=float(strict == gold), reason=reason, group=group, detail=detail)


def _detail(meta: dict[str, Any]) -> dict[str, Any]:
    return {"cluster": meta.get("cluster"), "breakdown": meta.get("breakdown") or {}}


def _first(values: Any) -> str | None:
    return str(values[0]) if isinstance(values, list) and values else None


def mcq_metrics(
    results: Sequence[ItemResult],
    breakdowns: Sequence[str],
    orders: dict[str, tuple[str, ...]] | None = None,
    *,
    refused: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Accuracy (strict parse) overall and per value of each breakdown key, with the cluster bootstrap interval and
    the clustered standard error; the lenient accuracy apart; what was refused. Items without a reply are left out
    of every figure (counted by the scores' completeness); unparsed replies are in, as wrong."""
    scored = [r for r in results if r.score is not None]

    def figure(rows: Iterable[ItemResult], *, lenient: bool = False) -> dict[str, Any]:
        rows = list(rows)
        if lenient:
            values = [float(r.detail.get("lenient") == r.detail.get("gold")) for r in rows]
            unparsed = sum(1 for r in rows if r.detail.get("lenient") is None)
        else:
            values = [float(r.score or 0.0) for r in rows]
            unparsed = sum(1 for r in rows if r.detail.get("unparsed"))
        clusters = [str(r.detail.get("cluster") or r.key) for r in rows]
        return clustered_accuracy(values, clusters, unparsed).model_dump()

    metrics: dict[str, Any] = {"overall": figure(scored), "lenient (not the headline)": figure(scored, lenient=True)}
    for key in breakdowns:
        values: dict[str, list[ItemResult]] = {}
        for r in scored:
            for value in r.detail.get("breakdown", {}).get(key) or [MISSING]:
                values.setdefault(str(value), []).append(r)
        order = (orders or {}).get(key, ())
        for value in sorted(values, key=lambda v: (order.index(v) if v in order else len(order), v)):
            metrics[f"{key}: {value}"] = figure(values[value])
    if refused:
        reasons: dict[str, int] = {}
        for reason in refused.values():
            reasons[reason] = reasons.get(reason, 0) + 1
        metrics["refused (not sent, in no denominator)"] = {"count": len(refused), **reasons}
    metrics["settings"] = {
        "interval": "cluster bootstrap (videos resampled)",
        "resamples": BOOTSTRAP_RESAMPLES,
        "seed": BOOTSTRAP_SEED,
        "level": BOOTSTRAP_LEVEL,
        "se": "cluster-robust CR1 (clusters: videos)",
    }
    return metrics


def _relative(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
