"""Loading and saving bench directories: bench.yaml, instances.jsonl and media/ (DESIGN.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from omnivchat._files import InputError, PathOutside, confine, read_json_lines, read_text
from omnivchat.bench._inspection import INSPECTION_FILE, InspectionDecision, read_decisions, read_history
from omnivchat.bench._model import Instance, Turn
from omnivchat.bench._taxonomy import resolve_subcategory
from omnivchat.errors import OmnivchatError

BENCH_FILE = "bench.yaml"
INSTANCES_FILE = "instances.jsonl"


class BenchError(OmnivchatError, ValueError):
    """A bench directory failed validation; `problems` lists every problem, each naming file, line and field."""

    def __init__(self, root: Path, problems: list[str]) -> None:
        self.root = root
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{root}: {len(problems)} problem(s):\n{listing}")


class BenchInfo(BaseModel):
    """The contents of bench.yaml. `languages` and `subcategories` summarise instances.jsonl (counts)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    version: str = "1"
    description: str = ""
    languages: dict[str, int] | None = None
    subcategories: dict[str, int] | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _version_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int | float) else value  # YAML reads `version: 2` as a number


@dataclass
class Bench:
    """A loaded, fully validated bench directory."""

    root: Path
    info: BenchInfo
    instances: list[Instance] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    """Line of each instance id in instances.jsonl, as loaded (empty for a bench built in memory)."""
    rejected: dict[str, InspectionDecision] = field(default_factory=dict)
    """Instances rejected by human inspection (inspection.jsonl), by id: left out of ``instances`` unless the
    bench was loaded with ``include_rejected=True``."""

    def media_path(self, turn: Turn) -> Path:
        """Absolute path of a turn's clip."""
        return self.root / turn.video

    def where(self, instance: Instance) -> str:
        """``instances.jsonl:<line>`` of an instance, the prefix of every problem about it.

        Without a recorded line (a bench built in memory) the line is the one :func:`save_bench` would write.
        """
        line = self.lines.get(instance.id)
        if line is None:
            line = next((n for n, i in enumerate(self.instances, start=1) if i.id == instance.id), 0)
        return f"{INSTANCES_FILE}:{line}"

    def get(self, instance_id: str) -> Instance:
        for instance in self.instances:
            if instance.id == instance_id:
                return instance
        raise KeyError(f"{self.root}: no instance with id {instance_id!r}")


def _format_loc(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _format_validation(prefix: str, err: ValidationError) -> list[str]:
    problems = []
    for item in err.errors():
        message = item["msg"].removeprefix("Value error, ")
        loc = _format_loc(item["loc"])
        problems.append(f"{prefix}: {loc}: {message}" if loc else f"{prefix}: {message}")
    return problems


def summarize(instances: list[Instance]) -> tuple[dict[str, int], dict[str, int]]:
    """Counts of instances by language and by subcategory code, as bench.yaml records them."""
    languages = Counter(i.language for i in instances)
    subcategories = Counter(i.subcategory for i in instances)
    return dict(sorted(languages.items())), dict(sorted(subcategories.items()))


def _load_info(root: Path, problems: list[str]) -> BenchInfo | None:
    path = root / BENCH_FILE
    if not path.is_file():
        problems.append(f"{BENCH_FILE}: missing (it holds the bench name and version)")
        return None
    try:
        data = yaml.safe_load(read_text(path, BENCH_FILE))
    except InputError as err:
        problems.append(f"{BENCH_FILE}: {err}")
        return None
    except RecursionError:
        problems.append(f"{BENCH_FILE}: nested too deeply to read")
        return None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problems.append(f"{BENCH_FILE}{where}: not valid YAML ({getattr(err, 'problem', err)})")
        return None
    if not isinstance(data, dict):
        problems.append(f"{BENCH_FILE}: must be a mapping with at least 'name'")
        return None
    try:
        return BenchInfo.model_validate(data)
    except ValidationError as err:
        problems.extend(_format_validation(BENCH_FILE, err))
        return None


def _load_instances(
    root: Path, problems: list[str], first_line: dict[str, int], clips_ok: set[str], skip_clips: frozenset[str]
) -> list[Instance]:
    """The instances that parse; fills ``first_line`` (id -> line) and ``clips_ok`` (ids whose clips all exist).
    The clips of the ids in ``skip_clips`` (rejected instances left out) are not looked at."""
    path = root / INSTANCES_FILE
    if not path.is_file():
        problems.append(f"{INSTANCES_FILE}: missing")
        return []
    instances: list[Instance] = []
    try:
        data_bytes = path.read_bytes()
    except OSError as err:
        problems.append(f"{INSTANCES_FILE}: cannot read ({err.strerror})")
        return []
    for number, data in read_json_lines(data_bytes, INSTANCES_FILE, problems):
        where = f"{INSTANCES_FILE}:{number}"
        try:
            instance = Instance.model_validate(data)
        except ValidationError as err:
            problems.extend(_format_validation(where, err))
            continue
        if instance.id in first_line:
            problems.append(f"{where}: id: duplicate id {instance.id!r} (first on line {first_line[instance.id]})")
            continue
        first_line[instance.id] = number
        instances.append(instance)
        if instance.id in skip_clips:
            continue
        clips_present = True
        for index, turn in enumerate(instance.turns):
            clip = root / turn.video
            try:
                confine(root, turn.video)
            except PathOutside:
                problems.append(f"{where}: turns[{index}].video: media path {turn.video!r} escapes the bench directory")
                clips_present = False
                continue
            if not clip.is_file():
                problems.append(f"{where}: turns[{index}].video: missing media file {turn.video!r}")
                clips_present = False
        if clips_present:
            clips_ok.add(instance.id)
    if not instances and not problems:
        problems.append(f"{INSTANCES_FILE}: no instances")
    return instances


MediaCheck = Callable[[Bench], list[str]]
"""Checks the clips of a bench and returns its problems, each ``instances.jsonl:<line>: <field>: <message>``."""


def inspection_decisions(root: str | Path) -> dict[str, InspectionDecision]:
    """The latest human-inspection decision per instance id in ``root/inspection.jsonl`` (empty without the
    file), in the order they were last decided; BenchError naming ``inspection.jsonl:<line>`` for every line that
    cannot be read (never skipped: a dropped reject would deliver a rejected instance)."""
    problems: list[str] = []
    decisions = read_decisions(Path(root), problems)
    if problems:
        raise BenchError(Path(root), problems)
    return decisions


def inspection_history(root: str | Path) -> list[InspectionDecision]:
    """Every human-inspection decision in ``root/inspection.jsonl`` in the order made (empty without the file);
    BenchError naming ``inspection.jsonl:<line>`` for every line that cannot be read."""
    problems: list[str] = []
    history = read_history(Path(root), problems)
    if problems:
        raise BenchError(Path(root), problems)
    return history


def load_bench(path: str | Path, *, check_media: MediaCheck | None = None, include_rejected: bool = False) -> Bench:
    """Load and validate a bench directory completely, or raise BenchError listing every problem found.

    Instances rejected by human inspection (their latest line in inspection.jsonl is a reject) are not delivered:
    they are left out of ``instances`` and listed in ``rejected``, their lines of instances.jsonl are still
    validated (bench.yaml's counts cover the whole file), and their clips are neither required nor checked.
    ``include_rejected=True`` keeps them (the inspection page shows every instance) and checks their clips. A
    decision about an id that instances.jsonl does not hold is ignored; an unreadable line of inspection.jsonl
    is a problem like any other. A bench without inspection.jsonl loads exactly as it always did.

    ``check_media`` also checks the clips: bench sits below media and never decodes a clip itself, so the caller
    passes the native benchmark's ``BenchClipChecker()`` (omnivchat.benchmarks.native), which probes every clip.
    It is called even when other problems were found, with the instances that parsed and whose clips all exist
    (``info`` is a stand-in if bench.yaml is broken), so one run lists the problems of the files and of the clips
    together, in line order.
    """
    root = Path(path)
    if "\x00" in str(root):
        raise BenchError(root, ["the path holds a null byte"])
    if not root.is_dir():
        raise BenchError(root, ["not a directory"])
    problems: list[str] = []
    info = _load_info(root, problems)
    decisions = read_decisions(root, problems)
    rejected_ids = frozenset(i for i, d in decisions.items() if d.decision == "reject")
    lines: dict[str, int] = {}
    clips_ok: set[str] = set()
    instances = _load_instances(root, problems, lines, clips_ok, frozenset() if include_rejected else rejected_ids)
    if info is not None and not problems:
        languages, subcategories = summarize(instances)
        if info.languages is not None and info.languages != languages:
            problems.append(f"{BENCH_FILE}: languages {info.languages} do not match instances.jsonl {languages}")
        if info.subcategories is not None:
            declared = {resolve_subcategory(k).code if _known(k) else k: v for k, v in info.subcategories.items()}
            if declared != subcategories:
                problems.append(
                    f"{BENCH_FILE}: subcategories {info.subcategories} do not match instances.jsonl {subcategories}"
                )
    rejected = {i.id: decisions[i.id] for i in instances if i.id in rejected_ids}
    if not include_rejected:
        instances = [i for i in instances if i.id not in rejected]
        if rejected and not instances:
            problems.append(f"{INSPECTION_FILE}: every instance is rejected by inspection; nothing is delivered")
    if check_media is not None:
        checkable = [i for i in instances if i.id in clips_ok]
        stand_in = info if info is not None else BenchInfo(name=root.name or "bench")
        problems.extend(check_media(Bench(root=root, info=stand_in, instances=checkable, lines=lines)))
    problems.sort(key=_problem_line)  # stable: bench.yaml first, then by line of instances.jsonl, inspection.jsonl
    if problems or info is None:
        raise BenchError(root, problems)
    return Bench(root=root, info=info, instances=instances, lines=lines, rejected=rejected)


def _problem_line(problem: str) -> tuple[int, int]:
    """Sort key of a problem: bench.yaml's first, then instances.jsonl's by line, inspection.jsonl's by line,
    then the rest."""
    if problem.startswith(BENCH_FILE):
        return (0, 0)
    head, _, rest = problem.partition(":")
    if head in (INSTANCES_FILE, INSPECTION_FILE):
        number = rest.split(":", 1)[0]
        return (1 if head == INSTANCES_FILE else 2, int(number) if number.isdigit() else 0)
    return (3, 0)


def _known(code: str) -> bool:
    try:
        resolve_subcategory(code)
    except KeyError:
        return False
    return True


def save_bench(bench: Bench, path: str | Path | None = None) -> Path:
    """Write bench.yaml (with fresh language and subcategory counts) and instances.jsonl; media stay as they are."""
    root = Path(path) if path is not None else bench.root
    root.mkdir(parents=True, exist_ok=True)
    languages, subcategories = summarize(bench.instances)
    info = bench.info.model_copy(update={"languages": languages, "subcategories": subcategories})
    (root / BENCH_FILE).write_text(
        yaml.safe_dump(info.model_dump(exclude_defaults=False), sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    with (root / INSTANCES_FILE).open("w", encoding="utf-8") as handle:
        for instance in bench.instances:
            handle.write(instance.model_dump_json(exclude_none=True, exclude_defaults=True) + "\n")
    return root
