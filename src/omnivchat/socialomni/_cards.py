"""Prompt cards: the one short instruction per task that goes, with the clip, to the candidate model.

The release fixes its own wording; omnivchat ships its own default cards (``cards/{who,when,how}.txt``, written
from the protocol's description) and loads the official ones from a JSON file ``{"who", "when", "how"}``. The
run manifest records each card's sha256, so runs with different cards never mix, and its label ("omnivchat card",
or "user file NAME (sha256 ...)"). The official cards are not recognised by hash: their text is not in the sources
this project was built from (the release's paper appendix A.10 is stored as binary).

Request texts (no transcript, no reference, no system prompt; the clip goes first in the same user message):

- Who: ``WHO + "\\n" + question + "\\n" + "\\n".join(options)``
- When: ``WHEN.format(target=participant)``
- How: ``HOW + "\\nTarget participant: " + participant``
"""

from __future__ import annotations

import hashlib
import json
import string
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from omnivchat.prompts import SHIPPED, prompt_label
from omnivchat.socialomni._data import WhenItem, WhoItem
from omnivchat.socialomni._errors import SocialOmniError

TASKS = ("who", "when", "how")


def _fields(template: str) -> set[str | None]:
    """The replacement fields of a str.format template (None for positional ``{}``)."""
    return {name or None for _, name, _, _ in string.Formatter().parse(template) if name is not None}


class PromptCards(BaseModel):
    """The three prompt cards; ``when`` holds one ``{target}`` placeholder (and braces doubled elsewhere)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    who: str
    """Who: choose A-D for the marked interval, letter only."""
    when: str
    """When: as an external observer, should ``{target}`` begin a substantive turn now? A = YES, B = NO."""
    how: str
    """How: write only the target participant's next utterance."""
    origin: str | None = None
    """Where the cards come from: ``omnivchat:socialomni/cards`` (omnivchat's own), the JSON file they were read
    from, or None (built in code)."""

    @field_validator("who", "when", "how")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("card text is empty")
        return value

    @field_validator("when")
    @classmethod
    def _target_placeholder(cls, value: str) -> str:
        try:
            fields = _fields(value)
        except ValueError as err:
            raise ValueError(f"not a valid format template ({err})") from None
        if fields != {"target"}:
            found = ", ".join(sorted("{}" if f is None else "{" + f + "}" for f in fields)) or "none"
            raise ValueError(f"needs exactly the placeholder {{target}} (double other braces); found {found}")
        return value

    def hashes(self) -> dict[str, str]:
        """sha256 hex digest of each card's UTF-8 text, by task."""
        return {task: hashlib.sha256(getattr(self, task).encode("utf-8")).hexdigest() for task in TASKS}

    def labels(self) -> dict[str, str]:
        """Which card ran, said plainly, by task: "omnivchat card" or "user file NAME (sha256 <12 hex>)"."""
        if self.origin is None:
            return {task: f"cards built in code (sha256 {sha[:12]})" for task, sha in self.hashes().items()}
        return {task: prompt_label(getattr(self, task), "card", self.origin) for task in TASKS}


def default_cards() -> PromptCards:
    """omnivchat's own cards, ``cards/<task>.txt`` (the file's final newline is not part of the card)."""
    folder = resources.files(__package__).joinpath("cards")
    texts = {task: folder.joinpath(f"{task}.txt").read_text(encoding="utf-8").rstrip("\n") for task in TASKS}
    return PromptCards(**texts, origin=f"{SHIPPED}socialomni/cards")


def load_cards(path: Path | None) -> PromptCards:
    """The default cards when ``path`` is None, else the cards of a JSON file ``{"who": ..., "when": ...,
    "how": ...}`` (for instance the release's official cards), used byte for byte.

    Raises SocialOmniError naming the file when it cannot be read, is not such an object, or a card is empty or
    (When) lacks the single ``{target}`` placeholder.
    """
    if path is None:
        return default_cards()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise SocialOmniError(f"{path}: cannot read prompt cards ({err.strerror or err})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SocialOmniError(f"{path}: prompt cards are not UTF-8 JSON ({err})") from None
    if not isinstance(data, dict) or set(data) != set(TASKS):
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise SocialOmniError(f"{path}: expected an object with exactly the keys who, when, how; found {keys}")
    try:
        return PromptCards(**data, origin=str(path))
    except ValidationError as err:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise SocialOmniError(f"{path}: invalid prompt cards ({details})") from None


def who_text(cards: PromptCards, item: WhoItem) -> str:
    """The Who request text: the card, the question, then the four lettered options, one per line."""
    return cards.who + "\n" + item.question + "\n" + "\n".join(item.options)


def when_text(cards: PromptCards, item: WhenItem) -> str:
    """The When request text: the card with the target participant filled in."""
    return cards.when.format(target=item.participant)


def how_text(cards: PromptCards, item: WhenItem) -> str:
    """The How request text: the card, then a line naming the target participant."""
    return cards.how + "\nTarget participant: " + item.participant
