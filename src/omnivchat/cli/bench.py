"""`omnivchat validate` and `omnivchat bench make` (the procedural mini-bench, ``omnivchat.studio.make_minibench``)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import console, err_console, fail

bench_app = typer.Typer(
    rich_markup_mode=None, help="Build benches offline; merge the shards of a synthesis.", no_args_is_help=True
)


@bench_app.command("make")
def make_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Bench directory to write (new or empty).")],
    per_subcategory: Annotated[
        int, typer.Option("--per-subcategory", "-n", min=1, help="Instances per subcategory (languages alternate).")
    ] = 2,
    languages: Annotated[
        str, typer.Option("--languages", help="Comma-separated user languages: en, zh or both.")
    ] = "en,zh",
    seed: Annotated[int, typer.Option("--seed", help="Scene RNG seed: the same seed gives the same bench.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Replace OUTPUT if it already holds a bench.")] = False,
) -> None:
    """Build the procedural mini-bench: real clips for all 17 subcategories, rendered offline in seconds.

    Each instance is a scene drawn by the procedural renderer (coloured shapes on a table, a person, a selfie or
    rear camera, spoken questions in English or Mandarin), with a reference reply and a tiered rubric whose every
    criterion carries a machine check, so the offline rule judge (`omnivchat score RUN_DIR --panel rule`) can
    score replies. The default (2 per subcategory, en and zh) is 34 instances. A non-empty OUTPUT that is not a
    bench is never touched; an existing bench is replaced only with --force.
    """
    from omnivchat.bench import SUBCATEGORIES
    from omnivchat.studio.minibench import MiniBenchError, make_minibench

    started = time.perf_counter()
    try:
        bench = make_minibench(
            output,
            per_subcategory=per_subcategory,
            languages=[part for part in languages.split(",") if part.strip()],
            seed=seed,
            progress=True,
            force=force,
        )
    except (MiniBenchError, ValueError) as err:
        raise fail(str(err)) from None
    elapsed = time.perf_counter() - started
    by_sub = Counter(i.subcategory for i in bench.instances)
    by_lang = Counter(i.language for i in bench.instances)
    n_clips = sum(len(i.turns) for i in bench.instances)
    counts = ", ".join(f"{code} {by_sub[code]}" for code in SUBCATEGORIES if code in by_sub)
    languages_text = ", ".join(f"{lang} {n}" for lang, n in sorted(by_lang.items()))
    console.print(
        f"wrote {bench.root}: {len(bench.instances)} instances ({languages_text}), {n_clips} clips, "
        f"in {elapsed:.1f} s; by subcategory: {counts}",
        highlight=False,
        soft_wrap=True,  # one line, however long the path: scripts read it
    )


def _counts_table(title: str, counts: Counter[str] | dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(title.split(" ")[-1].capitalize())
    table.add_column("Instances", justify="right")
    for key, value in counts.items():
        table.add_row(str(key), str(value))
    return table


def validate_command(
    bench_dir: Annotated[Path, typer.Argument(help="Bench directory (bench.yaml, instances.jsonl, media/).")],
) -> None:
    """Validate a bench directory and its clips, and print its counts by category, subcategory, language and turns.

    Every clip is probed (in parallel; results cached by content hash, so an unchanged bench is not probed
    again): an empty, truncated or unreadable clip, one with no video stream, or one without an audio track in
    an instance that requires audio is a problem. Every problem is listed with its file, line and field; the
    exit status is 2 if there is any. A silent audio track is only a warning. Instances rejected by human
    inspection (inspection.jsonl, `omnivchat studio inspect`) are counted but not delivered: their lines must
    parse, their clips are not checked.
    """
    from omnivchat._progress import progress_bar
    from omnivchat.bench import CATEGORIES, INSPECTION_FILE, SUBCATEGORIES, Bench, BenchError, load_bench
    from omnivchat.benchmarks.native import BenchClipChecker

    bench: Bench | None = None
    error: BenchError | None = None
    with progress_bar(console=err_console, transient=True, disable=not err_console.is_terminal) as progress:
        task = progress.add_task("probing clips", total=None)
        checker = BenchClipChecker(progress=lambda done, total: progress.update(task, completed=done, total=total))
        try:
            bench = load_bench(bench_dir, check_media=checker)
        except BenchError as err:
            error = err
    for warning in checker.warnings:
        err_console.print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False)
    if bench is None:
        raise fail(str(error))
    instances = bench.instances
    by_sub = Counter(i.subcategory for i in instances)
    by_cat = Counter(SUBCATEGORIES[i.subcategory].category for i in instances)
    console.print(
        f"[bold green]ok[/] {bench.root}: {bench.info.name} v{bench.info.version}, {len(instances)} instances, "
        f"{checker.clips} clips ({checker.probed} probed, {checker.cached} from the cache)"
    )
    if bench.rejected or (bench.root / INSPECTION_FILE).is_file():
        ids = ", ".join(list(bench.rejected)[:5]) + (" ..." if len(bench.rejected) > 5 else "")
        console.print(
            f"{len(bench.rejected)} instance(s) rejected by human inspection ({INSPECTION_FILE})"
            + (f": {ids}; not delivered, so neither checked nor counted below" if bench.rejected else ""),
            highlight=False,
            soft_wrap=True,
        )
    console.print(_counts_table("By category", {c: by_cat[c] for c in CATEGORIES if c in by_cat}))
    console.print(
        _counts_table("By subcategory", {SUBCATEGORIES[s].path: by_sub[s] for s in SUBCATEGORIES if s in by_sub})
    )
    console.print(_counts_table("By language", Counter(i.language for i in instances)))
    console.print(
        _counts_table("By turns", Counter(str(len(i.turns)) for i in sorted(instances, key=lambda i: len(i.turns))))
    )


@bench_app.command("merge")
def bench_merge_command(
    shards: Annotated[
        list[Path], typer.Argument(help="The shard directories (every shard of one studio run --shard I/N).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged bench directory (new).")],
    allow_incomplete: Annotated[
        bool, typer.Option("--allow-incomplete", help="Merge shards with instances not yet ended (left out, listed).")
    ] = False,
) -> None:
    """Merge the shards of one synthesis (studio run --shard I/N, each in its own directory) into one bench.

    The shards must share one synthesis (the same settings but for the shard), and every planned instance must
    have ended in the one shard its id hashes to; a missing or duplicated shard or instance is refused, naming it.
    The bench gets every trace, accepted record and clip (copied), and the bench files the unsharded synthesis
    writes. Nothing is written over: OUTPUT must be new.
    """
    from omnivchat.studio.engine import merge_benches

    summary = merge_benches(shards, output, allow_incomplete=allow_incomplete)
    for line in summary.incomplete[:10]:
        err_console.print(f"[yellow]not ended:[/] {escape(line)}", highlight=False)
    console.print(
        f"merged {summary.shards} shards: {summary.accepted} accepted of {summary.planned} planned instances"
        + (f" ({len(summary.incomplete)} not ended, left out)" if summary.incomplete else ""),
        highlight=False,
    )
    console.print(f"wrote {output} (bench.yaml, instances.jsonl, media/; traces under {output / 'studio' / 'traces'})")
