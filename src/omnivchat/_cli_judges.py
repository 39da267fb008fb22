"""CLI commands for judging: `judge`, `judges agree`, and scoring a run (used by `score RUN_DIR`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from omnivchat._cli_runs import _fail, console

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
        int, typer.Option("--max-attempts", min=1, help="Asks per verdict before it is unscored.")
    ] = 3,
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
        failures = ", ".join(f"{k} {v}" for k, v in sorted(s.failures.items())) or "none"
        console.print(
            f"{kind}: {s.done}/{s.total} verdicts ({s.reused} stored, {s.attempts} requests sent), unscored: {failures}"
        )
    console.print(
        f"not judged: {report.empty_replies} empty replies (score 0), {report.failed_candidates} failed requests"
    )
    console.print(f"wrote verdicts to {run_dir / 'store.sqlite'} and judge settings to {run_dir / 'judges.json'}")
    if any(s.failed for s in report.summaries.values()):
        raise typer.Exit(code=1)


def score_run(
    run_dir: Path, bench: Path | None, judges: Path | None, panel: str | None, aggregate: str, style_judge: str | None
) -> tuple[str, dict]:
    """Table 1 row of a run under a panel (or one judge), from stored verdicts; prints it and the unscored."""
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
    row = table1_row([i.scored_reply() for i in items])
    title = f"Table 1 row: {the_bench.info.name}, panel {'+'.join(members)} ({aggregate})"
    values = print_table1(row, title)
    unscored = [i for i in items if i.score is None]
    for item in unscored[:10]:
        console.print(f"  unscored {item.item_id}: {item.reason}")
    if len(unscored) > 10:
        console.print(f"  ... and {len(unscored) - 10} more")
    return the_bench.info.name, {**values, "panel": members, "aggregate": aggregate}
