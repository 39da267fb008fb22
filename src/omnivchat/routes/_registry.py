"""Choosing a route for a model id."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnivchat.routes._base import Route
from omnivchat.routes._credentials import CredentialError, Secret, resolve_api_key
from omnivchat.routes._defaults import SettingsError, resolve_settings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from omnivchat.routes._replicas import ReplicaPolicy, ReplicaSpec
    from omnivchat.routes._sim import Speaker


def get_route(
    model_id: str,
    *,
    api_key: Secret | None = None,
    key_file: str | Path | None = None,
    key_field: str | None = None,
    defaults_file: str | Path | None = None,
    no_key: bool = False,
    trust_env: bool = False,
    speaker: Speaker | None = None,
    replicas: Sequence[ReplicaSpec] | None = None,
    replica_policy: ReplicaPolicy | None = None,
    **overrides: Any,
) -> Route:
    """The route for ``model_id`` with its resolved settings.

    ``overrides`` are RouteSettings fields (``base_url``, ``thinking``, ``media_input``, ``include_modalities``,
    ``audio_delivery``, ``limits``...); None values are ignored. The key comes from ``api_key``, else the key
    file, else the environment variable named by the settings' ``api_key_env``. A model whose settings name a key
    variable (the hosted defaults) needs a key: without one, CredentialError names where it was looked for,
    before any clip is read or request sent. ``no_key`` sends none, for a server that needs none.
    ``trust_env`` sends an OpenAI-compatible route's requests through the environment's HTTP(S)_PROXY.
    ``speaker`` lets a simulated model answer aloud (see ``routes._sim.Speaker``); other routes ignore it.
    ``replicas``: several OpenAI-compatible servers of the same model (``--base-url`` repeated, ``--endpoints``),
    used instead of a base URL, drained and probed under ``replica_policy`` (see ``routes._replicas``).
    """
    settings = resolve_settings(model_id, user_file=defaults_file, overrides=overrides)
    if replicas:
        from omnivchat.routes._replicas import ReplicaError

        if overrides.get("base_url") is not None:
            raise ReplicaError("give the servers once: several --base-url, or --endpoints FILE, not both")
        if settings.route != "openai":
            raise ReplicaError(
                f"{model_id} uses the {settings.route!r} route: replicas (--base-url repeated, --endpoints) are for "
                "OpenAI-compatible servers"
            )
    if settings.route == "sim":
        from omnivchat.routes._sim import SimRoute

        return SimRoute(model_id, settings, speaker)
    if settings.route == "cascade":
        from omnivchat.routes._cascade import CascadeRoute

        if replicas or api_key is not None or key_file is not None or overrides.get("base_url") is not None:
            raise SettingsError(
                f"{model_id}: a cascade's stages name their servers and keys in its file (each stage's base_url, "
                "api_key_env), not --base-url or --key-file"
            )
        return CascadeRoute(model_id, settings, get_route)
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

    replica_set = None
    if replicas:
        from omnivchat.routes._replicas import ReplicaSet

        replica_set = ReplicaSet.build(replicas, default_concurrency=settings.max_concurrency, policy=replica_policy)
    return OpenAIRoute(model_id, settings, key, trust_env=trust_env, replicas=replica_set)
