"""CLI command `judges calibrate`: a judge's reference full-score rate, detection of planted perturbations per
tier and for style, and false misses on untouched criteria, with Wilson intervals."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from omnivchat.cli._app import RETRY_ATTEMPTS, console, fail
from omnivchat.cli._options import ProgressOption, RouteOptions, panel_members, route_options


class StructuredOutput(StrEnum):
    auto = "auto"
    json_schema = "json_schema"
    json_object = "json_object"
    off = "off"


def _cell(value: dict[str, Any] | None) -> str:
    if not value or value["rate"] is None:
        return "—"
    return f"{value['rate']:.3f} [{value['low']:.2f}, {value['high']:.2f}] (n={value['n']})"


@route_options
def calibrate_command(
    route: RouteOptions,
    bench_dir: Annotated[Path, typer.Argument(help="Bench directory whose references are perturbed.")],
    panel: Annotated[str, typer.Option("--panel", help="Panel to calibrate ('rule': the offline judge, no key).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration report (JSON).")],
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file (TOML or JSON): judges and panels.")
    ] = None,
    director: Annotated[
        str | None,
        typer.Option(
            "--director",
            "--perturb-with",
            help="Also have this model write one perturbation per criterion and for style, each verified before it "
            "is kept (the route flags below, --base-url, --key-file..., apply to it).",
        ),
    ] = None,
    director_concurrency: Annotated[
        int, typer.Option("--director-concurrency", min=1, help="Director requests in flight at most.")
    ] = 4,
    director_json: Annotated[
        StructuredOutput,
        typer.Option(
            "--director-structured-output",
            help="How the Director's answer schema is sent: json_schema (OpenAI, vLLM, SGLang), json_object "
            "(llama.cpp), off; auto: only on the Gemini native route.",
        ),
    ] = StructuredOutput.auto,
    style: Annotated[
        bool, typer.Option("--style/--no-style", help="Grade the style checklist on references and list perturbations.")
    ] = True,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Asks per verdict before it is unscored (retries included).")
    ] = RETRY_ATTEMPTS,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file that is not a calibration.")] = False,
    progress: ProgressOption = True,
) -> None:
    """Calibrate judges: the reference reply must meet every criterion; a planted perturbation aimed at one
    criterion (wrong language for tier 0, the key fact negated, swapped or its number changed for tier 1, a detail
    removed for tier 2 and later, a bullet list for style) must lose that criterion and keep the others.

    Perturbations are made by rules (and, with --director, also written by a model and verified) and kept in
    OUTPUT's folder (OUTPUT without .json: perturbations.json, each with its origin, and the run store), so every
    judge and every rerun sees the same set and a rerun sends nothing new. One calibration at a time writes a
    folder: a second one is refused while the first runs.
    """
    from omnivchat._files import check_output_file, write_text_atomic
    from omnivchat.bench import BenchError, load_bench
    from omnivchat.errors import OmnivchatError
    from omnivchat.judges import Director, calibrate, load_judges
    from omnivchat.runs import run_lock

    check_output_file(output, inputs=[judges], force=force or _is_calibration(output))
    folder = output.with_suffix("") if output.suffix else output.with_name(output.name + ".d")
    try:
        config = load_judges(judges)
        names = panel_members(config, panel, judges)
        bench = load_bench(bench_dir)
        writer = None
        if director is not None:
            sampling = route.sampling(temperature=0.0, max_tokens=1024)
            writer = Director(
                route.route(director),
                sampling=sampling,
                concurrency=director_concurrency,
                structured_output=director_json.value,
            )
        with run_lock(folder, "judges calibrate"):  # the report too: one writer from the first request to the last
            report = calibrate(
                bench, config, names, folder, director=writer, style=style, max_attempts=max_attempts, progress=progress
            )
            write_text_atomic(output, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    except BenchError as err:
        raise fail(" ".join(str(err).split())) from None
    except OmnivchatError as err:
        raise fail(str(err)) from None
    _print(report, bench_dir, folder)
    console.print(f"wrote {output}")


def _print(report: dict[str, Any], bench_dir: Path, folder: Path) -> None:
    tiers = sorted({t for r in report["reports"] for t in r["detection_rate"] if t != "style"}, key=int)
    style = any("style" in r["detection_rate"] for r in report["reports"])
    table = Table(title=f"Judge calibration on {bench_dir}", title_justify="left")
    columns = ["judge", "reference full score", "reference style"]
    columns += [f"detect tier {t}" for t in tiers] + (["detect style"] if style else [])
    for column in [*columns, "false miss", "unscored (rubric/style)"]:
        table.add_column(column, justify="right")
    for r in report["reports"]:
        table.add_row(
            r["judge"],
            _cell(r["reference_full_score_rate"]),
            _cell(r["reference_style_rate"]),
            *(_cell(r["detection_rate"].get(t)) for t in tiers),
            *([_cell(r["detection_rate"].get("style"))] if style else []),
            _cell(r["false_miss_rate"]),
            f"{r['unscored']}/{r['style_unscored']}",
        )
    console.print(table)
    origins = ", ".join(f"{n} {o}" for o, n in report["perturbation_origins"].items())
    console.print(
        f"{len(report['perturbations'])} perturbations ({origins}), {len(report['not_perturbed'])} criteria not "
        f"perturbed by rules (kept in {folder})"
    )
    counts = report.get("director_counts") or {}
    if counts:
        console.print(
            f"director: {counts['accepted']} of {counts['targets']} targets accepted, {counts['rejected_targets']} "
            f"rejected ({counts['rejected_answers']} answers rejected by the checks)"
        )


def _is_calibration(path: Path) -> bool:
    """An earlier report of this command (a rerun rewrites it); anything else needs --force."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(report, dict) and {"reports", "perturbations", "not_perturbed"} <= report.keys()
