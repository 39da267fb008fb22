"""Control characters in data (a byo qid, a server's error message) never reach the terminal raw: every console
of the CLI shows them escaped (ESC as \\x1b), and rich markup in data is shown, not applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.cli._app import SafeConsole, printable
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
CLEAR = "\x1b[2J"
QID = f"q{CLEAR}[bold]x[/]\x9b"
MODEL = ["--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--no-key", "--no-progress"]


def raw_controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_printable_escapes_c0_c1_del_and_esc() -> None:
    assert printable(f"a{CLEAR}b\x07c\x9bd\x7fe\tf\ng") == "a\\x1b[2Jb\\x07c\\x9bd\\x7fe\tf\ng"


@pytest.mark.parametrize("markup", [True, False])
def test_console_escapes_text_tables_and_rich_text(markup: bool) -> None:
    console = SafeConsole(width=80, record=True, force_terminal=False)
    table = Table()
    table.add_column("id")
    table.add_row(f"q{CLEAR}")
    console.print(f"x{CLEAR}\x1b]0;title\x07y", markup=markup)
    console.print(table)
    console.print(Text(f"raw{CLEAR}"))
    out = console.export_text()
    assert not raw_controls(out)
    assert "x\\x1b[2J\\x1b]0;title\\x07y" in out and "q\\x1b[2J" in out and "raw\\x1b[2J" in out


def test_byo_qid_and_server_message_with_escapes_through_the_cli(bench_clip: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench.json"
    row = {"qid": QID, "question": f"What colour {CLEAR}?", "answer": "red", "requires": ["video"],
           "category": "c", "video": str(bench_clip.relative_to(tmp_path))}  # fmt: skip
    data.write_text(json.dumps([row]))
    run = tmp_path / "run"
    with LoopbackServer(default=Behaviour(status=400, error_message=f"bad {CLEAR}request [red]x")) as server:
        args = ["eval", "--benchmark", "byo", "--data", str(data), "-o", str(run), "--base-url", server.base_url]
        result = runner.invoke(app, [*args, *MODEL])
    assert result.exit_code == 1, result.output
    assert not raw_controls(result.output), repr(result.output)
    assert "bad \\x1b[2Jrequest [red]x" in result.output  # shown as it is: neither applied nor dropped
    assert "\\x1b[2J[bold]x[/]\\x9b" in result.output  # the qid, escaped, its markup shown
    for command in (["runs", "show", str(run)], ["score", str(run)], ["export", str(run), "-o", str(tmp_path / "e")]):
        shown = runner.invoke(app, command)
        assert not raw_controls(shown.output), (command, repr(shown.output))
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps([row, row]))
    refused = runner.invoke(app, ["eval", "--benchmark", "byo", "--data", str(dup), "-o", str(tmp_path / "r2"), *MODEL])
    assert refused.exit_code == 2 and not raw_controls(refused.output) and "duplicate qid" in refused.output


@pytest.fixture
def bench_clip(tmp_path: Path) -> Path:
    from omnivchat.synth import render_clip

    scene = {"size": [160, 90], "background": "navy", "objects": [{"shape": "square", "color": "red"}]}
    clip = tmp_path / "media" / "red.mp4"
    render_clip(scene, clip)
    return clip


def test_markup_and_escapes_in_a_server_answer_are_shown_as_sent(tmp_path: Path) -> None:
    answer = f"I see [bold]red[/] and [/] {CLEAR}"  # "[/]" alone made rich raise (a traceback) before
    with LoopbackServer(default=Behaviour(text=answer)) as server:
        args = ["check-route", "--base-url", server.base_url, "-o", str(tmp_path / "c.json"), *MODEL[:3]]
        result = runner.invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "I see [bold]red[/] and [/] \\x1b[2J" in result.output and not raw_controls(result.output)
