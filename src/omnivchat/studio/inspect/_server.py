"""Running the inspection page: a bench opened with its rejected instances, a socket on 127.0.0.1, an event loop
in a thread of its own (so the caller's thread stays free for Ctrl-C, or for a test)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import threading
from pathlib import Path
from types import TracebackType

from aiohttp import web

from omnivchat.bench import BENCH_FILE, INSTANCES_FILE, Bench, load_bench
from omnivchat.studio.inspect._app import HOST, make_app
from omnivchat.studio.inspect._lock import InspectError, ServerLock
from omnivchat.studio.inspect._log import DecisionLog

DEFAULT_PORT = 8765


def open_bench(bench_dir: str | Path) -> Bench:
    """The bench to inspect, every instance included (rejected ones too, so that a decision can be changed).

    InspectError (one line) for a path that is not a bench directory; BenchError, listing every problem, for a
    bench that does not validate (a malformed line of inspection.jsonl included)."""
    root = Path(bench_dir)
    if "\x00" in str(root) or not root.exists():
        raise InspectError(f"{root}: no such directory; give a bench directory (bench.yaml, instances.jsonl)")
    if not root.is_dir():
        raise InspectError(f"{root} is a file, not a bench directory")
    if not (root / BENCH_FILE).is_file() or not (root / INSTANCES_FILE).is_file():
        raise InspectError(f"{root} is not a bench directory (it needs {BENCH_FILE} and {INSTANCES_FILE})")
    return load_bench(root, include_rejected=True)


def _check_host(host: str) -> None:
    if host != HOST:  # anyone who can reach the port can change the bench: never more than this machine
        raise InspectError(f"the inspection page listens on {HOST} only, not {host!r}: it writes to the bench")


def _bind(host: str, port: int) -> socket.socket:
    _check_host(host)
    if not 0 <= port <= 65535:
        raise InspectError(f"port {port} is not a TCP port (0-65535; 0 picks a free one)")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart at once on the same port
        sock.bind((host, port))
        sock.listen(128)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise InspectError(f"port {port} on {host} is in use; pass another --port, or --port 0 for any") from None
        raise InspectError(f"cannot listen on {host}:{port} ({err.strerror or err})") from None
    sock.setblocking(False)
    return sock


class InspectServer:
    """The inspection page of one bench, on ``http://127.0.0.1:<port>/``; ``port=0`` picks a free port. One server
    per bench: while one holds ``BENCH/.inspect.lock`` another is refused (InspectLocked, naming its pid and URL).

    ``start()`` serves in a background thread and returns once the socket accepts connections; ``stop()`` ends
    it. Use it as a context manager in tests. Every decision is on disk before the page is told it was saved.
    """

    def __init__(self, bench_dir: str | Path, *, host: str = HOST, port: int = DEFAULT_PORT) -> None:
        _check_host(host)  # before anything is read: the refusal does not depend on the bench
        self.bench = open_bench(bench_dir)
        self.log = DecisionLog(self.bench.root, [i.id for i in self.bench.instances])
        self._lock = ServerLock(self.bench.root).acquire()  # one server per bench: a second is refused here
        try:
            self._sock = _bind(host, port)
        except BaseException:
            self._lock.release()
            raise
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}/"
        self._lock.record(self.url)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> InspectServer:
        if self._thread is not None:
            raise RuntimeError("the inspection server was started already")
        self._thread = threading.Thread(target=self._run, name=f"omnivchat-inspect-{self.port}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure
        return self

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
        runner = web.AppRunner(make_app(self.bench, self.log, self.port), access_log=None)
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
        self._lock.release()

    def __enter__(self) -> InspectServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
