"""`python -m omnivchat`: the same as the `omnivchat` command, whose entry point is `omnivchat.cli`.

The package itself imports no command-line code: the command module is run by name."""

import runpy

runpy.run_module("omnivchat.cli", run_name="__main__", alter_sys=True)
