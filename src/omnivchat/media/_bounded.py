"""A bound on the time of one in-process PyAV call: a clip that makes the decoder hang fails alone.

A decode in PyAV runs in C with the GIL released, and nothing can stop it from outside; so the call runs on a
worker thread and the caller waits at most :func:`media_timeout_s`. Workers are daemon threads kept for the next
call (starting a thread per call cost about 13 % of a header probe: perf/perf_media.py). A call that runs past the
bound raises MediaTimeout; its worker is left behind (it ends with the decode or with the process) and never reused.
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from omnivchat.media._ffmpeg import media_timeout_s, timed_out

P = ParamSpec("P")
T = TypeVar("T")

_inside = threading.local()  # a bounded call made inside another one runs under the outer bound


class _Job:
    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class _Worker:
    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="omnivchat media", daemon=True).start()

    def _serve(self) -> None:
        _inside.active = True
        while True:
            job = self.jobs.get()
            try:
                job.value = job.call()
            except BaseException as exc:  # handed to the caller, whatever it is
                job.error = exc
            job.done.set()


_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _run_bounded(call: Callable[[], T], subject: Any, what: str) -> T:
    limit = media_timeout_s()
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    worker = worker or _Worker()
    job = _Job(call)
    worker.jobs.put(job)
    if not job.done.wait(limit):
        raise timed_out(subject, what, limit)  # the worker is still in the call: it is not given back
    with _idle_lock:
        _idle.append(worker)
    if job.error is not None:
        raise job.error
    return cast("T", job.value)


def bounded(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Bound a media function whose first argument is the file: ``what`` names the call in the error."""

    def wrap(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            if getattr(_inside, "active", False):
                return fn(*args, **kwargs)
            subject = args[0] if args and isinstance(args[0], str | Path) else None
            return _run_bounded(lambda: fn(*args, **kwargs), subject, what)

        return call

    return wrap
