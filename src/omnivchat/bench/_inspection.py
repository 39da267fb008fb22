"""Human inspection decisions (paper, Appendix D.1.1): ``<bench>/inspection.jsonl``, read here.

The file is append-only: one JSON object per decision, ``{"id", "decision": "accept"|"reject", "reason",
"time"}``, written by ``omnivchat studio inspect`` as each decision is made. The latest line for an id wins, so a
later accept undoes a reject. A rejected instance leaves the delivered set: :func:`omnivchat.bench.load_bench`
skips it unless asked not to.

A line that cannot be read is an error naming ``inspection.jsonl:<line>``, never skipped: a decision silently
dropped would put a rejected instance back into the benchmark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from omnivchat._files import read_json_lines

INSPECTION_FILE = "inspection.jsonl"

Verdict = Literal["accept", "reject"]


class InspectionDecision(BaseModel):
    """One line of inspection.jsonl: a human's decision on one instance."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = Field(min_length=1, description="The instance id.")
    decision: Verdict = Field(description="accept keeps the instance; reject takes it out of the delivered set.")
    reason: str = Field("", description="Why (required for a reject, optional for an accept).")
    time: str = Field("", description="When it was decided, ISO 8601 in UTC.")

    @model_validator(mode="after")
    def _reject_has_reason(self) -> InspectionDecision:
        if self.decision == "reject" and not self.reason.strip():
            raise ValueError("a reject needs a reason")
        return self

    def line(self) -> str:
        """The decision as one line of inspection.jsonl (with its newline)."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(", ", ": ")) + "\n"


def read_decisions(root: Path, problems: list[str]) -> dict[str, InspectionDecision]:
    """The latest decision per id in ``root/inspection.jsonl`` (empty when there is no file); every line that
    cannot be read is appended to ``problems`` as ``inspection.jsonl:<line>: <what>``."""
    latest: dict[str, InspectionDecision] = {}
    for decision in read_history(root, problems):
        latest.pop(decision.id, None)  # re-insert: the dict keeps the order of the latest decisions
        latest[decision.id] = decision
    return latest


def rejected_over_time(history: list[InspectionDecision]) -> list[frozenset[str]]:
    """The ids rejected after each decision of the history, latest first, each set once, the empty set (before
    any decision) last: the delivered sets the bench has had, for finding the one a run was made on."""
    states: list[frozenset[str]] = [frozenset()]
    rejected: set[str] = set()
    for decision in history:
        (rejected.add if decision.decision == "reject" else rejected.discard)(decision.id)
        states.append(frozenset(rejected))
    return list(dict.fromkeys(reversed(states)))


def read_history(root: Path, problems: list[str]) -> list[InspectionDecision]:
    """Every decision in ``root/inspection.jsonl``, in the order they were made (see :func:`read_decisions`)."""
    path = root / INSPECTION_FILE
    if not path.exists():
        return []
    try:
        data = path.read_bytes()
    except OSError as err:
        problems.append(f"{INSPECTION_FILE}: cannot read ({err.strerror})")
        return []
    history: list[InspectionDecision] = []
    for number, record in read_json_lines(data, INSPECTION_FILE, problems):
        where = f"{INSPECTION_FILE}:{number}"
        try:
            decision = InspectionDecision.model_validate(record)
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {field}: {message}" if field else f"{where}: {message}")
            continue
        history.append(decision)
    return history
