"""The engine runs instances on threads; routes are asyncio clients. One event loop on a daemon thread serves
every hosted agent of a synthesis, so a route's HTTP session lives on one loop for its whole life."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop on its own thread; :meth:`run` submits a coroutine from any thread and waits for it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="omnivchat-studio-loop", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._running: set[concurrent.futures.Future[Any]] = set()
        self._cancelled = False

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """``coro``'s result; ``concurrent.futures.CancelledError`` once :meth:`cancel` was called (then no
        coroutine starts)."""
        with self._lock:
            if self._cancelled:
                coro.close()
                raise concurrent.futures.CancelledError("interrupted: no request starts after an interrupt")
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
            self._running.add(future)
        try:
            return future.result(timeout)
        finally:
            with self._lock:
                self._running.discard(future)

    def cleanup(self, coro: Coroutine[Any, Any, T], timeout: float | None = 10) -> T:
        """Run ``coro`` even after :meth:`cancel`: closing HTTP sessions is no new request."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def cancel(self) -> None:
        """An interrupt: cancel every coroutine in flight (its HTTP request is dropped) and refuse new ones."""
        with self._lock:
            self._cancelled = True
            running = list(self._running)
        for future in running:
            future.cancel()

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()
