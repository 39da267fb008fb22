"""A hostile server: behaviours that each echo the caller's own key into one place a client may keep.

Every string a server sends can end up in a run store, an export, a report, a registry or the console; a
client must strip the key it sent from all of them. These behaviours put the key (as the server received it:
see `API_KEY`, `AUTHORIZATION`) into each such place, including long bodies where the key repeats with
one-character gaps, so that wherever a client cuts the text, the cut falls inside a key.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable

from omnivchat.testing._loopback import (
    API_KEY,
    API_KEY_BASE64,
    API_KEY_LINES,
    API_KEY_REVERSED,
    API_KEY_SPACED,
    API_KEY_URL,
    AUTHORIZATION,
    AUTHORIZATION_BASE64,
    DEFAULT_TEXT,
    Behaviour,
    Rules,
)

QUICK_RETRY = 0.01
"""Retry-After on the retryable failures, so that clients that retry do it at once."""


def straddling(placeholder: str = API_KEY, times: int = 24, offset: int = 0) -> str:
    """``times`` copies of ``placeholder`` one space apart, after ``offset`` dots: a cut anywhere in it (but on
    one of the gaps) splits a key, whatever the key's length."""
    return "." * offset + " ".join([placeholder] * times)


def _page(status: int, reason: str, inner: str) -> str:
    return (
        f"<html><head><title>{status} {reason}</title></head><body><center><h1>{status} {reason}</h1></center>"
        f"<p>{inner}</p><hr><center>nginx</center></body></html>"
    )


def hostile_behaviours(reply: str = DEFAULT_TEXT) -> dict[str, Behaviour]:
    """One behaviour per leak place, by name. ``reply`` is the useful part of the successful answers (a judge
    verdict, say); the key is added to it. Retryable failures carry a tiny Retry-After."""
    echo_headers = {"X-Echo-Authorization": AUTHORIZATION, "X-Echo-Key": API_KEY}
    return {
        # HTTP errors: the OpenAI error JSON (4xx and 5xx), proxies' HTML pages, encoded forms, a long message.
        "error-json-4xx": Behaviour(
            status=401, error_message=f"Incorrect API key provided: {API_KEY}.", headers=echo_headers
        ),
        "error-json-5xx": Behaviour(
            status=500, error_message=f"upstream refused {AUTHORIZATION}", retry_after=QUICK_RETRY, headers=echo_headers
        ),
        "error-json-long": Behaviour(status=400, error_message=straddling(API_KEY)),
        "error-json-long-offset": Behaviour(status=422, error_message=straddling(AUTHORIZATION, offset=17)),
        "error-json-encoded": Behaviour(
            status=400,
            error_message=f"key (base64) {API_KEY_BASE64}, header (base64) {AUTHORIZATION_BASE64}, url {API_KEY_URL}",
        ),
        "error-html-4xx": Behaviour(
            status=403, error_body=_page(403, "Forbidden", f"Denied: {AUTHORIZATION}"), headers=echo_headers
        ),
        "error-html-5xx": Behaviour(
            status=502, error_body=_page(502, "Bad Gateway", straddling(API_KEY)), retry_after=QUICK_RETRY
        ),
        # Inside a 200 answer: a chunk that is not JSON, an error event, a finish reason, a cut reply.
        "bad-chunk": Behaviour(bad_chunk=f"proxy: token {AUTHORIZATION} is not allowed here"),
        "bad-chunk-long": Behaviour(bad_chunk=straddling(AUTHORIZATION, offset=5)),
        "error-in-stream": Behaviour(error_in_stream=f"key {API_KEY} was revoked", headers=echo_headers),
        "bad-finish": Behaviour(finish_reason=API_KEY),
        "cut-at-length": Behaviour(text=f"{reply} {straddling(API_KEY, 3)}", finish_reason="length"),
        # Complete answers: the key in the text, the reasoning, the model name, the usage and the headers.
        "reply": Behaviour(
            text=f"{reply} {API_KEY}",
            reasoning=f"I was called with {AUTHORIZATION}",
            model=API_KEY,
            usage={
                "prompt_tokens": 3,
                "completion_tokens": 5,
                "total_tokens": 8,
                "echo": AUTHORIZATION,
                API_KEY: {"details": [API_KEY_BASE64, API_KEY_URL], "cost": AUTHORIZATION_BASE64},
            },
            headers=echo_headers,
        ),
        "reply-long": Behaviour(text=f"{reply} {straddling(API_KEY)}", model=straddling(API_KEY, 3)),
        # The key in pieces: over many streamed deltas, spaced out, reversed, over the data: lines of one event.
        "reply-split": Behaviour(text=f"{reply} {API_KEY}", reasoning=f"key {API_KEY}", chunk_chars=3),
        "reply-spaced": Behaviour(text=f"{reply} {API_KEY_SPACED}", reasoning=API_KEY_REVERSED),
        "reply-reversed": Behaviour(text=f"{reply} {API_KEY_REVERSED}", model=API_KEY_REVERSED),
        "bad-chunk-lines": Behaviour(bad_chunk=f"proxy:\n{API_KEY_LINES}"),
        "error-json-spelled": Behaviour(status=401, error_message=f"bad key {API_KEY_SPACED} ({API_KEY_REVERSED})"),
    }


def rotation(behaviours: Iterable[Behaviour]) -> Rules:
    """Rules (for `LoopbackServer(rules=...)`) that answer successive requests with ``behaviours`` in turn, over
    and over, whatever the requests say."""
    cycle = itertools.cycle(list(behaviours))
    lock = threading.Lock()  # rules run on the server's thread; a test may share them between servers

    def rules(_request_json: object) -> Behaviour:
        with lock:
            return next(cycle)

    return rules
