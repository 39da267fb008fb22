"""`omnivchat benchmarks`: what is registered."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from omnivchat.cli._app import console


def chance_levels(benchmark: Any) -> str:
    """Its tasks' chance levels in words: what it states (``StatedChance``), else what ``chance`` gives for the
    task names the shared benchmarks use (``mcK``, ``open``)."""
    from omnivchat.benchmarks import StatedChance

    if isinstance(benchmark, StatedChance):
        return benchmark.chance_levels
    try:
        levels = {k: benchmark.chance(f"mc{k}") for k in (2, 3, 4, 5)}
    except Exception:  # a plugin's chance() knows only its own tasks: say nothing rather than guess
        return "—"
    if all(v == 0 for v in levels.values()):
        return "0 (no guess meets a criterion)"
    if all(abs(v - 1 / k) < 1e-12 for k, v in levels.items()):
        try:
            open_answer = benchmark.chance("open")
        except Exception:
            return "1/K for a task mcK (K options)"
        return f"1/K for a task mcK (K options); {open_answer:g} for open answers"
    return "—"


def benchmarks_command() -> None:
    """List the registered benchmarks: their names (for `eval --benchmark NAME`), what they measure, their
    tasks' chance levels (the ablation grid's prior-floor reference), the run directories they recognise and the
    package each comes from (omnivchat, or a plugin's, through the ``omnivchat.benchmarks`` entry points)."""
    from omnivchat.benchmarks import package_of, registered

    table = Table(title="Registered benchmarks", title_justify="left")
    for column in ("name", "what it measures", "chance", "run protocols", "package"):
        table.add_column(column)
    for name, benchmark in registered().items():
        table.add_row(name, benchmark.title, chance_levels(benchmark), ", ".join(benchmark.protocols), package_of(name))
    console.print(table)
