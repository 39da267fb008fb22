"""The `omnivchat` command line: every typer command, one module per command group.

Commands are short: they parse options, call library functions and print. Nothing outside this package imports
it. A user-facing error (:class:`omnivchat.errors.OmnivchatError`) ends a command as one line with status 2
(see :class:`omnivchat.cli._app.Commands`); heavy modules load only inside the command that needs them.
"""

from __future__ import annotations

import typer

from omnivchat.cli._app import Commands
from omnivchat.cli.asr import asr_app, transcribe_command
from omnivchat.cli.bench import bench_app, validate_command
from omnivchat.cli.benchmarks import benchmarks_command
from omnivchat.cli.compare import compare_command
from omnivchat.cli.data import data_app
from omnivchat.cli.diagnostics import ablate_command, check_route_command, demo_command
from omnivchat.cli.judging import judge_command, judges_app, score_command
from omnivchat.cli.media import repair_tails_command
from omnivchat.cli.report import report_command
from omnivchat.cli.rl import rl_app
from omnivchat.cli.runs import eval_command, export_command, runs_app
from omnivchat.cli.socialomni import socialomni_app
from omnivchat.cli.studio import studio_app
from omnivchat.cli.suite import suite_app
from omnivchat.cli.view import view_command

app = typer.Typer(
    rich_markup_mode=None,
    cls=Commands,
    help="omnivchat: synthesize, run, grade and diagnose native audio-visual dialogue with omni models.",
    no_args_is_help=True,
    add_completion=False,
)

app.command("demo")(demo_command)
app.command("validate")(validate_command)
app.command("benchmarks")(benchmarks_command)
app.add_typer(data_app, name="data")
app.add_typer(bench_app, name="bench")
app.add_typer(studio_app, name="studio")
app.command("eval")(eval_command)
app.add_typer(runs_app, name="runs")
app.command("export")(export_command)
app.command("judge")(judge_command)
app.add_typer(judges_app, name="judges")
app.command("transcribe")(transcribe_command)
app.add_typer(asr_app, name="asr")
app.command("score")(score_command)
app.command("ablate")(ablate_command)
app.command("check-route")(check_route_command)
app.command("compare")(compare_command)
app.command("report")(report_command)
app.command("view")(view_command)
app.command("repair-tails")(repair_tails_command)
app.add_typer(socialomni_app, name="socialomni")
app.add_typer(rl_app, name="rl")
app.add_typer(suite_app, name="suite")

__all__ = ["app"]
