"""Every agent call of a synthesis goes through the run store (``runs.RunStore``): keyed by the hash of the agent,
its version and the request, so a restarted synthesis replays what it already paid for and pays only for the rest;
each attempt is recorded, and a failed call is retried with the routes' backoff (``routes.RetryPolicy``: jittered,
exponential, never sooner than a server's Retry-After) (paper, Appendix C: a 10,000-instance synthesis on hosted
APIs must survive restarts)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omnivchat.errors import OmnivchatError
from omnivchat.routes import AttemptCost, ChatResponse, RetryPolicy, RouteError, media_failure

CALLS_FILE = "calls.sqlite"
NO_PAID_REQUEST = "no paid request"  # an agent call that sent nothing billable (offline agents, local work)

# What the agent call running on this thread has spent: agents report each paid request (report_cost).
_meter = threading.local()


def report_cost(cost: AttemptCost) -> None:
    """Count one paid request (a hosted agent's model request, a render) in the agent call running on this thread;
    outside an agent call it is ignored."""
    spent = getattr(_meter, "costs", None)
    if spent is not None:
        spent.append(cost)


def _call_cost(costs: list[AttemptCost]) -> AttemptCost:
    """One agent call's cost: the sum of its paid requests; unknown when any is; 0 when it made none."""
    if not costs:
        return AttemptCost(0.0, NO_PAID_REQUEST)
    unknown = next((c for c in costs if c.usd is None), None)
    if unknown is not None:
        return unknown
    return AttemptCost(sum(c.usd or 0.0 for c in costs), costs[0].note if len(costs) == 1 else "priced")


class BudgetReached(OmnivchatError):
    """The synthesis's --budget would be passed by the next agent call: the instance stops here, not run (a rerun
    with a larger budget resumes it, its calls so far replayed)."""


class Stopped(OmnivchatError):
    """The synthesis was interrupted (Ctrl-C, SIGTERM): this instance stops unfinished, with no trace, and a rerun
    resumes it (its calls so far replayed). Never a discard."""


class AgentCallError(OmnivchatError):
    """An agent call failed on every attempt; ``cause`` is the last failure (the engine routes a Renderer's
    refusal to a rewrite and its failure to a re-seed; anything else stops the instance, and a rerun resumes it)."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def call_key(agent: str, op: str, request: dict[str, Any]) -> str:
    """The store key of one agent call: sha256 of the agent (name and version), the operation and the request."""
    blob = json.dumps({"agent": agent, "op": op, "request": request}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class AgentCalls:
    """The synthesis's call cache over one run store, shared by the threads that synthesize instances."""

    def __init__(
        self, path: Path, *, attempts: int = 3, backoff_s: float = 0.5, budget_usd: float | None = None
    ) -> None:
        """``attempts`` per call, waiting as ``routes.RetryPolicy`` does from ``backoff_s`` (doubling, jittered, at
        least a server's Retry-After) between them.

        ``budget_usd``: the synthesis's total spending limit (what its store spent before counts). Before each
        call the largest cost of one call of the same operation so far is reserved (nothing is known of a call
        before it is made; the first of each operation reserves $0); a call that would pass the budget raises
        :class:`BudgetReached`."""
        from omnivchat.runs import Budget, CostTotals, RunStore, tally

        path.parent.mkdir(parents=True, exist_ok=True)
        self.budget = Budget(budget_usd) if budget_usd is not None else None
        self.store = RunStore(path)
        self.attempts = attempts
        self.retry = RetryPolicy(max_attempts=attempts, backoff_base=backoff_s)
        self._lock = threading.Lock()
        self.made = 0  # calls made in this process (not answered from the store)
        self.replayed = 0
        self.cost = CostTotals()  # this process's call attempts and what they cost
        self._largest: dict[str, float] = {}
        self.stopping = threading.Event()  # set on an interrupt: no call starts after it
        if self.budget is not None:
            self.budget.before = tally(self.store.cost_rows()).total

    def close(self) -> None:
        self.store.close()

    def stop(self) -> None:
        """The synthesis is interrupted: every later call raises :class:`Stopped` instead of starting, and a call
        that fails from now on (its request cancelled, its child process killed) stops its instance unfinished."""
        self.stopping.set()

    def _check_stopping(self, item_id: str, agent: str, op: str) -> None:
        if self.stopping.is_set():
            raise Stopped(f"{item_id}: interrupted before {agent} {op}")

    def call(
        self,
        agent: str,
        op: str,
        request: dict[str, Any],
        fn: Callable[[], dict[str, Any]],
        *,
        item_id: str,
        still_valid: Callable[[dict[str, Any]], bool] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """``fn()``'s JSON answer to ``request``, from the store when it was answered before (and
        ``still_valid`` accepts it, e.g. a clip still on disk); returns (answer, replayed)."""
        self._check_stopping(item_id, agent, op)
        key = call_key(agent, op, request)
        with self._lock:
            stored = self.store.result(key)
        if stored is not None:
            answer = json.loads(stored.text)
            if still_valid is None or still_valid(answer):
                self.replayed += 1
                return answer, True
        with self._lock:
            self.store.add_request(key, f"studio:{op}", agent, "studio", {"op": op, "request": request})
        last = ""
        cause: BaseException | None = None
        for attempt in range(1, self.attempts + 1):
            self._check_stopping(item_id, agent, op)  # no retry after an interrupt either
            with self._lock:
                token = None
                if self.budget is not None:
                    token = self.budget.reserve(self._largest.get(op, 0.0))
                    if token is None:
                        raise BudgetReached(f"{item_id}: {agent} {op} not made: the budget would be passed")
                attempt_id = self.store.start_attempt(key, item_id)
            started = time.monotonic()
            _meter.costs = []
            try:
                answer = fn()
            except (RouteError, OSError, OmnivchatError) as err:
                if self.stopping.is_set():  # the interrupt may be the cause (a child killed): not this call's fault
                    _meter.costs = None  # the attempt stays open: shown as interrupted, made again on the rerun
                    raise Stopped(f"{item_id}: {agent} {op} interrupted") from None
                last, cause = str(err), err
                failure = err if isinstance(err, RouteError) else media_failure(err)
                with self._lock:
                    self.store.finish_attempt(attempt_id, key, failure)
                    self._settle(attempt_id, token, op)
                if not failure.retryable or attempt == self.attempts:  # a local failure gives the same result again
                    break
                self.stopping.wait(self.retry.delay(failure, attempt))  # an interrupt ends the wait
                continue
            except BaseException:
                _meter.costs = None
                if self.stopping.is_set():  # a request cancelled by the interrupt
                    raise Stopped(f"{item_id}: {agent} {op} interrupted") from None
                raise
            text = json.dumps(answer, ensure_ascii=False, sort_keys=True)
            with self._lock:
                self.store.finish_attempt(
                    attempt_id, key, ChatResponse(text=text, latency_s=time.monotonic() - started, model=agent)
                )
                self._settle(attempt_id, token, op)
            self.made += 1
            return answer, False
        raise AgentCallError(f"{item_id}: {agent} {op} failed after {self.attempts} attempt(s): {last}", cause)

    def _settle(self, attempt_id: int, token: int | None, op: str) -> None:
        """Record the cost of the attempt that just ended on this thread (held: ``self._lock``)."""
        cost = _call_cost(getattr(_meter, "costs", None) or [])
        _meter.costs = None
        self.store.record_cost(attempt_id, cost.usd, cost.note)
        self.cost.add(cost)
        if cost.usd is not None:
            self._largest[op] = max(self._largest.get(op, 0.0), cost.usd)
        if self.budget is not None and token is not None:
            self.budget.settle(token, cost)
