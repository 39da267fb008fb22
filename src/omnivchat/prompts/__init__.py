"""Prompt texts shipped with omnivchat (plain text with named placeholders), loaded by name or from a file, and the
one label that says which prompt a run used (:func:`prompt_label`).

omnivchat's prompts are written in its own words: a run made with them is not the paper's protocol. The paper's own
prompts (Appendix E.4) are recognised by hash, never shipped: a user who copies them into a file and passes it
(``--system-prompt FILE``, ``--style-prompt FILE``) gets runs labelled "paper E.4 prompt" / "paper style prompt".
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from importlib import resources
from pathlib import Path
from typing import Literal

from omnivchat._files import InputError, read_text
from omnivchat.errors import OmnivchatError

DEFAULT_SYSTEM_PROMPT = "spoken_assistant.txt"
SHIPPED = "omnivchat:"
"""The source of a shipped prompt starts with this (``omnivchat:spoken_assistant.txt``); any other is a file path."""

PromptKind = Literal["system", "style", "card"]
DEFAULT_LABEL = "omnivchat default"
DEFAULT_CARD_LABEL = "omnivchat card"

# sha256 of the paper's prompts after normalise_prompt(), computed from the paper's text (shared/seeds/000, Appendix
# E.4) and never the text itself (we do not copy it). What each hashes, as the paper prints it without its listing
# line numbers and page header/footer lines:
# - "system": the policy prompt ("Training and evaluation share this 1,296-character system prompt"): the listing of
#   23 lines from the "Role and Objective" heading to the end of the "Verbosity" section; rebuilt with "- " bullets
#   and newlines it is exactly 1,296 characters, as the paper says.
# - "style": the style grader's instructions (23 lines) followed by its checklist of 7 requirements (41 lines, the
#   English examples kept and the line standing for the omitted Chinese ones as printed), in that order: omnivchat's
#   style judge takes both in its system prompt (the reply and language go in the user message).
PAPER_PROMPT_SHA256: dict[str, str] = {
    "system": "f1a03a7f179d91e52415af463b4534552f90f38e8723bc5ccdd7e17020b06d38",
    "style": "fbfdf6e836d979bc78bc0436c6d73659375d9de3d8cea321dbba13d3b8c48cb3",
}
PAPER_LABELS: dict[str, str] = {"system": "paper E.4 prompt", "style": "paper style prompt"}

# What a copy from the PDF changes: dashes and minus signs, curly quotes and backticks (the printed listing shows
# `hits` as ‘hits‘), and braces (its text layer drops the braces of the JSON answer formats).
_TYPOGRAPHY = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b`\u00b4", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        "{": None,
        "}": None,
    }
)


class PromptFileError(OmnivchatError, FileNotFoundError):
    """A prompt file that cannot be read; the message names it."""


def load_prompt(name_or_path: str | Path | None, default: str = DEFAULT_SYSTEM_PROMPT) -> tuple[str, str]:
    """(text, source): a user file when a path is given, else the shipped prompt ``default``
    (source ``omnivchat:<default>``)."""
    if name_or_path is not None:
        path = Path(name_or_path)
        try:  # the shared reader: a file that is missing, a folder or not UTF-8 is named in one line
            return read_text(path, "prompt file"), str(path)
        except InputError as err:
            raise PromptFileError(str(err)) from None
    return _shipped(default), f"{SHIPPED}{default}"


# A shipped prompt is part of the installed package: read once per process. A run builds one request per item with
# it, and importlib.resources took 0.1 ms a read (0.2 s of a 2000-item eval's start).
@functools.lru_cache(maxsize=32)
def _shipped(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _drop_listing_numbers(lines: list[str]) -> list[str]:
    """The lines without their listing numbers when every non-blank line starts with its own (1, 2, 3, ...; a
    second listing restarts at 1): a copy of a numbered listing. Otherwise the lines as they are."""
    kept: list[str] = []
    expected = 1
    for line in lines:
        text = line.lstrip()
        if not text:
            kept.append("")
            continue
        if text.startswith(str(expected)):
            kept.append(text[len(str(expected)) :])
            expected += 1
        elif expected > 1 and text.startswith("1"):
            kept.append(text[1:])
            expected = 2
        else:
            return lines
    return kept if expected > 2 else lines


def normalise_prompt(text: str) -> str:
    """The text a prompt is recognised by: Unicode NFKC; dashes and the minus sign as "-", curly quotes and
    backticks as straight quotes; listing line numbers dropped (when every non-blank line starts with its own);
    braces and all whitespace removed. So a copy from the paper is recognised however its lines were wrapped,
    indented or ended (CRLF), with or without the listing's line numbers; a changed word is not."""
    text = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHY)
    return re.sub(r"\s+", "", "".join(_drop_listing_numbers(text.splitlines())))


def normalised_sha256(text: str) -> str:
    """sha256 of :func:`normalise_prompt` of ``text`` (what :data:`PAPER_PROMPT_SHA256` holds)."""
    return hashlib.sha256(normalise_prompt(text).encode("utf-8")).hexdigest()


def source_label(source: str | None, sha256: str, kind: PromptKind = "system") -> str:
    """The label of a prompt known only by its source and sha256 (a manifest written before labels were recorded):
    omnivchat's own, or the user file by name with the first 12 hex digits of its text's sha256."""
    if source is None or source.startswith(SHIPPED):
        return DEFAULT_CARD_LABEL if kind == "card" else DEFAULT_LABEL
    return f"user file {Path(source).name} (sha256 {sha256[:12]})"


DEFAULT_FILES: dict[str, str] = {"system": DEFAULT_SYSTEM_PROMPT, "style": "style_judge.txt"}
"""The shipped prompt of each kind (what a source of None means)."""


def _shipped_text(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return _shipped(name)
    except OSError:
        return None


def prompt_label(text: str, kind: PromptKind, source: str | None = None) -> str:
    """Which prompt ran, said plainly: "paper E.4 prompt" / "paper style prompt" when ``text`` is the paper's
    (by :func:`normalised_sha256`); "omnivchat default" ("omnivchat card" for a SocialOmni card) when it is the
    shipped prompt ``source`` names (None: the default of ``kind``); "user file NAME (sha256 <12 hex>)" for a file
    (sha256 of the text as read, as the run manifest records it); "text given in code (sha256 ...)" for other text
    under a shipped source (a library caller's), and "none" for an empty prompt."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if not text.strip():
        return "none"
    if kind in PAPER_PROMPT_SHA256 and normalised_sha256(text) == PAPER_PROMPT_SHA256[kind]:
        return PAPER_LABELS[kind]
    if source is None or source.startswith(SHIPPED):
        name = source[len(SHIPPED) :] if source else DEFAULT_FILES.get(kind)
        if kind == "card" or _shipped_text(name) == text:
            return source_label(source, sha, kind)
        return f"text given in code (sha256 {sha[:12]})"
    return source_label(source, sha, kind)


__all__ = [
    "DEFAULT_CARD_LABEL",
    "DEFAULT_FILES",
    "DEFAULT_LABEL",
    "DEFAULT_SYSTEM_PROMPT",
    "PAPER_LABELS",
    "PAPER_PROMPT_SHA256",
    "SHIPPED",
    "PromptFileError",
    "PromptKind",
    "load_prompt",
    "normalise_prompt",
    "normalised_sha256",
    "prompt_label",
    "source_label",
]
