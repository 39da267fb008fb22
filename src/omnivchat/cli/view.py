"""``omnivchat view``: the run viewer (docs/viewer.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from omnivchat.cli._app import console
from omnivchat.cli._serving import serve_until_stopped

DEFAULT_PORT = 8766  # the library's default too (omnivchat.view.DEFAULT_PORT); kept here for --help


def view_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories of any benchmark (an ablation directory stands for its four conditions). "
            "Give two runs of the same data to compare them side by side."
        ),
    ],
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1; 0 picks a free one.")
    ] = DEFAULT_PORT,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL only; do not open a web browser.")
    ] = False,
    export_dir: Annotated[
        Path | None,
        typer.Option(
            "--export",
            help="Write the viewer as static files into this new directory (open its index.html from disk) "
            "instead of serving it; clips are linked, not copied.",
        ),
    ] = None,
) -> None:
    """Look at a run item by item, on a local page (127.0.0.1 only): every item's state (done, failed by kind,
    not run, unscored and why) and score, filters (failed, unscored, score below, judges disagree, group,
    language, text), sorting and the counts of the filter; one item's clips exactly as sent (with seeking), the
    question, reference and reply, each judge's verdict per rubric criterion and the panel's, the Eq. 1 score and
    its gating tier, the style checklist, a multiple-choice item's parsed letters, every attempt and its cost.
    Two runs: side by side, with "A right, B wrong" and the reverse. Read-only: no file changes, and the counts
    follow a run being written. Keys: j/k next/previous, f next failed, p play/pause, s switch A/B, g the item in
    every run. Ctrl-C stops the server."""
    if export_dir is not None:
        from omnivchat.view import export_viewer

        written = export_viewer(run_dirs, export_dir)
        console.print(
            f"wrote the viewer of {written.runs} run(s), {written.items} items, to {escape(str(written.index))}",
            highlight=False,
            soft_wrap=True,
        )
        return

    from omnivchat.view import ViewServer

    server = ViewServer(run_dirs, port=port)
    server.start()
    for run in server.runs:
        info = run.info
        console.print(
            f"viewing {escape(info['label'])}: {escape(str(info['benchmark']))}, {info['items']} items "
            f"({escape(str(info['status']))}{'' if info['scored'] else ', not scored yet'})",
            highlight=False,
            soft_wrap=True,
        )
    serve_until_stopped(server, no_browser=no_browser)
    console.print("stopped", highlight=False)
