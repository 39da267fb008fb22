"""Per-instance traces (paper, Examples 2 and 3): every module's inputs, outputs, decision and cost, in order.

A trace is written for every instance that ends, accepted or discarded (with its reason), to
``<bench>/studio/traces/<id>.json``; :func:`trace_table` prints it module by module."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

TRACE_VERSION = 1

SINGLE_TURN_MODULES: dict[str, str] = {
    "0": "attribute & corpus sampling",
    "1": "description",
    "2": "plan & review",
    "3": "script generation",
    "4": "validation",
    "5": "validation review",
    "6": "script review",
    "7": "video plan",
    "8": "video generation",
    "9": "video caption",
    "10": "video Q-A",
    "11": "video review",
    "12": "reply plan",
    "13": "reply generation",
    "14": "reply review",
}
MULTI_TURN_MODULES: dict[str, str] = {
    "0": "attribute & corpus sampling",
    "a": "description",
    "b": "plan",
    "c": "plan review",
    "d": "prompt generation",
    "e": "prompt review",
    "f": "video generation",
    "g": "video caption",
    "h": "video Q-A",
    "i": "video review",
    "j": "final-reply plan",
    "k": "reply generation",
    "l": "reply review",
    "m": "validation",
    "n": "validation review",
}

Outcome = Literal["in_progress", "accepted", "discarded"]


class Cost(BaseModel):
    calls: int = Field(0, description="Agent calls made for this step.")
    replayed: int = Field(0, description="Of those, answered from the run store (already paid for).")
    seconds: float = 0.0
    usd: float | None = Field(None, description="Money spent, where the agent knows its price (renders).")


class Step(BaseModel):
    module: str = Field(description="The module's circled id: 0-14 (single-turn) or a-n (multi-turn).")
    name: str
    turn: int | None = None
    agent: str
    decision: str = Field(description="pass, fail, skip, or the review's action (accept, rewrite, reseed, ...).")
    summary: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    outputs: dict[str, Any] = Field(default_factory=dict)
    cost: Cost = Field(default_factory=Cost)


class ClipStamp(BaseModel):
    """What a delivered bench clip was when it was written: a rerun trusts a clip whose size and mtime still match,
    hashes one whose do not, and restores one whose hash differs."""

    sha256: str
    size: int
    mtime_ns: int


class Trace(BaseModel):
    version: int = TRACE_VERSION
    id: str
    subcategory: str
    turns: Literal["single", "multi"]
    status: Outcome = "in_progress"
    reason: str = Field("", description="Why the instance was discarded.")
    discard_kind: str = Field("", description="The kind of that reason, for counting (e.g. 'render budget spent').")
    assignment: dict[str, str]
    extra: str | None = None
    passages: list[str] = Field(default_factory=list)
    repairs: dict[str, int] = Field(default_factory=dict, description="Repairs used, by kind.")
    delivered: dict[str, str] = Field(
        default_factory=dict, description="Accepted: each bench clip and the work clip it was copied from."
    )
    clips: dict[str, ClipStamp] = Field(
        default_factory=dict, description="Accepted: each bench clip's sha256, size and mtime as delivered."
    )
    steps: list[Step] = Field(default_factory=list)

    def cost_usd(self) -> float:
        """What this instance's priced calls cost (replayed calls were paid before and count once)."""
        return round(sum(s.cost.usd or 0.0 for s in self.steps if not s.cost.replayed), 6)

    def unpriced_renders(self) -> int:
        """Renders made whose price is unknown: a cost total leaves them out and must say so."""
        return sum(
            1
            for s in self.steps
            if _ROLES.get(s.module) == "renderer"
            and s.cost.calls
            and not s.cost.replayed
            and s.decision == "pass"
            and s.cost.usd is None
        )

    def agent_calls(self) -> dict[str, int]:
        """Calls made per agent (director, renderer, reviewer), replayed ones excluded."""
        counts: dict[str, int] = {}
        for step in self.steps:
            if step.cost.calls and not step.cost.replayed:
                role = _ROLES.get(step.module, "director")
                counts[role] = counts.get(role, 0) + step.cost.calls
        return counts


_ROLES = {"8": "renderer", "f": "renderer", "9": "reviewer", "10": "reviewer", "g": "reviewer", "h": "reviewer"}


def module_name(turns: str, module: str) -> str:
    return (SINGLE_TURN_MODULES if turns == "single" else MULTI_TURN_MODULES).get(module, module)


def trace_table(trace: Trace) -> list[tuple[str, str, str, str, str]]:
    """The trace as rows (module, name, turn, decision, summary), in the order the modules ran."""
    return [(s.module, s.name, "" if s.turn is None else str(s.turn), s.decision, s.summary) for s in trace.steps]
