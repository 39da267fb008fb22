"""What the Studio's agents pass to each other (paper, Section 2 and Appendix C): scripts with timed segments,
rule violations, clips, captions with their seven-part quality report, and the decisions of each review.

Every type is a pydantic model, so that a hosted Director's JSON and an offline template's output are checked the
same way, and so that a module's inputs and outputs can be written to the instance's trace as they are."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Assignment = dict[str, str]
"""One sampled value per attribute of a subcategory configuration (module 0)."""


class Passage(BaseModel):
    """One corpus passage (module 0 draws three per instance)."""

    model_config = ConfigDict(frozen=True)

    id: str
    language: str
    topic: str = ""
    text: str


SegmentKind = Literal["speech", "action", "silence", "sound", "music", "text"]


class Segment(BaseModel):
    """One timed segment of a script: what happens from ``start`` to ``end`` (seconds from the clip's start)."""

    model_config = ConfigDict(frozen=True)

    start: float = Field(ge=0)
    end: float = Field(ge=0)
    kind: SegmentKind
    text: str = Field("", description="The words said (speech), shown (text) or a description (action, sound).")
    speaker: str = Field("user", description="Who speaks (speech segments).")


class Script(BaseModel):
    """A structured script (module 3) or one turn's rendering prompt (module d): the scene, the timed segments
    and the user's question. ``scene`` is what the Renderer needs: a procedural scene spec for the offline
    Renderer, a free description for a video generator."""

    language: str
    duration_s: float = Field(gt=0)
    question: str = Field(description="What the user says to the assistant, as the rubric will quote it.")
    segments: list[Segment]
    scene: dict[str, Any] = Field(default_factory=dict)
    fields: dict[str, Any] = Field(default_factory=dict, description="Named script fields the Validator may require.")
    references: list[MediaReference] = Field(default_factory=list, description="Earlier media this turn uses.")


class MediaReference(BaseModel):
    """A later turn's use of an earlier turn's media (multi-turn, module b): the id of a completed turn's clip,
    extracted audio or final frame."""

    model_config = ConfigDict(frozen=True)

    turn: int = Field(ge=1)
    kind: Literal["clip", "audio", "final_frame"]
    purpose: str = ""

    @property
    def media_id(self) -> str:
        return f"turn{self.turn}.{self.kind}"


class Violation(BaseModel):
    """One broken rule of the configuration, as the Validator reports it (module 4 / m, and the rendered clip's
    language at video review). A hard violation is one no review can dismiss (Appendix C.2.2): the sampled
    assignment drifted (an attribute value, the language, the number of turns), or a later turn lacks a valid
    reference to earlier media. It is repaired (rewrite, update plan, re-seed) or the run is discarded."""

    model_config = ConfigDict(frozen=True)

    rule: str = Field(description="The rule's name in the configuration, e.g. speaking_rate, forbidden_phrase.")
    message: str
    turn: int | None = None
    segment: int | None = None
    hard: bool = Field(False, description="A hard rule: no review can dismiss it; repair or discard.")


class Clip(BaseModel):
    """A rendered audio-visual clip (module 8 / f), by path relative to the instance's work directory."""

    path: str
    sha256: str
    duration_s: float
    seed: int
    audio: str | None = Field(None, description="Extracted audio (multi-turn: turn N's audio id).")
    final_frame: str | None = Field(None, description="Extracted final frame (multi-turn: turn N's frame id).")
    cost_usd: float | None = Field(None, description="What the render cost, where the provider's price is known.")
    notes: dict[str, Any] = Field(default_factory=dict, description="The Renderer's own notes, for the trace only.")


QUALITY_ASPECTS = ("cuts", "realism", "delivery_speed", "body_structure", "appearance", "artifacts", "on_screen_text")


class Aspect(BaseModel):
    """One part of the Reviewer's quality report: fine or not, and what it saw."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    note: str = ""


class QualityReport(BaseModel):
    """The Reviewer's seven-part quality report (module 9 / g)."""

    cuts: Aspect
    realism: Aspect
    delivery_speed: Aspect
    body_structure: Aspect
    appearance: Aspect
    artifacts: Aspect
    on_screen_text: Aspect

    def defects(self) -> list[str]:
        return [f"{name}: {getattr(self, name).note}" for name in QUALITY_ASPECTS if not getattr(self, name).ok]


class Caption(BaseModel):
    """What the Reviewer saw and heard in a clip (module 9 / g): a caption, the transcript it heard, the quality
    report, and the observations a Director can compare with the script."""

    text: str
    transcript: str
    report: QualityReport
    observed: dict[str, Any] = Field(default_factory=dict)


class Question(BaseModel):
    """A focused question for Video Q-A (module 10 / h). ``about`` names what is asked for a machine reviewer
    (e.g. {"object": "red cube", "ask": "colour"}); ``text`` is the question in words."""

    model_config = ConfigDict(frozen=True)

    text: str
    about: dict[str, Any] = Field(default_factory=dict)


class Answer(BaseModel):
    question: Question
    answer: str
    observed: dict[str, Any] = Field(default_factory=dict)


Action = Literal["accept", "rewrite", "reseed", "qa", "discard", "refine", "update_plan", "dismiss", "revise"]


class Decision(BaseModel):
    """A Director's decision at a review module: what to do next, and why."""

    model_config = ConfigDict(frozen=True)

    action: Action
    reason: str = ""
    questions: list[Question] = Field(default_factory=list, description="For action 'qa': what to ask.")
    turn: int | None = Field(None, description="For 'update_plan': the first affected turn.")


Script.model_rebuild()
