"""The benchmark data model: Instance, Turn, Criterion and its machine Check (DESIGN.md, "Bench directory")."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from omnivchat._files import path_escape
from omnivchat.bench._taxonomy import resolve_subcategory

Medium = Literal["video", "audio"]
_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LANGUAGE_PATTERN = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Check(_Strict):
    """A machine check for the offline rule judge; LLM judges ignore it.

    Each entry of ``any_of`` / ``all_of`` is a phrase or a list of synonyms for one phrase.
    """

    any_of: list[str | list[str]] = Field(default_factory=list, description="At least one phrase must occur.")
    all_of: list[str | list[str]] = Field(default_factory=list, description="Every phrase must occur.")
    none_of: list[str] = Field(default_factory=list, description="Forbidden words or phrases.")
    numbers: list[float] = Field(default_factory=list, description="Numbers the reply must state.")
    language: str | None = Field(default=None, description="Required reply language, e.g. 'en' or 'zh'.")


class Criterion(_Strict):
    """One rubric criterion; criteria are numbered 1..K in rubric order, which judges return as hits."""

    tier: int = Field(ge=0, description="0 is the language gate; later tiers earn points (Eq. 1).")
    text: str = Field(min_length=1, description="What a judge checks, in plain words.")
    check: Check | None = Field(default=None, description="Optional machine check for the rule judge.")


def _check_media_path(value: str) -> str:
    escape = path_escape(value)
    if escape == "an absolute path":
        raise ValueError(f"media path {value!r} is absolute; give it relative to the bench directory")
    if escape:
        raise ValueError(f"media path {value!r} escapes the bench directory")
    return value


class Turn(_Strict):
    """One user turn: a clip, and for every turn but the last the reference reply given as history."""

    video: str = Field(description="Clip path relative to the bench directory, e.g. media/<id>/turn1.mp4.")
    reply: str | None = Field(default=None, description="Reference reply to this turn (non-final turns).")
    text: str | None = Field(default=None, description="Optional typed text sent beside the clip.")

    _check_video = field_validator("video")(_check_media_path)


class Instance(_Strict):
    """One benchmark instance; only the reply to the final turn is scored."""

    id: str
    subcategory: str = Field(description="Short code (SVMR) or full path (DSLP-VDMC-SVMR); stored as the code.")
    language: str = Field(description="Language of the user, e.g. 'en' or 'zh'.")
    source: Literal["synthetic", "human"] = "synthetic"
    turns: list[Turn] = Field(min_length=1)
    reference: str = Field(min_length=1, description="Reference reply to the final turn.")
    rubric: list[Criterion] = Field(min_length=1)
    requires: list[Medium] | None = Field(
        default=None, description="Media the answer needs; missing means unknown (treated as both)."
    )
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not _ID_PATTERN.match(value):
            raise ValueError(f"id {value!r} must be letters, digits, '_', '-' or '.', starting alphanumeric")
        return value

    @field_validator("subcategory")
    @classmethod
    def _known_subcategory(cls, value: str) -> str:
        try:
            return resolve_subcategory(value).code
        except KeyError as err:
            raise ValueError(err.args[0]) from None

    @field_validator("language")
    @classmethod
    def _valid_language(cls, value: str) -> str:
        if not _LANGUAGE_PATTERN.match(value):
            raise ValueError(f"language {value!r} is not a language code such as 'en' or 'zh'")
        return value

    @field_validator("turns")
    @classmethod
    def _history_has_replies(cls, turns: list[Turn]) -> list[Turn]:
        missing = [str(i + 1) for i, turn in enumerate(turns[:-1]) if not (turn.reply or "").strip()]
        if missing:
            raise ValueError(f"non-final turn(s) {', '.join(missing)} need a reference reply")
        return turns

    @field_validator("rubric")
    @classmethod
    def _gated_rubric(cls, rubric: list[Criterion]) -> list[Criterion]:
        for number, (before, after) in enumerate(pairwise(rubric), start=2):
            if after.tier < before.tier:
                raise ValueError(
                    f"tiers out of order: criterion {number} is tier {after.tier} after tier {before.tier}"
                )
        # Eq. 1 gates every point on the one language criterion: without it a reply in any language can score
        # 1.0, and with two the gate is no longer one check (the Studio refuses both; so does every reader)
        gates = sum(c.tier == 0 for c in rubric)
        if gates == 0:
            raise ValueError("rubric has no tier-0 language gate (criterion 1 must be tier 0: 'The reply is in ...')")
        if gates > 1:
            raise ValueError(f"rubric has {gates} tier-0 criteria; it needs exactly one, the language gate")
        if all(c.tier == 0 for c in rubric):
            raise ValueError("rubric has no criterion outside tier 0, so nothing can earn a point")
        return rubric

    @model_validator(mode="after")
    def _turn_count_matches_kind(self) -> Instance:
        kind = resolve_subcategory(self.subcategory).kind
        if kind == "single" and len(self.turns) != 1:
            raise ValueError(f"turns: {self.subcategory} is single-turn but has {len(self.turns)} turns")
        if kind == "multi" and len(self.turns) < 2:
            raise ValueError(f"turns: {self.subcategory} is multi-turn but has only one turn")
        return self

    @property
    def tiers(self) -> list[int]:
        """The tier of each criterion in rubric order, as `rubric_score` takes them."""
        return [c.tier for c in self.rubric]

    @property
    def is_multi_turn(self) -> bool:
        return resolve_subcategory(self.subcategory).kind == "multi"
