"""The `omnivchat` command: one entry point with sub-commands."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from typer.core import TyperGroup

from omnivchat._cli_runs import _fail, console, err_console
from omnivchat.errors import Interrupted, OmnivchatError


class _Commands(TyperGroup):
    """The root command group: a user-facing error (OmnivchatError) ends any command as one line with status 2,
    Ctrl-C as a line saying how to resume with status 130; any other exception is a bug and keeps its traceback."""

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except Interrupted as err:
            err_console.print(f"[bold yellow]{err}[/]", highlight=False)
            raise typer.Exit(code=130) from None
        except KeyboardInterrupt:
            err_console.print("[bold yellow]interrupted:[/] rerun the same command to resume", highlight=False)
            raise typer.Exit(code=130) from None
        except OmnivchatError as err:
            raise _fail(str(err)) from None


app = typer.Typer(
    cls=_Commands,
    help="omnivchat: synthesize, run, grade and diagnose native audio-visual dialogue with omni models.",
    no_args_is_help=True,
    add_completion=False,
)


def _counts_table(title: str, counts: Counter[str] | dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(title.split(" ")[-1].capitalize())
    table.add_column("Instances", justify="right")
    for key, value in counts.items():
        table.add_row(str(key), str(value))
    return table


@app.command()
def validate(
    bench_dir: Annotated[Path, typer.Argument(help="Bench directory (bench.yaml, instances.jsonl, media/).")],
) -> None:
    """Validate a bench directory and its clips, and print its counts by category, subcategory, language and turns.

    Every clip is probed (in parallel; results cached by content hash, so an unchanged bench is not probed
    again): an empty, truncated or unreadable clip, one with no video stream, or one without an audio track in
    an instance that requires audio is a problem. Every problem is listed with its file, line and field; the
    exit status is 2 if there is any. A silent audio track is only a warning.
    """
    from rich.progress import Progress

    from omnivchat.bench import CATEGORIES, SUBCATEGORIES, Bench, BenchError, load_bench
    from omnivchat.media import ClipChecker

    bench: Bench | None = None
    error: BenchError | None = None
    with Progress(console=err_console, transient=True, disable=not err_console.is_terminal) as progress:
        task = progress.add_task("probing clips", total=None)
        checker = ClipChecker(progress=lambda done, total: progress.update(task, completed=done, total=total))
        try:
            bench = load_bench(bench_dir, check_media=checker)
        except BenchError as err:
            error = err
    for warning in checker.warnings:
        err_console.print(f"[bold yellow]warning:[/] {warning}", highlight=False)
    if bench is None:
        raise _fail(str(error))
    instances = bench.instances
    by_sub = Counter(i.subcategory for i in instances)
    by_cat = Counter(SUBCATEGORIES[i.subcategory].category for i in instances)
    console.print(
        f"[bold green]ok[/] {bench.root}: {bench.info.name} v{bench.info.version}, {len(instances)} instances, "
        f"{checker.clips} clips ({checker.probed} probed, {checker.cached} from the cache)"
    )
    console.print(_counts_table("By category", {c: by_cat[c] for c in CATEGORIES if c in by_cat}))
    console.print(
        _counts_table("By subcategory", {SUBCATEGORIES[s].path: by_sub[s] for s in SUBCATEGORIES if s in by_sub})
    )
    console.print(_counts_table("By language", Counter(i.language for i in instances)))
    console.print(
        _counts_table("By turns", Counter(str(len(i.turns)) for i in sorted(instances, key=lambda i: len(i.turns))))
    )


def print_table1(row: object, title: str) -> dict:
    """Print a Table 1 row with the counts behind it; return its values."""
    from omnivchat.scoring import TABLE1_COLUMNS

    values = row.model_dump()  # type: ignore[attr-defined]
    incomplete = row.incompleteness()  # type: ignore[attr-defined]
    if incomplete is not None:
        title = f"{title} [bold red]INCOMPLETE[/]"
    table = Table(title=title, title_justify="left")
    for column in TABLE1_COLUMNS:
        table.add_column(column, justify="right")
    table.add_row(
        *("—" if values[c] is None else f"{values[c]:.{2 if c in ('RE', 'Len') else 3}f}" for c in TABLE1_COLUMNS)
    )
    console.print(table)
    console.print(
        f"{values['n_instances']} instances: {values['n_scored']} scored, {values['n_unscored']} unscored "
        f"({values['n_failed_requests']} failed requests, {values['n_not_run']} not run), "
        f"{values['n_empty_replies']} empty replies, {values['n_style_graded']} style-graded. "
        "— marks a column with no data."
    )
    return values


@app.command()
def score(
    run_dir: Annotated[Path | None, typer.Argument(help="Run directory to score from its stored verdicts.")] = None,
    bench: Annotated[Path | None, typer.Option("--bench", help="Bench directory (default for a run: its own).")] = None,
    hits: Annotated[
        Path | None, typer.Option("--hits", help='Score a JSONL of {"id", "hits", "reply", "style"?} instead of a run.')
    ] = None,
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file (TOML or JSON) naming the panels.")
    ] = None,
    panel: Annotated[
        str | None, typer.Option("--panel", help="Panel name, or one judge name ('rule': offline).")
    ] = None,
    aggregate: Annotated[
        str, typer.Option("--aggregate", help="mean of judge scores, or per-criterion majority.")
    ] = "mean",
    style_judge: Annotated[str | None, typer.Option("--style-judge", help="Judge whose style checks count.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the Table 1 row as JSON here.")] = None,
    allow_incomplete: Annotated[
        bool,
        typer.Option("--allow-incomplete", help="Exit 0 for a run with items that have no reply (still marked)."),
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
) -> None:
    """Print the paper's Table 1 row: from a run's stored judge verdicts (RUN_DIR), or from a hits file.

    Scores use the gated rubric (Eq. 1). From a run, a reply with a failed request or an incomplete panel is
    unscored and counted apart, never averaged as 0; items never run count against the bench, and such a run is
    incomplete (exit status 1 unless --allow-incomplete); no request is sent (run `omnivchat judge` first). From a
    hits file, every bench instance needs exactly one line; a missing id or a hit outside 1..K is an error.
    """
    from omnivchat._files import check_output_file, write_text_atomic
    from omnivchat.bench import BenchError, HitsError, load_bench, load_hits
    from omnivchat.scoring import ScoredReply, rubric_score, table1_row

    if (run_dir is None) == (hits is None):
        raise _fail("give either RUN_DIR (score a run) or --bench with --hits (score a hits file)")
    if output is not None:
        check_output_file(output, inputs=[hits, judges], force=force)
    if hits is not None:
        if bench is None:
            raise _fail("--hits needs --bench")
        try:
            loaded = load_bench(bench)
            graded = load_hits(hits, loaded)
        except (BenchError, HitsError) as err:
            raise _fail(str(err)) from None
        records = [
            ScoredReply(
                subcategory=i.subcategory,
                source=i.source,
                score=rubric_score(i.tiers, graded[i.id].hits),
                reply=graded[i.id].reply,
                style=None if graded[i.id].style is None else float(graded[i.id].style),
            )
            for i in loaded.instances
        ]
        name = loaded.info.name
        style_graded = any(g.style is not None for g in graded.values())
        values = print_table1(table1_row(records, style_graded=style_graded), f"Table 1 row: {name}")
    else:
        from omnivchat._cli_judges import score_run

        assert run_dir is not None
        name, values = score_run(run_dir, bench, judges, panel, aggregate, style_judge, allow_incomplete)
    if output is not None:
        write_text_atomic(output, json.dumps({"bench": name, **values}, indent=2) + "\n")
        console.print(f"wrote {output}")


def _register() -> None:
    """Sub-commands that live beside their packages; each imports its heavy parts only when it runs."""
    from omnivchat._cli_diagnostics import ablate_command, check_route_command, demo_command
    from omnivchat._cli_judges import judge_command, judges_app
    from omnivchat._cli_runs import eval_command, export_command, runs_app
    from omnivchat.report import report_command
    from omnivchat.socialomni._cli import socialomni_app
    from omnivchat.studio._cli_bench import bench_app

    app.command("demo")(demo_command)
    app.command("ablate")(ablate_command)
    app.command("check-route")(check_route_command)
    app.command("judge")(judge_command)
    app.add_typer(judges_app, name="judges")
    app.command("eval")(eval_command)
    app.command("export")(export_command)
    app.add_typer(runs_app, name="runs")
    app.add_typer(bench_app, name="bench")
    app.command("report")(report_command)
    app.add_typer(socialomni_app, name="socialomni")


_register()


def _register_media() -> None:
    """`repair-tails` (audio tail artifacts, Appendix D.1.2); numpy, PyAV and matplotlib load when it runs."""
    from omnivchat.media._tail_cli import repair_tails_command

    app.command("repair-tails")(repair_tails_command)


_register_media()
