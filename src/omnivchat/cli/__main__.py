"""`python -m omnivchat.cli` (and `python -m omnivchat`): the same as the `omnivchat` command."""

from omnivchat.cli import app

app(prog_name="omnivchat")
