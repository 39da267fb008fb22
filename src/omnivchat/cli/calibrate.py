"""CLI command `judges calibrate`: a judge's reference full-score rate, detection of planted perturbations per
tier and false misses on untouched criteria, with Wilson intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from omnivchat.cli._app import RETRY_ATTEMPTS, console, fail
from omnivchat.cli._options import ProgressOption


def _cell(value: dict[str, Any] | None) -> str:
    if not value or value["rate"] is None:
        return "—"
    return f"{value['rate']:.3f} [{value['low']:.2f}, {value['high']:.2f}] (n={value['n']})"


def calibrate_command(
    bench_dir: Annotated[Path, typer.Argument(help="Bench directory whose references are perturbed.")],
    panel: Annotated[str, typer.Option("--panel", help="Panel to calibrate ('rule': the offline judge, no key).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Calibration report (JSON).")],
    judges: Annotated[
        Path | None, typer.Option("--judges", help="Judges file (TOML or JSON): judges and panels.")
    ] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Asks per verdict before it is unscored (retries included).")
    ] = RETRY_ATTEMPTS,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file that is not a calibration.")] = False,
    progress: ProgressOption = True,
) -> None:
    """Calibrate judges: the reference reply must meet every criterion; a planted perturbation aimed at one
    criterion (wrong language for tier 0, the key fact negated or swapped for tier 1, a detail removed for tier 2
    and later, a bullet list for style) must lose that criterion and keep the others.

    Perturbations are made by rules and kept in OUTPUT's folder (OUTPUT without .json: perturbations.json and
    the judges' run store), so every judge and every rerun sees the same set and a rerun sends nothing new.
    """
    from omnivchat._files import check_output_file
    from omnivchat.bench import BenchError, load_bench
    from omnivchat.judges import RULE_JUDGE, CalibrationError, JudgesFileError, calibrate, load_judges

    check_output_file(output, inputs=[judges], force=force or _is_calibration(output))
    try:
        config = load_judges(judges)
        names = [RULE_JUDGE] if panel == RULE_JUDGE and panel not in config.panels else config.panel(panel)
        bench = load_bench(bench_dir)
        folder = output.with_suffix("") if output.suffix else output.with_name(output.name + ".d")
        report = calibrate(bench, config, names, folder, max_attempts=max_attempts, progress=progress)
    except (JudgesFileError, CalibrationError) as err:
        raise fail(str(err)) from None
    except BenchError as err:
        raise fail(" ".join(str(err).split())) from None
    tiers = sorted({t for r in report["reports"] for t in r["detection_rate"]})
    table = Table(title=f"Judge calibration on {bench_dir}", title_justify="left")
    for column in ["judge", "reference full score", *(f"detect tier {t}" for t in tiers), "false miss", "unscored"]:
        table.add_column(column, justify="right")
    for r in report["reports"]:
        table.add_row(
            r["judge"],
            _cell(r["reference_full_score_rate"]),
            *(_cell(r["detection_rate"].get(t)) for t in tiers),
            _cell(r["false_miss_rate"]),
            str(r["unscored"]),
        )
    console.print(table)
    console.print(
        f"{len(report['perturbations'])} perturbations, {len(report['not_perturbed'])} criteria not perturbed "
        f"(kept in {folder})"
    )
    from omnivchat._files import write_text_atomic

    write_text_atomic(output, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    console.print(f"wrote {output}")


def _is_calibration(path: Path) -> bool:
    """An earlier report of this command (a rerun rewrites it); anything else needs --force."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(report, dict) and {"reports", "perturbations", "not_perturbed"} <= report.keys()
