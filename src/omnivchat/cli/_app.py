"""What every command shares: the consoles, the one error handler, and how failures are printed."""

from __future__ import annotations

import contextlib
import re
import signal
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperGroup

from omnivchat.errors import Interrupted, OmnivchatError

if TYPE_CHECKING:
    from rich.console import HighlighterType, JustifyMethod, OverflowMethod
    from rich.style import Style
    from typer._click.core import Context  # typer ships its own click: its Context is the one invoke takes

# C0 and C1 controls, DEL and ESC; newline and tab are layout, kept.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape (``\\x1b``): an id or a
    message from a file or a server can never clear the screen, move the cursor or retitle the terminal."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class SafeConsole(Console):
    """The console of every command: whatever it renders (text, tables, progress), each character of the text is
    shown as what it is, controls escaped (:func:`printable`); only rich's own control segments pass as they are.
    Data put into markup still needs ``escape`` (so that an id's "[bold]" is shown, not applied)."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        # Before layout, so that a table measures the escaped text (a cell is never cut inside an escape).
        return super().render_str(
            printable(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=emoji,
            markup=markup,
            highlight=highlight,
            highlighter=highlighter,
        )

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and _CONTROLS.search(segment.text):
                segment = Segment(printable(segment.text), segment.style)
            yield segment


# Wide enough for the 12 Table 1 columns when output is piped (rich assumes 80 columns there).
console = SafeConsole(width=None if sys.stdout.isatty() else 140, emoji=False)
err_console = SafeConsole(stderr=True, width=None if sys.stderr.isatty() else 140, emoji=False)
RETRY_ATTEMPTS = 4  # attempts per request, retries included: the same for a model and for a judge


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` as one line (however long: scripts and people read the file name whole) and
    return the exit (status 2) to raise."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def warn(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


class Commands(TyperGroup):
    """The root command group: a user-facing error (OmnivchatError) ends any command as one line with status 2,
    Ctrl-C as a line saying how to resume with status 130; any other exception is a bug and keeps its traceback."""

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except Interrupted as err:
            err_console.print(f"[bold yellow]{escape(str(err))}[/]", highlight=False, soft_wrap=True)
            raise typer.Exit(code=130) from None
        except KeyboardInterrupt:
            err_console.print("[bold yellow]interrupted:[/] rerun the same command to resume", highlight=False)
            raise typer.Exit(code=130) from None
        except OmnivchatError as err:
            raise fail(str(err)) from None


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM (``kill``, a scheduler ending the job) stops a long command as Ctrl-C does: nothing new starts, what
    ended is kept, status 130 and a line saying how to resume (by default it would end the process mid-write)."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def print_failures(counts: dict[str, int], first: dict[str, str], *, title: str = "failed items by kind") -> None:
    """Failures grouped by kind, most frequent first, each with its first message: nobody should have to open
    the store to learn that every clip failed to decode."""
    if not counts:
        return
    console.print(f"[red]{title}:[/]")
    for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        message = first.get(kind, "")
        if len(message) > 300:
            message = message[:299] + "…"
        console.print(f"  {kind}: {n}" + (f" (first: {message})" if message else ""), markup=False, highlight=False)
