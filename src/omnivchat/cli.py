"""The `omnivchat` command: one entry point with sub-commands."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="omnivchat: synthesize, run, grade and diagnose native audio-visual dialogue with omni models.",
    no_args_is_help=True,
    add_completion=False,
)
# Wide enough for the 12 Table 1 columns when output is piped (rich assumes 80 columns there).
console = Console(width=None if sys.stdout.isatty() else 140)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140)


def _fail(message: str) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code=2)


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
    """Validate a bench directory and print its counts by category, subcategory, language and turns.

    Every problem is listed with its file, line and field; the exit status is 2 if there is any.
    """
    from omnivchat.bench import CATEGORIES, SUBCATEGORIES, BenchError, load_bench

    try:
        bench = load_bench(bench_dir)
    except BenchError as err:
        raise _fail(str(err)) from None
    instances = bench.instances
    by_sub = Counter(i.subcategory for i in instances)
    by_cat = Counter(SUBCATEGORIES[i.subcategory].category for i in instances)
    console.print(
        f"[bold green]ok[/] {bench.root}: {bench.info.name} v{bench.info.version}, {len(instances)} instances"
    )
    console.print(_counts_table("By category", {c: by_cat[c] for c in CATEGORIES if c in by_cat}))
    console.print(
        _counts_table("By subcategory", {SUBCATEGORIES[s].path: by_sub[s] for s in SUBCATEGORIES if s in by_sub})
    )
    console.print(_counts_table("By language", Counter(i.language for i in instances)))
    console.print(
        _counts_table("By turns", Counter(str(len(i.turns)) for i in sorted(instances, key=lambda i: len(i.turns))))
    )


@app.command()
def score(
    bench: Annotated[Path, typer.Option("--bench", help="Bench directory the hits refer to.")],
    hits: Annotated[Path, typer.Option("--hits", help='JSONL of {"id", "hits", "reply", "style"?} per instance.')],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the Table 1 row as JSON here.")] = None,
) -> None:
    """Score graded replies with the gated rubric (Eq. 1) and print the paper's Table 1 row.

    Every bench instance needs exactly one line in the hits file; a missing id or a hit outside 1..K is an
    error, never a zero.
    """
    from omnivchat.bench import BenchError, HitsError, load_bench, load_hits
    from omnivchat.scoring import TABLE1_COLUMNS, ScoredReply, rubric_score, table1_row

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
    row = table1_row(records)
    table = Table(title=f"Table 1 row: {loaded.info.name}", title_justify="left")
    for column in TABLE1_COLUMNS:
        table.add_column(column, justify="right")
    values = row.model_dump()
    table.add_row(
        *("—" if values[c] is None else f"{values[c]:.{2 if c in ('RE', 'Len') else 3}f}" for c in TABLE1_COLUMNS)
    )
    console.print(table)
    console.print(
        f"{row.n_instances} instances: {row.n_scored} scored, {row.n_unscored} unscored, "
        f"{row.n_empty_replies} empty replies, {row.n_style_graded} style-graded. — marks a column with no data."
    )
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps({"bench": loaded.info.name, **values}, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {output}")


def _register() -> None:
    """Sub-commands that live beside their packages; each imports its heavy parts only when it runs."""
    from omnivchat._cli_runs import eval_command, export_command, runs_app

    app.command("eval")(eval_command)
    app.command("export")(export_command)
    app.add_typer(runs_app, name="runs")


_register()


def _register_media() -> None:
    """`repair-tails` (audio tail artifacts, Appendix D.1.2); numpy, PyAV and matplotlib load when it runs."""
    from omnivchat.media._tail_cli import repair_tails_command

    app.command("repair-tails")(repair_tails_command)


_register_media()
