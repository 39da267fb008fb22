"""Local Hugging Face datasets as rows: the folders the ``datasets`` library and the hub leave on disk, read with
pyarrow (the ``hf`` extra, imported only here and only when a table is read). Nothing is ever downloaded.

Layouts found (:func:`find_dataset`):

- ``Dataset.save_to_disk``: ``state.json`` (its ``_data_files`` and ``_split``), ``dataset_info.json`` and
  ``data-*.arrow`` in Arrow IPC *stream* format; ``DatasetDict.save_to_disk``: ``dataset_dict.json`` and one such
  folder per split.
- A folder of parquet files (a hub snapshot): the splits the hub would see, from the ``configs`` of its
  README.md when it has them, else from the names: ``data/<split>-00000-of-00001.parquet``,
  ``<config>/<split>-*.parquet``, ``<config>/<split>/0000.parquet`` (the hub's parquet conversion), a split
  keyword (train, validation/valid/dev/val, test/eval) in a file or folder name, else ``train`` as on the hub.
- A hub cache repository (``~/.cache/huggingface/hub/datasets--org--name``): the snapshot ``refs/main`` names
  (or the only one), read as a parquet folder.
- The datasets cache (``~/.cache/huggingface/datasets/.../<hash>/``): ``<name>-<split>.arrow`` and
  ``<name>-<split>-00000-of-0000N.arrow``, the splits named by its ``dataset_info.json``.

Media the datasets library embeds in a table (its Video / Audio features: ``{"bytes": ..., "path": ...}``) are
written once to a content-addressed folder of the media cache (``$OMNIVCHAT_CACHE_DIR/hf-media``), never next to
the dataset.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import yaml

from omnivchat._files import loads_yaml
from omnivchat.errors import OmnivchatError
from omnivchat.media import cache_dir

INSTALL_HINT = "pip install 'omnivchat[hf]' (in a clone of omnivchat: uv sync --extra hf)"
EMBEDDED_DIR = "hf-media"
"""The media cache's sub-folder for media embedded in a table (``<sha256[:2]>/<sha256><suffix>``)."""
ROWS_AT_ONCE = 16
"""Rows converted to Python at a time: a row may embed a whole clip, so a record batch is read in slices."""

_SHARD = re.compile(r"^(?P<stem>.+?)-\d{5}-of-\d{5}(?:-[0-9a-f]{8,})?$")
_SPLIT_WORDS = {
    "train": "train",
    "training": "train",
    "validation": "validation",
    "valid": "validation",
    "val": "validation",
    "dev": "validation",
    "test": "test",
    "testing": "test",
    "eval": "test",
    "evaluation": "test",
}
"""The hub's split keywords in file and folder names, and the split each names."""
_MAGIC = ((b"ftyp", 4, ".mp4"), (b"RIFF", 0, ".wav"), (b"ID3", 0, ".mp3"), (b"fLaC", 0, ".flac"), (b"OggS", 0, ".ogg"))
_MAGIC_MKV = b"\x1a\x45\xdf\xa3"


class TablesError(OmnivchatError):
    """A local dataset that cannot be read: one line naming the folder or file and what to do."""


def pyarrow() -> ModuleType:
    """pyarrow with its parquet and IPC modules loaded, or an error saying how to install it."""
    try:
        return _import_pyarrow()
    except ImportError:
        raise TablesError(
            f"reading a Hugging Face dataset (parquet, arrow) needs pyarrow, which is not installed: {INSTALL_HINT}"
        ) from None


def _import_pyarrow() -> ModuleType:
    import pyarrow as pa
    import pyarrow.ipc
    import pyarrow.parquet  # loads pa.parquet and pa.ipc as attributes

    return cast("ModuleType", pa)


# --- finding the tables --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalDataset:
    """A dataset found on disk: its splits (name -> table files, in order) and where relative paths start."""

    given: Path
    root: Path  # relative media paths and recorded file names start here (a hub cache: its snapshot)
    layout: str
    splits: dict[str, tuple[Path, ...]] = field(default_factory=dict)
    revision: str | None = None  # a hub cache's snapshot

    def split(self, name: str | None) -> tuple[str, tuple[Path, ...]]:
        """The split ``name`` (None: the only one) and its files; an error lists the splits there are."""
        names = list(self.splits)
        if name is None:
            if len(names) == 1:
                return names[0], self.splits[names[0]]
            raise TablesError(f"{self.given}: {len(names)} splits ({', '.join(names)}): choose one with --split")
        if name in self.splits:
            return name, self.splits[name]
        if names == [""]:
            raise TablesError(f"{self.given}: a dataset without named splits ({self.layout}): leave out --split")
        raise TablesError(f"{self.given}: no split {name!r} (splits: {', '.join(n for n in names if n)})")


def find_dataset(path: Path) -> LocalDataset:
    """The dataset at ``path``: a file, a save_to_disk folder, a parquet or arrow folder, or a hub cache repository."""
    path = Path(path)
    if path.is_file():
        if path.suffix not in (".parquet", ".arrow"):
            raise TablesError(f"{path}: not a parquet or arrow file (give the dataset's folder or a table file)")
        parquet = path.suffix == ".parquet"
        name = _split_of_parquet(Path(path.name))[1] if parquet else _split_of_arrow(path, None)
        return LocalDataset(given=path, root=path.parent, layout="one table file", splits={name: (path,)})
    if not path.is_dir():
        raise TablesError(f"{path}: no such dataset folder or file")
    if (path / "dataset_dict.json").is_file():
        return _dataset_dict(path)
    if (path / "state.json").is_file():
        name, files = _saved_split(path)
        return LocalDataset(given=path, root=path, layout="Dataset.save_to_disk", splits={name: files})
    if (path / "snapshots").is_dir():
        return _hub_repo(path)
    repos = sorted(p.name for p in path.glob("datasets--*") if p.is_dir())
    if repos:
        raise TablesError(f"{path}: a hub cache with several datasets; give one of {', '.join(repos)}")
    found = _folder(path, path, "parquet folder")
    if found is None:
        raise TablesError(
            f"{path}: no dataset here (expected dataset_dict.json or state.json from save_to_disk, *.parquet or "
            "*.arrow files, or a hub cache folder datasets--org--name)"
        )
    return found


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise TablesError(f"{path}: cannot read ({err.strerror})") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise TablesError(f"{path}: not valid JSON ({err})") from None


def _dataset_dict(path: Path) -> LocalDataset:
    info = _read_json(path / "dataset_dict.json")
    names = info.get("splits") if isinstance(info, dict) else None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise TablesError(f'{path / "dataset_dict.json"}: expected {{"splits": [names]}}')
    splits = {}
    for name in names:
        folder = path / name
        if not (folder / "state.json").is_file():
            raise TablesError(f"{folder}: split {name!r} listed in dataset_dict.json has no state.json")
        splits[name] = _saved_split(folder)[1]
    return LocalDataset(given=path, root=path, layout="DatasetDict.save_to_disk", splits=splits)


def _saved_split(folder: Path) -> tuple[str, tuple[Path, ...]]:
    """(its recorded split name or "", its arrow files) of a save_to_disk folder, from state.json."""
    state = _read_json(folder / "state.json")
    entries = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(entries, list) or not entries:
        raise TablesError(f"{folder / 'state.json'}: expected a non-empty '_data_files' list")
    files = []
    for entry in entries:
        name = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name or Path(name).name != name:
            raise TablesError(f"{folder / 'state.json'}: a '_data_files' entry without a plain 'filename' ({entry!r})")
        if not (folder / name).is_file():
            raise TablesError(f"{folder / name}: listed in state.json but missing")
        files.append(folder / name)
    split = state.get("_split")
    return (split if isinstance(split, str) else ""), tuple(files)


def _hub_repo(path: Path) -> LocalDataset:
    """A hub cache repository: the snapshot refs/main points at, else the only one."""
    snapshots = sorted(p.name for p in (path / "snapshots").iterdir() if p.is_dir())
    ref = path / "refs" / "main"
    if ref.is_file():
        revision = ref.read_text(encoding="utf-8").strip()
        if revision not in snapshots:
            raise TablesError(f"{ref}: names snapshot {revision!r}, which is not in {path / 'snapshots'}")
    elif len(snapshots) == 1:
        revision = snapshots[0]
    else:
        shown = ", ".join(snapshots) or "none"
        raise TablesError(f"{path}: no refs/main and {len(snapshots)} snapshots ({shown}): give a snapshot folder")
    snapshot = path / "snapshots" / revision
    found = _folder(path, snapshot, "hub cache")
    if found is None:
        raise TablesError(f"{snapshot}: no parquet or arrow files in this snapshot (only those formats are read)")
    return LocalDataset(given=path, root=snapshot, layout=found.layout, splits=found.splits, revision=revision)


def _tables_under(root: Path, suffix: str) -> list[Path]:
    return sorted(
        p
        for p in root.rglob(f"*{suffix}")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _folder(given: Path, root: Path, layout: str) -> LocalDataset | None:
    """A folder of parquet files (splits from README.md's configs or the names), else of datasets-cache arrow files."""
    parquet = _tables_under(root, ".parquet")
    if parquet:
        configured = _readme_configs(root)
        if configured is not None:
            return LocalDataset(given=given, root=root, layout=f"{layout} (README configs)", splits=configured)
        return LocalDataset(given=given, root=root, layout=layout, splits=_name_splits(root, parquet))
    arrow = [p for p in _tables_under(root, ".arrow") if not p.name.startswith("cache-")]
    if not arrow:
        return None
    folders = sorted({str(p.parent) for p in arrow})
    if len(folders) > 1:
        raise TablesError(f"{given}: arrow files in {len(folders)} folders ({', '.join(folders)}): give one of them")
    info = (
        _read_json(arrow[0].parent / "dataset_info.json") if (arrow[0].parent / "dataset_info.json").is_file() else {}
    )
    known = list(info.get("splits") or {}) if isinstance(info, dict) else []
    splits: dict[str, list[Path]] = {}
    for p in arrow:
        splits.setdefault(_split_of_arrow(p, known), []).append(p)
    layout = "datasets cache" if layout == "parquet folder" else layout
    return LocalDataset(given=given, root=root, layout=layout, splits={k: tuple(v) for k, v in sorted(splits.items())})


def _keyword(name: str) -> str | None:
    for token in re.split(r"[-._ 0-9]+", name.lower()):
        if token in _SPLIT_WORDS:
            return _SPLIT_WORDS[token]
    return None


def _split_of_parquet(rel: Path) -> tuple[str | None, str]:
    """(config or None, split) of a parquet file from its path relative to the dataset root, as the hub names it."""
    dirs, stem = rel.parts[:-1], rel.name.removesuffix(".parquet")
    sharded = _SHARD.match(stem)
    if stem.isdigit() and dirs:  # <config>/<split>/0000.parquet (the hub's parquet conversion)
        return (dirs[-2] if len(dirs) > 1 else None), dirs[-1].removeprefix("partial-")
    if sharded:
        split, split_dir = sharded["stem"], None
    else:
        split_dir = next((d for d in reversed(dirs) if _keyword(d)), None)
        split = _keyword(stem) or (_keyword(split_dir) if split_dir else None) or "train"
    config = dirs[0] if dirs and dirs[0] != "data" and dirs[0] != split_dir else None
    return config, split


def _name_splits(root: Path, files: list[Path]) -> dict[str, tuple[Path, ...]]:
    named = [(_split_of_parquet(p.relative_to(root)), p) for p in files]
    several = len({config for (config, _), _ in named}) > 1
    splits: dict[str, list[Path]] = {}
    for (config, split), p in named:
        splits.setdefault(f"{config or 'default'}/{split}" if several else split, []).append(p)
    return {k: tuple(v) for k, v in sorted(splits.items())}


def _split_of_arrow(path: Path, known: list[str] | None) -> str:
    """The split of a datasets-cache file ``<name>-<split>[-00000-of-0000N].arrow``: the longest split named in
    dataset_info.json that ends the name, else the name's last dash-separated part."""
    stem = path.name.removesuffix(".arrow")
    sharded = _SHARD.match(stem)
    stem = sharded["stem"] if sharded else stem
    for split in sorted(known or [], key=len, reverse=True):
        if stem == split or stem.endswith(f"-{split}"):
            return split
    if "-" in stem:
        return stem.rsplit("-", 1)[1]
    return _keyword(stem) or "train"


def _readme_configs(root: Path) -> dict[str, tuple[Path, ...]] | None:
    """The splits README.md's ``configs`` declare (the hub reads them first), or None when it declares none."""
    readme = root / "README.md"
    if not readme.is_file():
        return None
    try:
        text = readme.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = re.match(r"---\s*\n(.*?)\n---\s*\n", text, re.S)
    if match is None:
        return None
    try:
        card = loads_yaml(match.group(1))
    except yaml.YAMLError as err:
        raise TablesError(f"{readme}: its YAML header does not parse ({err})") from None
    configs = card.get("configs") if isinstance(card, dict) else None
    if not isinstance(configs, list) or not configs:
        return None
    several = len(configs) > 1
    splits: dict[str, tuple[Path, ...]] = {}
    for config in configs:
        if not isinstance(config, dict):
            raise TablesError(f"{readme}: a 'configs' entry is not a mapping ({config!r})")
        name = str(config.get("config_name", "default"))
        for split, patterns in _data_files(config.get("data_files"), readme):
            files: list[Path] = []
            for pattern in patterns:
                if Path(pattern).is_absolute() or ".." in Path(pattern).parts:  # glob raises on one, escapes on both
                    raise TablesError(
                        f"{readme}: config {name!r} split {split!r}: {pattern!r} leaves the dataset folder "
                        "(an absolute path or '..')"
                    )
                matched = sorted(p for p in root.glob(pattern) if p.is_file())
                if not matched:
                    raise TablesError(f"{readme}: config {name!r} split {split!r}: no file matches {pattern!r}")
                files += matched
            wrong = [p.name for p in files if p.suffix not in (".parquet", ".arrow")]
            if wrong:
                raise TablesError(
                    f"{readme}: config {name!r} split {split!r} is {wrong[0]}: only parquet and arrow tables are read"
                )
            splits[f"{name}/{split}" if several else split] = tuple(files)
    return splits


def _data_files(value: Any, readme: Path) -> list[tuple[str, list[str]]]:
    """A config's ``data_files`` as (split, patterns): a pattern, a list of them (split train), or a list of
    ``{split, path}``."""
    if isinstance(value, str):
        return [("train", [value])]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [("train", list(value))]
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        out = []
        for entry in value:
            path = entry.get("path")
            patterns = [path] if isinstance(path, str) else path
            if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
                raise TablesError(f"{readme}: a data_files entry without a 'path' pattern ({entry!r})")
            out.append((str(entry.get("split", "train")), patterns))
        return out
    raise TablesError(f"{readme}: 'data_files' must be a pattern, a list, or a list of {{split, path}} ({value!r})")


# --- reading -------------------------------------------------------------------------------------------------


def _reading(path: Path, err: BaseException) -> TablesError:
    kind = "parquet" if path.suffix == ".parquet" else "arrow"
    return TablesError(f"{path}: cannot read the {kind} file ({str(err).strip() or type(err).__name__})")


def _arrow_reader(pa: ModuleType, path: Path) -> Any:
    """An Arrow IPC reader: the stream format (the datasets library's), else the file format. Read, not mapped:
    one record batch in memory at a time."""
    source = pa.OSFile(str(path), "rb")
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        source.seek(0)
        return pa.ipc.open_file(source)


def table_columns(path: Path) -> list[str]:
    """The column names of a table file (read from its schema, no rows)."""
    pa = pyarrow()
    try:
        if path.suffix == ".parquet":
            return list(pa.parquet.read_schema(str(path)).names)
        return list(_arrow_reader(pa, path).schema.names)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise _reading(path, err) from None


def iter_rows(path: Path, columns: list[str]) -> Iterator[dict[str, Any]]:
    """The rows of a table file as dicts of ``columns`` only, a few at a time (a row may embed a whole clip)."""
    pa = pyarrow()
    try:
        if path.suffix == ".parquet":
            # pre_buffer (the default) reads the whole file ahead: 716 MB of peak memory for a 600 MB table of
            # embedded clips, against 119 MB without (perf/perf_hf_tables.py).
            parquet = pa.parquet.ParquetFile(str(path), pre_buffer=False)
            batches: Iterator[Any] = parquet.iter_batches(batch_size=ROWS_AT_ONCE, columns=columns, use_threads=False)
        else:
            reader = _arrow_reader(pa, path)
            if isinstance(reader, pa.ipc.RecordBatchFileReader):
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            else:
                batches = iter(reader)
        for batch in batches:
            batch = pa.RecordBatch.from_arrays([batch.column(c) for c in columns], names=columns)
            for start in range(0, batch.num_rows, ROWS_AT_ONCE):
                yield from batch.slice(start, ROWS_AT_ONCE).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as err:
        raise _reading(path, err) from None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as err:
        raise TablesError(f"{path}: cannot read ({err.strerror})") from None
    return digest.hexdigest()


# --- embedded media ------------------------------------------------------------------------------------------


def _suffix(data: bytes, name: str | None, kind: str) -> str:
    suffix = Path(name).suffix.lower() if name else ""
    if re.fullmatch(r"\.[a-z0-9]{1,5}", suffix):
        return suffix
    for magic, offset, guess in _MAGIC:
        if data[offset : offset + len(magic)] == magic:
            return guess
    if data[:4] == _MAGIC_MKV:
        return ".mkv"
    return ".mp4" if kind == "video" else ".wav"


def store_embedded(data: bytes, name: str | None, kind: str, *, dataset: Path) -> Path:
    """The cache file holding ``data`` (a clip or sound a table embeds), written once under its sha256; ``name``
    (the embedded path) gives its suffix. Refused inside ``dataset``: the tool never writes into a user's data."""
    digest = hashlib.sha256(data).hexdigest()
    folder = cache_dir() / EMBEDDED_DIR / digest[:2]
    target = folder / f"{digest}{_suffix(data, name, kind)}"
    if target.is_file() and target.stat().st_size == len(data):
        return target
    home = dataset.resolve()
    if home == folder.resolve() or home in folder.resolve().parents:
        raise TablesError(
            f"{folder}: the media cache is inside the dataset {dataset}; point OMNIVCHAT_CACHE_DIR elsewhere"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=target.suffix, dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as err:
        raise TablesError(
            f"{folder}: cannot write an embedded clip to the media cache ({err.strerror}); set OMNIVCHAT_CACHE_DIR"
        ) from None
    return target


def list_value(value: str) -> Any:
    """A list written as text in a table cell (JSON or a Python literal: "['A. x', 'B. y']"), else the text."""
    text = value.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return value
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return value
    return parsed if isinstance(parsed, list) else value
