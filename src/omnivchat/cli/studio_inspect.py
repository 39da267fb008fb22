"""``omnivchat studio inspect``: the human inspection page of a bench (paper, Appendix D.1.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from omnivchat.cli._app import console
from omnivchat.cli._serving import serve_until_stopped

DEFAULT_PORT = 8765  # the library's default too (omnivchat.studio.inspect.DEFAULT_PORT); kept here for --help


def inspect_command(
    bench_dir: Annotated[Path, typer.Argument(help="The bench directory to inspect (bench.yaml, instances.jsonl).")],
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1; 0 picks a free one.")
    ] = DEFAULT_PORT,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL only; do not open a web browser.")
    ] = False,
) -> None:
    """Serve the human inspection page of a bench on 127.0.0.1: every instance with its clips, script or caption,
    reference reply and rubric, to accept or reject (with a reason). Each decision is appended to
    BENCH_DIR/inspection.jsonl as it is made; the latest per instance wins. A rejected instance leaves the
    delivered set: `eval` and the other commands skip it, and `validate` counts it. Keys: j/k move, p plays,
    a accepts, r rejects (type the reason, Enter). Ctrl-C stops the server; nothing is lost."""
    from omnivchat.studio.inspect import InspectServer

    server = InspectServer(bench_dir, port=port)
    server.start()
    counts = server.log.counts()
    console.print(
        f"inspecting {escape(str(server.bench.root))}: {counts['total']} instances (accepted {counts['accepted']}, "
        f"rejected {counts['rejected']}, undecided {counts['undecided']})",
        highlight=False,
        soft_wrap=True,
    )
    serve_until_stopped(server, no_browser=no_browser)
    console.print(
        f"stopped; {server.log.lines} decisions in {escape(str(server.log.path))} ({server.log.made} made now)",
        highlight=False,
        soft_wrap=True,
    )
