"""The native benchmark's own options (:class:`omnivchat.benchmarks.OwnOptions`): its style judge, style prompt
and the model's aliases when judging; its style judge and the delivered set when scoring."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from omnivchat.benchmarks._options import OptionsModel


class NativeJudgeOptions(OptionsModel):
    """``judge --style-judge``, ``--style-prompt``, ``--aliases`` of a run on an omnivchat bench."""

    style_judge: str | None = Field(default=None, description="The judge that also grades style.")
    style_prompt: Path | None = Field(default=None, description="The style judge's system prompt file.")
    aliases: list[str] | None = Field(default=None, description="Other correct names of the model under test.")


class NativeScoreOptions(OptionsModel):
    """``score --style-judge``, ``--delivered-only`` of a run on an omnivchat bench."""

    style_judge: str | None = Field(default=None, description="The judge whose style checks count.")
    delivered_only: bool = Field(default=False, description="Leave out the instances rejected after the run.")
