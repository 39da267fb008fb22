"""A bound on the time of one in-process PyAV call: a clip that makes the decoder hang fails alone.

A decode in PyAV runs in C with the GIL released, and nothing can stop it from outside; so the call runs on a
thread of its own and the caller waits at most :func:`media_timeout_s`. A call that runs past it raises
MediaTimeout and its thread is left behind (a daemon: it ends with the decode or with the process).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from omnivchat.media._ffmpeg import media_timeout_s, timed_out

P = ParamSpec("P")
T = TypeVar("T")

_inside = threading.local()  # a bounded call made inside another one runs under the outer bound


def bounded(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Bound a media function whose first argument is the file: ``what`` names the call in the error."""

    def wrap(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            if getattr(_inside, "active", False):
                return fn(*args, **kwargs)
            limit = media_timeout_s()
            outcome: dict[str, Any] = {}

            def work() -> None:
                _inside.active = True
                try:
                    outcome["value"] = fn(*args, **kwargs)
                except BaseException as exc:  # handed to the caller, whatever it is
                    outcome["error"] = exc

            worker = threading.Thread(target=work, name=f"omnivchat {what}", daemon=True)
            worker.start()
            worker.join(limit)
            if worker.is_alive():
                subject = args[0] if args and isinstance(args[0], str | Path) else None
                raise timed_out(subject, what, limit)
            if "error" in outcome:
                raise outcome["error"]
            return cast("T", outcome["value"])

        return call

    return wrap
