"""Hits files: per-instance grader verdicts (`{"id", "hits", "reply", "style"?}` per line), checked against a bench."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat._files import read_json_lines
from omnivchat.bench._io import Bench, _format_validation
from omnivchat.errors import OmnivchatError


class HitsError(OmnivchatError, ValueError):
    """A hits file failed validation; `problems` lists every problem with its line."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        listing = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{path}: {len(problems)} problem(s):\n{listing}")


class HitsRecord(BaseModel):
    """One graded reply: the 1-based numbers of the criteria met, the reply text, and optionally its style pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    hits: list[int]
    reply: str
    style: bool | None = Field(default=None, description="All seven style requirements met; None = not graded.")


def load_hits(path: str | Path, bench: Bench) -> dict[str, HitsRecord]:
    """Read a hits file and check it covers every bench instance exactly once with hits inside 1..K.

    Raises HitsError listing every problem (bad JSON, unknown or duplicate ids, hits out of range, missing ids).
    """
    path = Path(path)
    if "\x00" in str(path) or not path.is_file():
        raise HitsError(path, ["file not found"])
    expected = {instance.id: instance for instance in bench.instances}
    records: dict[str, HitsRecord] = {}
    mentioned: set[str] = set()  # every id read, so an id whose line had a problem is not also "missing"
    problems: list[str] = []
    try:
        data = path.read_bytes()
    except OSError as err:
        raise HitsError(path, [f"cannot read ({err.strerror})"]) from None
    for number, raw in read_json_lines(data, path.name, problems, not_object=None):
        where = f"{path.name}:{number}"
        try:
            record = HitsRecord.model_validate(raw)
        except ValidationError as err:
            problems.extend(_format_validation(where, err))
            continue
        mentioned.add(record.id)
        instance = expected.get(record.id)
        if instance is None:
            problems.append(f"{where}: id: {record.id!r} is not an instance of the bench")
            continue
        if record.id in records:
            problems.append(f"{where}: id: {record.id!r} appears twice")
            continue
        k = len(instance.rubric)
        outside = sorted({h for h in record.hits if not 1 <= h <= k})
        if outside:
            problems.append(f"{where}: hits: {outside} outside 1..{k} for instance {record.id!r}")
            continue
        records[record.id] = record
    missing = [i for i in expected if i not in mentioned]
    if missing:
        problems.append(f"{path.name}: no hits for {len(missing)} instance(s): {', '.join(missing)}")
    if problems:
        raise HitsError(path, problems)
    return records
