"""`omnivchat socialomni evaluate|judge|rescore|export`: the SocialOmni protocol on omnivchat's runner."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from omnivchat._files import check_output_dir, check_output_file, write_model
from omnivchat.cli._app import RETRY_ATTEMPTS, console, fail
from omnivchat.cli._options import (
    BudgetOption,
    DryRunOption,
    NoKeyJudgesOption,
    OnlyJudgeOption,
    ProgressOption,
    RouteOptions,
    check_choice,
    note_placeholder_judges,
    route_options,
)

if TYPE_CHECKING:
    from omnivchat.socialomni import SocialOmniSummary

_JudgePromptOption = Annotated[
    Path | None,
    typer.Option(
        "--judge-prompt",
        help="Replace the judge prompt (placeholders {context} {target_question} {reference} {candidate}).",
    ),
]

socialomni_app = typer.Typer(
    rich_markup_mode=None,
    help="SocialOmni (Who / When / How): generate, judge with the three-judge panel, rescore archives, export.",
    no_args_is_help=True,
)


def task_lines(summary: SocialOmniSummary) -> list[str]:
    """The evaluate summary, one line per task: fixed denominators, and how many items are missing."""
    lines = []
    tasks = [(task, m) for task in ("who", "when") if (m := summary.task(task)) is not None]
    for task, m in tasks:
        failures = f"{m.request_failures} request failures, {m.parse_failures} parse failures"
        if m.complete and m.accuracy is not None and m.macro_f1 is not None:
            lines.append(f"{task}: accuracy {m.accuracy:.2f}, macro-F1 {m.macro_f1:.2f} over {m.n} ({failures})")
        else:
            lines.append(
                f"{task}: [yellow]incomplete[/]: {m.n_missing} of {m.n} items missing (no record), "
                f"accuracy and macro-F1 null; {m.correct} correct so far ({failures})"
            )
    how = summary.how_generation
    if how.n:
        line = f"how: {how.completed}/{how.n} generated ({how.empty} empty, {how.request_failures} failed"
        lines.append(line + (f", [yellow]{how.n_missing} missing[/] (no record))" if how.n_missing else ")"))
    if any(m.n_missing for _, m in tasks) or how.n_missing:
        lines.append("[yellow]incomplete[/]: run the same command again to generate the missing items")
    return lines


@socialomni_app.command("evaluate")
@route_options
def evaluate_command(
    route: RouteOptions,
    annotations: Annotated[
        Path, typer.Option("--annotations", help="Folder with level_1/dataset.json and level_2/annotations_200.json.")
    ],
    media: Annotated[Path, typer.Option("--media", help="SocialOmni media root.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (resumed when identical).")],
    model: Annotated[
        str, typer.Option("--model", help="Model id, e.g. gemini-3.8-flash or dashscope/qwen3.8-omni-flash.")
    ],
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at most.")] = 8,
    tasks: Annotated[
        str, typer.Option("--tasks", help="Comma-separated, run in the order when, how, who.")
    ] = "when,how,who",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Items per task, for a separate smoke run.")
    ] = None,
    prompt_cards: Annotated[
        Path | None, typer.Option("--prompt-cards", help='JSON {"who","when","how"} cards (e.g. the official ones).')
    ] = None,
    progress: ProgressOption = True,
) -> None:
    """Generate Who / When / How answers: prefixes trimmed at the cut-off before encoding, media first then the
    card text, temperature 0.3, strict full-reply parsing with fixed denominators. Every item is validated before
    the first billed request; repeating the command resumes and retries failures, keeping every attempt.
    --base-url defaults to $OPENAI_API_BASE; sampling flags replace the protocol's (temperature 0.3, top_p 1,
    8192 tokens) and are recorded in the manifest."""
    from omnivchat.benchmarks import RunOptions, Source
    from omnivchat.cli.runs import run_benchmark
    from omnivchat.socialomni import write_summary

    chosen = [t.strip() for t in tasks.split(",") if t.strip()]
    check_choice("--tasks", chosen, ("who", "when", "how"))
    if not route.base_url and route.endpoints is None and os.environ.get("OPENAI_API_BASE"):
        route = dataclasses.replace(route, base_url=[os.environ["OPENAI_API_BASE"]])
    source = Source(data=annotations, media=media, tasks=tuple(chosen), limit=limit, prompts=prompt_cards)
    options = RunOptions(concurrency=concurrency, limit=limit)
    run_benchmark("socialomni", source, model, output, route, options, max_attempts=RETRY_ATTEMPTS, progress=progress)
    for line in task_lines(write_summary(output)):
        console.print(line)
    console.print(f"wrote {output / 'summary.json'}")


@socialomni_app.command("judge")
def judge_command(
    run: Annotated[Path, typer.Argument(help="A hosted run with all When and How records.")],
    contexts: Annotated[
        Path, typer.Option("--contexts", help="judge-contexts.json (context, target_question, reference).")
    ],
    judges: Annotated[Path, typer.Option("--judges", help='Judges file {"judges": [...]} matching the panel exactly.')],
    panel: Annotated[str, typer.Option("--panel", help="standard, paper-v3, gpt56-sol, ...")] = "standard",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Judging directory (default RUN/judging).")
    ] = None,
    only_judge: OnlyJudgeOption = None,
    judge_prompt: _JudgePromptOption = None,
    progress: ProgressOption = True,
    budget: BudgetOption = None,
    dry_run: DryRunOption = False,
    no_key: NoKeyJudgesOption = False,
) -> None:
    """Score How answers with the three-judge panel (0/25/50/75/100, temperature 0): QGold, QEns, Cov+ and
    QEns_joint, all null while any non-empty answer lacks a full panel. Exit status 1 while incomplete.

    The same pass as `omnivchat judge RUN --contexts ... --judges ...`: verdicts stored in the judging directory
    are reused (a rerun sends nothing new); --dry-run prints the verdict requests and their estimated cost,
    sending nothing; --budget caps the judging directory's total spending (each judge needs a price in the judges
    file): verdicts past it are not asked (exit status 3), and a rerun with a larger budget resumes."""
    from omnivchat.cli.judging import judge_command as judge_any
    from omnivchat.socialomni import read_manifest

    read_manifest(run)  # this command judges SocialOmni runs only: another directory is refused, naming it
    judge_any(
        run,
        judges=judges,
        panel=panel,
        only_judge=only_judge,
        prompt=judge_prompt,
        contexts=contexts,
        output=output,
        max_attempts=RETRY_ATTEMPTS,
        progress=progress,
        budget=budget,
        dry_run=dry_run,
        no_key=no_key,
    )


@socialomni_app.command("rescore")
def rescore_command(
    judges: Annotated[Path, typer.Option("--judges", help="Judges file matching the panel exactly.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Rescoring directory.")],
    run: Annotated[
        Path | None, typer.Option("--run", help="A hosted run to rescore (needs --contexts, --model).")
    ] = None,
    contexts: Annotated[
        Path | None, typer.Option("--contexts", help="judge-contexts.json (context, target_question, reference).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Name for the hosted run's model in the results.")
    ] = None,
    paper: Annotated[
        Path | None, typer.Option("--paper", help="Archived answers: ensemble_response_scores.csv.")
    ] = None,
    panel: Annotated[str, typer.Option("--panel", help="standard, paper-v3, gpt56-sol, ...")] = "standard",
    only_judge: OnlyJudgeOption = None,
    judge_prompt: _JudgePromptOption = None,
    progress: ProgressOption = True,
    no_key: NoKeyJudgesOption = False,
) -> None:
    """Rescore How answers from a hosted run or from archived paper answers (QGold null for archives) with the
    same rubric and panel. Writes input.json (normalised) and results.json."""
    from omnivchat.judges import load_judges
    from omnivchat.socialomni import load_judge_template, prepare_from_archive, prepare_from_run, rescore

    if (run is None) == (paper is None):
        raise fail("give either --run (with --contexts and --model) or --paper")
    note_placeholder_judges(load_judges(judges, no_key=no_key), [only_judge] if only_judge else None)
    check_output_dir(output, ours=lambda d: (d / "input.json").is_file(), kind="a SocialOmni rescoring directory")
    if run is not None:
        if contexts is None or model is None:
            raise fail("--run needs --contexts and --model")
        data = prepare_from_run(run, contexts, model)
    else:
        assert paper is not None
        data = prepare_from_archive(paper)
    write_model(output / "input.json", data)
    template, _ = load_judge_template(judge_prompt)
    result = rescore(
        data, judges, panel, output, template=template, only_judge=only_judge, progress=progress, no_key=no_key
    )
    for entry in result.models:
        m = entry.metrics
        console.print(f"{entry.model}: {m.quality_line()}")
        if not m.complete:
            console.print(f"  [yellow]{m.gaps_line()}[/]")
    console.print(f"wrote {output / 'input.json'} and {output / 'results.json'}")
    if not result.complete:
        console.print("[yellow]incomplete[/]: quality metrics stay null until every item has its answer and panel")
        raise typer.Exit(code=1)


@socialomni_app.command("export")
def export_command(
    run: Annotated[Path, typer.Argument(help="Hosted run directory.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSON file to write.")],
    judging: Annotated[Path | None, typer.Option("--judging", help="Judging directory (default RUN/judging).")] = None,
    allow_incomplete: Annotated[bool, typer.Option("--allow-incomplete", help="Export a progress artifact.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
) -> None:
    """Per-item predictions and scores, metrics and status (complete, scored_with_request_failures, incomplete),
    without endpoints or keys, in the one export schema of every benchmark (omnivchat-benchmark-export-v1). An
    incomplete evaluation is refused unless --allow-incomplete."""
    from omnivchat.benchmarks import export
    from omnivchat.socialomni import read_manifest

    check_output_file(output, force=force)
    read_manifest(run)  # a SocialOmni run, or an error naming it
    data = export(run, judging=judging, allow_incomplete=allow_incomplete)
    write_model(output, data)
    console.print(f"wrote {output} (status {data.status}, {len(data.records)} items)")
    for reason in data.incomplete_reasons:
        console.print(f"[yellow]incomplete[/]: {reason}")
