"""What every local web page of the tool shares (``studio inspect``, ``view``): a socket on 127.0.0.1 only, an
aiohttp application served from a thread of its own (the caller's thread stays free for Ctrl-C or a test), the
Host-header guard against DNS rebinding, errors as JSON, and headers that forbid framing, sniffing and
cross-origin embedding. Imports no package of the tool."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import threading
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from omnivchat.errors import OmnivchatError

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; media-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_PORT = web.AppKey("loopback_port", int)


class _QuietMalformed(logging.Filter):
    """Drop aiohttp's traceback for a request it could not parse (a bad header, a NUL in the path, TLS on plain
    HTTP): the client got its 400, and the user's terminal is no place for it. Errors of our own handlers stay."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, HttpProcessingError)


_server_log = logging.getLogger("omnivchat.local_server")
_server_log.addFilter(_QuietMalformed())


def error_response(status: int, message: str) -> web.Response:
    """Every error of a local page: JSON ``{"error": "..."}``."""
    return web.json_response({"error": message}, status=status)


def check_host(host: str, error: type[OmnivchatError], why: str) -> None:
    """Refuse any address but 127.0.0.1 (``why``: what a wider reach would expose)."""
    if host != HOST:
        raise error(f"{why}: it listens on {HOST} only, not {host!r}")


def bind(port: int, error: type[OmnivchatError]) -> socket.socket:
    """A listening, non-blocking socket on 127.0.0.1:``port`` (0 picks a free one); ``error`` for a bad or busy
    port."""
    if not 0 <= port <= 65535:
        raise error(f"port {port} is not a TCP port (0-65535; 0 picks a free one)")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart at once on the same port
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise error(f"port {port} on {HOST} is in use; pass another --port, or --port 0 for any") from None
        raise error(f"cannot listen on {HOST}:{port} ({err.strerror or err})") from None
    sock.setblocking(False)
    return sock


@web.middleware
async def _guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse a request for another host (DNS rebinding); turn aiohttp's own errors (404, 405, 413) into JSON."""
    port = request.app[_PORT]
    if request.headers.get("Host", "").lower() not in (f"{HOST}:{port}", f"localhost:{port}"):
        return error_response(403, f"this server answers only as http://{HOST}:{port}")
    try:
        return await handler(request)
    except web.HTTPException as err:
        if err.status < 400:
            raise
        return error_response(err.status, err.reason)


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
    if request.path.startswith("/api/"):
        response.headers["Cache-Control"] = "no-store"


def local_app(port: int, *, client_max_size: int = 1024**2) -> web.Application:
    """An application with the guards of every local page: the Host check, JSON errors, the safe headers."""
    app = web.Application(middlewares=[_guard], client_max_size=client_max_size)
    app[_PORT] = port
    app.on_response_prepare.append(_headers)
    return app


class ServerThread:
    """An application served on a bound socket from a daemon thread: ``start()`` returns once the socket accepts
    connections, ``stop()`` ends it (safe twice), ``wait()`` blocks until it has stopped."""

    def __init__(self, sock: socket.socket, app: Callable[[], web.Application], name: str) -> None:
        self._sock = sock
        self._app = app
        self._name = name
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"the {self._name} server was started already")
        self._thread = threading.Thread(target=self._run, name=f"omnivchat-{self._name}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # reported to start(), or lost with the thread if it ends later
            self._failure = err
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        runner = web.AppRunner(self._app(), access_log=None, logger=_server_log)
        await runner.setup()
        try:
            await web.SockSite(runner, self._sock).start()
            self._ready.set()
            await self._stopping.wait()
        finally:
            await runner.cleanup()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stops (or ``timeout`` passes); True once it has stopped."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Stop serving and close the socket; safe to call twice, or before start()."""
        if self._thread is not None and self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(timeout=10)
        self._sock.close()
