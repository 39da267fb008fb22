"""A run's cost, summed from the cost of every attempt its store holds (docs/costs.md).

A known cost is summed; an unknown one (no price, no usage, an attempt cut before its outcome, one made before
costs were kept) is counted apart with its reason and never summed as 0. A budget counts an unknown cost at the
estimate made before sending, when there was one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from omnivchat.routes import IN_FLIGHT, AttemptCost

NOT_RECORDED = "not recorded"
INTERRUPTED = "interrupted"
STAGED = "billed by its stages"
"""The note of a cascade's own attempt: its stages' attempts carry the cost, so it is counted in no total (a $0
attempt would make a run whose stages have no price look partly free)."""


def money(usd: float) -> str:
    """``usd`` for people: four decimals, more for sums under a cent (never rounded to a bare $0.0000)."""
    if usd == 0:
        return "$0"
    return f"${usd:.4f}" if usd >= 0.01 else f"${usd:.6f}"


class CostTotals(BaseModel):
    """The cost of some attempts: ``spent_usd`` sums the known costs of ``priced`` attempts; ``unknown`` counts
    the others by reason; ``unknown_estimate_usd`` is what a budget counts them at (their pre-send estimates)."""

    attempts: int = 0
    priced: int = 0
    spent_usd: float = 0.0
    unknown: dict[str, int] = Field(default_factory=dict, description="Reason -> attempts whose cost is unknown.")
    unknown_estimate_usd: float = 0.0
    cost_to_estimate: float = Field(default=1.0, exclude=True)
    """The largest ratio of a known cost to its pre-send estimate (at least 1): how far estimates fell short."""

    @property
    def n_unknown(self) -> int:
        return sum(self.unknown.values())

    def add(self, cost: AttemptCost, estimate: float | None = None) -> None:
        self.attempts += 1
        if cost.usd is not None:
            self.priced += 1
            self.spent_usd += cost.usd
            if estimate and estimate > 0:
                self.cost_to_estimate = max(self.cost_to_estimate, cost.usd / estimate)
        else:
            self.unknown[cost.note] = self.unknown.get(cost.note, 0) + 1
            self.unknown_estimate_usd += estimate or 0.0

    def merge(self, other: CostTotals) -> None:
        """Add ``other``'s attempts and costs (a cascade's stages into its invocation)."""
        self.attempts += other.attempts
        self.priced += other.priced
        self.spent_usd += other.spent_usd
        for why, n in other.unknown.items():
            self.unknown[why] = self.unknown.get(why, 0) + n
        self.unknown_estimate_usd += other.unknown_estimate_usd
        self.cost_to_estimate = max(self.cost_to_estimate, other.cost_to_estimate)

    def describe(self) -> str:
        """One line: the known total, and how many attempts have no known cost, by reason; "cost unknown (...)"
        when none is known, never $0."""
        if self.attempts == 0:
            return "no requests sent"
        reasons = ", ".join(f"{why}: {n}" for why, n in sorted(self.unknown.items(), key=lambda kv: (-kv[1], kv[0])))
        if self.priced == 0:
            return f"cost unknown ({reasons}; {self.attempts} attempt{'s' * (self.attempts != 1)})"
        line = f"{money(self.spent_usd)} for {self.priced} attempt{'s' * (self.priced != 1)}"
        if self.unknown:
            line += f", and {self.n_unknown} more of unknown cost ({reasons})"
        return line


class RunCost(BaseModel):
    """A store's cost: in all, and per kind of request (``candidate``, a benchmark's tasks, ``rubric:JUDGE``...)."""

    total: CostTotals = Field(default_factory=CostTotals)
    by_kind: dict[str, CostTotals] = Field(default_factory=dict)


def _cost_of(row: dict[str, Any]) -> tuple[AttemptCost, float | None]:
    note = row["note"]
    if note is None or note == IN_FLIGHT:  # no outcome: cut by a crash; or made before costs were kept
        return AttemptCost(None, INTERRUPTED if row["status"] is None else NOT_RECORDED), row["estimate"]
    return AttemptCost(row["usd"], note), row["estimate"]


def tally(rows: Iterable[dict[str, Any]], *, writing: bool = False) -> RunCost:
    """Sum :meth:`RunStore.cost_rows` into a :class:`RunCost`. With ``writing`` (a writer holds the run now), an
    attempt without an outcome is in flight, not interrupted."""
    result = RunCost()
    for row in rows:
        if row["note"] == STAGED:
            continue
        cost, estimate = _cost_of(row)
        if writing and cost.note == INTERRUPTED:
            cost = AttemptCost(None, IN_FLIGHT)
        result.total.add(cost, estimate)
        result.by_kind.setdefault(row["kind"], CostTotals()).add(cost, estimate)
    return result


def item_costs(rows: Iterable[dict[str, Any]], kind: str) -> dict[str, CostTotals]:
    """Item id -> the cost of its attempts of ``kind`` (for exports)."""
    items: dict[str, CostTotals] = {}
    for row in rows:
        if row["kind"] == kind and row["note"] != STAGED:
            cost, estimate = _cost_of(row)
            items.setdefault(row["item_id"], CostTotals()).add(cost, estimate)
    return items
