"""Running the inspection page: a bench opened with its rejected instances, a socket on 127.0.0.1, an event loop
in a thread of its own (so the caller's thread stays free for Ctrl-C, or for a test)."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from omnivchat._loopback import HOST, ServerThread, bind, check_host
from omnivchat.bench import BENCH_FILE, INSTANCES_FILE, Bench, load_bench
from omnivchat.studio.inspect._app import make_app
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
    # anyone who can reach the port can change the bench: never more than this machine
    check_host(host, InspectError, "the inspection page writes to the bench")


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
            sock = bind(port, InspectError)
        except BaseException:
            self._lock.release()
            raise
        self.port: int = sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}/"
        self._lock.record(self.url)
        self._server = ServerThread(sock, lambda: make_app(self.bench, self.log, self.port), f"inspect-{self.port}")

    @property
    def running(self) -> bool:
        return self._server.running

    def start(self) -> InspectServer:
        self._server.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server stops (or ``timeout`` passes); True once it has stopped."""
        return self._server.wait(timeout)

    def stop(self) -> None:
        """Stop serving and close the socket; safe to call twice, or before start()."""
        self._server.stop()
        self._lock.release()

    def __enter__(self) -> InspectServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
