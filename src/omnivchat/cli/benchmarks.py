"""`omnivchat benchmarks`: what is registered."""

from __future__ import annotations

from rich.table import Table

from omnivchat.cli._app import console


def benchmarks_command() -> None:
    """List the registered benchmarks: their names (for `eval --benchmark NAME`), what they measure, their
    tasks' chance levels (the ablation grid's prior-floor reference) and the run directories they recognise."""
    from omnivchat.benchmarks import registered

    table = Table(title="Registered benchmarks", title_justify="left")
    for column in ("name", "what it measures", "run protocols"):
        table.add_column(column)
    for name, benchmark in registered().items():
        table.add_row(name, benchmark.title, ", ".join(benchmark.protocols))
    console.print(table)
