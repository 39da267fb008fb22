"""The one base of every user-facing error.

An :class:`OmnivchatError` is a failure the user can act on (a broken file, a missing key, a run directory in use):
the command line prints its message as one line, naming the file (and line or field where there is one) and what
to do, and exits with status 2. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class OmnivchatError(Exception):
    """A failure the user can fix; its message names the file and says what to do."""


class Interrupted(OmnivchatError):
    """The user stopped a command (Ctrl-C); the message says how much was done and how to resume."""
