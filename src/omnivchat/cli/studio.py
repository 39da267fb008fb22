"""``omnivchat studio run`` (synthesize a bench with the Studio engine) and ``omnivchat studio trace`` (one
instance's module-by-module trace)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import console, err_console, fail, sigterm_as_ctrl_c
from omnivchat.cli._options import BudgetOption, ProgressOption
from omnivchat.cli.studio_import import import_command
from omnivchat.cli.studio_inspect import inspect_command

if TYPE_CHECKING:
    from omnivchat.studio.engine import Agents, Trace

studio_app = typer.Typer(
    rich_markup_mode=None,
    help="OmniVChat-Studio: synthesize audio-visual dialogues (clips, reference replies, tiered rubrics).",
    no_args_is_help=True,
)


@studio_app.command("run")
def studio_run_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Bench directory to write (or to resume).")],
    n: Annotated[
        int, typer.Option("--n", min=1, help="Instances per subcategory (those --n-per and --counts do not name).")
    ],
    all_: Annotated[bool, typer.Option("--all", help="Every shipped subcategory (17).")] = False,
    config: Annotated[
        list[str] | None,
        typer.Option("--config", help="A subcategory code (the shipped configuration) or a YAML file; repeatable."),
    ] = None,
    corpus: Annotated[
        Path | None,
        typer.Option("--corpus", help="Corpus JSONL (id, language, topic, text); default: a small EN/ZH corpus."),
    ] = None,
    backend: Annotated[str, typer.Option("--backend", help="offline (no key) or hosted (needs --agents).")] = "offline",
    agents_file: Annotated[
        Path | None,
        typer.Option("--agents", help="Hosted backend: TOML/JSON file naming the Director, Reviewer and Renderer."),
    ] = None,
    defect_rate: Annotated[
        float,
        typer.Option("--defect-rate", min=0.0, max=1.0, help="Offline: inject defects at this rate (repair paths)."),
    ] = 0.0,
    seed: Annotated[int, typer.Option("--seed", help="Seeds sampling, scenes and injected defects.")] = 0,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Instances synthesized at once.")] = 2,
    progress: ProgressOption = True,
    budget: BudgetOption = None,
    repair_budget: Annotated[
        list[str] | None,
        typer.Option(
            "--repair-budget",
            help="KIND=N: a repair limit (render, rewrite, plan, qa, refine, total) over the configs'; repeatable.",
        ),
    ] = None,
    n_per: Annotated[
        list[str] | None,
        typer.Option(
            "--n-per",
            help="SUBCAT=N: instances of one subcategory instead of --n (over --counts); repeatable.",
            show_default=False,
        ),
    ] = None,
    counts_file: Annotated[
        Path | None,
        typer.Option(
            "--counts",
            help="YAML or JSON mapping SUBCAT: N (instances per subcategory instead of --n), e.g. "
            "examples/studio/figure3-counts.yaml for the paper's 2,800.",
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Synthesize only shard I of N (numbered from 1): the instances whose id hashes to it. Give each "
            "shard its own --output; `omnivchat bench merge` joins them into one bench.",
        ),
    ] = None,
) -> None:
    """Synthesize N instances of each subcategory (or per-subcategory counts: --n-per, --counts): attribute and
    corpus sampling (Eq. 7), the single-turn (modules 0-14) or multi-turn (a-n) state machine with bounded repair,
    tail repair, and a bench directory that `omnivchat validate` accepts. Rerun the same command to resume; a
    finished one adds nothing. Ctrl-C or SIGTERM starts nothing new and exits (status 130) within seconds;
    nothing that ended is lost. Every instance's trace (accepted or discarded, with its reason) is kept: see
    `omnivchat studio trace`.

    --budget caps what the synthesis spends in all (agent calls and renders; every agent needs a price): an
    instance whose next call would pass it stops, not run (exit status 3), and a rerun with a larger budget
    resumes it. (No --dry-run: how many calls an instance needs depends on its answers.)"""
    from omnivchat._progress import progress_bar
    from omnivchat.runs import Shard
    from omnivchat.studio.backends import make_agents
    from omnivchat.studio.config import load_all, load_config
    from omnivchat.studio.engine import (
        instance_counts,
        parse_count_items,
        parse_repair_budgets,
        read_counts_file,
        studio_run,
    )

    part = Shard.parse(shard) if shard is not None else None  # a bad value: one line, before any work
    if all_ == bool(config):
        raise fail("give --all or --config SUBCAT (one of them)")
    configs = load_all() if all_ else [load_config(c) for c in config or []]
    repair_limits = parse_repair_budgets(repair_budget or [])
    counts = read_counts_file(counts_file, configs) if counts_file is not None else {}
    counts |= parse_count_items(n_per or [], configs)  # the command line's over the file's
    per_code = instance_counts(configs, n, counts)
    if counts:
        console.print(
            f"instances: {sum(per_code.values())} ({', '.join(f'{code} {k}' for code, k in per_code.items())})",
            highlight=False,
        )
    agents = make_agents(backend, configs, defect_rate=defect_rate, agents_file=agents_file, output=output)
    bar = progress_bar(console=err_console, elapsed=True, transient=True, disable=not progress)
    task = bar.add_task("synthesizing", total=None)

    def on_start(total: int, done: int) -> None:
        bar.update(task, total=total, completed=done)

    def on_done(trace: Trace) -> None:
        bar.update(task, advance=1, description=f"synthesizing ({trace.id}: {trace.status})")

    with sigterm_as_ctrl_c(), bar, _closing(agents):
        summary = studio_run(
            configs,
            output,
            agents,
            n=n,
            seed=seed,
            corpus=corpus,
            backend=backend,
            defect_rate=defect_rate,
            concurrency=concurrency,
            on_start=on_start,
            on_done=on_done,
            budget_usd=budget,
            repairs=repair_limits,
            counts=counts,
            shard=part,
        )
    ended = summary.accepted + sum(summary.discarded.values())
    console.print(
        f"{summary.ran} instance(s) synthesized now, {summary.already_done} already done; "
        f"accepted {summary.accepted} of {ended}"
    )
    for reason, count in summary.discarded.most_common():
        console.print(f"  discarded {count}: {escape(reason)}")
    repairs = ", ".join(f"{kind} {count}" for kind, count in sorted(summary.repairs.items())) or "none"
    console.print(f"repairs used: {repairs}; tail repair fixed {summary.tail_repaired} clip(s)")
    if summary.restored:
        shown = ", ".join(summary.restored[:8]) + (" ..." if len(summary.restored) > 8 else "")
        console.print(
            f"restored: {len(summary.restored)} clip(s) changed or missing since delivery ({shown})", markup=False
        )
    console.print(
        f"agent calls: {summary.calls_made} made, {summary.calls_replayed} answered from the run store; "
        f"{summary.seconds:.0f} s"
    )
    if summary.accepted:
        per = ", ".join(f"{k} {v / summary.accepted:.2f}" for k, v in sorted(summary.calls_by_agent.items()))
        unpriced = f"; {summary.unpriced_renders} render(s) at an unknown price left out" * bool(
            summary.unpriced_renders
        )
        console.print(
            f"per accepted instance: {per} calls; render cost ${summary.cost_usd / summary.accepted:.4f} "
            f"(${summary.cost_usd:.4f} in all, discarded runs included{unpriced})"
        )
    if summary.call_cost is not None:
        console.print(f"cost of this invocation's agent calls: {summary.call_cost.describe()}", markup=False)
    stopped = summary.budget is not None and summary.budget.stopped and summary.not_run
    if stopped:
        ended = summary.accepted + sum(summary.discarded.values())
        message = summary.budget.message(
            done=ended, total=ended + len(summary.not_run) + len(summary.failed), not_sent=len(summary.not_run),
            what="instances",
        )  # fmt: skip
        err_console.print(f"[bold yellow]{escape(message)}[/]", highlight=False, soft_wrap=True)
    if summary.failed:
        for instance_id, message in sorted(summary.failed.items())[:5]:
            err_console.print(f"[red]failed[/] {escape(instance_id)}: {escape(message)}")
        err_console.print(f"{len(summary.failed)} instance(s) stopped by an error: rerun the same command to resume")
    if summary.bench is None:
        traces = escape(str(output / "studio" / "traces"))
        err_console.print(f"no instance was accepted: no bench written (traces under {traces})", soft_wrap=True)
        raise typer.Exit(code=3 if stopped else 1)
    console.print(f"wrote {output} (bench.yaml, instances.jsonl, media/; traces under {output / 'studio' / 'traces'})")
    if stopped:
        raise typer.Exit(code=3)
    if summary.failed:
        raise typer.Exit(code=1)


@contextlib.contextmanager
def _closing(agents: Agents) -> Iterator[None]:
    try:
        yield
    finally:
        agents.close()


@studio_app.command("trace")
def studio_trace_command(
    bench: Annotated[Path, typer.Argument(help="A bench directory made by `omnivchat studio run`.")],
    instance_id: Annotated[str, typer.Argument(help="The instance id (accepted or discarded).")],
    full: Annotated[bool, typer.Option("--json", help="Print the whole trace as JSON.")] = False,
) -> None:
    """Print one instance's trace module by module (the paper's Examples 2 and 3): module, turn, decision and
    what happened; a discarded instance shows its reason."""
    from omnivchat.studio.engine import find_trace, trace_table

    trace = find_trace(bench, instance_id)
    if full:
        print(trace.model_dump_json(indent=1))
        return
    table = Table(title=f"{trace.id} ({trace.subcategory}, {trace.turns}-turn): {trace.status}", title_justify="left")
    for name in ("module", "name", "turn", "decision", "what happened"):
        table.add_column(name, overflow="fold")
    for row in trace_table(trace):
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    if trace.status == "discarded":
        console.print(f"discarded: {escape(trace.reason)}")
    repairs = ", ".join(f"{k} {v}" for k, v in sorted(trace.repairs.items())) or "none"
    console.print(f"repairs used: {repairs}")


studio_app.command("inspect")(inspect_command)
studio_app.command("import-recorded")(import_command)
