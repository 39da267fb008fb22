"""Studio: synthesizing audio-visual dialogues. For now, the procedural mini-bench (``make_minibench``)."""

from omnivchat.studio._minibench import (
    BUILDERS,
    LANGUAGES,
    NOT_STAGED,
    STAGED,
    MiniBenchError,
    make_minibench,
    plan,
)

__all__ = ["BUILDERS", "LANGUAGES", "NOT_STAGED", "STAGED", "MiniBenchError", "make_minibench", "plan"]
