"""CLI commands for suites: `suite run`, `suite report`."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import console, err_console, sigterm_as_ctrl_c
from omnivchat.cli._options import ProgressOption

if TYPE_CHECKING:
    from omnivchat.suite import PairState

suite_app = typer.Typer(
    rich_markup_mode=None,
    help="Many models on many benchmarks: run a suite, and its leaderboard.",
    no_args_is_help=True,
)

_STYLE = {"done": "green", "failed": "red", "waiting": "dim", "stopped": "dim"}


def _view(pairs: list[PairState]) -> Table:
    """Every pair of the suite, one row each: its step, and what it sent or why it failed."""
    table = Table(title="suite", title_justify="left")
    for column in ("model", "benchmark", "step", ""):
        table.add_column(column)
    for p in pairs:
        style = _STYLE.get(p.step, "yellow")
        table.add_row(escape(p.model), escape(p.benchmark), f"[{style}]{p.step}[/]", escape(p.reason or p.detail))
    return table


@suite_app.command("run")
def run_command(
    suite_file: Annotated[Path, typer.Argument(help="The suite file (TOML): models, benchmarks, judges, budget.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Suite directory (created, or resumed when the suite is the same).")
    ],
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run only shard I of N of every benchmark's items (as `eval --shard`), into this --output.",
        ),
    ] = None,
    progress: ProgressOption = True,
) -> None:
    """Run every model of a suite on every benchmark: eval, judge (where the panel asks judges), score, ablate
    (where the suite says so) and a report per pair, into OUTPUT/<model>/<benchmark>/.

    Running it again resumes: nothing already done is sent again. A pair that fails (server down, budget
    reached) leaves the others running; it is listed at the end with its reason (exit status 1). A suite
    directory made by another suite is refused, naming what changed. A second `suite run` into the same
    directory while one runs fails at once, naming it. Pairs on one server share its
    concurrency limit (they run one after another); with budget_usd, pairs run one at a time. Ctrl-C lets the
    steps in flight finish and starts no other (SIGTERM too); a rerun resumes.
    """
    from omnivchat.runs import Shard
    from omnivchat.suite import load_suite, run_suite

    chosen = Shard.parse(shard) if shard is not None else None
    suite = load_suite(suite_file)
    pairs: list[PairState] = []
    lock = threading.Lock()
    live = Live(_view(pairs), console=err_console, refresh_per_second=4, transient=False) if progress else None

    def changed(pair: PairState) -> None:
        with lock:
            if pair not in pairs:
                pairs.append(pair)
            if live is not None:
                if not live.is_started:  # shown from the first pair on: a suite refused before has no empty view
                    live.start()
                live.update(_view(pairs))

    try:
        with sigterm_as_ctrl_c():
            outcome = run_suite(suite, output, shard=chosen, on_change=changed)
    finally:
        if live is not None and live.is_started:
            live.stop()
            if not err_console.is_terminal:  # the view's last frame ends without a newline there
                err_console.print()
    verb = "resumed" if outcome.resumed else "ran"
    done = sum(p.step == "done" for p in outcome.pairs)
    console.print(
        f"{verb} {len(outcome.pairs)} pairs into {output}: {done} done, {len(outcome.failed)} failed, "
        f"{outcome.requests} requests sent",
        highlight=False,
    )
    for note in outcome.notes:
        console.print(f"note: {note}", markup=False, highlight=False)
    if outcome.failed:
        err_console.print("[bold red]failed pairs:[/]")
        for p in outcome.failed:
            err_console.print(f"  {escape(p.label)}: {escape(p.reason or '')}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1)


@suite_app.command("report")
def report_command(
    suite_dir: Annotated[Path, typer.Argument(help="A suite directory (`omnivchat suite run -o DIR`).")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="HTML file (default DIR/leaderboard.html); its .csv and .json beside it."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output files if they exist.")] = False,
) -> None:
    """The leaderboard of a suite: models x benchmarks, each cell's mean item score with its 95% interval and a
    link to the pair's report, a rank per benchmark with paired tests between neighbours (Holm-corrected across
    the table), the fusion gain where ablated, and cost and tokens per model; CSV and JSON beside the HTML.

    Incomplete cells (items never run, failed or unscored) are marked and never ranked. No request is sent.
    """
    from omnivchat._files import check_output_file
    from omnivchat.suite import build_leaderboard, read_suite_manifest, write_leaderboard

    read_suite_manifest(suite_dir)  # not a suite directory: one line, before anything
    html = output if output is not None else suite_dir / "leaderboard.html"
    if output is not None:  # the default files are this command's own: replaced
        for path in (html, html.with_suffix(".csv"), html.with_suffix(".json")):
            check_output_file(path, force=force)
    with err_console.status("scoring the pairs and testing neighbours"):
        board = build_leaderboard(suite_dir, html.resolve().parent)
    incomplete = [c for c in board.cells if c.status != "complete"]
    for note in board.notes:
        err_console.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    written = write_leaderboard(board, html)
    console.print(
        f"{len(board.models)} models x {len(board.benchmarks)} benchmarks: {len(board.cells)} cells, "
        f"{len(incomplete)} incomplete or not run (marked, not ranked)",
        highlight=False,
    )
    console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)
