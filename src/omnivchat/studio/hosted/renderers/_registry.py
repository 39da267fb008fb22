"""A video renderer from its configuration (the ``[renderer]`` table of an agents file): ``kind`` picks the
backend, the other fields are its configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omnivchat.studio.hosted.renderers._base import HostedVideoRenderer, RendererConfigError
from omnivchat.studio.hosted.renderers._gemini import GeminiOmniRenderer
from omnivchat.studio.hosted.renderers._openai_videos import OpenAIVideosRenderer
from omnivchat.studio.hosted.renderers._seedance import SeedanceRenderer
from omnivchat.studio.hosted.renderers._veo import VeoRenderer
from omnivchat.studio.hosted.renderers._wan import WanRenderer

RENDERERS: dict[str, type[HostedVideoRenderer]] = {
    cls.kind: cls for cls in (GeminiOmniRenderer, VeoRenderer, WanRenderer, SeedanceRenderer, OpenAIVideosRenderer)
}


def make_renderer(config: Mapping[str, Any], **hooks: Any) -> HostedVideoRenderer:
    """The renderer ``config["kind"]`` names, built from ``config``; ``hooks`` are the constructor's keyword
    arguments (``api_key``, ``loop``, ``upload``, Veo's ``gcs_download``)."""
    kind = config.get("kind")
    if kind not in RENDERERS:
        known = ", ".join(sorted(RENDERERS))
        raise RendererConfigError(f"renderer: kind must be one of {known}; got {kind!r}")
    return RENDERERS[str(kind)](config, **hooks)
