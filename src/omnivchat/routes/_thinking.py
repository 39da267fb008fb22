"""How a provider is asked to think or not, where it documents a switch of its own (Gemini's per generation)."""

from __future__ import annotations

import re
from typing import Any

from omnivchat.routes._defaults import SettingsError

_VERSIONED = re.compile(r"(?:models/)?gemini-(\d+)(?:\.(\d+))?-(flash-lite|flash|pro)\b")


def gemini_thinking(model: str, thinking: bool | None) -> dict[str, Any] | None:
    """The ``thinking_config`` for ``--thinking on|off`` on a Gemini model (None: the model's default), as Google's
    thinking guide gives it per model: Gemini 2.5 takes a budget (-1: dynamic; 0, off, on Flash and Flash-Lite
    only, since 2.5 Pro cannot turn thinking off); Gemini 3 and later take a level and cannot turn thinking off;
    earlier models do not think. A switch the model cannot honour is refused (SettingsError) rather than sent."""
    if thinking is None:
        return None
    name = model.removeprefix("gemini:")
    found = _VERSIONED.search(name)
    if found is None:  # a name of no known generation: the budget switch, as the API first documented it
        return {"thinking_budget": -1 if thinking else 0}
    major, minor, tier = int(found.group(1)), int(found.group(2) or 0), found.group(3)
    if (major, minor) < (2, 5):
        if thinking:
            raise SettingsError(f"{name} does not think (thinking came with Gemini 2.5): --thinking default or off")
        return None  # nothing to turn off
    if major >= 3:
        if not thinking:
            raise SettingsError(
                f"{name} cannot turn thinking off (Gemini 3 models take a thinking level, the lowest of which still "
                "thinks): use --thinking default or on"
            )
        return {"thinking_level": "high"}
    if not thinking and tier == "pro":
        raise SettingsError(
            f"{name} cannot turn thinking off (a zero budget is for 2.5 Flash and Flash-Lite only): use --thinking "
            "default or on"
        )
    return {"thinking_budget": -1 if thinking else 0}
