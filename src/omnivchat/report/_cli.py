"""The `omnivchat report` command."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console(width=None if sys.stdout.isatty() else 140, emoji=False)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140, emoji=False)


def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Scored run directories (scores.json from `omnivchat score RUN_DIR`) and ablation directories "
            "(ablation.json from `omnivchat ablate`), in the order their rows should appear.",
            show_default=False,
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write.")] = Path("report.html"),
) -> None:
    """Write one static HTML report that opens without a server: Table 1 (models as rows), failure counts,
    per-subcategory bars, the ablation grid with 95% intervals, judge agreement tables where present, and the
    sha256 of every input file.

    Hover a number on the page to see the file and key it came from; simulated models are marked as harness checks.

    Score a run directory first: `omnivchat score RUN_DIR`.
    """
    from omnivchat.report._build import build_report
    from omnivchat.report._inputs import ReportError

    try:
        with err_console.status("building the report") as status:
            written = build_report(run_dirs, output, status=lambda message: status.update(message))
    except ReportError as err:
        err_console.print(f"[bold red]error:[/] {err}", highlight=False)
        raise typer.Exit(code=2) from None
    size_kib = written.stat().st_size / 1024
    console.print(f"wrote {written} ({size_kib:.0f} KiB, self-contained; open it in any browser)", highlight=False)
