"""CLI commands for judging: `judge`, `judges agree`, and scoring a run (used by `score RUN_DIR`)."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat.cli._app import RETRY_ATTEMPTS, console, err_console, fail, print_failures
from omnivchat.cli._options import (
    BudgetOption,
    DryRunOption,
    JudgeTimeoutOption,
    NoKeyJudgesOption,
    OnlyJudgeOption,
    ProgressOption,
    aggregate_choice,
    given_options,
    note_placeholder_judges,
    panel_members,
)
from omnivchat.cli._words import metric_lines
from omnivchat.cli.calibrate import calibrate_command

if TYPE_CHECKING:
    from omnivchat.benchmarks import Benchmark, ScoreSummary, ScoreTable
    from omnivchat.judges import AgreementReport

judges_app = typer.Typer(rich_markup_mode=None, help="Judge studies.", no_args_is_help=True)


def judge_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory whose replies are graded (any benchmark's).")],
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file (TOML or JSON): judges and panels.")
    ] = None,
    panel: Annotated[
        str | None, typer.Option("--panel", help="Panel to run (default: 'default', else every judge).")
    ] = None,
    only_judge: OnlyJudgeOption = None,
    bench: Annotated[
        Path | None, typer.Option("--bench", "--data", help="The run's data (default: the one it recorded).")
    ] = None,
    prompt: Annotated[Path | None, typer.Option("--prompt", help="Replace the judge's prompt.")] = None,
    style_prompt: Annotated[
        Path | None,
        typer.Option(
            "--style-prompt",
            help="Style-judge system prompt file (e.g. the paper's E.4 style prompt, recognised and labelled so).",
        ),
    ] = None,
    style_judge: Annotated[str | None, typer.Option("--style-judge", help="Judge that also grades style.")] = None,
    aliases: Annotated[
        str | None, typer.Option("--aliases", help="Other correct names of the model under test, comma-separated.")
    ] = None,
    contexts: Annotated[
        Path | None, typer.Option("--contexts", help="A benchmark's judging inputs (SocialOmni: judge-contexts.json).")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Judging directory, for a benchmark that keeps one (SocialOmni)."),
    ] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Asks per verdict before it is unscored (retries included).")
    ] = RETRY_ATTEMPTS,
    progress: ProgressOption = True,
    budget: BudgetOption = None,
    dry_run: DryRunOption = False,
    no_key: NoKeyJudgesOption = False,
    timeout: JudgeTimeoutOption = None,
) -> None:
    """Grade a run's replies with LLM judges, through the one judge engine, for any benchmark.

    An OmniVChat run gets rubric verdicts (and style with --style-judge) in its own store; a SocialOmni run gets
    its How panel in a judging directory (--contexts, --judges; default RUN/judging). A second pass sends nothing
    new; --only-judge runs one judge and a later pass assembles the panel. A verdict that does not parse is asked
    again at most --max-attempts times, then left unscored with its reason. The offline judge 'rule' needs no
    judging pass.

    --dry-run prints the verdict requests a pass would send and their estimated cost, sending nothing. --budget
    caps the run directory's total spending (the model's requests count too; a judge needs a price in the judges
    file): verdicts past it are not asked (exit status 3), and a rerun with a larger budget resumes.
    """
    from omnivchat.benchmarks import Judged, JudgeOptions, benchmark_of, check_options
    from omnivchat.cli.runs import BUDGET_EXIT, print_dry_run
    from omnivchat.judges import RULE_JUDGE, load_judges

    benchmark = benchmark_of(run_dir)
    if RULE_JUDGE in (panel, only_judge):  # it grades as `score` reads the run: there is nothing to ask
        console.print(
            f"the rule judge is offline and needs no judging pass: run `omnivchat score {run_dir} --panel rule`",
            highlight=False,
            markup=False,
        )
        return
    # A dry run sends nothing: it needs the judges' settings and prices, not their keys.
    config = load_judges(judges, no_key=no_key or dry_run)
    if timeout is not None:
        config = config.with_timeout(timeout)
    note_placeholder_judges(config, [only_judge] if only_judge else None)
    options = JudgeOptions(
        config=config,
        data=bench,
        judges_file=judges,
        panel=panel,
        only_judge=only_judge,
        prompt=prompt,
        max_attempts=max_attempts,
        progress=progress,
        budget_usd=budget,
        dry_run=dry_run,
        no_key=no_key,
        options=given_options(
            contexts=contexts,
            output=output,
            style_judge=style_judge,
            style_prompt=style_prompt,
            aliases=[a.strip() for a in aliases.split(",")] if aliases else None,
        ),
    )
    check_options(benchmark, "judge", options.options)  # an option it does not take: refused before anything
    if not isinstance(benchmark, Judged):  # its replies are scored as they are: there is nothing to ask
        said = f"{benchmark.name} needs no judges: `omnivchat score {run_dir}` scores its replies"
        console.print(said, highlight=False, markup=False)
        return
    outcome = benchmark.judge(None, run_dir, options)
    if outcome.dry_run is not None:
        print_dry_run(outcome.dry_run)
        return
    for kind, s in outcome.summaries.items():
        not_sent = f", {s.not_sent} not asked (budget)" if s.not_sent else ""
        # describe() says "cost unknown (...)" or "no requests sent" whole; only a known total needs the word
        cost = f"cost {s.cost.describe()}" if s.cost.priced else s.cost.describe()
        console.print(
            f"{kind}: {s.done}/{s.total} verdicts ({s.reused} stored, {s.attempts} requests sent), "
            f"{s.failed} unscored{not_sent}; {cost}"
        )
        print_failures(s.failures, s.first_errors, title=f"{kind}: unscored verdicts by kind")
    for note in outcome.notes:
        console.print(note, highlight=False, markup=False)
    if outcome.summaries:  # a benchmark that needs no judges wrote nothing: saying otherwise would mislead
        console.print(f"wrote verdicts under {outcome.where}")
    stopped = [s for s in outcome.summaries.values() if s.budget is not None and s.budget.stopped]
    not_sent = sum(s.not_sent for s in outcome.summaries.values())
    if stopped and not_sent:
        summaries = list(outcome.summaries.values())
        message = stopped[0].budget.message(
            done=sum(s.done for s in summaries), total=sum(s.total for s in summaries), not_sent=not_sent,
            what="verdicts",
        )  # fmt: skip
        err_console.print(f"[bold yellow]{escape(message)}[/]", highlight=False, soft_wrap=True)
        raise typer.Exit(code=BUDGET_EXIT)
    if not outcome.complete:
        raise typer.Exit(code=1)


def score_run(
    run_dir: Path,
    bench: Path | None,
    judges: Path | None,
    panel: str | None,
    aggregate: str,
    style_judge: str | None,
    allow_incomplete: bool = False,
    delivered_only: bool = False,
    *,
    benchmark: ScoreSummary | None = None,
) -> tuple[str, dict[str, Any]]:
    """A run of a benchmark that shows its own table (the native one: its Table 1 row) under a panel (or one judge),
    from stored verdicts; prints it and the unscored. ``benchmark``: the run's, when already found.

    Items are counted against the data: a run with items that have no reply is incomplete, which ends the
    command with status 1 unless ``allow_incomplete`` (scores.json is written either way, marked incomplete)."""
    from omnivchat.benchmarks import ScoreOptions, ScoreSummary, benchmark_of
    from omnivchat.judges import load_judges

    if benchmark is None:
        found = benchmark_of(run_dir)
        if not isinstance(found, ScoreSummary):
            raise fail(f"{run_dir} is a {found.name} run: it has no table of its own to score")
        benchmark = found
    how = aggregate_choice(aggregate)
    config = load_judges(judges)
    members = panel_members(config, panel, judges)
    options = ScoreOptions(
        config=config,
        panel=members,
        aggregate=how,
        data=bench,
        options=given_options(style_judge=style_judge, delivered_only=delivered_only or None),
    )
    report = benchmark.score_summary(run_dir, options)
    for table in report.tables:
        print_table(table)
    for line in report.lines:
        console.print(line, markup=False, highlight=False)
    if report.written is not None:
        console.print(f"wrote {report.written}")
    if report.not_written is not None:
        err_console.print(f"[yellow]warning:[/] {report.not_written}")
    print_failures(report.unscored, report.first_unscored, title="unscored items by kind")
    for note in report.notes:
        console.print(note, markup=False, highlight=False)
    if report.incomplete is not None:
        err_console.print(
            f"[bold yellow]{report.incomplete}[/]"
            + ("" if allow_incomplete else ", or pass --allow-incomplete to accept them")
        )
        if not allow_incomplete:
            raise typer.Exit(code=1)
    return report.name, report.values


@judges_app.command("agree")
def agree_command(
    run_dir: Annotated[
        Path, typer.Argument(help="Run directory graded by the judges compared (by one judge with --human).")
    ],
    judges: Annotated[
        str,
        typer.Option("--judges", help="Judge names to compare, comma-separated (two or more; one with --human)."),
    ],
    human: Annotated[
        Path | None,
        typer.Option(
            "--human",
            help="Human verdicts, a .csv or .jsonl of rater,instance,criterion,met[,reply,note]: each judge's and "
            "the panel's agreement with people per tier (docs/judges-vs-people.md).",
        ),
    ] = None,
    bench: Annotated[Path | None, typer.Option("--bench", help="Bench directory (default: the run's own).")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="JSON file (default RUN_DIR/agreement.json).")
    ] = None,
    resamples: Annotated[int, typer.Option("--resamples", min=10, help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite an existing --output file (the default, RUN_DIR/agreement.json, is this command's own: "
            "replaced without it).",
        ),
    ] = False,
) -> None:
    """Table 2 of the paper for any judges on the same replies: per-judge scores, pairwise agreement and kappa,
    Krippendorff's alpha, bootstrap SD, repeat-run variation, variance shares and profile correlations.

    With --human LABELS, also each judge and the panel (per-criterion majority of the judges) against people, per
    tier: accuracy, Cohen's kappa, false-miss and false-accept rates with 95% intervals, and the raters' agreement
    with each other. A label on a reply other than the run's (its reply column differs) is left out and counted."""
    from omnivchat._files import check_output_file, write_text_atomic
    from omnivchat.judges import AGREEMENT_FILE, is_agreement_file, render_agreement, render_human_agreement
    from omnivchat.runs import RunError, RunLocked, run_lock

    own = run_dir / AGREEMENT_FILE
    if output is not None and output.resolve() == own.resolve():
        output = None  # the run's own agreement.json, named: what the default writes
    if output is not None:  # the default, RUN_DIR/agreement.json, is this command's own file: it is replaced
        check_output_file(output, inputs=[bench, human], force=force)
    names = [n.strip() for n in judges.split(",") if n.strip()]
    if len(names) < (1 if human is not None else 2):
        raise fail("--judges needs at least two judge names (one is enough with --human)")
    target = output or own
    if output is None and target.exists() and not is_agreement_file(target):
        raise fail(f"{target} is not an agreement report this command wrote: move it away, or give --output")
    # Writing RUN_DIR/agreement.json makes this a writer of the run: one at a time, and not while it is judged.
    with ExitStack() as held:
        if output is None:
            try:
                held.enter_context(run_lock(run_dir, "judges agree"))
            except RunLocked:
                raise
            except RunError as err:  # a read-only run: the study can still be written elsewhere
                raise fail(f"{err}; or write the study elsewhere with --output FILE") from None
        report = _agreement(run_dir, bench, names, human, resamples, seed)
        for table in render_agreement(report):
            console.print(table)
        if report.human is not None:
            for table in render_human_agreement(report.human):
                console.print(table)
        path = write_text_atomic(target, report.model_dump_json(indent=2) + "\n")
    console.print(f"wrote {path}")


def _agreement(
    run_dir: Path, bench: Path | None, names: list[str], human: Path | None, resamples: int, seed: int
) -> AgreementReport:
    """The agreement study of ``judges agree``, with the people's section when ``human`` labels are given."""
    from omnivchat.benchmarks.native import collect_judgments, judged_replies, run_bench, shard_part
    from omnivchat.judges import (
        HumanLabelsError,
        agreement_report,
        human_agreement,
        labels_sha256,
        read_human_labels,
        run_store_state,
    )

    try:
        labels = read_human_labels(human) if human is not None else None
        state = run_store_state(run_dir)  # before reading: a verdict stored meanwhile makes the study stale
        whole = run_bench(run_dir, bench, whole=True)  # what labels may name: a shard's run covers a part of it
        judgments = collect_judgments(run_dir, shard_part(run_dir, whole), names)
        report = agreement_report(judgments, names, n_resamples=resamples, seed=seed)
        report = report.model_copy(update={"store_state": state})
        if human is not None and labels is not None:
            people = human_agreement(
                judgments,
                labels,
                names,
                rubrics={i.id: i.tiers for i in whole.instances},  # labels off the shard: without a reply here
                replies=judged_replies(run_dir),
                labels_file=str(human.resolve()),  # the report finds it again from any folder
                labels_digest=labels_sha256(human),
                n_resamples=resamples,
                seed=seed,
            )
            report = report.model_copy(update={"human": people})
    except (ValueError, HumanLabelsError) as err:  # too few items, a label that names nothing: one line
        raise fail(str(err)) from None
    return report


def print_table(shown: ScoreTable) -> None:
    """Print a benchmark's table of figures, and the line under it."""
    title = f"{shown.title} [bold red]INCOMPLETE[/]" if shown.incomplete else shown.title
    table = Table(title=title, title_justify="left")
    for column in shown.columns:
        table.add_column(column, justify="right")
    for row in shown.rows:
        table.add_row(*row)
    console.print(table)
    if shown.note:
        console.print(shown.note)


def score_command(
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
    delivered_only: Annotated[
        bool,
        typer.Option(
            "--delivered-only",
            help="Leave out the run's instances that human inspection rejected after the run (inspection.jsonl).",
        ),
    ] = False,
    judging: Annotated[
        Path | None, typer.Option("--judging", help="Judging directory of a benchmark that keeps one (SocialOmni).")
    ] = None,
    asr_wer: Annotated[
        float | None,
        typer.Option(
            "--asr-wer", min=0.0, help="Spoken replies: the ASR's WER for the band (default: the run's measured one)."
        ),
    ] = None,
    asr: Annotated[
        str | None, typer.Option("--asr", help="Spoken replies: whose transcripts (an ASR id, when several made some).")
    ] = None,
) -> None:
    """Print the paper's Table 1 row: from a run's stored judge verdicts (RUN_DIR), or from a hits file; for a
    run of another benchmark, that benchmark's metrics (RUN_DIR/scores.json is written for reports).

    Spoken replies (eval --reply-audio) are scored from their transcripts (`omnivchat transcribe`), with the ASR
    error band beside the accuracy, never subtracted from it; one not transcribed is counted and left unscored.

    Scores use the gated rubric (Eq. 1). From a run, a reply with a failed request or an incomplete panel is
    unscored and counted apart, never averaged as 0; items never run count against the bench, and such a run is
    incomplete (exit status 1 unless --allow-incomplete); no request is sent (run `omnivchat judge` first). From a
    hits file, every bench instance needs exactly one line; a missing id or a hit outside 1..K is an error.
    """
    from omnivchat._files import check_output_file, write_text_atomic
    from omnivchat.bench import BenchError, HitsError, load_bench, load_hits
    from omnivchat.scoring import ScoredReply, rubric_score, table1_row

    if (run_dir is None) == (hits is None):
        raise fail("give either RUN_DIR (score a run) or --bench with --hits (score a hits file)")
    if output is not None:
        check_output_file(output, inputs=[hits, judges], force=force)
    if hits is not None:
        if bench is None:
            raise fail("--hits needs --bench")
        if delivered_only:
            raise fail("--delivered-only scores a run (RUN_DIR); a hits file covers the delivered instances already")
        try:
            loaded = load_bench(bench)
            graded = load_hits(hits, loaded)
        except (BenchError, HitsError) as err:
            raise fail(str(err)) from None
        records = [
            ScoredReply(
                subcategory=i.subcategory,
                source=i.source,
                score=rubric_score(i.tiers, graded[i.id].hits),
                reply=graded[i.id].reply,
                style=None if graded[i.id].style is None else float(bool(graded[i.id].style)),
            )
            for i in loaded.instances
        ]
        name = loaded.info.name
        style_graded = any(g.style is not None for g in graded.values())
        from omnivchat.benchmarks.native import table1_table  # a hits file is graded against a native bench

        row = table1_row(records, style_graded=style_graded)
        print_table(table1_table(row, f"Table 1 row: {name}"))
        values = row.model_dump()
    else:
        assert run_dir is not None
        from omnivchat.benchmarks import ScoreSummary, benchmark_of, check_options

        benchmark = benchmark_of(run_dir)
        own = given_options(
            judging=judging, asr=asr, asr_wer=asr_wer, style_judge=style_judge, delivered_only=delivered_only or None
        )
        check_options(benchmark, "score", own)  # an option it does not take: refused before anything
        if isinstance(benchmark, ScoreSummary):  # its own table (the native one: its Table 1 row, as the paper prints)
            name, values = score_run(
                run_dir,
                bench,
                judges,
                panel,
                aggregate,
                style_judge,
                allow_incomplete,
                delivered_only,
                benchmark=benchmark,
            )
        else:
            name, values = score_benchmark_run(benchmark, run_dir, own, allow_incomplete)
    if output is not None:
        write_text_atomic(output, json.dumps({"bench": name, **values}, indent=2) + "\n")
        console.print(f"wrote {output}")


def score_benchmark_run(
    benchmark: Benchmark[Any], run_dir: Path, own: dict[str, Any], allow_incomplete: bool
) -> tuple[str, dict[str, Any]]:
    """Score a run of any benchmark through its protocol: print its metrics, write RUN_DIR/scores.json. ``own``:
    the benchmark's own options (``--judging``, ``--asr``, ``--asr-wer`` as given)."""
    from omnivchat.benchmarks import SPOKEN_METRIC, ScoreOptions, save_scores

    options = ScoreOptions(options=own)
    scores = benchmark.score(None, run_dir, options)
    console.print(f"[bold]{benchmark.name}[/] run {run_dir}")
    for line in metric_lines(scores.metrics):
        console.print(f"  {line}", highlight=False, markup=False)
    spoken = scores.metrics.get(SPOKEN_METRIC)
    if spoken:
        console.print(f"  {spoken_line(spoken)}", highlight=False, markup=False)
    unscored = [i for i in scores.items if i.score is None]
    console.print(f"{len(scores.items)} items: {len(scores.items) - len(unscored)} scored, {len(unscored)} unscored")
    try:
        console.print(f"wrote {save_scores(run_dir, scores)}")
    except OSError as err:  # read-only storage: the figures above are the result
        err_console.print(f"[yellow]warning:[/] {run_dir / 'scores.json'} not written ({err.strerror})")
    if scores.incomplete is not None:
        err_console.print(f"[bold yellow]{escape(scores.incomplete)}[/]", highlight=False)
        if not allow_incomplete:
            raise typer.Exit(code=1)
    return benchmark.name, scores.model_dump(mode="json")


def spoken_line(spoken: dict[str, Any]) -> str:
    """The spoken replies' accuracy with the ASR error band beside it, in one line."""
    accuracy, band = spoken.get("accuracy"), spoken.get("band")
    head = "spoken replies: accuracy " + ("n/a" if accuracy is None else f"{accuracy:.3f}")
    if band is None:
        head += " (ASR band unknown: no WER)"
    else:
        head += f" ± {band:.3f} ASR band at WER {spoken['wer']:.3f}, beside the accuracy, never subtracted from it"
    return f"{head}; WER {spoken.get('wer_source')}; {spoken.get('not transcribed', 0)} not transcribed"


judges_app.command("calibrate")(calibrate_command)
