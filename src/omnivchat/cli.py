"""The `omnivchat` command."""

import typer

app = typer.Typer(help="omnivchat: native audio-visual dialogue with omni models.", no_args_is_help=True)


@app.callback()
def main() -> None:
    """omnivchat: synthesize, run, grade and diagnose native audio-visual dialogue."""
