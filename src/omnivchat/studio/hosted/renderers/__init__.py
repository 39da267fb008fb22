"""Hosted video renderers behind the engine's Renderer protocol (module 8 / f): Gemini Omni (Gemini API), Veo 3.1
(Vertex AI), Wan 2.6 / 2.7 / 3.0 (DashScope), Seedance (BytePlus ModelArk) and any self-hosted OpenAI-style
``/v1/videos`` server (SGLang diffusion, for MOVA). See docs/video-renderers.md."""

from omnivchat.studio.hosted.renderers._base import (
    RENDERER_VERSION,
    HostedVideoRenderer,
    RendererConfigError,
    RenderInputRefused,
    RenderKeyRejected,
    Uploader,
    VideoRendererConfig,
)
from omnivchat.studio.hosted.renderers._gemini import GeminiOmniConfig, GeminiOmniRenderer
from omnivchat.studio.hosted.renderers._openai_videos import OpenAIVideosConfig, OpenAIVideosRenderer
from omnivchat.studio.hosted.renderers._prices import DEFAULT_PRICES, Price, price_for
from omnivchat.studio.hosted.renderers._prompt import build_prompt
from omnivchat.studio.hosted.renderers._refs import Capabilities, MediaPlan, plan_media
from omnivchat.studio.hosted.renderers._registry import RENDERERS, make_renderer
from omnivchat.studio.hosted.renderers._seedance import SeedanceConfig, SeedanceRenderer
from omnivchat.studio.hosted.renderers._veo import GcsDownload, VeoConfig, VeoRenderer
from omnivchat.studio.hosted.renderers._wan import WanConfig, WanRenderer

__all__ = [
    "DEFAULT_PRICES",
    "RENDERERS",
    "RENDERER_VERSION",
    "Capabilities",
    "GcsDownload",
    "GeminiOmniConfig",
    "GeminiOmniRenderer",
    "HostedVideoRenderer",
    "MediaPlan",
    "OpenAIVideosConfig",
    "OpenAIVideosRenderer",
    "Price",
    "RenderInputRefused",
    "RenderKeyRejected",
    "RendererConfigError",
    "SeedanceConfig",
    "SeedanceRenderer",
    "Uploader",
    "VeoConfig",
    "VeoRenderer",
    "VideoRendererConfig",
    "WanConfig",
    "WanRenderer",
    "build_prompt",
    "make_renderer",
    "plan_media",
    "price_for",
]
