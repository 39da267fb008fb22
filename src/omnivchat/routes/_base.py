"""The route interface shared by every model route."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from omnivchat.routes._defaults import RouteSettings
from omnivchat.routes._media_parts import MediaStore
from omnivchat.routes._types import ChatRequest, ChatResponse, Delivered

StructuredOutput = Literal["auto", "json_schema", "json_object", "off"]
"""How a reply's JSON schema is sent: json_schema (OpenAI, vLLM, SGLang), json_object (llama.cpp), off; auto:
only where the route's form is certain."""

# Routes that take a JSON schema in a form known for certain: the Gemini native route turns either form into
# responseJsonSchema. An OpenAI-compatible server may be vLLM, SGLang or llama.cpp, which differ.
_SCHEMA_CERTAIN = frozenset({"gemini"})


def schema_format(
    route_kind: str, schema: dict[str, Any] | None, form: StructuredOutput, *, name: str, strict: bool
) -> dict[str, Any] | None:
    """The ``response_format`` that constrains a reply to ``schema`` on a route of ``route_kind``
    (``RouteSettings.route``), in ``form``: ``json_schema`` is OpenAI's form, which vLLM and SGLang take too;
    ``json_object`` is llama.cpp's server's (``{"type": "json_object", "schema": ...}``; its json_schema form fails
    with HTTP 500); ``auto`` constrains only where the route's form is certain, ``off`` never. None: send nothing."""
    if schema is None or form == "off" or (form == "auto" and route_kind not in _SCHEMA_CERTAIN):
        return None
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


@dataclass
class Prepared:
    """A request ready to send: its identity (``key``, over endpoint and described payload) and its media."""

    key: str
    request: ChatRequest
    description: dict[str, Any]
    media: MediaStore = field(default_factory=MediaStore)
    delivered: Delivered = field(default_factory=Delivered)


class Route(Protocol):
    """One model behind one endpoint. ``prepare`` is synchronous (media work; run it in a thread) and does no
    network I/O; ``send`` makes exactly one attempt and raises RouteError on failure."""

    model_id: str
    settings: RouteSettings

    @property
    def endpoint(self) -> str:
        """Where requests go, without port, query or credentials: safe to store and part of request keys."""
        ...

    def prepare(self, request: ChatRequest) -> Prepared: ...

    async def send(self, prepared: Prepared) -> ChatResponse: ...

    async def aclose(self) -> None: ...


class StageSender(Protocol):
    """Sends one stage request to its end: the answer, or a RouteError once its retries are spent."""

    def __call__(self, stage: str, route: Route, request: ChatRequest) -> Awaitable[ChatResponse]: ...


@runtime_checkable
class StagedRoute(Protocol):
    """A route that answers through stage requests of its own (the cascade): the run loop binds a StageSender
    that sends them through the run's store; a budget and an estimate treat its stages apart."""

    def bind_stages(self, sender: StageSender) -> None: ...
