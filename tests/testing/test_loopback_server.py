"""LoopbackServer as a whole: script order, rules, recording, concurrency, shutdown, process mode."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import threading
import time
import warnings

import aiohttp
import pytest

from omnivchat.testing import DEFAULT_TEXT, Behaviour, LoopbackServer, message_text, spawn_loopback


def run(coro):
    return asyncio.run(coro)


def test_script_is_consumed_in_arrival_order_then_default(post):
    with LoopbackServer(Behaviour(text="default")) as srv:
        srv.script(Behaviour(text="first")).script(Behaviour(text="second"), Behaviour(status=500))
        assert srv.pending == 3
        replies = [run(post(srv.base_url)) for _ in range(5)]
        assert srv.pending == 0
    assert [r.status for r in replies] == [200, 200, 500, 200, 200]
    assert [r.field("content") for r in replies] == ["first", "second", "", "default", "default"]


def test_rules_are_checked_first_and_leave_the_script_alone(post, body):
    def rules(req):
        text = message_text(req)
        if "judge" in text:
            return Behaviour(text='{"hits": [1, 2]}')
        if "busy" in text:
            return Behaviour(status=429, retry_after=1)
        return None

    with LoopbackServer(rules=rules) as srv:
        srv.script(Behaviour(text="scripted"))
        judged = run(post(srv.base_url, body(content="You are a judge. Grade this.")))
        busy = run(post(srv.base_url, body(content="are you busy?")))
        assert srv.pending == 1  # rules answered: the script was not consumed
        scripted = run(post(srv.base_url, body(content="hello")))
        default = run(post(srv.base_url, body(content="hello")))
    assert json.loads(judged.field("content")) == {"hits": [1, 2]}
    assert busy.status == 429 and busy.headers["Retry-After"] == "1"
    assert scripted.field("content") == "scripted"
    assert default.field("content") == DEFAULT_TEXT


def test_rules_and_default_can_be_changed_while_running(post):
    with LoopbackServer() as srv:
        srv.default = Behaviour(text="changed")
        assert run(post(srv.base_url)).field("content") == "changed"
        srv.rules = lambda req: Behaviour(text="ruled")
        assert run(post(srv.base_url)).field("content") == "ruled"


def test_message_text_reads_strings_and_text_parts():
    req = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}},
                    {"type": "text", "text": "Which door?"},
                ],
            },
        ]
    }
    assert message_text(req) == "Be brief.\nWhich door?"
    assert message_text({}) == ""


def test_requests_are_recorded(post, body):
    with LoopbackServer() as srv:
        before = time.monotonic()
        run(post(srv.base_url, body(content="one")))
        run(post(srv.base_url, body(stream=False, content="two", temperature=0.0)))

        async def models():
            async with aiohttp.ClientSession() as s, s.get(srv.base_url + "/models") as r:
                await r.read()

        run(models())
        records = srv.requests
        assert srv.count == 2  # model requests only: the GET is recorded, not counted
        assert [(r.method, r.path) for r in records] == [
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/models"),
        ]
        first, second, _ = records
        assert first.json["messages"] == [{"role": "user", "content": "one"}]
        assert first.stream and not second.stream
        assert second.json["temperature"] == 0.0
        assert second.text == "two"
        assert json.loads(first.body) == first.json
        assert first.headers["authorization"] == "Bearer test-key-not-secret"  # case-insensitive
        assert first.headers["Content-Type"] == "application/json"
        assert before <= first.time <= second.time <= time.monotonic()
        assert len(srv.chat_requests) == 2
        srv.script(Behaviour())
        srv.clear()
        assert srv.count == 0 and srv.requests == [] and srv.pending == 0


def test_recording_can_be_turned_off_but_still_counts(post):
    with LoopbackServer(record=False) as srv:
        run(post(srv.base_url))
        assert srv.count == 1 and srv.requests == []


def test_a_failing_test_callable_answers_500_and_is_kept(post):
    def rules(req):
        raise KeyError("oops")

    with LoopbackServer(rules=rules) as srv:
        reply = run(post(srv.base_url))
        assert reply.status == 500
        assert "KeyError" in json.loads(reply.body)["error"]["message"]
        assert isinstance(srv.errors[0], KeyError)


def test_hundreds_of_concurrent_connections(post):
    n = 300
    latency = 0.3

    async def go(url: str):
        # One connection per request: no pooling limit, so all n are open at once.
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
            return await asyncio.gather(*(post(url, session=s) for _ in range(n)))

    with LoopbackServer(Behaviour(latency=latency)) as srv:
        start = time.monotonic()
        replies = run(go(srv.base_url))
        elapsed = time.monotonic() - start
        assert srv.count == n
    assert all(r.status == 200 and r.field("content") == DEFAULT_TEXT for r in replies)
    # Served in parallel: far less than n x latency (generous bound for slow CI machines).
    assert elapsed < latency + 3.0


def test_async_context_manager(post):
    async def go():
        async with LoopbackServer(Behaviour(text="async")) as srv:
            reply = await post(srv.base_url)
            return reply, srv.count

    reply, count = run(go())
    assert reply.field("content") == "async" and count == 1


def test_shutdown_with_requests_in_flight_is_clean_and_quick(post):
    threads_before = set(threading.enumerate())

    async def go():
        srv = LoopbackServer(Behaviour(hang=True)).start()
        srv.script(Behaviour(stall_after=1), Behaviour(latency=30))
        async with aiohttp.ClientSession() as s:
            pending = [
                asyncio.ensure_future(post(srv.base_url, session=s, catch=(aiohttp.ClientError,))) for _ in range(4)
            ]
            while srv.count < 4:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            start = time.monotonic()
            await asyncio.to_thread(srv.close)
            took = time.monotonic() - start
            outcomes = await asyncio.gather(*pending, return_exceptions=True)
        return took, outcomes

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        took, outcomes = run(go())
        gc.collect()
    assert took < 3.0
    # Every waiting client learnt that the server went away (none hangs).
    assert len(outcomes) == 4
    assert all(isinstance(o, aiohttp.ClientError) or getattr(o, "error", None) for o in outcomes)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning | RuntimeWarning)]
    assert set(threading.enumerate()) <= threads_before


def test_lifecycle_errors_and_idempotent_close():
    srv = LoopbackServer()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    srv.start()
    try:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
        assert "count=0" in repr(srv)
        with pytest.raises(RuntimeError):
            srv.start()
    finally:
        srv.close()
    srv.close()


def test_port_in_use_raises_on_start():
    with LoopbackServer() as first, pytest.raises(OSError):
        LoopbackServer(port=first.port).start()


def test_process_mode(post, body):
    with spawn_loopback(latency=0.1, text="from a child process", chunk_chars=5) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        start = time.monotonic()
        streamed = run(post(server.base_url))
        assert time.monotonic() - start >= 0.1
        plain = run(post(server.base_url, body(stream=False)))
    assert streamed.field("content") == "from a child process"
    assert streamed.data[-1] == "[DONE]"
    assert json.loads(plain.body)["choices"][0]["message"]["content"] == "from a child process"
    assert server.process.returncode == 0  # SIGTERM is a clean stop


def test_process_mode_cli_prints_base_url_first_and_scripts_errors(post):
    cmd = [sys.executable, "-m", "omnivchat.testing.loopback", "--port", "0", "--status", "429", "--retry-after", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        reply = run(post(url))
        assert reply.status == 429 and reply.headers["Retry-After"] == "2"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert err == b""  # nothing logged: no access log, no warnings


def test_spawn_reports_a_child_that_cannot_start():
    with pytest.raises(RuntimeError, match="did not start"):
        spawn_loopback(extra_args=["--no-such-flag"])
