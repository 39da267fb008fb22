"""``omnivchat repair-tails BENCH_DIR [--dry-run]``: detect and repair audio tail artifacts of a bench."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat._files import check_output_dir, write_text_atomic
from omnivchat.cli._app import SafeConsole

if TYPE_CHECKING:
    from omnivchat.synth import ClipTailResult


def _fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _pair(before: float | None, after: float | None) -> str:
    return f"{_fmt(before)} → {_fmt(after)}"


def _png_name(label: str) -> str:
    stem = label[:-4] if label.endswith(".mp4") else label
    stem = stem.removeprefix("media/").removeprefix("media" + os.sep)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem) + ".png"


def _results_table(results: list[ClipTailResult], dry_run: bool) -> Table:
    title = "Tail artifacts (dry run: nothing changed)" if dry_run else "Tail artifacts"
    table = Table(title=title, title_justify="left")
    table.add_column("Clip", overflow="fold")
    table.add_column("Status")
    table.add_column("Transient dB", justify="right")
    table.add_column("Truncation dB", justify="right")
    table.add_column("Fade dB", justify="right")
    table.add_column("Changed from (ms before end)", justify="right")
    table.add_column("Passes", justify="right")
    table.add_column("Reason", overflow="fold")
    colour = {"repaired": "green", "would repair": "yellow", "skipped": "magenta"}
    for r in sorted(results, key=lambda r: r.severity, reverse=True):
        b, a = r.scores_before, r.scores_after
        table.add_row(
            r.path,
            f"[{colour.get(r.status, 'white')}]{r.status}[/]",
            _pair(b.transient if b else None, a.transient if a else None),
            _pair(b.truncation if b else None, a.truncation if a else None),
            _pair(b.fade if b else None, a.fade if a else None),
            _fmt(r.first_changed_before_end_ms),
            str(r.passes) if r.passes else "—",
            r.reason,
        )
    return table


def repair_tails_command(
    bench_dir: Annotated[
        Path, typer.Argument(help="Bench directory; every media/**/*.mp4 clip is checked.", show_default=False)
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Detect and report only: no clip, PNG or report is written.")
    ] = False,
    plots: Annotated[int, typer.Option("--plots", help="Before/after PNGs for the N worst clips (0: none).")] = 6,
    out: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            "--out",
            help="Where PNGs and report.json go (default: BENCH_DIR/tail-repair). In a dry run they are "
            "written only when --output is given.",
        ),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--concurrency", "--jobs", "-j", min=1, help="Clips processed in parallel.")
    ] = min(4, os.cpu_count() or 1),
) -> None:
    """Detect and repair audio tail artifacts (a click near the end, an abrupt cut-off) in a bench.

    Each flagged clip gets a 20 ms raised-cosine fade just before the artifact (paper, Appendix D.1.2),
    keeping its duration; the video stream is copied unchanged and the audio re-encoded AAC. The original
    is kept beside it as <stem>.orig.mp4 until you remove it, and the bench keeps pointing at the same
    path. A clip whose file ends more than 300 ms after its content is skipped. Prints a table of flagged
    clips with scores before → after, and writes before/after PNGs of the worst ones. Exit status 1 if
    any clip could not be read (each is named; the others are still processed).
    """
    from omnivchat._progress import progress_bar
    from omnivchat.media import MediaError
    from omnivchat.synth import find_clips, load_tail_pair, plot_tail_pair, repair_clips

    console = SafeConsole(width=None if sys.stdout.isatty() else 160)
    err = SafeConsole(stderr=True, width=None if sys.stderr.isatty() else 160)
    clips = find_clips(bench_dir)  # a MediaError ends the command as one line
    if out is not None:
        check_output_dir(out, ours=lambda d: (d / "report.json").is_file(), kind="a repair-tails output folder")
    with progress_bar(console=err, transient=True) as progress:
        task = progress.add_task("repair-tails", total=len(clips))
        results = repair_clips(
            clips,
            bench_dir=bench_dir,
            dry_run=dry_run,
            jobs=max(1, jobs),
            on_done=lambda _r: progress.advance(task),
        )

    errors = [r for r in results if r.status == "error"]
    shown = [r for r in results if r.status != "error" and r.flagged]
    if shown:
        console.print(_results_table(shown, dry_run))
    counts = {s: sum(r.status == s for r in results) for s in ("clean", "repaired", "would repair", "skipped")}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n or s == "clean")
    console.print(f"{len(results)} clips: {sum(r.flagged for r in results)} flagged; {summary}; {len(errors)} errors")
    for r in errors:
        err.print(f"[bold red]error:[/] {escape(str(r.error))}", highlight=False)

    write = out is not None or not dry_run
    written: list[Path] = []
    if write:
        target = out if out is not None else bench_dir / "tail-repair"
        target.mkdir(parents=True, exist_ok=True)
        changed = [r for r in results if r.status in ("repaired", "would repair")]
        for r in sorted(changed, key=lambda r: r.severity, reverse=True)[: max(0, plots)]:
            try:
                before, after, sr, info = load_tail_pair(r, bench_dir / r.path)
                title = f"{r.path}: {r.status}; " + (r.scores_before.describe() if r.scores_before else "")
                written.append(plot_tail_pair(before, after, sr, info, target / _png_name(r.path), title=title))
            except MediaError as exc:
                err.print(f"[bold red]error:[/] plot: {escape(str(exc))}", highlight=False)
        report = write_text_atomic(
            target / "report.json",
            json.dumps({"bench": str(bench_dir), "dry_run": dry_run, "clips": [asdict(r) for r in results]}, indent=1)
            + "\n",
        )
        written.append(report)
    for path in written:
        console.print(f"wrote {path}", highlight=False)
    if counts["repaired"]:
        console.print(
            f"originals kept as *.orig.mp4 beside the {counts['repaired']} repaired clips; remove them when satisfied",
            highlight=False,
        )
    if errors:
        raise typer.Exit(code=1)
