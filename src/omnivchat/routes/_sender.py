"""The one sender every caller of a model uses (runs, judges, the reward service; the Studio's agent calls take its
backoff): bounded attempts, capped exponential backoff with full jitter that honours Retry-After, adaptive
concurrency (halve on rate limits, grow back one step per window of successes), and each attempt's cost."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass

from omnivchat.routes._base import Prepared, Route
from omnivchat.routes._cost import AttemptCost, attempt_cost
from omnivchat.routes._types import ChatResponse, RouteError


@dataclass
class RetryPolicy:
    """How often a request is tried and how long to wait between tries (:func:`backoff_delay`)."""

    max_attempts: int = 4
    backoff_base: float = 1.0
    backoff_cap: float = 30.0

    def delay(self, error: RouteError, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based) before the next."""
        return backoff_delay(error, attempt, base=self.backoff_base, cap=self.backoff_cap)


def backoff_delay(error: RouteError, attempt: int, *, base: float = 1.0, cap: float = 30.0) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): capped exponential with full jitter, and
    never less than the server's Retry-After."""
    exponential = min(cap, base * 2 ** (attempt - 1))
    delay = random.uniform(exponential / 2, exponential)
    if error.retry_after is not None:
        delay = max(delay, min(error.retry_after, cap * 4))
    return delay


class AdaptiveLimiter:
    """At most ``limit`` holders at once; ``limit`` moves between 1 and ``maximum``.

    Built on one semaphore of ``maximum`` permits, so entering and leaving cost O(1) whatever the number of
    waiters. Lowering the limit absorbs permits as holders leave; raising it cancels pending absorptions first.
    """

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError("concurrency must be at least 1")
        self.maximum = maximum
        self.limit = maximum
        self._semaphore = asyncio.Semaphore(maximum)
        self._absorb = 0  # permits to swallow on release, to bring the number of holders down to `limit`
        self._successes = 0

    async def __aenter__(self) -> AdaptiveLimiter:
        await self._semaphore.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._absorb:
            self._absorb -= 1
        else:
            self._semaphore.release()

    async def record(self, outcome: RouteError | None) -> None:
        """Feed back one attempt's outcome: a 429 halves the limit; ``limit`` successes in a row add one."""
        if outcome is not None and outcome.kind == "rate_limited":
            lowered = max(1, self.limit // 2)
            self._absorb += self.limit - lowered
            self.limit = lowered
            self._successes = 0
        elif outcome is None:
            self._successes += 1
            if self._successes >= self.limit and self.limit < self.maximum:
                self.limit += 1
                self._successes = 0
                if self._absorb:
                    self._absorb -= 1
                else:
                    self._semaphore.release()


class AttemptHooks:
    """What a caller does around each attempt (a run store, a budget, a progress bar); each does nothing here."""

    async def start(self, attempt: int) -> bool:
        """Before attempt number ``attempt``, holding its concurrency slot: False sends it not (a budget)."""
        return True

    def ended(self, outcome: ChatResponse | RouteError, cost: AttemptCost) -> None:
        """After the attempt, still in its slot: its answer or failure, and its cost (the server's usage at the
        route's price; a refused request costs 0)."""

    def abandoned(self) -> None:
        """The attempt ended without an outcome (cancelled: an interrupt; a bug): nothing of it is recorded."""

    async def wait(self, error: RouteError, delay: float) -> None:
        """Wait ``delay`` seconds before the next attempt (a progress bar may show the wait)."""
        await asyncio.sleep(delay)


@dataclass
class Sent:
    """How a request ended: its accepted ``response``, or its last ``error``; neither: a hook kept it unsent."""

    response: ChatResponse | None
    error: RouteError | None
    attempts: int


def route_cost(route: Route, outcome: ChatResponse | RouteError) -> AttemptCost:
    """One attempt's cost: the usage the server reported (a failure's too: it may have been generated) at the
    route's price; an HTTP error status generated nothing."""
    if isinstance(outcome, RouteError):
        return attempt_cost(outcome.usage, route.settings.price, http_status=outcome.http_status)
    return attempt_cost(outcome.usage, route.settings.price)


async def send_with_retries(
    route: Route,
    prepared: Prepared,
    policy: RetryPolicy,
    *,
    limiter: AdaptiveLimiter | None = None,
    slots: Sequence[AbstractAsyncContextManager[object]] = (),
    accept: Callable[[ChatResponse], str | None] | None = None,
    hooks: AttemptHooks | None = None,
) -> Sent:
    """Send ``prepared`` through ``route`` until an answer is accepted, a failure is final or ``policy``'s
    attempts are spent, waiting :meth:`RetryPolicy.delay` between attempts.

    Each attempt holds ``limiter`` (fed back its outcome after) and then ``slots``. ``accept(response)`` may
    return a reason to refuse a complete answer (a verdict that does not parse): the attempt is then an
    ``unparseable`` failure, retried. ``hooks`` see every attempt start and end, with its cost, and every wait.
    """
    hooks = hooks or AttemptHooks()
    for attempt in range(1, policy.max_attempts + 1):
        async with AsyncExitStack() as held:
            if limiter is not None:
                await held.enter_async_context(limiter)
            for slot in slots:
                await held.enter_async_context(slot)
            if not await hooks.start(attempt):
                return Sent(None, None, attempt - 1)
            outcome: ChatResponse | RouteError
            try:
                outcome = await route.send(prepared)
                refusal = accept(outcome) if accept is not None else None
                if refusal is not None:
                    status, usage = outcome.http_status, outcome.usage
                    raise RouteError("unparseable", refusal, http_status=status, usage=usage)
            except RouteError as err:
                outcome = err
            except BaseException:
                hooks.abandoned()
                raise
            hooks.ended(outcome, route_cost(route, outcome))
        failure = outcome if isinstance(outcome, RouteError) else None
        if limiter is not None:
            await limiter.record(failure)
        if failure is None:
            assert isinstance(outcome, ChatResponse)
            return Sent(outcome, None, attempt)
        if not failure.retryable or attempt == policy.max_attempts:
            return Sent(None, failure, attempt)
        await hooks.wait(failure, policy.delay(failure, attempt))
    raise AssertionError("unreachable: the last attempt returns")
