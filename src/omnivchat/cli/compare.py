"""The `omnivchat compare` command: a paired comparison of two runs of one benchmark on the same items."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import console, err_console, warn
from omnivchat.cli._options import aggregate_choice, panel_members

SHOWN = 20  # items listed per group on the terminal; comparison.json lists them all


def _num(value: float | None, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "—" if value is None else (f"{value:.2g}" if value < 0.001 else f"{value:.3f}")


def _why(reason: str | None) -> str:
    if reason is None:
        return "scored"
    return reason if len(reason) <= 90 else reason[:89] + "…"


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Run A: the baseline (the difference is B − A).", show_default=False)],
    run_b: Annotated[Path, typer.Argument(help="Run B: compared with A on the same items.", show_default=False)],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the comparison here (comparison.json) for reports.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
    allow_different_data: Annotated[
        bool,
        typer.Option(
            "--allow-different-data", help="Compare runs whose manifests record different data, on common items."
        ),
    ] = False,
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file naming the panels (native runs; default: rule).")
    ] = None,
    panel: Annotated[
        str | None, typer.Option("--panel", help="Panel name, or one judge name, that scores both runs.")
    ] = None,
    aggregate: Annotated[
        str, typer.Option("--aggregate", help="mean of judge scores, or per-criterion majority.")
    ] = "mean",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap and of sampled sign patterns.")] = 0,
    resamples: Annotated[
        int, typer.Option("--resamples", min=100, help="Bootstrap resamples of the interval of B − A.")
    ] = 10_000,
    permutations: Annotated[
        int,
        typer.Option(
            "--permutations",
            min=100,
            help="Sign patterns drawn by the permutation test; all 2^n when that is fewer (exact).",
        ),
    ] = 10_000,
) -> None:
    """Compare two runs of one benchmark item by item: mean of A, mean of B, B − A with a seeded paired-bootstrap
    95% interval, a paired t-test and a sign-flip permutation test, and a verdict at the 5% level.

    Both runs are scored from their stores (no request is sent; native runs by the rule judge unless --panel).
    Items scored in both runs are paired; items only one run has, and items unscored in either (not run, request
    failed, no usable score), are counted and listed apart. Runs of different benchmarks are refused, and so are
    runs made on different data unless --allow-different-data. Give comparison.json to `omnivchat report`.
    """
    from omnivchat._files import check_output_file
    from omnivchat.benchmarks import ScoreOptions
    from omnivchat.diagnostics import compare_runs, write_comparison
    from omnivchat.judges import load_judges

    combine = aggregate_choice(aggregate)
    if output is not None:
        check_output_file(output, inputs=[judges, run_a, run_b], force=force)
    config = load_judges(judges)
    options = ScoreOptions(config=config, panel=panel_members(config, panel, judges), aggregate=combine)
    with err_console.status("comparing") as status:  # a CompareError ends the command as one line
        result = compare_runs(
            run_a,
            run_b,
            options=options,
            allow_different_data=allow_different_data,
            bootstrap_resamples=resamples,
            permutation_resamples=permutations,
            seed=seed,
            status=lambda message: status.update(message),
        )
    for line in result.warnings:
        warn(line)
    s, t, flip = result.stats, result.stats.t_test, result.stats.sign_flip
    table = Table(title=f"{result.benchmark}: B − A on {result.n_paired} paired items", title_justify="left")
    for column in ("run", "model", "condition", "scored / items", "mean (paired items)"):
        table.add_column(column, justify="right" if column.startswith(("scored", "mean")) else "left")
    for name, side, mean in (("A", result.a, s.mean_a), ("B", result.b, s.mean_b)):
        flag = " [bold red]INCOMPLETE[/]" if side.incomplete else ""
        table.add_row(  # names and paths come from files: escaped, never read as markup
            f"{name} {escape(side.dir)}{flag}",
            escape(side.model),
            escape(side.condition),
            f"{side.n_scored} / {side.n_items}",
            _num(mean),
        )
    console.print(table)
    ci = f"[{_num(s.ci[0], sign=True)}, {_num(s.ci[1], sign=True)}]" if s.ci else (s.ci_note or "n/a (n < 2)")
    console.print(f"B − A = {_num(s.difference, sign=True)}, {s.level:.0%} paired-bootstrap CI {ci}", highlight=False)
    t_text = f"t({t.df}) = {_num(t.statistic, 2)}, p = {_p(t.p)}" if t.statistic is not None else t.note
    console.print(f"paired t-test: {t_text}", highlight=False)
    if not flip.n_nonzero:
        how = "no sign to flip"
    elif flip.exact:
        how = f"exact over all {flip.resamples} sign patterns"
    else:
        how = f"{flip.resamples} sampled sign patterns, seed {flip.seed}"
    console.print(
        f"sign-flip permutation test: p = {_p(flip.p)} ({how}; {flip.n_nonzero} of {flip.n} differences non-zero)",
        highlight=False,
    )
    console.print(f"[bold]verdict: {result.verdict}[/]", highlight=False)
    refs = [*result.only_a, *result.only_b, *result.unscored, *result.pairs]
    tasks = {str(i.value("task")) for i in refs}

    def ref(task: str, key: str) -> str:  # the task only where a benchmark has several
        return f"{task}/{key}" if len(tasks) > 1 else key

    groups = [
        ("only in A", [ref(i.task, i.key) for i in result.only_a]),
        ("only in B", [ref(i.task, i.key) for i in result.only_b]),
        (
            "unscored in A or B",
            [f"{ref(u.task, u.key)}: A {_why(u.a)}; B {_why(u.b)}" for u in result.unscored],
        ),
    ]
    counts = ", ".join(f"{label} {len(items)}" for label, items in groups)
    console.print(f"left out of the pairs: {counts}", highlight=False)
    for run in ("a", "b"):
        if result.unscored_counts.get(run):
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.unscored_counts[run].items()))
            console.print(f"  unscored in {run.upper()}: {kinds}", highlight=False)
    for label, items in groups:
        for line in items[:SHOWN]:
            console.print(f"  {label}: {line}", highlight=False, markup=False)
        if len(items) > SHOWN:
            where = f"in {output}" if output is not None else "with -o FILE"
            console.print(f"  {label}: … and {len(items) - SHOWN} more (all listed {where})", highlight=False)
    if output is not None:
        console.print(f"wrote {write_comparison(output, result)}", highlight=False)
