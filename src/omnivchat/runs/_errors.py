"""The errors of run directories (in a module of their own so that every part of the package can raise them)."""

from __future__ import annotations

from omnivchat.errors import OmnivchatError


class RunError(OmnivchatError, RuntimeError):
    """A run directory cannot be read, written or exported as asked."""
