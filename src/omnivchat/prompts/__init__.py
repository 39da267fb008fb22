"""Prompt texts shipped with omnivchat (plain text with named placeholders), loaded by name or from a file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from omnivchat.errors import OmnivchatError

DEFAULT_SYSTEM_PROMPT = "spoken_assistant.txt"


class PromptFileError(OmnivchatError, FileNotFoundError):
    """A prompt file that cannot be read; the message names it."""


def load_prompt(name_or_path: str | Path | None, default: str = DEFAULT_SYSTEM_PROMPT) -> tuple[str, str]:
    """(text, label): a user file when a path is given, else the shipped prompt ``default``."""
    if name_or_path is not None:
        path = Path(name_or_path)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as err:
            raise PromptFileError(f"prompt file {path}: cannot read ({err.strerror})") from None
    text = resources.files(__package__).joinpath(default).read_text(encoding="utf-8")
    return text, f"omnivchat:{default}"
