"""The hostile mode: the loopback server echoes the key each request carried; raw error pages and bad chunks;
Gemini's generateContent; and the catalogue of hostile behaviours."""

from __future__ import annotations

import asyncio
import base64
import json
from urllib.parse import quote

import aiohttp

from omnivchat.testing import (
    API_KEY,
    API_KEY_BASE64,
    API_KEY_URL,
    AUTHORIZATION,
    AUTHORIZATION_BASE64,
    Behaviour,
    LoopbackServer,
    hostile_behaviours,
    rotation,
    straddling,
)

FAKE_KEY = "test-key-not-secret"  # what the `post` fixture sends as `Authorization: Bearer ...`


def run(coro):
    return asyncio.run(coro)


def test_placeholders_echo_what_the_request_carried(post, body):
    every = f"{API_KEY}|{AUTHORIZATION}|{API_KEY_URL}|{API_KEY_BASE64}|{AUTHORIZATION_BASE64}"
    behaviour = Behaviour(
        text=every,
        reasoning=API_KEY,
        model=API_KEY,
        usage={"total_tokens": 1, API_KEY: [AUTHORIZATION, {"n": API_KEY}]},
        headers={"X-Echo": AUTHORIZATION},
        chunk_chars=None,
    )
    with LoopbackServer(behaviour) as srv:
        streamed = run(post(srv.base_url))
        plain = run(post(srv.base_url, body(stream=False)))
    b64 = base64.b64encode
    expected = f"{FAKE_KEY}|Bearer {FAKE_KEY}|{quote(FAKE_KEY, safe='')}|{b64(FAKE_KEY.encode()).decode()}|" + (
        b64(f"Bearer {FAKE_KEY}".encode()).decode()
    )
    assert streamed.field("content") == expected and streamed.field("reasoning_content") == FAKE_KEY
    assert streamed.headers["X-Echo"] == f"Bearer {FAKE_KEY}"
    assert {c["model"] for c in streamed.chunks} == {FAKE_KEY}
    assert streamed.chunks[-1]["usage"] == {"total_tokens": 1, FAKE_KEY: [f"Bearer {FAKE_KEY}", {"n": FAKE_KEY}]}
    doc = json.loads(plain.body)
    assert doc["choices"][0]["message"]["content"] == expected and doc["model"] == FAKE_KEY


def test_errors_echo_too_and_raw_pages(server, post):
    server.script(
        Behaviour(status=401, error_message=f"bad key {API_KEY}", retry_after=API_KEY),
        Behaviour(status=502, error_body=f"<html><p>{AUTHORIZATION}</p></html>"),
        Behaviour(status=503, error_body="plain", error_content_type="text/plain"),
    )
    json_error, page, plain = (run(post(server.base_url)) for _ in range(3))
    assert json.loads(json_error.body)["error"]["message"] == f"bad key {FAKE_KEY}"
    assert json_error.headers["Retry-After"] == FAKE_KEY
    assert page.status == 502 and page.body.decode() == f"<html><p>Bearer {FAKE_KEY}</p></html>"
    assert page.headers["Content-Type"].startswith("text/html")
    assert plain.headers["Content-Type"].startswith("text/plain") and plain.body == b"plain"


def test_bad_chunk_where_a_json_chunk_belongs(server, post, body):
    server.script(Behaviour(bad_chunk=f"proxy says\n{AUTHORIZATION}", text="ok"), Behaviour(bad_chunk="<html>"))
    streamed = run(post(server.base_url))
    assert streamed.data[1:3] == ["proxy says", f"Bearer {FAKE_KEY}"]  # two data: lines of one event
    assert "proxy says\nBearer" in streamed.body.decode().replace("data: ", "")
    assert streamed.field("content") == "ok" and streamed.data[-1] == "[DONE]"
    plain = run(post(server.base_url, body(stream=False)))
    assert plain.status == 200 and plain.body == b"<html>"


def test_key_from_google_header_or_query(server):
    server.default = Behaviour(text=API_KEY)

    async def go():
        async with aiohttp.ClientSession() as s:
            url = server.base_url + "/chat/completions"
            async with s.post(url, json={"messages": []}, headers={"x-goog-api-key": "g-key"}) as r:
                by_header = (await r.json())["choices"][0]["message"]["content"]
            async with s.post(url + "?key=q-key", json={"messages": []}) as r:
                by_query = (await r.json())["choices"][0]["message"]["content"]
            async with s.post(url, json={"messages": []}) as r:
                none = (await r.json())["choices"][0]["message"]["content"]
        return by_header, by_query, none

    assert run(go()) == ("g-key", "q-key", "")


def gemini(server, payload, *, key="g-key", method="generateContent"):
    async def go():
        async with aiohttp.ClientSession() as s:
            url = f"{server.url}/v1beta/models/gem:{method}"
            async with s.post(url, json=payload, headers={"x-goog-api-key": key}) as r:
                return r.status, dict(r.headers), await r.read()

    return run(go())


def test_gemini_generate_content(server):
    server.script(
        Behaviour(text="A red square.", reasoning="Look.", model=f"m-{API_KEY}"),
        Behaviour(status=429, error_message=f"quota for {API_KEY}"),
        Behaviour(text="cut", finish_reason="length", usage={"promptTokenCount": 1}),
        Behaviour(bad_chunk="not json"),
    )
    payload = {"contents": [{"role": "user", "parts": [{"text": "hello there"}]}]}
    status, _, raw = gemini(server, payload)
    doc = json.loads(raw)
    candidate = doc["candidates"][0]
    assert status == 200 and candidate["finishReason"] == "STOP" and doc["modelVersion"] == "m-g-key"
    assert candidate["content"]["parts"] == [{"text": "Look.", "thought": True}, {"text": "A red square."}]
    assert doc["usageMetadata"]["candidatesTokenCount"] == 3
    status, _, raw = gemini(server, payload)
    assert status == 429 and json.loads(raw)["error"] == {
        "code": 429,
        "message": "quota for g-key",
        "status": "RESOURCE_EXHAUSTED",
    }
    status, _, raw = gemini(server, payload)
    doc = json.loads(raw)
    assert doc["candidates"][0]["finishReason"] == "MAX_TOKENS" and doc["usageMetadata"] == {"promptTokenCount": 1}
    assert gemini(server, payload)[2] == b"not json"
    assert gemini(server, payload, method="countTokens")[0] == 404
    assert server.requests[0].json == payload and server.requests[0].path == "/v1beta/models/gem:generateContent"


def test_gemini_checks_its_key_when_configured():
    with LoopbackServer(api_key="g-key") as srv:
        assert gemini(srv, {"contents": []})[0] == 200
        status, _, raw = gemini(srv, {"contents": []}, key="other-key-123")
    assert status == 401 and b"other-key-123" not in raw


def test_catalogue_covers_every_place():
    catalogue = hostile_behaviours(reply='{"hits": [1]}')
    assert {"error-json-4xx", "error-json-5xx", "error-html-4xx", "error-html-5xx", "bad-chunk", "reply"} <= set(
        catalogue
    )
    assert all("{{api_key" in repr(b) or "{{authorization" in repr(b) for b in catalogue.values())
    assert catalogue["reply"].text.startswith('{"hits": [1]}')
    # Retryable failures ask for a quick retry, so that clients that retry do not sit in backoff.
    assert all(b.retry_after for b in catalogue.values() if b.status >= 500)


def test_straddling_puts_a_key_across_nearly_every_cut():
    key = "k" * 31 + "K"
    text = straddling(API_KEY).replace(API_KEY, key)
    split = [n for n in range(1, len(text)) if text[:n].split(" ")[-1] not in ("", key)]
    assert len(split) >= len(text) * 0.9  # only a cut on a one-character gap or right after a key splits none


def test_rotation_hands_out_behaviours_in_turn(post):
    a, b = Behaviour(text="a"), Behaviour(text="b")
    with LoopbackServer(rules=rotation([a, b])) as srv:
        replies = [run(post(srv.base_url)).field("content") for _ in range(5)]
    assert replies == ["a", "b", "a", "b", "a"]
