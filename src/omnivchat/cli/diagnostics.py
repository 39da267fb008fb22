"""CLI commands for diagnostics: `ablate`, `check-route`, `demo`."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from omnivchat._files import check_output_dir, check_output_file, write_model
from omnivchat.cli._app import console, err_console, fail
from omnivchat.cli._options import (
    BenchmarkOption,
    ColumnsOption,
    DataOption,
    MediaOption,
    MediaRootOption,
    ProgressOption,
    RouteOptions,
    SplitOption,
    aggregate_choice,
    check_choice,
    given_options,
    media_roots,
    panel_members,
    route_options,
)
from omnivchat.errors import OmnivchatError

if TYPE_CHECKING:
    from omnivchat.routes import Route


def warn_unchecked(route: Route) -> None:
    """Warn when a real route has never passed the audio-track check."""
    from omnivchat.diagnostics.route_check import passing_check_on_record

    if route.settings.route != "sim" and not passing_check_on_record(route):
        err_console.print(
            f"[yellow]warning:[/] no passing audio-track check on record for {route.model_id} with these "
            "settings: run `omnivchat check-route` with the same options to verify the audio really arrives."
        )


def _grid_table(d: Any, title: str) -> Table:
    """One diagnosis: the four conditions and the metrics with their 95% intervals."""
    from omnivchat.diagnostics import CONDITIONS, METRICS

    table = Table(title=title, title_justify="left")
    for column in ("", "mean", "95% CI"):
        table.add_column(column, justify="right" if column else "left")
    for name in CONDITIONS:
        lo, hi = d.intervals[name]
        table.add_row(name, f"{d.means[name]:.3f}", f"{lo:.3f} to {hi:.3f}")
    for name in METRICS:
        value, pair = getattr(d, name), d.intervals.get(name)
        shown = "refused" if value is None else f"{value:+.3f}"
        table.add_row(name, shown, "—" if pair is None else f"{pair[0]:+.3f} to {pair[1]:+.3f}")
    return table


def print_grid(grid: Any, title: str) -> None:
    """The grid of each task (for data with several), then the diagnosis (pooled over them) in words."""
    for name, task in grid.tasks.items():
        if task is None:
            console.print(f"task {name}: too few items to diagnose", highlight=False)
            continue
        console.print(_grid_table(task, f"{title}, task {name} (chance {task.chance:.3f})"))
        console.print(f"  task {name}: [bold]{task.verdict}[/] ({task.n_items} items)", highlight=False)
    d = grid.diagnosis
    if grid.tasks:
        title = f"{title}, pooled over {', '.join(grid.tasks)} (chance {d.chance:.3f}, the items' mean)"
    console.print(_grid_table(d, title))
    console.print(f"[bold]{d.verdict}[/] ({grid.n_items_used} items scored in all four conditions)")
    for line in d.lines:
        console.print(f"  {line}")
    for code, cat in grid.categories.items():
        console.print(f"  {code}: {cat.verdict if cat else 'too few items to diagnose'}")


def _say(line: str) -> None:
    console.print(line, highlight=False, markup=False)


SELF_CHECK_LINE = "self-check: sim:video-blind and sim:audio-blind must be flagged, sim:healthy must not"


def is_ablation_dir(path: Path) -> bool:
    """A directory `ablate` made: ablation.json, or the runs of its conditions or its self-check."""
    from omnivchat.diagnostics import CONDITIONS, SELF_CHECK_DIR

    return (
        (path / "ablation.json").is_file()
        or any((path / sub / "manifest.json").is_file() for sub in CONDITIONS)
        or (path / SELF_CHECK_DIR).is_dir()
    )


@route_options
def ablate_command(
    route: RouteOptions,
    bench: DataOption,
    model: Annotated[str, typer.Option("--model", help="Model id (see `omnivchat eval --help`).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the four condition runs.")],
    benchmark: BenchmarkOption = "omnivchat",
    media: MediaOption = None,
    media_root: MediaRootOption = None,
    columns: ColumnsOption = None,
    split: SplitOption = None,
    task: Annotated[
        str | None, typer.Option("--task", help="The task to diagnose, for a benchmark with several.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N items (smoke runs).")] = None,
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file; default: the offline rule judge.")
    ] = None,
    panel: Annotated[
        str | None, typer.Option("--panel", help="Panel (or one judge) from --judges; 'rule' = offline.")
    ] = None,
    aggregate: Annotated[str, typer.Option("--aggregate", help="mean or majority over the panel.")] = "mean",
    neither: Annotated[
        str, typer.Option("--neither", help="'blank' (black, silent clip) or 'none' (no media).")
    ] = "blank",
    video_only: Annotated[
        str, typer.Option("--video-only", help="'mute' (silent track) or 'strip' (no track).")
    ] = "mute",
    chance: Annotated[
        float | None,
        typer.Option("--chance", help="Chance score (default: the benchmark's for the task: 0 for rubrics, 1/k)."),
    ] = None,
    floor_margin: Annotated[
        float,
        typer.Option(
            "--floor-margin",
            min=0.0,
            help="Refuse the fusion gain only when the lower 95% bound of 'neither' exceeds chance + this margin.",
        ),
    ] = 0.10,
    skip_self_check: Annotated[
        bool, typer.Option("--skip-self-check", help="Do not run the harness self-check (recorded).")
    ] = False,
    system_prompt: Annotated[
        Path | None,
        typer.Option(
            "--system-prompt", "--prompts", help="The benchmark's prompt file: a system prompt, or prompt cards."
        ),
    ] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help="Requests in flight at most.")] = None,
    progress: ProgressOption = True,
) -> None:
    """The modality ablation grid, for any registered benchmark: run a model under both / video_only / audio_only
    / neither, judge each, and report fusion gain, video and audio reliance and the prior floor with paired 95%
    intervals.

    First a self-check runs sim:video-blind and sim:audio-blind (each must be flagged) and sim:healthy (must not
    be) on the same data and judges; it stops the grid if any check fails. The prior floor is checked before any
    fusion gain is reported: when the lower 95% bound of 'neither' exceeds chance + --floor-margin, no gain is given.
    """
    from omnivchat.benchmarks import Source, check_source, get_benchmark
    from omnivchat.diagnostics.grid import check_judges, grid_tasks, run_grid, self_check, write_ablation
    from omnivchat.judges import RULE_JUDGE, load_judges

    check_choice("--neither", neither, ("blank", "none"))
    check_choice("--video-only", video_only, ("mute", "strip"))
    how = aggregate_choice(aggregate)
    check_output_dir(output, ours=is_ablation_dir, kind="an ablation directory")
    the_benchmark = get_benchmark(benchmark)
    source = Source(
        data=bench,
        media=media,
        tasks=(task,) if task else None,
        limit=limit,
        prompts=system_prompt,
        media_roots=media_roots(benchmark, media_root),
        options=given_options(columns=columns, split=split),
    )
    # An option or a flag it does not take: refused before anything (--task is the grid's: checked there).
    check_source(the_benchmark, dataclasses.replace(source, tasks=None))
    dataset = the_benchmark.load(source)
    config = load_judges(judges)
    members = panel_members(config, panel, judges)

    def make_route() -> Route:
        made: Route = route.route(model)
        return made

    probe_route = make_route()
    # Every option and the data's tasks are checked here, before the self-check sends anything or makes a folder.
    grid_tasks(the_benchmark, dataset, task=task, chance=chance)
    check_judges(config, [m for m in members if m != RULE_JUDGE])
    warn_unchecked(probe_route)
    options: dict[str, Any] = {
        "benchmark": the_benchmark,
        "source": source,
        "task": task,
        "aggregate": how,
        "neither": neither,
        "video_only": video_only,
        "chance": chance,
        "floor_margin": floor_margin,
        "system_prompt": system_prompt,
    }
    from omnivchat.diagnostics import SELF_CHECK_DIR, SelfCheckRecord

    record = SelfCheckRecord(skipped=True)
    if not skip_self_check:
        console.print(SELF_CHECK_LINE)
        record = self_check(
            dataset, output / SELF_CHECK_DIR, panel=members, config=config, progress=progress, say=_say, **options
        )
        console.print("[green]self-check passed[/]")
    grid = run_grid(
        dataset,
        make_route,
        output,
        panel=members,
        config=config,
        progress=progress,
        sampling=route.sampling(),
        concurrency=concurrency,
        manifest_extra={"ablation": {"self_check": "skipped" if skip_self_check else "ran"}},
        say=_say,
        **options,
    )
    _say(grid.reuse_line())
    path = write_ablation(
        output,
        grid,
        panel=members,
        aggregate=how,
        neither=neither,
        self_check_record=record,
        simulated=probe_route.settings.route == "sim",
    )
    print_grid(grid, f"Ablation grid: {model} on {grid.data.get('name')}")
    console.print(f"wrote {path} and the runs under {output}")


@route_options
def check_route_command(
    route: RouteOptions,
    model: Annotated[str, typer.Option("--model", help="Model id to check.")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="JSON file for the result.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
    bench: Annotated[
        Path | None,
        typer.Option(
            "--bench",
            "--data",
            help="Also check that the server takes this benchmark's largest request: its media items are counted "
            "as `eval --dry-run` builds them, and the audible clip is sent in as many turns as that takes.",
        ),
    ] = None,
    benchmark: BenchmarkOption = "omnivchat",
    media: MediaOption = None,
) -> None:
    """Check that a route delivers the audio track: an audible clip (a spoken password and number) and its
    silent twin are sent once each; the route passes when only the audible answer recovers both values.

    Inventing speech for the silent clip is reported as a failure. With --bench, a third request holds as many
    media items as the bench's largest request (vLLM's --limit-mm-per-prompt refuses more), and must be answered.
    The result (hashes, HTTP status, answers) is written to --output and kept on record, so that `eval` and
    `ablate` can warn about unchecked routes.
    """
    from omnivchat.diagnostics.route_check import record_check, run_route_check

    if output is not None:
        check_output_file(output, force=force)
    needed = _largest_request(route, model, bench, benchmark, media) if bench is not None else None
    result = run_route_check(route.route(model), sampling=route.sampling(), needed=needed)
    from omnivchat.routes import describe_items

    for record in result.records:
        answer = record.answer if record.answer is not None else f"(failed: {record.error})"
        if record.control == "capacity" and record.answer is not None:  # its content is not judged
            answer = f"answered: the server takes {describe_items(record.media_items or {})} in one request"
        console.print(f"[bold]{record.control}[/] (HTTP {record.http_status}): {escape(answer)}", highlight=False)
    if result.expected_audio is not None and any(r.startswith("answer wrong") for r in result.reasons):
        expected = result.expected_audio
        said = f"expected in the audible answer: the password {expected.password!r} and the number {expected.number}"
        console.print(said, markup=False, highlight=False)
    registry = record_check(result)
    if output is not None:
        write_model(output, result)
        console.print(f"wrote {output}")
    verdict = "[green]PASSED[/]" if result.passed else "[red]FAILED[/]: " + "; ".join(result.reasons)
    console.print(f"audio delivery: {result.audio_delivery}", markup=False, highlight=False)
    for warning in result.warnings:
        console.print(f"warning: {warning}", markup=False, highlight=False)
    console.print(f"{model}: {verdict} (on record in {registry})")
    if not result.passed:
        raise typer.Exit(code=1)


def _largest_request(
    route: RouteOptions, model: str, bench: Path, benchmark: str, media: Path | None
) -> dict[str, int]:
    """The most media items of each modality one request of the bench holds under this route (as a dry run builds
    the requests: nothing is sent)."""
    import tempfile

    from omnivchat.benchmarks import RunOptions, Source, check_source, estimate, get_benchmark
    from omnivchat.routes import describe_items

    the_benchmark = get_benchmark(benchmark)
    source = Source(data=bench, media=media)
    check_source(the_benchmark, source)
    dataset = the_benchmark.load(source)
    with tempfile.TemporaryDirectory(prefix="omnivchat-check-route-") as scratch:
        dry = estimate(the_benchmark, dataset, route.route(model), Path(scratch) / "run", RunOptions())
    if dry.most_media is None:
        raise OmnivchatError(f"--bench: {model} is not served by an OpenAI-compatible server, which --bench checks")
    for kind, n in sorted(dry.not_built.items()):
        err_console.print(f"warning: {n} item(s) of {bench} cannot be built ({kind}): not counted", highlight=False)
    console.print(f"largest request of {bench}: {describe_items(dry.most_media)}", markup=False, highlight=False)
    return dry.most_media


DEMO_MODELS = ("sim:healthy", "sim:video-blind")


def is_demo_dir(path: Path) -> bool:
    """A directory `demo` made: its bench, its self-check or a model's grid."""
    from omnivchat.diagnostics import SELF_CHECK_DIR

    return (
        (path / "bench" / "bench.yaml").is_file()
        or (path / SELF_CHECK_DIR).is_dir()
        or any(is_ablation_dir(path / m.replace(":", "-")) for m in DEMO_MODELS)
    )


def demo_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for the bench, runs and report.")] = Path(
        "runs/demo"
    ),
    per_subcategory: Annotated[int, typer.Option("--per-subcategory", min=1, help="Instances per subcategory.")] = 1,
    progress: ProgressOption = True,
) -> None:
    """The whole loop offline, in one command and no key: make a procedural mini-bench, check the harness, run
    two simulated models (healthy, and one that ignores the video) through the ablation grid with the offline
    rule judge, print their Table 1 rows and diagnoses, and write an HTML report.

    Simulated models check the harness; they say nothing about a real model. Run it again to resume.
    """
    from omnivchat.bench import BenchError, load_bench
    from omnivchat.diagnostics import SELF_CHECK_DIR
    from omnivchat.diagnostics.grid import SelfCheckFailed, run_grid, self_check, write_ablation
    from omnivchat.judges import read_table1_scores
    from omnivchat.report import build_report
    from omnivchat.routes import get_route
    from omnivchat.scoring import TABLE1_COLUMNS
    from omnivchat.studio import make_minibench

    check_output_dir(output, ours=is_demo_dir, kind="a demo directory")
    bench_dir = output / "bench"
    try:
        bench = load_bench(bench_dir)
        console.print(f"reusing the mini-bench in {bench_dir} ({len(bench.instances)} instances)")
    except BenchError:
        console.print(f"making a procedural mini-bench in {bench_dir} ...")
        bench = make_minibench(
            bench_dir, per_subcategory=per_subcategory, languages=("en", "zh"), seed=0, progress=progress
        )
    panel = ["rule"]
    try:
        record = self_check(bench, output / SELF_CHECK_DIR, panel=panel, progress=progress, say=_say)
    except SelfCheckFailed as err:
        raise fail(str(err)) from None
    console.print(f"[green]self-check passed[/]: {SELF_CHECK_LINE.removeprefix('self-check: ')}")
    rows = Table(title="Table 1 rows (simulated models: a harness check)", title_justify="left")
    rows.add_column("model")
    for column in TABLE1_COLUMNS:
        rows.add_column(column, justify="right")
    dirs = []
    for model in DEMO_MODELS:
        out = output / model.replace(":", "-")
        grid = run_grid(bench, functools.partial(get_route, model), out, panel=panel, progress=progress, say=_say)
        _say(grid.reuse_line())
        write_ablation(
            out, grid, panel=panel, aggregate="mean", neither="blank", self_check_record=record, simulated=True
        )
        print_grid(grid, f"Ablation grid: {model}")
        table1 = read_table1_scores(out / "both").table1.model_dump()
        rows.add_row(
            model,
            *(
                "—" if table1.get(c) is None else f"{table1[c]:.{2 if c in ('RE', 'Len') else 3}f}"
                for c in TABLE1_COLUMNS
            ),
        )
        dirs.append(out)
    console.print(rows)
    report = build_report(dirs, output / "report.html")
    console.print(f"wrote {bench_dir}, the runs under {output}, and the report {report}")
