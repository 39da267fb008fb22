"""Bounded, adaptive concurrency: halve on rate limits, grow back one step per window of successes."""

from __future__ import annotations

import asyncio
import random

from omnivchat.routes import RouteError


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


def backoff_delay(error: RouteError, attempt: int, *, base: float = 1.0, cap: float = 30.0) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): capped exponential with full jitter, and
    never less than the server's Retry-After."""
    exponential = min(cap, base * 2 ** (attempt - 1))
    delay = random.uniform(exponential / 2, exponential)
    if error.retry_after is not None:
        delay = max(delay, min(error.retry_after, cap * 4))
    return delay
