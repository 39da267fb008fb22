"""A spending limit for a run directory (``--budget USD``), shared by every sender of one invocation.

The budget is the run's total, not the invocation's: what the store has already spent (every kind of request:
the model's and its judges') counts against it, so a rerun with the same budget sends nothing more and a rerun
with a larger one resumes where the last stopped. Before each attempt the sender reserves the attempt's
estimated cost; an attempt that would take spent + reserved past the limit is not sent, and from then on nothing
new is (its item stays "not run", not failed). When an attempt ends its reservation is replaced by its cost from
the server's usage, or by its estimate when that cost is unknown. Estimates are only estimates: each one is scaled
up by the largest ratio of an attempt's real cost to its estimate seen so far (never down), so a model that costs
more than estimated is soon reserved at what it really costs; until the run has one known cost, attempts go one at
a time, so C requests in flight cannot pass the budget on estimates alone. An attempt kept out only by the
reservations in flight waits for them to settle. See docs/costs.md.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from dataclasses import dataclass, field

from omnivchat.errors import OmnivchatError
from omnivchat.routes import AttemptCost, Route, StagedRoute
from omnivchat.runs._cost import CostTotals, money


class BudgetError(OmnivchatError, ValueError):
    """A budget that cannot be kept: no price for a model, or not a positive amount."""


def check_priced(route: Route, what: str = "") -> None:
    """Refuse a budget for a route whose model has no price: its spending could not be counted. A cascade's stages
    spend apart from its own attempt, which a budget does not reserve yet: refused too."""
    if isinstance(route, StagedRoute):
        raise BudgetError(
            f"--budget does not cover the stages of {route.model_id} yet: run the cascade without --budget (each "
            "stage's cost is still recorded: omnivchat runs show)"
        )
    if route.settings.price is None:
        raise BudgetError(
            f"--budget needs a price for {route.model_id}{what}, and it has none: set price: {{input_per_mtok: ..., "
            "output_per_mtok: ...} under its pattern in a --defaults FILE (docs/costs.md)"
        )


@dataclass
class Budget:
    """The limit, what the store had spent before this invocation, and what this invocation spends."""

    limit_usd: float
    before: CostTotals = field(default_factory=CostTotals)
    spent_usd: float = 0.0
    """This invocation: known costs, and unknown ones at their estimates."""
    stopped: bool = False
    refused_estimate_usd: float | None = None
    """The estimate of the first attempt that was not sent."""
    _scale: float = 1.0
    _reserved: dict[int, tuple[float, float]] = field(default_factory=dict)  # token -> (estimate, reserved)
    _tokens: itertools.count[int] = field(default_factory=itertools.count)
    _settled: asyncio.Event = field(default_factory=asyncio.Event)  # set whenever an attempt's cost is settled
    _priced_here: int = 0  # attempts of this invocation settled at a known cost

    def __post_init__(self) -> None:
        if not 0 < self.limit_usd < math.inf:  # NaN compares false; an infinite budget limits nothing
            raise BudgetError(f"--budget must be a positive, finite amount in USD, got {self.limit_usd}")

    @property
    def scale(self) -> float:
        """The largest ratio of an attempt's real cost to its estimate in the run so far, this invocation's and the
        store's (at least 1): estimates are scaled by it."""
        return max(self._scale, self.before.cost_to_estimate)

    @property
    def spent_total_usd(self) -> float:
        """Spent in all, for the budget: before this invocation (unknown costs at their scaled estimates) and
        during it."""
        return self.before.spent_usd + self.before.unknown_estimate_usd * self.scale + self.spent_usd

    @property
    def reserved_usd(self) -> float:
        return sum(reserved for _, reserved in self._reserved.values())

    def reserve(self, estimate_usd: float) -> int | None:
        """A token for an attempt estimated at ``estimate_usd`` (reserved at that times :attr:`scale`), or None
        when it must not be sent (the budget would be passed, or was already reached)."""
        reserved = estimate_usd * self.scale
        if self.stopped or self.spent_total_usd + self.reserved_usd + reserved > self.limit_usd:
            if not self.stopped:
                self.refused_estimate_usd = reserved
            self.stopped = True
            return None
        token = next(self._tokens)
        self._reserved[token] = (estimate_usd, reserved)
        return token

    async def reserve_when_settled(self, estimate_usd: float) -> int | None:
        """:meth:`reserve`, except that an attempt kept out only by the reservations of attempts in flight waits
        for them to settle first: a reservation is a (scaled-up) estimate, the real cost usually less, so stopping
        on it would end a run with most of its budget unspent."""
        reserved = estimate_usd * self.scale
        while (
            not self.stopped
            and self._reserved
            and (
                not self.calibrated  # until one real cost is known, one attempt at a time: estimates can be far off
                or (
                    self.spent_total_usd + self.reserved_usd + reserved > self.limit_usd
                    and self.spent_total_usd + reserved <= self.limit_usd
                )
            )
        ):
            self._settled.clear()
            await self._settled.wait()
            reserved = estimate_usd * self.scale
        return self.reserve(estimate_usd)

    @property
    def calibrated(self) -> bool:
        """Whether an attempt of the run has a known cost to scale estimates by (this invocation's or before it)."""
        return self._priced_here > 0 or self.before.priced > 0

    def reservation(self, token: int) -> float:
        """What the attempt of ``token`` is reserved at (its scaled estimate)."""
        return self._reserved[token][1] if token in self._reserved else 0.0

    def settle(self, token: int, cost: AttemptCost) -> None:
        """The attempt of ``token`` ended: its cost replaces its reservation (the reservation stays spent when the
        cost is unknown), and a cost above its estimate raises :attr:`scale`."""
        estimate, reserved = self._reserved.pop(token, (0.0, 0.0))
        if cost.usd is None:
            self.spent_usd += reserved
        else:
            self.spent_usd += cost.usd
            self._priced_here += 1
            if estimate > 0 and cost.usd > estimate:
                self._scale = max(self._scale, cost.usd / estimate)
        self._settled.set()  # an attempt waiting on reservations may now fit (or know it never will)

    def message(self, *, done: int, total: int, not_sent: int, what: str = "items") -> str:
        """One line: the budget, what was spent, how far the run got, and how to resume."""
        spent_before = self.spent_total_usd - self.spent_usd
        before = f" ({money(spent_before)} of it before this invocation)" if self.before.attempts else ""
        first = ""
        if self.refused_estimate_usd is not None:
            first = f"; the next request was estimated at {money(self.refused_estimate_usd)}"
        unknown = self.before.n_unknown
        gaps = f"; {unknown} earlier attempt(s) of unknown cost counted at their estimates" if unknown else ""
        return (
            f"budget {money(self.limit_usd)} reached: {money(self.spent_total_usd)} spent{before}{first}{gaps}; "
            f"{done} of {total} {what} done, {not_sent} not sent (not run, not failed). The budget is the run's "
            "total: rerun with a larger --budget to resume"
        )
