"""Paths inside a bench directory, and batches where one bad file does not sink the others."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from omnivchat._files import PathOutside, confine
from omnivchat.media._ffmpeg import MediaError

T = TypeVar("T")


def resolve_media_path(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Path:
    """``root / relative`` resolved (symlinks too), refusing any path that ends up outside ``root``.

    Bench files reference media by relative path; an absolute path, ``..`` or a symlink that escapes the bench
    dir raises MediaError naming the path. The file need not exist yet.
    """
    base = Path(root).resolve()
    if Path(relative).is_absolute():
        raise MediaError(f"{relative}: absolute media path; bench media must be relative to {base}")
    try:
        return confine(base, relative)
    except PathOutside as err:
        raise MediaError(f"{relative}: path escapes the bench dir {base} ({err.reason})") from None


@dataclass(frozen=True)
class BatchItem(Generic[T]):
    """The outcome for one input of :func:`batch`: a value, or the MediaError that input raised."""

    source: str
    value: T | None = None
    error: MediaError | None = None

    @property
    def ok(self) -> bool:
        """True when the operation succeeded for this input."""
        return self.error is None


def batch(
    op: Callable[..., T],
    paths: Iterable[str | os.PathLike[str]],
    *,
    root: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> list[BatchItem[T]]:
    """Apply ``op(path, **kwargs)`` to each path, collecting a MediaError per failing input instead of raising.

    With ``root``, each path is first resolved inside it with :func:`resolve_media_path`. Results keep the input
    order; anything other than a MediaError (a bug) still propagates.
    """
    results: list[BatchItem[T]] = []
    for p in paths:
        try:
            target = resolve_media_path(root, p) if root is not None else Path(p)
            results.append(BatchItem(source=str(p), value=op(target, **kwargs)))
        except MediaError as exc:
            results.append(BatchItem(source=str(p), error=exc))
    return results
