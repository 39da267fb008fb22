"""CLI commands for runs: `eval`, `runs show`, `export`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import RETRY_ATTEMPTS, console, err_console, print_failures
from omnivchat.cli._options import BenchmarkOption, DataOption, MediaOption, ProgressOption, RouteOptions, route_options

if TYPE_CHECKING:
    from omnivchat.benchmarks import RunOptions, Source
    from omnivchat.runs import RunSummary

runs_app = typer.Typer(help="Inspect run directories.", no_args_is_help=True)


@route_options
def eval_command(
    bench: DataOption,
    model: Annotated[
        str,
        typer.Option("--model", help="Model id, e.g. qwen3-omni-flash, Qwen/Qwen3-Omni-30B-A3B-Instruct, sim:healthy."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (created, or resumed when identical).")],
    route: RouteOptions,
    benchmark: BenchmarkOption = "omnivchat",
    media: MediaOption = None,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated tasks, for a benchmark that has several.")
    ] = None,
    system_prompt: Annotated[
        Path | None,
        typer.Option(
            "--system-prompt", "--prompts", help="The benchmark's prompt file: a system prompt, or prompt cards."
        ),
    ] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help="Requests in flight at most.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N items (smoke runs).")] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Attempts per request, retries included.")
    ] = RETRY_ATTEMPTS,
    progress: ProgressOption = True,
) -> None:
    """Run a model on a benchmark into a resumable, auditable run directory.

    Running the same command again resumes: completed replies are reused, failed items retried, and every earlier
    attempt kept. A run directory made with other inputs (data, clips, prompt, model settings) is refused; one
    made by another omnivchat version resumes, with a warning (request hashes cover what is sent).
    """
    from omnivchat.benchmarks import RunOptions, Source

    summary = run_benchmark(
        benchmark,
        Source(
            data=bench,
            media=media,
            tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()) if tasks else None,
            limit=limit,
            prompts=system_prompt,
        ),
        model,
        output,
        route,
        RunOptions(system_prompt=system_prompt, concurrency=concurrency, limit=limit),
        max_attempts=max_attempts,
        progress=progress,
    )
    if not summary.complete:
        raise typer.Exit(code=1)


def run_benchmark(
    name: str,
    source: Source,
    model: str,
    output: Path,
    route: RouteOptions,
    options: RunOptions,
    *,
    max_attempts: int,
    progress: bool,
) -> RunSummary:
    """`eval` (and its aliases): load and validate, check the key and the output folder, run, say what happened."""
    from omnivchat._files import check_output_dir
    from omnivchat.benchmarks import evaluate, get_benchmark
    from omnivchat.cli.diagnostics import warn_unchecked
    from omnivchat.runs import MANIFEST_FILE, RetryPolicy

    benchmark = get_benchmark(name)
    check_output_dir(output, ours=lambda d: (d / MANIFEST_FILE).is_file(), kind="a run directory")
    dataset = benchmark.load(source)
    the_route = route.route(model)
    warn_unchecked(the_route)
    options.sampling = route.sampling()
    summary = evaluate(
        benchmark,
        dataset,
        source,
        the_route,
        output,
        options,
        retry=RetryPolicy(max_attempts=max_attempts),
        progress=progress,
    )
    for note in summary.notes:
        err_console.print(f"[yellow]warning:[/] {note}", highlight=False)
    verb = "resumed" if summary.resumed else "ran"
    console.print(
        f"{verb} {summary.total} items in {summary.elapsed_s:.1f} s: {summary.done} done "
        f"({summary.reused} reused), {summary.failed} failed, {summary.attempts} requests sent"
    )
    print_failures(summary.failures, summary.first_errors)
    if the_route.settings.route == "sim":
        console.print("[yellow]simulated model: this run checks the harness, it says nothing about a real model[/]")
    console.print(f"wrote {output / 'manifest.json'} and {output / 'store.sqlite'}")
    return summary


@runs_app.command("show")
def show_command(run_dir: Annotated[Path, typer.Argument(help="Run directory.")]) -> None:
    """Counts by status and failure kind, attempts, tokens and cost fields when the server reported them.

    Reads any run directory (an omnivchat run, a SocialOmni run or its judging directory) without changing it:
    while it is being written (the writer's pid is shown), and on read-only storage.
    """
    from omnivchat.benchmarks import benchmark_of
    from omnivchat.runs import SOCIALOMNI_PROTOCOL, RunStatus

    status = benchmark_of(run_dir).status(run_dir)
    if isinstance(status, dict):  # a benchmark written before statuses were typed
        status = RunStatus.model_validate(status)
    label = " [yellow](simulated)[/]" if status.simulated else ""
    rows: list[tuple[str, ...]]
    if status.tasks is not None:  # a benchmark with tasks (SocialOmni, or any run read by the generic status)
        limit = f", --limit {status.limit}" if status.limit is not None else ""
        name = "SocialOmni" if status.protocol == SOCIALOMNI_PROTOCOL else str(status.benchmark)
        where = f"{escape(name)} run of {escape(str(status.model))} via {escape(str(status.route))}{label}"
        console.print(f"{escape(str(run_dir))}: {where}{limit}", highlight=False)
        columns: tuple[str, ...] = ("task", "declared", "done", "failed", "not run")
        rows = [(task, str(c.declared), str(c.done), str(c.failed), str(c.not_run)) for task, c in status.tasks.items()]
    elif status.judges is not None:
        judges = ", ".join(status.judges)
        where = f"SocialOmni judging, panel {escape(str(status.panel))} ({escape(judges)})"
        console.print(f"{escape(str(run_dir))}: {where}", highlight=False)
        columns = ("judge", "done", "failed")
        rows = [(name, str(c.done), str(c.failed)) for name, c in status.judges.items()]
    else:
        bench = escape(str(status.bench))
        where = f"{escape(str(status.model))} via {escape(str(status.route))}{label} on {bench}"
        console.print(f"{escape(str(run_dir))}: {where}, condition {escape(status.condition)}", highlight=False)
        columns = ("instances", "done", "failed", "not run")
        counts = status.instances
        rows = (
            []
            if counts is None
            else [tuple(str(n) for n in (counts.declared, counts.done, counts.failed, counts.not_run))]
        )
    attempts = dict(status.attempts)
    if status.writer is not None:
        writer = status.writer.describe()
        console.print(f"[yellow]being written now by {escape(writer)}: these counts are progress[/]", highlight=False)
        if "interrupted" in attempts:  # an attempt without an outcome may be in flight right now
            attempts["in flight or interrupted"] = attempts.pop("interrupted")
    table = Table(title="Judge scores" if columns[0] == "judge" else "Items", title_justify="left")
    for column in columns:
        table.add_column(column, justify="left" if column in ("task", "judge") else "right")
    for row in rows:
        table.add_row(*(escape(str(cell)) for cell in row))
    console.print(table)
    for title, values in (
        ("Failed items by kind", status.failure_kinds),
        ("Attempts", attempts),
        ("Failed attempts by kind", status.attempt_failures),
        ("Tokens", status.tokens),
    ):
        if values:
            line = f"{title}: " + ", ".join(f"{k} {v}" for k, v in sorted(values.items()))
            console.print(line, markup=False, highlight=False)


def export_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSON file to write.")],
    allow_incomplete: Annotated[
        bool, typer.Option("--allow-incomplete", help="Export a run that has failed or missing items.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
    judging: Annotated[
        Path | None, typer.Option("--judging", help="Judging directory of a benchmark that keeps one (SocialOmni).")
    ] = None,
) -> None:
    """Write per-item replies and metadata of a run of any benchmark as JSON, without credentials or endpoint
    addresses; an incomplete run is refused unless --allow-incomplete."""
    from omnivchat._files import check_output_file, write_model
    from omnivchat.benchmarks import benchmark_of
    from omnivchat.runs import ExportFile

    check_output_file(output, force=force)
    data = benchmark_of(run_dir).export(run_dir, judging=judging, allow_incomplete=allow_incomplete)
    if isinstance(data, dict):  # a benchmark written before exports were typed
        data = ExportFile.model_validate(data)
    write_model(output, data)
    console.print(f"wrote {output} ({data.n_records} records, status {data.status})")
