"""Progress bars, built in one place: every bar the tool draws goes to stderr (stdout stays the command's output)
with the same columns: what is being done, the bar, done/total and the time left (or taken)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_bar(
    *extra: ProgressColumn,
    console: Console | None = None,
    elapsed: bool = False,
    transient: bool = False,
    disable: bool = False,
) -> Progress:
    """A progress bar on ``console`` (stderr when None): the task's description, the bar, done/total, ``extra``
    columns, then the time left, or the time taken with ``elapsed`` (for work whose total is not known at the
    start). ``transient``: the bar is erased when it stops; ``disable``: nothing is drawn (no terminal, --quiet)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn() if elapsed else TimeRemainingColumn(),
        console=console if console is not None else Console(stderr=True),
        transient=transient,
        disable=disable,
    )
