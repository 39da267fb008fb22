"""hf: a benchmark from a local Hugging Face dataset, its columns mapped onto byo's fields.

Dataset: a folder on disk in a format of the ``datasets`` library or the hub (``save_to_disk`` folders, parquet
snapshots, a hub cache repository, the datasets cache: :mod:`omnivchat.benchmarks._tables`), read with pyarrow
(``pip install 'omnivchat[hf]'``). Only local files are read (``eval --data hf://`` downloads them first, through
:mod:`omnivchat.benchmarks.download`).

Columns: ``--columns question=Question,answer=Answer,video=video_path,options=Choice,category=Type`` says which
column holds each of byo's fields (qid, question, answer, options, category, requires, video, audio); a field not
mapped reads the column of its own name when the table has one (the media fields only when neither is mapped).
``FIELD:=VALUE`` gives every row the same ``requires`` or ``category`` (``requires:=video+audio``). Without a
qid column an item's qid is its row number in the split. A media cell is a path (relative to ``--media`` when
given, else to the dataset's folder) or the datasets library's embedded media ``{"bytes", "path"}``, written once
to the media cache. A path must lead, symlinks resolved, inside ``--media``, the dataset's folder (a hub cache
repository as a whole: its snapshots link into its ``blobs``) or a folder allowed with ``--media-root``; any other
(absolute, ``..``, a symlink out) is refused, naming the file and row. Options given as "A. text" lose their
letter prefix (the prompt adds letters); an answer may be a letter, "(B)", or one option's text.

Every row then goes through byo's validation, and is scored as byo scores it (:mod:`omnivchat.benchmarks.byo`).
The manifest records the dataset folder, the split, the column mapping and the sha256 of every table file read.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

from omnivchat.benchmarks import _tables
from omnivchat.benchmarks._choice import LETTERS
from omnivchat.benchmarks._options import OptionsModel, Phase, read_options
from omnivchat.benchmarks._protocol import RunOptions, Source
from omnivchat.benchmarks._registry import register
from omnivchat.benchmarks._spoken import SpokenScoreOptions
from omnivchat.benchmarks.byo import STREAMS, ByoBench, ByoData, items_from_rows, select_items
from omnivchat.errors import OmnivchatError
from omnivchat.routes import Route

PROTOCOL = "hf-run-v1"
FIELDS = ("qid", "question", "answer", "options", "category", "requires", "video", "audio")
CONSTANT_FIELDS = ("requires", "category")
"""The fields a constant may give every row (``requires:=video+audio``)."""
MAX_PROBLEMS = 20
"""Problem lines shown at most (then how many more): a wrong media folder makes one per row."""

_LETTER_PREFIX = re.compile(r"^\s*\(?([A-Z])\s*[.):]\s*(\S.*)$", re.S)
_LETTER_ANSWER = re.compile(r"^\s*\(?([A-Z])\)?[.:]?\s*$")


class HfError(OmnivchatError):
    """A local dataset whose columns or rows cannot be run: one line per problem, naming the file and the row."""


# --- the column mapping --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Columns:
    """Which column holds each field, and the fields every row gets as a constant."""

    columns: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        """The mapping as ``--columns`` takes it (what the manifest records)."""
        parts = [f"{f}={self.columns[f]}" for f in FIELDS if f in self.columns]
        return ",".join(parts + [f"{f}:={self.constants[f]}" for f in FIELDS if f in self.constants])


def parse_columns(text: str | None) -> Columns:
    """``FIELD=COLUMN`` and ``FIELD:=VALUE`` entries, comma-separated; an error names a bad entry."""
    columns: dict[str, str] = {}
    constants: dict[str, str] = {}
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        key, sep, value = entry.partition("=")
        constant = key.endswith(":")
        name, value = key.removesuffix(":").strip(), value.strip()
        if not sep or not name or not value:
            raise HfError(f"--columns: {entry.strip()!r} is not FIELD=COLUMN or FIELD:=VALUE")
        if name not in FIELDS:
            raise HfError(f"--columns: unknown field {name!r} (fields: {', '.join(FIELDS)})")
        if name in columns or name in constants:
            raise HfError(f"--columns: {name!r} is given twice")
        if constant:
            if name not in CONSTANT_FIELDS:
                raise HfError(f"--columns: {name}:={value}: only {' and '.join(CONSTANT_FIELDS)} take a constant")
            if name == "requires":
                _constant_requires(value)
            constants[name] = value
        else:
            columns[name] = value
    return Columns(columns, constants)


def _constant_requires(value: str) -> list[str]:
    streams = [s.strip() for s in value.split("+")]
    if not streams or any(s not in STREAMS for s in streams) or len(set(streams)) != len(streams):
        raise HfError(f"--columns: requires:={value}: give video, audio or video+audio")
    return streams


def resolve_columns(given: Columns, available: list[str], file: Path) -> Columns:
    """``given`` completed with the same-named columns of the table, checked against its columns; an error lists
    them and says how to map what is missing."""
    listed = f"the table's columns: {', '.join(available)}"
    unknown = [f"{f}={c}" for f, c in given.columns.items() if c not in available]
    if unknown:
        raise HfError(f"{file}: no column for {', '.join(unknown)}; {listed}")
    columns = dict(given.columns)
    media_mapped = bool({"video", "audio"} & set(columns))
    for name in FIELDS:
        if name in columns or name in given.constants or name not in available:
            continue
        if name in STREAMS and media_mapped:
            continue
        columns[name] = name
    missing = [f"{f}=COLUMN" for f in ("question", "answer") if f not in columns]
    if "requires" not in columns and "requires" not in given.constants:
        missing.append("requires=COLUMN (or requires:=video+audio for every row)")
    if not {"video", "audio"} & set(columns):
        missing.append("video=COLUMN (or audio=COLUMN)")
    if missing:
        raise HfError(f"{file}: map {', '.join(missing)} with --columns; {listed}")
    return Columns(columns, dict(given.constants))


# --- rows ----------------------------------------------------------------------------------------------------


def _scalar(value: Any) -> Any:
    """A number as text ("3", not 3.0); anything else as it is (byo's validation names what is wrong)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    return value


def _requires(value: Any) -> Any:
    if isinstance(value, str):
        return [s for s in re.split(r"[+,;\s]+", value.strip().lower()) if s]
    if isinstance(value, list | tuple):
        return [s.strip().lower() if isinstance(s, str) else s for s in value]
    return value


def _options(value: Any, answer: Any) -> tuple[Any, Any]:
    """(options, answer): a list written as text parsed, "A. text" prefixes taken off (the prompt adds letters),
    and an answer given as "(B)", "B." or a prefixed option's whole text turned into its letter."""
    if isinstance(value, str):
        value = _tables.list_value(value)
    if not isinstance(value, list | tuple):
        return value, answer
    texts = [_scalar(v) for v in value]
    if not all(isinstance(t, str) for t in texts):
        return texts, answer
    letters = LETTERS[: len(texts)]
    prefixed = [_LETTER_PREFIX.match(t) for t in texts]
    if all(prefixed) and "".join(m.group(1) for m in prefixed if m) == letters:
        if isinstance(answer, str):
            whole = [letters[k] for k, t in enumerate(texts) if t.strip().casefold() == answer.strip().casefold()]
            answer = whole[0] if len(whole) == 1 else answer
        texts = [m.group(2).strip() for m in prefixed if m]
    if isinstance(answer, str) and (m := _LETTER_ANSWER.match(answer)) and m.group(1) in letters:
        answer = m.group(1)
    return texts, answer


def _media(value: Any, kind: str, home: Path) -> tuple[Any, str | None]:
    """(the path byo reads, or None when the cell is empty; a problem). Embedded bytes go to the media cache."""
    if value is None:
        return None, None
    if isinstance(value, list | tuple):
        if not value:
            return None, None
        if len(value) > 1:
            return None, f"{kind}: the cell holds {len(value)} media; an item takes one"
        value = value[0]
    # Embedded media come back as a Path (a file we wrote, in the media cache); a path in a cell stays a string,
    # which byo confines to the dataset's folders.
    if isinstance(value, bytes | bytearray):
        return (_tables.store_embedded(bytes(value), None, kind, dataset=home) if value else None), None
    if isinstance(value, dict):
        data, name = value.get("bytes"), value.get("path")
        if isinstance(data, bytes | bytearray) and data:
            return _tables.store_embedded(
                bytes(data), name if isinstance(name, str) else None, kind, dataset=home
            ), None
        if isinstance(name, str) and name.strip():
            return name, None
        return None, f"{kind}: an embedded media value with neither bytes nor a path"
    if isinstance(value, str):
        return value, None
    return None, f"{kind}: expected a path or embedded media {{bytes, path}}, got {type(value).__name__}"


def _row(raw: dict[str, Any], columns: Columns, number: int, home: Path) -> tuple[dict[str, Any], list[str]]:
    """One table row as a byo row, and what could not be converted."""
    get = columns.columns
    row: dict[str, Any] = {"qid": _scalar(raw[get["qid"]]) if "qid" in get else str(number)}
    for name in ("question", "answer"):
        row[name] = _scalar(raw[get[name]])
    if "category" in get:
        if raw[get["category"]] is not None:
            row["category"] = _scalar(raw[get["category"]])
    elif "category" in columns.constants:
        row["category"] = columns.constants["category"]
    if "requires" in get:
        row["requires"] = _requires(raw[get["requires"]])
    else:
        row["requires"] = _constant_requires(columns.constants["requires"])
    if "options" in get and raw[get["options"]] is not None:
        row["options"], row["answer"] = _options(raw[get["options"]], row["answer"])
    problems = []
    for kind in STREAMS:
        if kind in get:
            path, problem = _media(raw[get[kind]], kind, home)
            if problem:
                problems.append(problem)
            elif path is not None:
                row[kind] = path
    return row, problems


# --- loading -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HfData(ByoData):
    """The validated items of one split of a local dataset, with what a run records about where they came from."""

    layout: str = ""
    split: str | None = None
    columns: str = ""
    files: dict[str, str] = field(default_factory=dict)  # table file (relative to the dataset) -> sha256
    revision: str | None = None


class HfSourceOptions(OptionsModel):
    """hf's own options of a run (``eval --columns``, ``--split``)."""

    columns: str | None = Field(default=None, description='The column mapping, "question=Question,answer=Answer".')
    split: str | None = Field(default=None, description="The dataset's split (config/split where there are several).")


def load_hf(source: Source) -> HfData:
    """Read one split of the local dataset at ``source.data`` with its ``columns`` (:class:`HfSourceOptions`),
    validate every row as byo does, and hash the table files read; every problem is listed (up to
    :data:`MAX_PROBLEMS`), naming file and row. With ``source.limit`` and no ``source.tasks`` only the first rows
    are read (their files are still hashed)."""
    own = read_options(HF, "load", source.options, HfSourceOptions)  # before any file is read
    given = parse_columns(own.columns)  # a mistyped mapping is reported before any file is read
    dataset = _tables.find_dataset(source.data)
    split, files = dataset.split(own.split)
    available = _tables.table_columns(files[0])
    columns = resolve_columns(given, available, files[0])
    read = sorted(set(columns.columns.values()))
    for other in files[1:]:
        lacking = [c for c in read if c not in _tables.table_columns(other)]
        if lacking:
            raise HfError(f"{other}: no column {', '.join(map(repr, lacking))}, which {files[0].name} has")
    home = dataset.given if dataset.given.is_dir() else dataset.root
    rows: list[dict[str, Any]] = []
    labels: list[tuple[str, str]] = []
    problems: list[str] = []
    index = 0  # the row's number in the split: its qid when the table has no qid column
    # A smoke run (--limit without --tasks) reads only its first rows: it neither scans a large table nor writes
    # every clip the table embeds to the cache.
    last = source.limit if source.limit and not source.tasks else None
    for file in files:
        if last is not None and index >= last:
            break
        for number, raw in enumerate(_tables.iter_rows(file, read)):
            row, found = _row(raw, columns, index, home)
            index += 1
            if found:
                problems.extend(f"{file}: row {number} (qid {row['qid']!r}): {p}" for p in found)
            else:
                rows.append(row)
                labels.append((str(file), f"row {number}"))
            if last is not None and index >= last:
                break
    if index == 0:
        raise HfError(f"{files[0]}: split {split or '(unnamed)'!r} has no rows")
    roots = (dataset.root, home, *source.media_roots)  # a hub cache's snapshot links into the repository's blobs
    items, invalid = items_from_rows(rows, source.media or dataset.root, lambda index: labels[index], roots)
    problems += invalid
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"... and {len(problems) - MAX_PROBLEMS} more problems")
        shown.append(f"(columns read: {columns.text()}; media paths relative to {source.media or dataset.root})")
        raise HfError("\n".join(shown))
    recorded = {_relative(f, dataset.root): _tables.file_sha256(f) for f in files}
    digest = hashlib.sha256("".join(f"{k}\t{v}\n" for k, v in sorted(recorded.items())).encode()).hexdigest()
    return HfData(
        path=source.data,
        sha256=digest,
        items=select_items(items, source.tasks, source.limit, source.data),
        media_roots=tuple(source.media_roots),
        layout=dataset.layout,
        split=split or None,
        columns=columns.text(),
        files=recorded,
        revision=dataset.revision,
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


# --- the benchmark -------------------------------------------------------------------------------------------


class HfBench(ByoBench):
    """A local Hugging Face dataset with a column mapping, run and scored as byo runs and scores."""

    name = "hf"
    title = (
        "A local Hugging Face dataset (save_to_disk, parquet, hub or datasets cache; never downloaded) with "
        "--columns mapping byo's fields; scored as byo"
    )
    protocols: tuple[str, ...] = (PROTOCOL,)
    option_models: Mapping[Phase, type[BaseModel]] = MappingProxyType(
        {"load": HfSourceOptions, "score": SpokenScoreOptions}
    )
    """Its own options (:class:`omnivchat.benchmarks.OwnOptions`): ``eval --columns``, ``--split``; as byo's for
    ``score``."""

    def load(self, source: Source) -> HfData:
        return load_hf(source)

    def manifest(self, dataset: ByoData, route: Route, options: RunOptions) -> dict[str, Any]:
        if not isinstance(dataset, HfData):
            raise TypeError(f"hf runs data from load_hf, not {type(dataset).__name__}")
        record = super().manifest(dataset, route, options)
        record.update(
            protocol=PROTOCOL,
            layout=dataset.layout,
            split=dataset.split,
            columns=dataset.columns,
            files=dataset.files,
            revision=dataset.revision,
        )
        return record


HF = register(HfBench())
