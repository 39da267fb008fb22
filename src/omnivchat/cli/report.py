"""The `omnivchat report` command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnivchat.cli._app import console, err_console


def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Scored run directories (scores.json from `omnivchat score RUN_DIR`), ablation directories "
            "(ablation.json from `omnivchat ablate`) and comparison files (`omnivchat compare A B -o FILE`), in the "
            "order their rows should appear.",
            show_default=False,
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write.")] = Path("report.html"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
) -> None:
    """Write one static HTML report that opens without a server: Table 1 (models as rows), failure counts,
    per-subcategory bars, Table 3 (single-turn subcategories against their multi-turn extensions), the ablation
    grid with 95% intervals, judge agreement tables where present, paired comparisons of two runs (comparison
    files given), and the sha256 of every input file.

    Hover a number on the page to see the file and key it came from; simulated models are marked as harness checks.

    Score a run directory first: `omnivchat score RUN_DIR`.
    """
    from omnivchat._files import check_output_file
    from omnivchat.report import build_report

    read = [
        p / name for p in run_dirs for name in ("scores.json", "ablation.json", "agreement.json", "comparison.json")
    ]
    check_output_file(output, inputs=[*run_dirs, *read], force=force)
    with err_console.status("building the report") as status:  # a ReportError ends the command as one line
        written = build_report(run_dirs, output, status=lambda message: status.update(message))
    size_kib = written.stat().st_size / 1024
    console.print(f"wrote {written} ({size_kib:.0f} KiB, self-contained; open it in any browser)", highlight=False)
