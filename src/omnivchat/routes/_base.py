"""The route interface shared by every model route."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from omnivchat.routes._defaults import RouteSettings
from omnivchat.routes._media_parts import MediaStore
from omnivchat.routes._types import ChatRequest, ChatResponse, Delivered


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
