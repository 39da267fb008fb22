"""CLI commands for judging: `judge`, `judges agree`, and scoring a run (used by `score RUN_DIR`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnivchat._cli_runs import RETRY_ATTEMPTS, _fail, console, err_console, print_failures

judges_app = typer.Typer(help="Judge studies.", no_args_is_help=True)


def _errors() -> tuple[type[Exception], ...]:
    from omnivchat.bench import BenchError
    from omnivchat.judges import JudgesFileError
    from omnivchat.routes import CredentialError, SettingsError
    from omnivchat.routes._openai import ConfigError
    from omnivchat.runs import RunError

    return (
        BenchError,
        JudgesFileError,
        CredentialError,
        SettingsError,
        ConfigError,
        RunError,
        KeyError,
        FileNotFoundError,
    )


def judge_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory whose replies are graded.")],
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file (TOML or JSON): judges and panels.")
    ] = None,
    panel: Annotated[
        str | None, typer.Option("--panel", help="Panel to run (default: 'default', else every judge).")
    ] = None,
    only_judge: Annotated[
        str | None, typer.Option("--only-judge", help="Run this one judge; assemble the panel later.")
    ] = None,
    bench: Annotated[Path | None, typer.Option("--bench", help="Bench directory (default: the run's own).")] = None,
    prompt: Annotated[Path | None, typer.Option("--prompt", help="Replace the rubric judge's system prompt.")] = None,
    style_prompt: Annotated[
        Path | None, typer.Option("--style-prompt", help="Replace the style judge's prompt.")
    ] = None,
    style_judge: Annotated[str | None, typer.Option("--style-judge", help="Judge that also grades style.")] = None,
    aliases: Annotated[
        str | None, typer.Option("--aliases", help="Other correct names of the model under test, comma-separated.")
    ] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Asks per verdict before it is unscored (retries included).")
    ] = RETRY_ATTEMPTS,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")] = True,
) -> None:
    """Grade a run's replies with LLM judges (rubric verdicts, and style with --style-judge).

    Verdicts are requests in the run's store: a second pass sends nothing new; --only-judge runs one judge and a
    later pass assembles the panel. A verdict that does not parse is asked again at most --max-attempts times,
    then left unscored with its reason. The offline judge 'rule' needs no judging pass.
    """
    from omnivchat.judges import RULE_JUDGE, JudgePrompts, judge_run, load_judges, run_bench

    try:
        config = load_judges(judges)
        names = [only_judge] if only_judge else config.panel(panel)
        the_bench = run_bench(run_dir, bench)
        report = judge_run(
            run_dir,
            the_bench,
            config,
            [n for n in names if n != RULE_JUDGE],
            prompts=JudgePrompts(rubric=prompt, style=style_prompt),
            style_judge=style_judge,
            aliases=[a.strip() for a in aliases.split(",")] if aliases else None,
            max_attempts=max_attempts,
            progress=progress,
        )
    except _errors() as err:
        raise _fail(str(err)) from None
    for kind, s in report.summaries.items():
        console.print(
            f"{kind}: {s.done}/{s.total} verdicts ({s.reused} stored, {s.attempts} requests sent), {s.failed} unscored"
        )
        print_failures(s.failures, s.first_errors, title=f"{kind}: unscored verdicts by kind")
    console.print(
        f"not judged: {report.empty_replies} empty replies (score 0), {report.failed_candidates} failed requests, "
        f"{report.not_run} items never run"
    )
    if report.failed_candidates or report.not_run:
        n = len(the_bench.instances)
        err_console.print(
            f"[yellow]incomplete:[/] {report.failed_candidates + report.not_run} of {n} items have no reply; "
            "resume the run with `omnivchat eval` to complete it"
        )
    console.print(f"wrote verdicts to {run_dir / 'store.sqlite'} and judge settings to {run_dir / 'judges.json'}")
    if any(s.failed for s in report.summaries.values()):
        raise typer.Exit(code=1)


def write_scores(run_dir: Path, bench, items, row, panel: list[str], aggregate: str, style_judge: str | None) -> Path:
    """RUN_DIR/scores.json: the Table 1 row and every item's score with its reason (what reports read)."""
    import json

    from omnivchat._files import write_text_atomic
    from omnivchat.runs import load_manifest
    from omnivchat.scoring import is_empty_reply

    manifest = load_manifest(run_dir)
    data = {
        "schema": "omnivchat-scores-v1",
        "model": manifest["route"]["model"],
        "simulated": manifest.get("simulated", False),
        "condition": manifest["condition"],
        "bench": {"name": bench.info.name, "version": bench.info.version},
        "panel": panel,
        "aggregate": aggregate,
        "style_judge": style_judge,
        "complete": row.complete,
        "incomplete": row.incompleteness(),
        "table1": row.model_dump(),
        "items": [
            {
                "id": i.item_id,
                "subcategory": i.subcategory,
                "source": i.source,
                "score": i.score,
                "style": i.style,
                "reason": i.reason,
                "per_judge": i.per_judge,
                "empty": i.reply is not None and is_empty_reply(i.reply),
                "request_failed": i.reply is None and i.ran,
                "not_run": not i.ran,
            }
            for i in items
        ],
    }
    return write_text_atomic(Path(run_dir) / "scores.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def print_unscored(items: list) -> None:
    """Unscored items grouped by why (not run, request failed, verdict missing...), with the first reason."""
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for item in items:
        if item.score is None:
            kind = item.failure or "unscored"
            counts[kind] = counts.get(kind, 0) + 1
            first.setdefault(kind, f"{item.item_id}: {item.reason}")
    print_failures(counts, first, title="unscored items by kind")


def score_run(
    run_dir: Path,
    bench: Path | None,
    judges: Path | None,
    panel: str | None,
    aggregate: str,
    style_judge: str | None,
    allow_incomplete: bool = False,
) -> tuple[str, dict]:
    """Table 1 row of a run under a panel (or one judge), from stored verdicts; prints it and the unscored.

    Items are counted against the bench: a run with items that have no reply is incomplete, which ends the
    command with status 1 unless ``allow_incomplete`` (scores.json is written either way, marked incomplete)."""
    from omnivchat.cli import print_table1
    from omnivchat.judges import RULE_JUDGE, collect_scores, load_judges, run_bench
    from omnivchat.scoring import table1_row

    if aggregate not in ("mean", "majority"):
        raise _fail("--aggregate must be 'mean' or 'majority'")
    try:
        config = load_judges(judges)
        if panel in config.judges or panel == RULE_JUDGE:
            members = [panel]
        else:
            members = config.panel(panel) if (judges or panel) else [RULE_JUDGE]
        the_bench = run_bench(run_dir, bench)
        items = collect_scores(run_dir, the_bench, members, aggregate=aggregate, style_judge=style_judge)  # type: ignore[arg-type]
    except _errors() as err:
        raise _fail(str(err)) from None
    row = table1_row([i.scored_reply() for i in items], style_graded=style_judge is not None)
    title = f"Table 1 row: {the_bench.info.name}, panel {'+'.join(members)} ({aggregate})"
    values = print_table1(row, title)
    try:
        written = write_scores(run_dir, the_bench, items, row, members, aggregate, style_judge)
        console.print(f"wrote {written}")
    except OSError as err:  # read-only storage: the row above is the result; say what was not kept
        err_console.print(f"[yellow]warning:[/] {run_dir / 'scores.json'} not written ({err.strerror})")
    print_unscored(items)
    incomplete = row.incompleteness()
    if incomplete is not None:
        err_console.print(
            f"[bold yellow]{incomplete}[/]: these figures are not the bench's; resume the run with `omnivchat eval`"
            + ("" if allow_incomplete else ", or pass --allow-incomplete to accept them")
        )
        if not allow_incomplete:
            raise typer.Exit(code=1)
    return the_bench.info.name, {**values, "panel": members, "aggregate": aggregate}


@judges_app.command("agree")
def agree_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory graded by several judges.")],
    judges: Annotated[str, typer.Option("--judges", help="Judge names to compare, comma-separated (at least two).")],
    bench: Annotated[Path | None, typer.Option("--bench", help="Bench directory (default: the run's own).")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="JSON file (default RUN_DIR/agreement.json).")
    ] = None,
    resamples: Annotated[int, typer.Option("--resamples", min=10, help="Bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
) -> None:
    """Table 2 of the paper for any judges on the same replies: per-judge scores, pairwise agreement and kappa,
    Krippendorff's alpha, bootstrap SD, repeat-run variation, variance shares and profile correlations."""
    from omnivchat._files import check_output_file, write_text_atomic
    from omnivchat.judges import agreement_report, collect_judgments, render_agreement, run_bench

    if output is not None:  # the default, RUN_DIR/agreement.json, is this command's own file: it is replaced
        check_output_file(output, inputs=[bench], force=force)
    names = [n.strip() for n in judges.split(",") if n.strip()]
    if len(names) < 2:
        raise _fail("--judges needs at least two judge names")
    try:
        the_bench = run_bench(run_dir, bench)
        report = agreement_report(collect_judgments(run_dir, the_bench, names), names, n_resamples=resamples, seed=seed)
    except (*_errors(), ValueError) as err:
        raise _fail(str(err)) from None
    for table in render_agreement(report):
        console.print(table)
    path = write_text_atomic(output or run_dir / "agreement.json", report.model_dump_json(indent=2) + "\n")
    console.print(f"wrote {path}")
