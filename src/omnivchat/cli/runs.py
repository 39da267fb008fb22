"""CLI commands for runs: `eval`, `runs show`, `export`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import RETRY_ATTEMPTS, console, err_console, print_failures
from omnivchat.cli._options import (
    BenchmarkOption,
    BudgetOption,
    ColumnsOption,
    DataOption,
    DryRunOption,
    MediaOption,
    MediaRootOption,
    ProgressOption,
    RouteOptions,
    SplitOption,
    given_options,
    media_roots,
    route_options,
)

if TYPE_CHECKING:
    from omnivchat.benchmarks import RunOptions, Source
    from omnivchat.runs import DryRun, RunCost, RunStatus, RunSummary


class ReplyFormat(StrEnum):
    """audio.format of a spoken reply (eval --reply-audio-format)."""

    wav = "wav"
    pcm16 = "pcm16"
    mp3 = "mp3"
    flac = "flac"
    opus = "opus"


runs_app = typer.Typer(rich_markup_mode=None, help="Inspect run directories.", no_args_is_help=True)


@route_options
def eval_command(
    route: RouteOptions,
    bench: DataOption,
    model: Annotated[
        str,
        typer.Option("--model", help="Model id, e.g. qwen3-omni-flash, Qwen/Qwen3-Omni-30B-A3B-Instruct, sim:healthy."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (created, or resumed when identical).")],
    benchmark: BenchmarkOption = "omnivchat",
    media: MediaOption = None,
    media_root: MediaRootOption = None,
    columns: ColumnsOption = None,
    split: SplitOption = None,
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated tasks, for a benchmark that has several.")
    ] = None,
    system_prompt: Annotated[
        Path | None,
        typer.Option(
            "--system-prompt",
            "--prompts",
            help="The benchmark's prompt file: a system prompt (e.g. the paper's E.4 prompt, recognised and "
            "labelled so), or prompt cards.",
        ),
    ] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help="Requests in flight at most.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N items (smoke runs).")] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Attempts per request, retries included.")
    ] = RETRY_ATTEMPTS,
    progress: ProgressOption = True,
    budget: BudgetOption = None,
    dry_run: DryRunOption = False,
    reply_audio: Annotated[
        str | None,
        typer.Option(
            "--reply-audio",
            metavar="VOICE",
            help="Ask for spoken replies too, in this voice (OpenAI: alloy; Qwen-Omni: Cherry; a simulated model: an "
            "espeak-ng voice, or auto). The audio is kept with each reply; `omnivchat transcribe` then `score`.",
        ),
    ] = None,
    reply_audio_format: Annotated[
        ReplyFormat,
        typer.Option("--reply-audio-format", help="audio.format asked (DashScope: wav only; OpenAI streams pcm16)."),
    ] = ReplyFormat.wav,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run only shard I of N (numbered from 1): the items whose key hashes to it, the same on every "
            "machine. Give each shard its own --output; `omnivchat runs merge` joins them into one run.",
        ),
    ] = None,
) -> None:
    """Run a model on a benchmark into a resumable, auditable run directory.

    Running the same command again resumes: completed replies are reused, failed items retried, and every earlier
    attempt kept. A run directory made with other inputs (data, clips, prompt, model settings) is refused; one
    made by another omnivchat version resumes, with a warning (request hashes cover what is sent).

    --dry-run prints what would be sent and its estimated cost, sending nothing. With --budget the run stops
    sending once the next request would pass the budget (exit status 3); a rerun with a larger one resumes.
    """
    from omnivchat.benchmarks import RunOptions, Source
    from omnivchat.routes import ReplyAudio
    from omnivchat.runs import Shard

    chosen = Shard.parse(shard) if shard is not None else None  # a bad value: one line, before any work
    if str(bench).startswith("hf:/"):  # hf://ORG/NAME[@REVISION] (a Path has collapsed the '//')
        from omnivchat.benchmarks.download import resolve

        got = resolve(str(bench), benchmark, say=lambda line: err_console.print(escape(line), highlight=False))
        spec = "hf://" + str(bench).removeprefix("hf:").lstrip("/")
        err_console.print(f"--data {escape(spec)}: {escape(str(got.data))}", highlight=False)
        bench, media = got.data, media if media is not None else got.media
    summary = run_benchmark(
        benchmark,
        Source(
            data=bench,
            media=media,
            tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()) if tasks else None,
            limit=limit,
            prompts=system_prompt,
            media_roots=media_roots(benchmark, media_root),
            options=given_options(columns=columns, split=split),
        ),
        model,
        output,
        route,
        RunOptions(
            system_prompt=system_prompt,
            concurrency=concurrency,
            limit=limit,
            reply_audio=ReplyAudio(voice=reply_audio, format=reply_audio_format.value) if reply_audio else None,
            shard=chosen,
        ),
        max_attempts=max_attempts,
        progress=progress,
        budget=budget,
        dry_run=dry_run,
    )
    if summary is None:  # a dry run
        return
    if summary.budget is not None and summary.budget.stopped and summary.not_sent:
        raise typer.Exit(code=BUDGET_EXIT)
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
    budget: float | None = None,
    dry_run: bool = False,
) -> RunSummary | None:
    """`eval` (and its aliases): load and validate, check the key and the output folder, run, say what happened.
    A dry run prints its estimate and returns None."""
    from omnivchat._files import check_output_dir
    from omnivchat.benchmarks import check_source, estimate, evaluate, get_benchmark
    from omnivchat.cli.diagnostics import warn_unchecked
    from omnivchat.routes import CredentialError
    from omnivchat.runs import MANIFEST_FILE, RetryPolicy

    benchmark = get_benchmark(name)
    check_source(benchmark, source)  # an option or a flag it does not take: refused before anything
    check_output_dir(output, ours=lambda d: (d / MANIFEST_FILE).is_file(), kind="a run directory")
    dataset = benchmark.load(source)
    for note in getattr(dataset, "notes", ()):  # e.g. a question the release holds twice, by id
        err_console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False)
    speaker = None
    if options.reply_audio is not None:  # a simulated model answers aloud with omnivchat's TTS
        from omnivchat.diagnostics.asr_wer import speak_wav

        speaker = speak_wav
    try:
        the_route = route.route(model, speaker=speaker)
    except CredentialError:
        if not dry_run or model.startswith("cascade:"):  # a cascade's stage keys are named in its FILE
            raise
        # A dry run sends nothing: its estimate needs the model's settings and price, not its key.
        the_route = dataclasses.replace(route, no_key=True).route(model, speaker=speaker)
        err_console.print(f"note: no key found for {model}: a dry run needs none, the real run will", highlight=False)
    warn_unchecked(the_route)
    options.sampling = route.sampling()
    if dry_run:
        print_dry_run(estimate(benchmark, dataset, the_route, output, options))
        return None
    summary = evaluate(
        benchmark,
        dataset,
        source,
        the_route,
        output,
        options,
        retry=RetryPolicy(max_attempts=max_attempts),
        progress=progress,
        budget_usd=budget,
    )
    for note in summary.notes:
        err_console.print(f"[yellow]warning:[/] {escape(note)}", highlight=False)
    verb = "resumed" if summary.resumed else "ran"
    part = f" of shard {options.shard.label}" if options.shard is not None else ""
    console.print(
        f"{verb} {summary.total} items{part} in {summary.elapsed_s:.1f} s: {summary.done} done "
        f"({summary.reused} reused), {summary.failed} failed, {summary.attempts} requests sent"
    )
    print_failures(summary.failures, summary.first_errors)
    print_dropped(output)
    print_cost(summary)
    if the_route.settings.route == "sim":
        console.print("[yellow]simulated model: this run checks the harness, it says nothing about a real model[/]")
    # Besides the manifest and the store: the clips a benchmark composed, the spoken replies' audio.
    extra = [f"{output / name}/" for name in ("clips", "audio") if (output / name).is_dir()]
    console.print(f"wrote {', '.join([str(output / 'manifest.json'), str(output / 'store.sqlite'), *extra])}")
    return summary


BUDGET_EXIT = 3
"""Exit status of a command stopped by its --budget (1: failed or missing items; 2: an error)."""


def print_dry_run(dry: DryRun) -> None:
    """A dry run's estimate, line by line (nothing was sent)."""
    for line in dry.lines():
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def print_cost(summary: RunSummary, what: str = "items") -> None:
    """This invocation's cost and, when a budget stopped it, the budget's message (on stderr)."""
    console.print(f"cost of this invocation: {summary.cost.describe()}", markup=False, highlight=False)
    budget = summary.budget
    if budget is not None and budget.stopped and summary.not_sent:
        message = budget.message(done=summary.done, total=summary.total, not_sent=summary.not_sent, what=what)
        err_console.print(f"[bold yellow]{escape(message)}[/]", highlight=False, soft_wrap=True)


@runs_app.command("show")
def show_command(run_dir: Annotated[Path, typer.Argument(help="Run directory.")]) -> None:
    """Which prompts ran (omnivchat's default, the paper's, or a user file), counts by status and failure kind,
    attempts, tokens, and the cost (in all and per kind of request, from each attempt's usage at the model's price;
    attempts of unknown cost counted apart: docs/costs.md); attempts and failures per replica of a replica set;
    the model names and system fingerprints the servers reported, with a warning when they changed during the run.

    Reads any run directory (an omnivchat run, a SocialOmni run or its judging directory) without changing it:
    while it is being written (the writer's pid is shown), and on read-only storage.
    """
    from omnivchat.benchmarks import status as run_status
    from omnivchat.runs import RunStatus

    status = run_status(run_dir)
    if isinstance(status, dict):  # a benchmark written before statuses were typed
        status = RunStatus.model_validate(status)
    label = " [yellow](simulated)[/]" if status.simulated else ""
    rows: list[tuple[str, ...]]
    if status.tasks is not None:  # a benchmark with tasks (SocialOmni, or any run read by the generic status)
        limit = f", --limit {status.limit}" if status.limit is not None else ""
        name = status.label or str(status.benchmark)
        where = f"{escape(name)} run of {escape(str(status.model))} via {escape(str(status.route))}{label}"
        console.print(f"{escape(str(run_dir))}: {where}{limit}", highlight=False)
        columns: tuple[str, ...] = ("task", "declared", "done", "failed", "not run")
        rows = [(task, str(c.declared), str(c.done), str(c.failed), str(c.not_run)) for task, c in status.tasks.items()]
    elif status.judges is not None:
        judges = ", ".join(status.judges)
        name = escape(str(status.label or status.benchmark))
        where = f"{name} judging, panel {escape(str(status.panel))} ({escape(judges)})"
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
    if status.shard is not None:
        console.print(f"Shard {status.shard}: the counts are this shard's items (omnivchat runs merge joins them)")
    if status.prompts:  # which prompt ran: omnivchat's own is not the paper's protocol
        shown_prompts = "; ".join(f"{kind} {label}" for kind, label in status.prompts.items())
        console.print(f"Prompts: {shown_prompts}", markup=False, highlight=False)
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
            # token counts come back as floats (the status model): a count is printed as the whole number it is
            shown = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in values.items()}
            line = f"{title}: " + ", ".join(f"{k} {v}" for k, v in sorted(shown.items()))
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if status.cost is not None:
        print_run_cost(status.cost, writing=status.writer is not None)
    print_served(status)
    print_delivery(run_dir)


def print_delivery(run_dir: Path) -> None:
    """How the clips' audio was sent, what served the model (and what was changed for it), and the streams that
    replies were made without."""
    from omnivchat.routes import RouteSettings, ServerInfo, describe_delivery
    from omnivchat.runs import MANIFEST_FILE

    try:
        manifest = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
        route = manifest.get("route") if isinstance(manifest.get("route"), dict) else {}
        settings = RouteSettings.model_validate({**route.get("settings", {}), "route": route.get("kind", "openai")})
        console.print(f"Audio delivery: {describe_delivery(settings)}", markup=False, highlight=False)
    except (OSError, ValueError, AttributeError, TypeError):
        pass  # a run of another shape (SocialOmni's): its own lines above say what it holds
    else:
        if isinstance(manifest.get("server"), dict):
            with contextlib.suppress(ValueError):
                info = ServerInfo.model_validate(manifest["server"])
                said = f"Server: {info.label()} ({info.source})"
                console.print(said + "".join(f"; {c}" for c in info.adapted), markup=False, highlight=False)
    print_dropped(run_dir)


def print_dropped(run_dir: Path) -> None:
    """A warning per stream that replies were made without (the route did not deliver it)."""
    from omnivchat.runs import STORE_FILE, RunStore

    if not (run_dir / STORE_FILE).is_file():
        return
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        replies, dropped = store.dropped_counts()
    for stream, n in sorted(dropped.items()):
        err_console.print(
            f"warning: {n} of {replies} replies were made without the clip's {stream} (the route did not deliver it)",
            markup=False,
            highlight=False,
        )


def print_served(status: RunStatus) -> None:
    """Per replica, the attempts it took and how many failed; per kind of request, what the servers said they
    served (model name, system_fingerprint); a warning when that changed during the run."""
    from omnivchat.runs import served_changes

    for replica, outcomes in status.replicas.items():
        failed = outcomes.get("failed", 0)
        line = f"Replica {replica}: {sum(outcomes.values())} attempts, {failed} failed"
        if outcomes.get("interrupted"):
            line += f", {outcomes['interrupted']} in flight or interrupted"
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for kind, entries in status.served.items():
        console.print(f"Served ({kind}): " + "; ".join(e.describe() for e in entries), markup=False, highlight=False)
    for line in served_changes(status.served):
        err_console.print(f"warning: {line}", markup=False, highlight=False)
    for kind, n in status.redacted.items():  # the key was masked inside these replies: not what the model sent
        err_console.print(
            f"warning: {n} {kind} replies held the key and were masked (redacted: true in the export): their text is "
            "not what the model sent",
            markup=False,
            highlight=False,
        )


def print_run_cost(cost: RunCost, *, writing: bool = False) -> None:
    """A run's cost in all and per kind of request (per task, per judge): a known total, and the attempts whose
    cost is unknown counted apart with their reason (never as $0)."""
    from omnivchat.runs import CostTotals

    def shown(totals: CostTotals) -> str:
        if writing and "interrupted" in totals.unknown:  # an attempt without an outcome may be in flight now
            unknown = dict(totals.unknown)
            unknown["in flight or interrupted"] = unknown.pop("interrupted")
            totals = totals.model_copy(update={"unknown": unknown})
        return totals.describe()

    console.print(f"Cost: {shown(cost.total)}", markup=False, highlight=False)
    if len(cost.by_kind) > 1:
        for kind, totals in sorted(cost.by_kind.items()):
            console.print(f"  {kind}: {shown(totals)}", markup=False, highlight=False)


@runs_app.command("merge")
def merge_command(
    shards: Annotated[list[Path], typer.Argument(help="The shard directories (every shard of one eval --shard I/N).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The merged run directory (new).")],
    allow_incomplete: Annotated[
        bool,
        typer.Option(
            "--allow-incomplete", help="Merge shards that have failed or missing items (then so has the run)."
        ),
    ] = False,
) -> None:
    """Merge the shards of one run (eval --shard I/N, each in its own directory) into one run directory.

    The shards must share one manifest but for the shard, and hold every item the run declares exactly once; a
    missing shard or item, a duplicated one, or an incomplete shard (without --allow-incomplete) is refused, naming
    it. The merged run holds every request, attempt, cost and verdict of the shards; its export is an unsharded
    run's. Nothing is written over: OUTPUT must be new.
    """
    from omnivchat.benchmarks import merge_runs

    summary = merge_runs(shards, output, allow_incomplete=allow_incomplete)
    for note in summary.notes:
        err_console.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    for line in summary.incomplete:
        err_console.print(f"[yellow]incomplete:[/] {escape(line)}", highlight=False)
    console.print(
        f"merged {summary.shards} shards: {summary.done} of {summary.declared} items done"
        + ("" if summary.done == summary.declared else " (the merged run is incomplete)"),
        highlight=False,
    )
    console.print(f"wrote {output}/ (manifest.json, store.sqlite, invocations.jsonl)", highlight=False)


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
    """Write per-item replies and metadata of a run of any benchmark as JSON (one schema for every benchmark:
    omnivchat-benchmark-export-v1), without credentials or endpoint addresses; an incomplete run is refused unless
    --allow-incomplete."""
    from omnivchat._files import check_output_file, write_model
    from omnivchat.benchmarks import export

    check_output_file(output, force=force)
    data = export(run_dir, judging=judging, allow_incomplete=allow_incomplete)
    write_model(output, data)
    console.print(f"wrote {output} ({data.n_records} records, status {data.status})")
