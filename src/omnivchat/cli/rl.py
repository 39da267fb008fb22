"""`omnivchat rl ...`: OmniVChat-RL tools. `rl dataset` writes the Table 4 training set for TRL, verl or ms-swift;
`rl smoke` runs TRL for two steps on a CPU; `rl curves` plots Figure 4, selects the checkpoint and computes the
Appendix E.5 correlations from a training run's reward log and its per-checkpoint evaluation runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from omnivchat.cli._app import console, err_console, fail, warn
from omnivchat.cli._options import check_choice

if TYPE_CHECKING:
    from omnivchat.rl.curves import Agreement, CurvesFile, Estimate

rl_app = typer.Typer(
    rich_markup_mode=None,
    help="OmniVChat-RL: the training set (Table 4), a CPU smoke run, training analytics (Figure 4, Appendix E.5).",
    no_args_is_help=True,
)


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _sign(stats: Agreement) -> str:
    s = stats.sign
    if s.p is None:
        return f"no non-zero pair ({s.ties} ties)"
    return f"{s.agree}/{s.n} agree, p {s.p:.3g}" + (f", {s.ties} ties left out" if s.ties else "")


def _estimate(e: Estimate, digits: int = 4) -> str:
    return f"n/a ({e.note})" if e.value is None else f"{e.value:.{digits}f}"


def print_curves(result: CurvesFile) -> None:
    """The selection, the left-out runs, and the Appendix E.5 table with its sign tests."""
    selection = result.selection
    if selection is not None:
        if selection.step is None:
            console.print(f"[yellow]{selection.note}[/]", highlight=False)
        else:
            console.print(f"selected checkpoint: step {selection.step} ({selection.note})", highlight=False)
    for name, points in result.checkpoints.items():
        for p in points:
            if p.excluded is not None:
                warn(f"{name} step {p.step} left out: {p.excluded} ({p.path})")
            elif p.n_unscored:
                warn(f"{name} step {p.step}: {p.n_unscored} of {p.n_items} items unscored, averaged without them")
    control = result.control
    if control is not None and result.checkpoints:
        if control.set is not None:
            console.print(
                f"Figure 4 control: {control.set}, the {control.language} items of {control.of}", highlight=False
            )
        else:
            console.print(f"Figure 4 control ({control.language} items of {control.of}): absent, {control.absent}")
    label = "Pooled Mean" if result.metric == "pooled" else "Subcategory Mean"
    if result.trends:
        trends = Table(title=f"Appendix E.5: each curve ({label})", title_justify="left")
        for column in ("set", "points", "Spearman with step", "noise σ̂ (5-point MA)", "mean gain", "σ̂ / gain"):
            trends.add_column(column)
        for t in result.trends:
            rho = t.with_step.spearman
            trends.add_row(
                t.set,
                str(t.with_step.n),
                f"n/a ({t.with_step.note or 'undefined'})" if rho is None else f"{rho:.3f}",
                _estimate(t.noise),
                _estimate(t.gain),
                _estimate(t.ratio, 2),
            )
        console.print(trends)
    if not result.pairs:
        return
    table = Table(title=f"Appendix E.5: correlations of the held-out curves ({label})", title_justify="left")
    for column in ("pair", "grid", "level r (n)", "change r (n)", "sign test on changes"):
        table.add_column(column)
    for pair in result.pairs:
        grids: list[tuple[str, Agreement]] = [("checkpoints", pair.checkpoints)]
        grids += [(f"blocks of {b.k} ({b.blocks})", b) for b in pair.blocks]
        for grid, stats in grids:
            table.add_row(
                f"{pair.a}–{pair.b}",
                grid,
                f"{_num(stats.level.r)} ({stats.level.n})",
                f"{_num(stats.change.r)} ({stats.change.n})",
                _sign(stats),
            )
    console.print(table)


def curves_command(
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Folder for the plots and numbers: new, empty, or an earlier rl curves folder."
        ),
    ],
    log: Annotated[
        list[Path] | None,
        typer.Option(
            "--log",
            help="The reward service's per-step log (JSONL: step, r, f, e, s, total; optional reply_efficiency, "
            "reply_length). Repeat for a training resumed into another file.",
            show_default=False,
        ),
    ] = None,
    evals: Annotated[
        list[str] | None,
        typer.Option(
            "--eval",
            help="An evaluation run as SET:STEP=PATH (PATH: a run directory or its scores.json), e.g. "
            "dev:20=runs/ck20. Repeat for every set and checkpoint.",
            show_default=False,
        ),
    ] = None,
    index: Annotated[
        Path | None,
        typer.Option(
            "--evals",
            help='Index of evaluation runs (JSON, or TOML by suffix): {"dev": {"20": "runs/ck20"}, "bench": {...}}; '
            "relative paths are taken from the index's folder.",
        ),
    ] = None,
    blocks: Annotated[
        list[int] | None,
        typer.Option(
            "--block",
            min=2,
            help="Block size k: checkpoints averaged per block for Appendix E.5 (repeat for several) "
            "(default: 5 and 10, the block sizes Appendix E.5 reports).",
            show_default=False,
        ),
    ] = None,
    select_on: Annotated[
        str, typer.Option("--select-on", help="Set whose Subcategory Mean selects the checkpoint.")
    ] = "dev",
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            help="Score correlated across sets: pooled (Pooled Mean, as Appendix E.5) or subcategory "
            "(Subcategory Mean, as Figure 4).",
        ),
    ] = "pooled",
    control_of: Annotated[
        str,
        typer.Option(
            "--control",
            help="Set whose Chinese (zh) items make Figure 4's control curve, SET-zh (absent when its runs hold none).",
        ),
    ] = "bench",
) -> None:
    """Plot Figure 4 of a training run, select its checkpoint and correlate its held-out curves (Appendix E.5).

    The top row comes from the reward log: the unweighted reward terms, raw Reply Efficiency and reply length per
    step. The bottom row is each set's Subcategory Mean per checkpoint, with the selected checkpoint: the one with
    the best development Subcategory Mean (ties: the earliest). An incomplete or unscored run is left out and
    listed, never read as 0. For every pair of sets: level and change correlations over checkpoints and over
    block means of k checkpoints, each with its number of points, and the sign test on the changes. For each
    curve: its correlation with the training step, the residual SD around a centered five-point moving average,
    the mean gain per checkpoint and their ratio. Figure 4's control, the Chinese items of the bench set, is a
    curve of its own when the runs hold them.
    """
    from omnivchat._files import check_output_dir
    from omnivchat.rl.curves import (
        DEFAULT_BLOCKS,
        METRICS,
        add_control,
        analyse,
        eval_grid,
        is_curves_dir,
        parse_eval_spec,
        read_eval_index,
        read_evaluations,
        read_reward_logs,
        write_curves,
    )

    check_choice("--metric", metric, METRICS)
    if not log and not evals and index is None:
        raise fail("give a reward log (--log) and evaluation runs (--eval SET:STEP=PATH or --evals INDEX)")
    check_output_dir(output, ours=is_curves_dir, kind="an rl curves folder")
    specs = [parse_eval_spec(text) for text in evals or []]
    if index is not None:
        specs += read_eval_index(index)
    steps = read_reward_logs(log) if log else []
    grid = eval_grid(specs)
    curves, control = add_control(read_evaluations(grid), grid, of=control_of)
    result = analyse(
        log or [],
        steps,
        curves,
        select_on=select_on,
        metric="subcategory" if metric == "subcategory" else "pooled",
        blocks=blocks or DEFAULT_BLOCKS,
        control=control,
    )
    print_curves(result)
    written = write_curves(output, steps, result)
    if log and not any(p.name == "reply-efficiency.png" for p in written):
        warn("the log has no reply_efficiency: the raw Reply Efficiency panel is empty")
    if log and not any(p.name == "reply-length.png" for p in written):
        warn("the log has no reply_length: the reply length panel is empty")
    for path in written:
        console.print(f"wrote {path}", highlight=False)


rl_app.command("curves")(curves_command)


def smoke_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for all the run writes (new or empty).")],
    steps: Annotated[int, typer.Option("--steps", min=1, help="Training steps.")] = 2,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random model and the sampling.")] = 0,
) -> None:
    """A CPU smoke run: TRL's GRPOTrainer with the Table 4 GSPO settings (Eq. 3) on a tiny random model built
    here, rewarded by the reward service with the rule judge (Eq. 4-6, style weight 0); prints each step's reward
    terms and every file written. Offline: nothing is downloaded. Needs the `rl` extra (see docs/rl.md)."""
    import os

    from omnivchat.rl.smoke import StepReport, offline_environment, run_smoke

    os.environ.update(offline_environment(output))  # before transformers loads: it reads them at import

    def show(report: StepReport) -> None:
        terms = "  ".join(f"{name} {_num(getattr(report, name))}" for name in ("r", "f", "e", "s", "total"))
        extra = f", {report.unscored} unscored ({report.failures} failures)" if report.unscored else ""
        console.print(
            f"step {report.step}: {report.replies} replies to {report.prompts} prompts: {terms}{extra}",
            highlight=False,
        )

    result = run_smoke(
        output, steps=steps, seed=seed, on_step=show, on_start=lambda line: console.print(line, highlight=False)
    )
    for line in result.train_log:
        if "loss" in line and "step" in line:
            console.print(
                f"step {line['step']}: loss {_num(line.get('loss'), 6)}, reward {_num(line.get('reward'))}, "
                f"clipped {_num(line.get('clip_ratio/region_mean'))}",
                highlight=False,
            )
    for path in result.written:
        console.print(f"wrote {path}", highlight=False)
    console.print(f"smoke run done in {result.elapsed_s:.1f} s", highlight=False)


rl_app.command("smoke")(smoke_command)


def dataset_command(
    bench_dir: Annotated[Path, typer.Argument(help="Bench directory (bench.yaml, instances.jsonl, media/).")],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Folder for the set: new, empty, or an earlier `rl dataset` folder."),
    ],
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="trl (a datasets.Dataset saved with save_to_disk), verl (parquet with extra_info) or swift "
            "(ms-swift JSONL with videos/audios).",
        ),
    ],
    processor: Annotated[
        Path | None,
        typer.Option(
            "--processor",
            help="Local Hugging Face processor or tokenizer folder of the policy to count prompt tokens with "
            "(never downloaded; default: a stated estimate, see docs/rl.md).",
        ),
    ] = None,
    estimate: Annotated[
        str,
        typer.Option(
            "--estimate",
            help="Model whose processor defaults the token estimate follows, for video and audio when --processor "
            "cannot count them: qwen3-omni (the paper's policy) or qwen2.5-omni.",
        ),
    ] = "qwen3-omni",
    system_prompt: Annotated[
        Path | None,
        typer.Option("--system-prompt", help="System prompt file (default: omnivchat's spoken-assistant prompt)."),
    ] = None,
    max_prompt_tokens: Annotated[
        int, typer.Option("--max-prompt-tokens", min=1, help="Prompt budget: longer dialogues are left out.")
    ] = 11072,
    max_reply_tokens: Annotated[
        int, typer.Option("--max-reply-tokens", min=1, help="Reply budget, recorded for the engine's settings.")
    ] = 1024,
    fps: Annotated[float, typer.Option("--fps", min=0.01, help="Video frames sampled per second of a clip.")] = 2.0,
    max_frames: Annotated[int, typer.Option("--max-frames", min=1, help="Most frames kept per clip.")] = 16,
    max_clips: Annotated[
        int, typer.Option("--max-clips", min=1, help="Most clips per dialogue: longer dialogues are left out.")
    ] = 10,
) -> None:
    """Write the OmniVChat-RL training set as Table 4 builds it, in one engine's own format.

    Each clip is re-encoded with only its frames sampled at --fps (at most --max-frames, spread evenly over a
    longer clip) and its whole audio track; a dialogue is the system prompt, then each turn's clip with the earlier
    reference replies as history. Dialogues with more than --max-clips clips, or whose prompt is over
    --max-prompt-tokens, are left out and listed. manifest.json records the settings, the source bench's hashes,
    each dialogue's prompt tokens and how they were counted, and what was left out.
    """
    from omnivchat._progress import progress_bar
    from omnivchat.rl.dataset import Settings, build_dataset

    settings = Settings(
        fps=fps,
        max_frames=max_frames,
        max_clips=max_clips,
        max_prompt_tokens=max_prompt_tokens,
        max_reply_tokens=max_reply_tokens,
    )
    with progress_bar(console=err_console, transient=True, disable=not err_console.is_terminal) as progress:
        task = progress.add_task("sampling clips", total=None)
        result = build_dataset(
            bench_dir,
            output,
            engine,
            settings=settings,
            processor=processor,
            system_prompt=system_prompt,
            estimate=estimate,
            on_progress=lambda done, total, _: progress.update(task, completed=done, total=total),
        )
    console.print(f"prompt tokens: {result.method}", highlight=False, soft_wrap=True)
    if result.tokens:
        counts = sorted(result.tokens.values())
        console.print(
            f"measured {len(counts)} prompts: {counts[0]}..{counts[-1]} tokens "
            f"(median {counts[len(counts) // 2]}; budget {max_prompt_tokens})",
            highlight=False,
        )
    for item in result.left_out:
        warn(f"left out {item.id}: {item.reason}")
    console.print(f"{result.rows} dialogues written for {engine}, {len(result.left_out)} left out", highlight=False)
    for key, value in result.manifest["media"]["engine_settings"].items():
        console.print(f"  {key}: {value}", highlight=False, soft_wrap=True)
    for path in result.written:
        console.print(f"wrote {path}", highlight=False)


rl_app.command("dataset")(dataset_command)
