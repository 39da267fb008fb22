"""A blocking twin of a coroutine function that keeps its signature (for the type checker and for help)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def blocking(fn: Callable[P, Coroutine[Any, Any, T]], doc: str | None = None) -> Callable[P, T]:
    """``fn`` run to completion in a new event loop (``asyncio.run``), with ``fn``'s parameters; ``doc`` replaces
    the docstring (default: ``fn``'s)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return asyncio.run(fn(*args, **kwargs))

    if doc is not None:
        run.__doc__ = doc
    return run
