"""Both real routes against a hostile loopback server: nothing a route returns or raises carries the key.

The server echoes the key it received into each place (see `omnivchat.testing.hostile_behaviours`); the route's
ChatResponse (text, reasoning, model, usage, finish reason) or RouteError (message, partial text) must hold no
piece of it, streaming or not. A server that breaks the protocol's types fails the attempt, it does not crash.
"""

from __future__ import annotations

import asyncio
import json
import secrets

import pytest

from omnivchat.routes import ChatRequest, ChatResponse, RouteError, Secret, get_route
from omnivchat.testing import Behaviour, LoopbackServer, hostile_behaviours

PLACES = sorted(hostile_behaviours())


def new_key() -> str:
    return "sk-test-" + secrets.token_urlsafe(24)


def pieces(key: str, size: int = 8) -> list[str]:
    return [key[i : i + size].lower() for i in range(len(key) - size + 1)]


def outcome(route, request=None) -> ChatResponse | RouteError:
    async def go():
        try:
            return await route.send(route.prepare(request or ChatRequest(item_id="t", text="hello")))
        except RouteError as err:
            return err
        finally:
            await route.aclose()

    return asyncio.run(go())


def shown(result: ChatResponse | RouteError) -> str:
    """Everything a caller could store or print of an outcome."""
    if isinstance(result, RouteError):
        return " ".join(map(str, (result, result.message, result.partial_text, result.args)))
    return result.model_dump_json()


def assert_no_key(result, key: str) -> None:
    text = shown(result).lower()
    leaked = [p for p in pieces(key) if p in text]
    assert not leaked, f"{leaked[:3]} in {text[:500]}"


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("place", PLACES)
def test_openai_route(place, stream):
    key = new_key()
    with LoopbackServer(hostile_behaviours()[place]) as server:
        route = get_route("omni", base_url=server.base_url, api_key=Secret(key), stream=stream, timeout_s=10.0)
        result = outcome(route)
        sent = server.chat_requests[0].headers["Authorization"]
    assert sent == f"Bearer {key}"  # the server did get the key, and could echo it
    assert_no_key(result, key)
    if place == "reply":
        assert isinstance(result, ChatResponse)
        assert result.text.endswith(" ***") and result.model == "***" and result.usage["echo"] == "Bearer ***"
        assert result.usage["***"]["details"][0] != key and result.usage["total_tokens"] == 8


@pytest.mark.parametrize("place", PLACES)
def test_gemini_route(place):
    pytest.importorskip("google.genai")
    key = new_key()
    with LoopbackServer(hostile_behaviours()[place]) as server:
        route = get_route("gemini:hostile", base_url=server.url, api_key=Secret(key), timeout_s=10.0)
        result = outcome(route)
        assert server.requests[0].headers.get("x-goog-api-key") == key
    assert_no_key(result, key)


@pytest.mark.parametrize(
    ("behaviour", "stream"),
    [
        (Behaviour(bad_chunk='{"choices": [{"delta": {"content": ["not", "text"]}}]}'), True),
        (Behaviour(bad_chunk='{"choices": "none"}'), True),
        (Behaviour(bad_chunk='{"choices": [{"message": {"content": {"a": 1}}, "finish_reason": "stop"}]}'), False),
        (Behaviour(bad_chunk="[1, 2]"), True),
        (Behaviour(status=400, error_body='{"error": {"message": {"nested": ["KEY"]}}}', error_content_type="x"), True),
    ],
)
def test_wrong_types_fail_the_attempt_without_a_crash(behaviour, stream):
    with LoopbackServer(behaviour) as server:
        result = outcome(get_route("omni", base_url=server.base_url, api_key=Secret("KEY-" + "k" * 20), stream=stream))
    assert isinstance(result, RouteError) and result.kind in ("malformed", "http_error"), result


def test_odd_model_and_usage_are_dropped_not_stored():
    body = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": [1, 2],
        "model": {"name": "x"},
    }
    with LoopbackServer(Behaviour(bad_chunk=json.dumps(body))) as server:  # non-streaming: the body as given
        result = outcome(get_route("omni", base_url=server.base_url, stream=False))
    assert isinstance(result, ChatResponse) and result.text == "hi"
    assert result.usage == {} and result.model is None
