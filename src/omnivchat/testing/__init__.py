"""Test support: a loopback OpenAI-compatible server (real HTTP and SSE on 127.0.0.1) that tests program.

`LoopbackServer` runs in-process on its own thread and records requests; `spawn_loopback` runs it in a child
process (`python -m omnivchat.testing.loopback`) for performance measurements. Each answer follows a
`Behaviour`: text, latency, error statuses with Retry-After, hangs, cut or malformed streams, and so on.
"""

from omnivchat.testing._loopback import (
    DEFAULT_MODEL,
    DEFAULT_TEXT,
    HOST,
    Behaviour,
    LoopbackProcess,
    LoopbackServer,
    RecordedRequest,
    message_text,
    process_args,
    serve_forever,
    spawn_loopback,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_TEXT",
    "HOST",
    "Behaviour",
    "LoopbackProcess",
    "LoopbackServer",
    "RecordedRequest",
    "message_text",
    "process_args",
    "serve_forever",
    "spawn_loopback",
]
