"""Helpers for the loopback server tests: a plain aiohttp client that keeps every byte it read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from omnivchat.testing import LoopbackServer

FAKE_KEY = "test-key-not-secret"


@dataclass
class Reply:
    """What the client saw: status, headers, the body as it arrived read by read."""

    status: int
    headers: CIMultiDict[str]
    reads: list[bytes] = field(default_factory=list)
    error: BaseException | None = None
    """The exception that ended reading (cut stream, timeout), if any."""

    @property
    def body(self) -> bytes:
        return b"".join(self.reads)

    @property
    def data(self) -> list[str]:
        """The `data:` payloads of the SSE events, reassembled from the reads (split on blank lines)."""
        out = []
        for event in self.body.decode().split("\n\n"):
            for line in event.splitlines():
                if line.startswith("data:"):
                    out.append(line[5:].strip())
        return out

    @property
    def chunks(self) -> list[dict[str, Any]]:
        """The JSON chunks (not [DONE]; malformed ones skipped)."""
        out = []
        for d in self.data:
            if d == "[DONE]":
                continue
            try:
                out.append(json.loads(d))
            except ValueError:
                continue
        return out

    def field(self, name: str) -> str:
        """Concatenation of `delta[name]` over all chunks (e.g. "content", "reasoning_content")."""
        return "".join(
            c["delta"].get(name) or "" for chunk in self.chunks for c in chunk.get("choices") or () if "delta" in c
        )

    @property
    def finish_reasons(self) -> list[str | None]:
        return [c.get("finish_reason") for chunk in self.chunks for c in chunk.get("choices") or ()]


def body(stream: bool = True, include_usage: bool = True, content: str = "Which door is open?", **extra: Any) -> dict:
    """A chat-completions request body."""
    out: dict[str, Any] = {"model": "test-model", "messages": [{"role": "user", "content": content}], **extra}
    if stream:
        out["stream"] = True
        if include_usage:
            out["stream_options"] = {"include_usage": True}
    return out


async def post(
    base_url: str,
    payload: dict | None = None,
    *,
    session: aiohttp.ClientSession | None = None,
    timeout: aiohttp.ClientTimeout | None = None,
    headers: dict[str, str] | None = None,
    catch: tuple[type[BaseException], ...] = (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError),
) -> Reply:
    """POST {base_url}/chat/completions and read the body read by read, over a real socket."""
    own = session is None
    s = session or aiohttp.ClientSession()
    try:
        async with s.post(
            base_url + "/chat/completions",
            json=payload if payload is not None else body(),
            timeout=timeout or aiohttp.ClientTimeout(total=10),
            headers={"Authorization": f"Bearer {FAKE_KEY}", **(headers or {})},
        ) as resp:
            reply = Reply(resp.status, CIMultiDict(resp.headers))
            try:
                async for piece in resp.content.iter_any():
                    reply.reads.append(piece)
            except catch as exc:
                reply.error = exc
            return reply
    finally:
        if own:
            await s.close()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A fresh loopback server with the default behaviour."""
    with LoopbackServer() as srv:
        yield srv


@pytest.fixture(name="post")
def post_fixture():
    """The `post` helper (conftest modules are not importable under --import-mode=importlib)."""
    return post


@pytest.fixture(name="body")
def body_fixture():
    """The `body` helper."""
    return body
