"""The hosted backend of the Studio: a Director and a Reviewer on any route (OpenAI-compatible or Gemini native),
and video generators behind the Renderer protocol (``omnivchat.studio.hosted.renderers``). See docs/studio.md,
"Hosted agents", and docs/video-renderers.md.

Names load on first use (the renderers need aiohttp)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names

if TYPE_CHECKING:
    from omnivchat.studio.hosted._agents import (
        AgentsFile,
        AgentsFileError,
        AgentSpec,
        RouteDirector,
        RouteReviewer,
        load_agents_file,
        parse_json_object,
    )
    from omnivchat.studio.hosted._bridge import LoopThread
    from omnivchat.studio.hosted.renderers import make_renderer

_LAZY = {
    "AgentSpec": "_agents",
    "AgentsFile": "_agents",
    "AgentsFileError": "_agents",
    "RouteDirector": "_agents",
    "RouteReviewer": "_agents",
    "load_agents_file": "_agents",
    "parse_json_object": "_agents",
    "LoopThread": "_bridge",
    "make_renderer": "renderers",
}

__all__ = [
    "AgentSpec",
    "AgentsFile",
    "AgentsFileError",
    "LoopThread",
    "RouteDirector",
    "RouteReviewer",
    "load_agents_file",
    "make_renderer",
    "parse_json_object",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), ("renderers",))
