"""What the Director answers at each module, as models: the engine parses every answer with them, and a hosted
Director is sent their JSON schemas (``DIRECTOR_ANSWERS``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from omnivchat.bench import Criterion
from omnivchat.studio.engine._types import Decision, MediaReference, Script


class DescriptionAnswer(BaseModel):
    description: str = Field(min_length=1)
    passage: str | None = None


class PlanAnswer(BaseModel):
    plan: str = Field(min_length=1)
    review: str = ""


class TurnPlan(BaseModel):
    turn: int = Field(ge=1)
    summary: str = ""
    references: list[MediaReference] = Field(default_factory=list)


class JointPlanAnswer(BaseModel):
    plan: str = Field(min_length=1)
    turns: list[TurnPlan] = Field(min_length=1)


class VideoPlanAnswer(BaseModel):
    fragments: list[str]


class ReplyPlanAnswer(BaseModel):
    facts: list[str] = Field(min_length=1)
    left_out: list[str] = Field(default_factory=list)


class ReplyAnswer(BaseModel):
    reply: str = Field(min_length=1)
    rubric: list[Criterion] = Field(default_factory=list)


DIRECTOR_ANSWERS: dict[str, type[BaseModel]] = {
    "description": DescriptionAnswer,
    "plan": PlanAnswer,
    "script": Script,
    "validation_review": Decision,
    "script_review": Decision,
    "video_plan": VideoPlanAnswer,
    "video_review": Decision,
    "reply_plan": ReplyPlanAnswer,
    "reply": ReplyAnswer,
    "reply_review": Decision,
    "joint_plan": JointPlanAnswer,
    "plan_review": Decision,
    "prompt": Script,
    "prompt_review": Decision,
    "final_reply_plan": ReplyPlanAnswer,
    "recorded_reply": ReplyAnswer,
}
"""The model each Director module's answer must fit."""
