"""Choosing a route for a model id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnivchat.routes._base import Route
from omnivchat.routes._credentials import CredentialError, Secret, resolve_api_key
from omnivchat.routes._defaults import resolve_settings


def get_route(
    model_id: str,
    *,
    api_key: Secret | None = None,
    key_file: str | Path | None = None,
    key_field: str | None = None,
    defaults_file: str | Path | None = None,
    no_key: bool = False,
    trust_env: bool = False,
    **overrides: Any,
) -> Route:
    """The route for ``model_id`` with its resolved settings.

    ``overrides`` are RouteSettings fields (``base_url``, ``thinking``, ``media_input``, ``include_modalities``,
    ``audio_delivery``, ``limits``...); None values are ignored. The key comes from ``api_key``, else the key
    file, else the environment variable named by the settings' ``api_key_env``. A model whose settings name a key
    variable (the hosted defaults) needs a key: without one, CredentialError names where it was looked for,
    before any clip is read or request sent. ``no_key`` sends none, for a server that needs none.
    ``trust_env`` sends an OpenAI-compatible route's requests through the environment's HTTP(S)_PROXY.
    """
    settings = resolve_settings(model_id, user_file=defaults_file, overrides=overrides)
    if settings.route == "sim":
        from omnivchat.routes._sim import SimRoute

        return SimRoute(model_id, settings)
    if no_key:
        if api_key is not None or key_file is not None:
            raise CredentialError("--no-key and a key (--key-file or a key) contradict each other: give one")
        key = None
    else:
        key = api_key or resolve_api_key(settings.api_key_env, key_file, key_field)
        if key is None and settings.api_key_env:
            raise CredentialError(
                f"{model_id} needs an API key and none was found: set {settings.api_key_env} in the environment "
                "(or pass --key-file FILE --key-field NAME); for a server that needs no key, pass --no-key"
            )
    if settings.route == "gemini":
        from omnivchat.routes._gemini import GeminiRoute

        return GeminiRoute(model_id, settings, key)
    from omnivchat.routes._openai import OpenAIRoute

    return OpenAIRoute(model_id, settings, key, trust_env=trust_env)
