"""Every command's --help on an 80-column terminal: whole option names (nothing cut with an ellipsis) and no line
wider than the terminal."""

from __future__ import annotations

import click
import pytest
import typer
from typer.testing import CliRunner

from omnivchat.cli import app

runner = CliRunner()


def command_paths() -> list[list[str]]:
    root = typer.main.get_command(app)
    paths: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        paths.append(path)
        if hasattr(command, "list_commands"):  # a group (omnivchat's own class among them)
            context = click.Context(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name])

    walk(root, [])
    return paths


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "omnivchat")
def test_help_fits_80_columns_with_whole_option_names(path):
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    wide = [line for line in result.output.splitlines() if len(line) > 80]
    assert not wide, wide
