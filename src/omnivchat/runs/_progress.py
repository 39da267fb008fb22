"""What a run's progress bar shows, as a plain state object the runner keeps up to date (and tests read): items
done and failed, the adaptive concurrency now, attempts in flight, requests waiting on a Retry-After or a backoff
and for how long, spent cost, failed attempts by kind, and ``extra`` fields any caller adds (per-replica counts)."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from omnivchat.routes import AttemptCost
from omnivchat.runs._cost import CostTotals, money

RETRY_AFTER = "retry-after"
BACKOFF = "backoff"


@dataclass
class RunProgress:
    """The live state of one sender (one bar): :meth:`line` renders it."""

    total: int = 0
    done: int = 0
    failed: int = 0
    not_sent: int = 0
    concurrency: int = 0
    """The adaptive limit now (halved on rate limits, grown back on successes)."""
    max_concurrency: int = 0
    in_flight: int = 0
    cost: CostTotals = field(default_factory=CostTotals)
    """This invocation's attempts and their cost."""
    budget_left_usd: float | None = None
    """What the run's budget leaves now (spent and in-flight reservations taken off); None without a budget."""
    attempt_failures: Counter[str] = field(default_factory=Counter)
    """Failed attempts by kind (retried ones included)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further fields for the bar, by name (e.g. per-replica counts); shown as ``name value``."""
    _waiting: dict[int, tuple[str, float]] = field(default_factory=dict)
    _tokens: itertools.count[int] = field(default_factory=itertools.count)

    def wait_started(self, why: str, seconds: float, *, now: float | None = None) -> int:
        """A request starts waiting ``seconds`` before its retry (``why``: retry-after or backoff); returns the
        token to end it with."""
        token = next(self._tokens)
        self._waiting[token] = (why, (time.monotonic() if now is None else now) + seconds)
        return token

    def wait_ended(self, token: int) -> None:
        self._waiting.pop(token, None)

    def waiting(self, *, now: float | None = None) -> dict[str, tuple[int, float]]:
        """Why -> (requests waiting, the longest time left in seconds)."""
        now = time.monotonic() if now is None else now
        out: dict[str, tuple[int, float]] = {}
        for why, until in self._waiting.values():
            n, longest = out.get(why, (0, 0.0))
            out[why] = (n + 1, max(longest, until - now, 0.0))
        return out

    def attempt_ended(self, cost: AttemptCost, failure: str | None = None, estimate: float | None = None) -> None:
        self.cost.add(cost, estimate)
        if failure is not None:
            self.attempt_failures[failure] += 1

    def line(self, *, now: float | None = None) -> str:
        """The bar's status text: concurrency, in flight, waiting, cost, failures by kind, extras."""
        parts = [f"concurrency {self.concurrency}/{self.max_concurrency}", f"{self.in_flight} in flight"]
        for why, (n, longest) in sorted(self.waiting(now=now).items()):
            parts.append(f"{n} waiting on {why} (up to {longest:.1f} s)")
        if self.cost.priced:
            unknown = f" (+{self.cost.n_unknown} of unknown cost)" if self.cost.unknown else ""
            parts.append(f"{money(self.cost.spent_usd)} spent{unknown}")
        elif self.cost.attempts:
            parts.append(f"cost unknown ({', '.join(sorted(self.cost.unknown))})")
        if self.budget_left_usd is not None:
            parts.append(f"budget left {money(max(0.0, self.budget_left_usd))}")
        if self.not_sent:
            parts.append(f"{self.not_sent} not sent (budget)")
        if self.attempt_failures:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.attempt_failures.items(), key=lambda kv: -kv[1]))
            parts.append(f"failed attempts: {kinds}")
        parts += [f"{name} {value}" for name, value in self.extra.items()]
        return " · ".join(parts)
