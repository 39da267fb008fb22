"""Test support: a loopback OpenAI-compatible server (real HTTP and SSE on 127.0.0.1) that tests program.

`LoopbackServer` runs in-process on its own thread and records requests; `spawn_loopback` runs it in a child
process (`python -m omnivchat.testing.loopback`) for performance measurements. Each answer follows a
`Behaviour`: text, latency, error statuses with Retry-After, hangs, cut or malformed streams, and so on. It
speaks Gemini's native generateContent too. `hostile_behaviours` make it echo the caller's key into every place a
client may keep (error bodies, bad chunks, HTML pages, reply text, usage, model, headers).

`HubServer` stands in for the Hugging Face Hub: the routes huggingface_hub lists and downloads a dataset through
(`HF_ENDPOINT=hub.endpoint`), with gated repos, corrupted files and cut downloads.
"""

from omnivchat.testing._hostile import hostile_behaviours, rotation, straddling
from omnivchat.testing._hub import CDN_HOST, HubRepo, HubRequest, HubServer, git_blob_sha1
from omnivchat.testing._loopback import (
    API_KEY,
    API_KEY_BASE64,
    API_KEY_LINES,
    API_KEY_REVERSED,
    API_KEY_SPACED,
    API_KEY_URL,
    AUTHORIZATION,
    AUTHORIZATION_BASE64,
    DEFAULT_MODEL,
    DEFAULT_TEXT,
    HOST,
    Behaviour,
    Identity,
    LoopbackProcess,
    LoopbackServer,
    RecordedRequest,
    llama_cpp_identity,
    message_text,
    process_args,
    serve_forever,
    sglang_identity,
    spawn_loopback,
    vllm_identity,
)

__all__ = [
    "API_KEY",
    "API_KEY_BASE64",
    "API_KEY_LINES",
    "API_KEY_REVERSED",
    "API_KEY_SPACED",
    "API_KEY_URL",
    "AUTHORIZATION",
    "AUTHORIZATION_BASE64",
    "CDN_HOST",
    "DEFAULT_MODEL",
    "DEFAULT_TEXT",
    "HOST",
    "Behaviour",
    "HubRepo",
    "HubRequest",
    "HubServer",
    "Identity",
    "LoopbackProcess",
    "LoopbackServer",
    "RecordedRequest",
    "git_blob_sha1",
    "hostile_behaviours",
    "llama_cpp_identity",
    "message_text",
    "process_args",
    "rotation",
    "serve_forever",
    "sglang_identity",
    "spawn_loopback",
    "straddling",
    "vllm_identity",
]
