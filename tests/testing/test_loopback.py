"""Each loopback Behaviour, seen by a plain aiohttp client over a real socket on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from omnivchat.testing import DEFAULT_TEXT, Behaviour, LoopbackServer


def run(coro):
    return asyncio.run(coro)


def test_stream_sse_framing_usage_and_done(server, post):
    reply = run(post(server.base_url))
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    assert reply.body.startswith(b"data: ")
    assert reply.body.endswith(b"data: [DONE]\n\n")
    # Every event is one `data:` line followed by a blank line.
    events = reply.body.split(b"\n\n")
    assert events[-1] == b""
    assert all(e.startswith(b"data: ") and b"\n" not in e for e in events[:-1])
    chunks = reply.chunks
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "test-model" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert reply.field("content") == DEFAULT_TEXT
    assert len(chunks) > 4  # split into 8-character deltas by default
    assert reply.finish_reasons[-1] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9}
    assert all(c["usage"] is None for c in chunks[:-1])  # as OpenAI does with include_usage
    assert reply.data[-1] == "[DONE]"


def test_stream_without_include_usage_has_no_usage(server, post, body):
    reply = run(post(server.base_url, body(include_usage=False)))
    assert all("usage" not in c for c in reply.chunks)
    assert reply.chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert reply.data[-1] == "[DONE]"


def test_reasoning_streams_before_content(post):
    with LoopbackServer(Behaviour(text="Open.", reasoning="The left door is shut.", chunk_chars=4)) as srv:
        reply = run(post(srv.base_url))
    kinds = [next(iter(c["choices"][0]["delta"]), None) for c in reply.chunks if c["choices"]]
    assert kinds[0] == "role"
    assert kinds.index("content") > max(i for i, k in enumerate(kinds) if k == "reasoning_content")
    assert reply.field("reasoning_content") == "The left door is shut."
    assert reply.field("content") == "Open."


TEXT_UTF8 = "Ünïcode — the door on your left is closed ✓, the right one is open."


def test_13_byte_writes_reassembled_across_reads(post):
    whole = Behaviour(text=TEXT_UTF8)
    pieces = Behaviour(text=TEXT_UTF8, write_size=13, chunk_interval=0.002)
    with LoopbackServer() as srv:
        srv.script(whole, pieces)
        reference = run(post(srv.base_url))
        split = run(post(srv.base_url))
    # The bytes arrived in many reads, cutting SSE lines and UTF-8 characters anywhere ...
    assert len(split.reads) > 20
    assert max(len(r) for r in split.reads) < len(split.body) / 4
    assert any(not r.endswith(b"\n\n") for r in split.reads)
    with pytest.raises(UnicodeDecodeError):
        for r in split.reads:
            r.decode()
    # ... and reassemble into the same events (ids and times aside).
    assert split.field("content") == TEXT_UTF8 == reference.field("content")
    assert len(split.data) == len(reference.data)
    assert split.data[-1] == "[DONE]"


def test_13_byte_writes_with_aiohttp_line_reader():
    """aiohttp's own line iterator also reassembles lines split across 13-byte writes."""

    async def go(url: str) -> list[bytes]:
        async with aiohttp.ClientSession() as s, s.post(url + "/chat/completions", json={"stream": True}) as r:
            return [line async for line in r.content]

    with LoopbackServer(Behaviour(text=TEXT_UTF8, write_size=13, chunk_interval=0.001)) as srv:
        lines = run(go(srv.base_url))
    data = [line[6:].strip() for line in lines if line.startswith(b"data: ")]
    assert data[-1] == b"[DONE]"
    text = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for d in data[:-1])
    assert text == TEXT_UTF8


def test_429_with_retry_after(server, post):
    server.script(Behaviour(status=429, retry_after=0.5))
    reply = run(post(server.base_url))
    assert reply.status == 429
    assert reply.headers["Retry-After"] == "0.5"
    assert reply.headers["retry-after-ms"] == "500"
    error = json.loads(reply.body)["error"]
    assert error["type"] == "rate_limit_error" and error["code"] == "rate_limit_exceeded"
    assert error["message"]


def test_retry_after_as_http_date_is_sent_verbatim(server, post):
    server.script(Behaviour(status=503, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"))
    reply = run(post(server.base_url))
    assert reply.status == 503
    assert reply.headers["Retry-After"] == "Wed, 21 Oct 2015 07:28:00 GMT"
    assert "retry-after-ms" not in reply.headers


def test_500_error_body(server, post):
    server.script(Behaviour(status=500, error_message="upstream exploded"))
    reply = run(post(server.base_url))
    assert reply.status == 500
    assert reply.headers["Content-Type"].startswith("application/json")
    assert json.loads(reply.body) == {
        "error": {"message": "upstream exploded", "type": "server_error", "code": "internal_error"}
    }


def test_stream_cut_mid_way(server, post):
    server.script(Behaviour(cut_after=2))
    reply = run(post(server.base_url))
    assert isinstance(reply.error, aiohttp.ClientPayloadError)  # the HTTP body never completed
    assert reply.field("content") == DEFAULT_TEXT[:16]  # role chunk + 2 content chunks arrived
    assert "[DONE]" not in reply.data
    assert reply.finish_reasons == [None, None, None]


def test_stream_cut_cleanly_ends_body_without_finish_or_done(server, post):
    server.script(Behaviour(cut_after=1, cut_clean=True))
    reply = run(post(server.base_url))
    assert reply.error is None
    assert reply.field("content") == DEFAULT_TEXT[:8]
    assert "[DONE]" not in reply.data
    assert set(reply.finish_reasons) == {None}


def test_finish_reason_length(server, post):
    server.script(Behaviour(text="Truncated repl", finish_reason="length"))
    reply = run(post(server.base_url))
    assert reply.field("content") == "Truncated repl"
    assert reply.finish_reasons[-1] == "length"


def test_empty_text(server, post, body):
    server.script(Behaviour(text=""), Behaviour(text=""))
    reply = run(post(server.base_url))
    assert reply.field("content") == ""
    assert [c["choices"][0]["delta"] for c in reply.chunks if c["choices"]] == [
        {"role": "assistant", "content": ""},
        {},
    ]
    assert reply.chunks[-1]["usage"]["completion_tokens"] == 0
    plain = json.loads(run(post(server.base_url, body(stream=False))).body)
    assert plain["choices"][0]["message"]["content"] == ""


def test_malformed_chunk(server, post):
    server.script(Behaviour(malformed=True))
    reply = run(post(server.base_url))
    bad = []
    for d in reply.data[:-1]:
        try:
            json.loads(d)
        except ValueError:
            bad.append(d)
    assert len(bad) == 1
    assert reply.data.index(bad[0]) == 1  # right after the role chunk
    assert reply.field("content") == DEFAULT_TEXT  # the rest of the stream is intact
    assert reply.data[-1] == "[DONE]"


def test_error_object_mid_stream(server, post):
    server.script(Behaviour(error_in_stream="model overloaded"))
    reply = run(post(server.base_url))
    assert reply.status == 200
    errors = [c["error"] for c in reply.chunks if "error" in c]
    assert errors == [{"message": "model overloaded", "type": "server_error", "code": "internal_error"}]
    assert reply.field("content") == DEFAULT_TEXT[:8]
    assert "stop" not in reply.finish_reasons
    assert reply.data[-1] == "[DONE]"


def test_no_done(server, post):
    server.script(Behaviour(no_done=True))
    reply = run(post(server.base_url))
    assert reply.error is None
    assert "[DONE]" not in reply.data
    assert reply.finish_reasons[-1] == "stop"
    assert "usage" in reply.chunks[-1]


def test_hang_until_client_timeout(server, post):
    server.script(Behaviour(hang=True))
    start = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        run(post(server.base_url, timeout=aiohttp.ClientTimeout(total=0.2)))
    assert 0.2 <= time.monotonic() - start < 2
    assert server.count == 1
    # The server is still fine afterwards.
    assert run(post(server.base_url)).field("content") == DEFAULT_TEXT


def test_stall_mid_stream_trips_read_timeout(server, post):
    server.script(Behaviour(stall_after=1))
    reply = run(post(server.base_url, timeout=aiohttp.ClientTimeout(sock_read=0.2), catch=(asyncio.TimeoutError,)))
    assert isinstance(reply.error, asyncio.TimeoutError)
    assert reply.field("content") == DEFAULT_TEXT[:8]


def test_latency_before_first_byte(server, post):
    server.script(Behaviour(latency=0.25), Behaviour(status=429, latency=0.25))
    for status in (200, 429):
        start = time.monotonic()
        reply = run(post(server.base_url))
        assert reply.status == status
        assert time.monotonic() - start >= 0.25


def test_chunk_interval_paces_events(server, post):
    server.script(Behaviour(text="a" * 40, chunk_chars=10, chunk_interval=0.05))
    start = time.monotonic()
    reply = run(post(server.base_url))
    # role + 4 content + finish + usage + [DONE] = 8 events, 7 gaps
    assert time.monotonic() - start >= 7 * 0.05
    assert len(reply.reads) >= 4


def test_non_streaming_json(post, body):
    behaviour = Behaviour(text="The left door is closed.", reasoning="Look left.", finish_reason="length")
    with LoopbackServer(behaviour) as srv:
        reply = run(post(srv.base_url, body(stream=False)))
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    doc = json.loads(reply.body)
    assert doc["object"] == "chat.completion"
    assert doc["model"] == "test-model"
    assert doc["choices"][0]["message"] == {
        "role": "assistant",
        "content": "The left door is closed.",
        "reasoning_content": "Look left.",
    }
    assert doc["choices"][0]["finish_reason"] == "length"
    assert doc["usage"] == {"prompt_tokens": 4, "completion_tokens": 7, "total_tokens": 11}


def test_non_streaming_malformed_cut_and_raw_writes(server, post, body):
    server.script(
        Behaviour(malformed=True),
        Behaviour(cut_after=0),
        Behaviour(text=TEXT_UTF8, write_size=13, chunk_interval=0.001),
        Behaviour(error_in_stream="quota"),
    )
    malformed = run(post(server.base_url, body(stream=False)))
    assert malformed.status == 200
    with pytest.raises(ValueError):
        json.loads(malformed.body)
    cut = run(post(server.base_url, body(stream=False)))
    assert isinstance(cut.error, aiohttp.ClientPayloadError)
    raw = run(post(server.base_url, body(stream=False)))
    assert len(raw.reads) > 5
    assert json.loads(raw.body)["choices"][0]["message"]["content"] == TEXT_UTF8
    error = run(post(server.base_url, body(stream=False)))
    assert error.status == 200 and json.loads(error.body)["error"]["message"] == "quota"


def test_usage_override_and_model_override(server, post):
    server.script(Behaviour(usage={"prompt_tokens": 1000, "completion_tokens": 1, "total_tokens": 1001}, model="m2"))
    reply = run(post(server.base_url))
    assert reply.chunks[-1]["usage"]["prompt_tokens"] == 1000
    assert {c["model"] for c in reply.chunks} == {"m2"}


def test_extra_headers(server, post):
    server.script(Behaviour(headers={"x-request-id": "abc"}))
    assert run(post(server.base_url)).headers["x-request-id"] == "abc"


def test_text_callable_answers_from_the_request(post, body):
    with LoopbackServer(Behaviour(text=lambda req: req["messages"][-1]["content"].upper())) as srv:
        reply = run(post(srv.base_url, body(content="echo me")))
    assert reply.field("content") == "ECHO ME"


def test_models_endpoint(server):
    async def go():
        async with aiohttp.ClientSession() as s, s.get(server.base_url + "/models") as r:
            return r.status, await r.json()

    status, doc = run(go())
    assert status == 200
    assert doc["object"] == "list"
    assert [m["id"] for m in doc["data"]] == ["loopback-model"]


def test_api_key_checked_when_configured(post):
    with LoopbackServer(api_key="test-key-not-secret") as srv:
        ok = run(post(srv.base_url))
        bad = run(post(srv.base_url, headers={"Authorization": "Bearer wrong-key"}))
    assert ok.status == 200
    assert bad.status == 401
    assert json.loads(bad.body)["error"]["type"] == "authentication_error"
    assert "wrong-key" not in bad.body.decode()  # a key is never echoed


def test_bad_request_body_and_unknown_path(server):
    async def go():
        async with aiohttp.ClientSession() as s:
            async with s.post(server.base_url + "/chat/completions", data=b"{not json") as r:
                bad = r.status, await r.json()
            async with s.post(server.base_url + "/embeddings", json={}) as r:
                missing = r.status, await r.json()
        return bad, missing

    (bad_status, bad), (missing_status, missing) = run(go())
    assert bad_status == 400 and bad["error"]["type"] == "invalid_request_error"
    assert missing_status == 404 and "/v1/embeddings" in missing["error"]["message"]
    assert server.count == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"chunk_chars": 0},
        {"write_size": 0},
        {"cut_after": -1},
        {"latency": -0.1},
        {"status": 42},
    ],
)
def test_behaviour_rejects_nonsense(kwargs):
    with pytest.raises(ValueError):
        Behaviour(**kwargs)
