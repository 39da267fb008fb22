"""Every agent call of a synthesis goes through the run store (``runs.RunStore``): keyed by the hash of the agent,
its version and the request, so a restarted synthesis replays what it already paid for and pays only for the rest;
each attempt is recorded, and a failed call is retried (paper, Appendix C: a 10,000-instance synthesis on hosted
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
from omnivchat.routes import ChatResponse, RouteError

CALLS_FILE = "calls.sqlite"


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

    def __init__(self, path: Path, *, attempts: int = 3, backoff_s: float = 0.5) -> None:
        from omnivchat.runs import RunStore

        path.parent.mkdir(parents=True, exist_ok=True)
        self.store = RunStore(path)
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._lock = threading.Lock()
        self.made = 0  # calls made in this process (not answered from the store)
        self.replayed = 0

    def close(self) -> None:
        self.store.close()

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
            with self._lock:
                attempt_id = self.store.start_attempt(key, item_id)
            started = time.monotonic()
            try:
                answer = fn()
            except (RouteError, OSError, OmnivchatError) as err:
                last, cause = str(err), err
                failure = err if isinstance(err, RouteError) else RouteError("media", last)
                with self._lock:
                    self.store.finish_attempt(attempt_id, key, failure)
                if not failure.retryable:  # a local failure (a file, a bad spec) gives the same result again
                    break
                time.sleep(self.backoff_s * attempt)
                continue
            text = json.dumps(answer, ensure_ascii=False, sort_keys=True)
            with self._lock:
                self.store.finish_attempt(
                    attempt_id, key, ChatResponse(text=text, latency_s=time.monotonic() - started, model=agent)
                )
            self.made += 1
            return answer, False
        raise AgentCallError(f"{item_id}: {agent} {op} failed after {self.attempts} attempt(s): {last}", cause)
