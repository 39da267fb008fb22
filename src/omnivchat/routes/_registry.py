"""Choosing a route for a model id."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnivchat.routes._base import Route
from omnivchat.routes._credentials import CredentialError, Secret, resolve_api_key
from omnivchat.routes._defaults import SettingsError, resolve_settings
from omnivchat.routes._redact import Redactor
from omnivchat.routes._server import SERVER_KINDS, ServerInfo, ServerMismatch, adapt_to_server, ask_server

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
    server: str | ServerInfo | None = None,
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
    ``server``: what serves a self-served model (the names of the defaults table's self-served entries), whose
    settings are then changed for what it really decodes (``routes._server.adapt_to_server``; a flag it cannot
    honour is refused): ``"auto"`` asks the server (``GET /v1/models``: a server that cannot be asked leaves the
    settings as they are, and ``route.server_note`` says why), a kind (``vllm``, ``sglang``, ``llama.cpp``,
    ``other``) is taken as given, and None (the default) changes nothing. The route's ``server`` holds what is
    known, for manifests and route checks.
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

    info, note = None, None
    # A server of one's own: a self-served name, or any name sent where the user says (a local Qwen-Omni under a
    # hosted name, say); a kind given by --server applies wherever it is given.
    own = settings.thinking_switch == "chat_template_kwargs" or bool(replicas) or overrides.get("base_url") is not None
    if server is not None and (own or server != "auto"):
        urls: list[str | None] = [r.url for r in replicas] if replicas else [settings.base_url]
        info, note = _server_info(server, urls, key, trust_env)
        if info is not None:
            explicit = {k: v for k, v in overrides.items() if v is not None}
            settings, info = adapt_to_server(settings, info, explicit)
    replica_set = None
    if replicas:
        from omnivchat.routes._replicas import ReplicaSet

        replica_set = ReplicaSet.build(replicas, default_concurrency=settings.max_concurrency, policy=replica_policy)
    route = OpenAIRoute(model_id, settings, key, trust_env=trust_env, replicas=replica_set)
    route.server, route.server_note = info, note
    return route


def _server_info(
    server: str | ServerInfo, urls: list[str | None], key: Secret | None, trust_env: bool
) -> tuple[ServerInfo | None, str | None]:
    """What serves the model: given, or asked of every server at ``urls`` (each time: a caller making several routes
    of one model asks once and passes the answer on, as the command line does), which must all
    be of one kind (replicas that decode media differently cannot share one delivery); with why it is not known
    when it cannot be asked."""
    if isinstance(server, ServerInfo):
        return server, None
    if server != "auto":
        if server not in SERVER_KINDS:
            raise SettingsError(f"--server {server}: expected auto or one of {', '.join(SERVER_KINDS)}")
        return ServerInfo(kind=server, source="--server"), None
    said: list[ServerInfo] = []
    for url in urls:
        if url is None:
            return None, None
        found = ask_server(url, key.reveal() if key is not None else None, trust_env=trust_env)
        if isinstance(found, str):
            why = f"could not ask the server what it is ({found}): the model's defaults apply unchanged (--server)"
            return None, why
        said.append(found)
    kinds = sorted({(s.kind, s.version, tuple(sorted((s.modalities or {}).items()))) for s in said}, key=str)
    if len(kinds) > 1:
        labels = ", ".join(sorted({s.label() for s in said}))
        raise ServerMismatch(
            f"the replicas are different servers ({labels}): they take a clip's audio differently, so one delivery "
            "cannot serve them all; give replicas of one server and version"
        )
    first = said[0]
    # What the server said goes into manifests: redacted of the key (a hostile server may echo it) and kept short.
    version = Redactor(key).cut(first.version, 80) if first.version is not None else None
    return first.model_copy(update={"version": version}), None
