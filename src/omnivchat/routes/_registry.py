"""Choosing a route for a model id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnivchat.routes._base import Route
from omnivchat.routes._credentials import Secret, resolve_api_key
from omnivchat.routes._defaults import resolve_settings


def get_route(
    model_id: str,
    *,
    api_key: Secret | None = None,
    key_file: str | Path | None = None,
    key_field: str | None = None,
    defaults_file: str | Path | None = None,
    **overrides: Any,
) -> Route:
    """The route for ``model_id`` with its resolved settings.

    ``overrides`` are RouteSettings fields (``base_url``, ``thinking``, ``media_input``, ``include_modalities``,
    ``audio_delivery``, ``limits``...); None values are ignored. The key comes from ``api_key``, else the key
    file, else the environment variable named by the settings' ``api_key_env``.
    """
    settings = resolve_settings(model_id, user_file=defaults_file, overrides=overrides)
    if settings.route == "sim":
        from omnivchat.routes._sim import SimRoute

        return SimRoute(model_id, settings)
    key = api_key or resolve_api_key(settings.api_key_env, key_file, key_field)
    if settings.route == "gemini":
        from omnivchat.routes._gemini import GeminiRoute

        return GeminiRoute(model_id, settings, key)
    from omnivchat.routes._openai import OpenAIRoute

    return OpenAIRoute(model_id, settings, key)
