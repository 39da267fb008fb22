"""Writing outputs safely: never onto an input, never onto a run's own files, never over an existing file
unless asked, never into a folder that holds something else; always atomically (temp file, then rename)."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, ClassVar, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from omnivchat.errors import OmnivchatError

# The files a run directory is made of: an output never lands on one of these, not even with --force.
RUN_FILES = frozenset(
    {
        "manifest.json",
        "store.sqlite",
        "store.sqlite-wal",
        "store.sqlite-shm",
        "invocations.jsonl",
        "judges.json",
        ".lock",
    }
)


class OutputError(OmnivchatError):
    """An output path that would destroy something, or that cannot be written; the message says which and why."""


class InputError(OmnivchatError, ValueError):
    """An input file that cannot be read as what it should be; the message names it (and the line)."""


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError) as err:  # a symlink loop, a null byte
        raise OutputError(f"{path!r}: not a usable path ({err})") from None


def check_path(path: Path, what: str = "path") -> Path:
    """``path`` as given, refused when it cannot name a file at all (a null byte, a symlink loop)."""
    if "\x00" in str(path):
        raise OutputError(f"{what} {str(path)!r} holds a null byte")
    _resolved(path)
    return path


class PathOutside(InputError):
    """A path a data file gives that leads outside the folders its media may come from; ``reason`` says how: an
    absolute path, '..', or a symlink to a file elsewhere."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def path_escape(value: str) -> str | None:
    """How a path written in a data file leaves the folder it is relative to by its text alone: "an absolute path"
    (POSIX, Windows or ``~``) or "'..'"; None when its text stays inside."""
    posix = PurePosixPath(value.replace("\\", "/"))
    if posix.is_absolute() or PureWindowsPath(value).is_absolute() or PureWindowsPath(value).drive or value[:1] == "~":
        return "an absolute path"
    if ".." in posix.parts:
        return "'..'"
    return None


def confine(base: Path, value: str | os.PathLike[str], roots: Iterable[Path] = ()) -> Path:
    """``base / value`` (an absolute ``value`` as it is) with every symlink resolved, when that lies inside ``base``
    or one of ``roots``: the one check that a data file's media path (a bench's clip, a byo or hf item's video)
    reaches no file elsewhere on the machine. Otherwise PathOutside names the path, the folders and the reason."""
    text = os.fspath(value)
    homes = [Path(base), *(Path(r) for r in roots)]
    try:
        if "\x00" in text:
            raise ValueError("a null byte")
        target = (Path(base) / text).resolve()
        resolved = [h.resolve() for h in homes]
    except (OSError, RuntimeError, ValueError) as err:  # a symlink loop, a null byte
        raise PathOutside(f"{text!r} is not a usable path ({err})", "not usable") from None
    if any(target.is_relative_to(h) for h in resolved):
        return target
    reason = path_escape(text) or f"a symlink to {target}"
    folders = " or ".join(str(h) for h in dict.fromkeys(resolved))
    raise PathOutside(f"{text!r} is outside {folders} ({reason})", reason)


# What the tool writes into a run directory from its store (its scores, the judges' agreement): another command's
# output there would be read back as the run's own.
_RUN_DERIVED = frozenset({"scores.json", "agreement.json"})
_SUITE_FILE = "suite.json"  # a suite directory's own record (omnivchat.suite), checked on every rerun


def protected_by(target: Path) -> Path | None:
    """The run, bench or suite directory whose own file ``target`` (resolved) is, or None: a run's manifest, store,
    logs, scores and agreement; a bench's bench.yaml, instances.jsonl, inspection.jsonl (a person's decisions) and
    clips; a suite's suite.json. Those are never an output, even with --force."""
    if target.name in RUN_FILES | _RUN_DERIVED and (target.parent / "manifest.json").is_file():
        return target.parent
    if target.name in (_SUITE_FILE, "suite-status.json") and _is_suite_record(target.parent / _SUITE_FILE):
        return target.parent
    for folder in [target.parent, *target.parent.parents]:
        if (folder / "bench.yaml").is_file() and (folder / "instances.jsonl").is_file():
            inside = target.relative_to(folder).parts
            if inside in (("bench.yaml",), ("instances.jsonl",), ("inspection.jsonl",)) or inside[0] == "media":
                return folder
            break
    return None


def _is_suite_record(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and str(data.get("schema", "")).startswith("omnivchat-suite")


def check_output_file(path: Path, *, inputs: Iterable[Path | None] = (), force: bool = False) -> Path:
    """Refuse an output file that is a folder, sits under a file, is one of the ``inputs`` the command reads, is
    a run's or a bench's own file, or exists already (unless ``force``). Returns ``path``."""
    check_path(path, "output")
    target = _resolved(path)
    if path.is_dir():
        raise OutputError(f"{path} is a directory; give a file name for the output")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{path}: {parent} is a file, not a folder")
            break
    for given in inputs:
        if given is not None and target == _resolved(Path(given)):
            raise OutputError(f"{path} is an input of this command; write the output elsewhere")
    owner = protected_by(target)
    if owner is not None:
        raise OutputError(
            f"{path} is a file of {owner} (a run, a bench or a suite): --force never overwrites it; write the output "
            "elsewhere"
        )
    if path.exists() and not force:
        raise OutputError(f"{path} exists; pass --force to overwrite it")
    return path


def check_output_dir(path: Path, *, ours: Callable[[Path], bool], kind: str) -> Path:
    """Refuse an output folder that is a file, or a non-empty folder that ``ours`` does not recognise as one of
    this command's own (a run to resume, say): the tool never writes into a folder that holds something else."""
    check_path(path, "output")
    _resolved(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path} exists and is not a directory")
    blocked = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise OutputError(f"{path}: {blocked} is a file, not a directory")
    # A lone .lock is a writer that has begun (or died) before its first file: the lock then says who it is.
    if path.is_dir() and any(p.name != ".lock" for p in path.iterdir()) and not ours(path):
        raise OutputError(f"{path} is not empty and is not {kind}; choose a new or empty directory")
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically: see :func:`write_bytes_atomic`."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder, so that a reader never sees half
    a file and an interrupted write leaves the old file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique name opened with "x" (not mkstemp, whose 0600 mode the output would keep).
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with tmp.open("xb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def read_text(path: Path, what: str = "file") -> str:
    """The text of a UTF-8 file (a byte-order mark is allowed and dropped); a file that cannot be read or is not
    UTF-8 raises InputError naming it, the line and the first bad byte."""
    check_path(path, what)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a directory, not a file") from None
    except OSError as err:
        raise InputError(f"{what} {path}: cannot read ({err.strerror})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text (byte {err.start}); save it as UTF-8") from None


def decode_lines(data: bytes) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line of UTF-8 bytes, a leading byte-order mark dropped; the text is None for
    a line that is not UTF-8, so a reader can name it and go on."""
    for number, raw in enumerate(data.splitlines(), start=1):
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError:
            yield number, None


def read_json_lines(
    data: bytes,
    where: str,
    problems: list[str],
    *,
    not_json: str = "not valid JSON",
    not_object: str | None = "must be a JSON object",
) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for each non-blank line of a JSONL file's bytes: the one JSONL line reader.

    A line that is not UTF-8, not JSON, or (unless ``not_object`` is None) not a JSON object is skipped and
    appended to ``problems`` as ``<where>:<line>: <what>``, so a reader names every bad line and goes on. A line's
    problem is appended before any later line is yielded. ``not_json`` and ``not_object`` word the problem as each
    file's users have always read it (a recordings manifest says "not JSON", a bench "not valid JSON")."""
    for number, line in decode_lines(data):
        at = f"{where}:{number}"
        if line is None:
            problems.append(f"{at}: not UTF-8 text; save the file as UTF-8")
            continue
        if not line.strip():
            continue
        try:
            value = loads_json(line)
        except json.JSONDecodeError as err:
            problems.append(f"{at}: {not_json} ({err.msg} at column {err.colno})")
            continue
        except ValueError as err:  # nested too deeply
            problems.append(f"{at}: {not_json} ({err})")
            continue
        if not_object is not None and not isinstance(value, dict):
            problems.append(f"{at}: {not_object}, got {type(value).__name__}")
            continue
        yield number, value


def loads_json(text: str | bytes) -> Any:
    """``json.loads`` that reports a document nested too deeply as a ValueError, not a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def loads_yaml(text: str) -> Any:
    """``yaml.safe_load`` that reports a document nested too deeply as a ``yaml.YAMLError`` (the error every
    caller already turns into one line naming the file), not a RecursionError."""
    import yaml

    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise yaml.YAMLError("nested too deeply to read") from None


def loads_toml(text: str) -> Any:
    """``tomllib.loads`` that reports a document nested too deeply as a ``TOMLDecodeError`` (a ValueError), not
    a RecursionError."""
    import tomllib

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deeply to read") from None


# ---------------------------------------------------------------------------------------------------------------
# Typed files: one pydantic model per file the tool writes and reads back, used by its writer and its readers.


class FileModel(BaseModel):
    """A JSON file (or a part of one) that omnivchat writes and reads back.

    Fields it does not declare are kept (a file written by a newer omnivchat, or a benchmark's own fields) and
    written again as they were; a field an older file lacks gets the default that says what that file meant. The
    file's version is its ``schema`` (or ``protocol``) field. ``omit_when_none`` names optional fields that the
    file carries only when they have a value (so a file keeps the exact shape it always had).
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    omit_when_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.omit_when_none:
                if name in data and data[name] is None:
                    del data[name]
        return data

    def dump(self, *, as_read: bool = False) -> dict[str, Any]:
        """The JSON-ready dict of the file. ``as_read``: only the fields the file held when it was read (or that
        its writer set), without the defaults filled in for an older file."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=as_read)

    def to_json(self, *, sort_keys: bool = False, ensure_ascii: bool = False) -> str:
        """The file's text: indented JSON and a final newline."""
        return json.dumps(self.dump(), indent=2, ensure_ascii=ensure_ascii, sort_keys=sort_keys) + "\n"

    def value(self, key: str, default: Any = None) -> Any:
        """A field by its name in the file, declared or kept from the file; ``default`` when it has none."""
        for name, info in type(self).model_fields.items():
            if key in (name, info.alias):
                return getattr(self, name)
        return (self.model_extra or {}).get(key, default)


M = TypeVar("M", bound=BaseModel)


def validation_problem(err: ValidationError) -> str:
    """The first problem of a validation error on one line: where in the file, and what (``and N more``)."""
    problems = err.errors()
    if not problems:
        return "does not validate"
    first = problems[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "the top level"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")  # pydantic's prefix says nothing
    return " ".join(f"{where}: {message}{more}".split())


def validate_file(model: type[M], data: Any, path: Path, what: str, *, error: type[Exception] = InputError) -> M:
    """``data`` (the parsed JSON of ``path``) as ``model``; ``error`` naming the file, on one line, otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise error(f"{path}: not a valid {what} ({validation_problem(err)})") from None


def read_model(path: Path, model: type[M], what: str, *, error: type[Exception] = InputError) -> M:
    """The JSON file ``path`` as ``model``: one line naming the file when it cannot be read, is not JSON, or does
    not hold a valid ``what``."""
    try:
        data = loads_json(read_text(path, what))
    except InputError as err:
        raise (err if error is InputError else error(str(err))) from None
    except ValueError as err:
        raise error(f"{path}: cannot read the {what} (not valid JSON: {err})") from None
    return validate_file(model, data, path, what, error=error)


def write_model(path: Path, model: FileModel, *, sort_keys: bool = False, ensure_ascii: bool = False) -> Path:
    """Write ``model`` to ``path`` atomically, as indented JSON."""
    return write_text_atomic(path, model.to_json(sort_keys=sort_keys, ensure_ascii=ensure_ascii))
