"""One inspection server per bench: ``<bench>/.inspect.lock``, which names the server's pid and URL.

Two pages on one bench would each show decisions the other does not (one of them stale), so a second server is
refused, and the message names the first. The lock is an advisory ``flock`` on the file, taken before the socket
is bound; the operating system drops it when the server's process ends in any way (SIGKILL included), so a lock
file left behind by a dead server holds no lock and the next server takes it over. A server that stops removes
the file. Where ``fcntl`` is missing
(Windows, not a target) the pid in the file is checked instead: a dead pid's lock is taken over.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omnivchat.errors import OmnivchatError

try:
    import fcntl
except ImportError:  # Windows: the recorded pid is checked instead (see the module docstring)
    fcntl = None  # type: ignore[assignment]  # Windows: the name is None there and checked before each use

LOCK_FILE = ".inspect.lock"


class InspectError(OmnivchatError):
    """The inspection page cannot start: not a bench directory, a host other than 127.0.0.1, a port in use."""


class InspectLocked(InspectError):
    """Another inspection server serves this bench; the message names its pid and URL."""


@dataclass(frozen=True)
class Holder:
    """The server named in a lock file."""

    pid: int | None
    url: str
    since: str

    def describe(self) -> str:
        where = f" at {self.url}" if self.url else ""
        since = f", since {self.since}" if self.since else ""
        return f"pid {self.pid}{where}{since}" if self.pid is not None else f"another process{where}"


def read_holder(bench_dir: Path) -> Holder | None:
    """The server recorded in ``bench_dir/.inspect.lock`` (None without a readable record)."""
    try:
        data = json.loads((bench_dir / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    return Holder(pid if isinstance(pid, int) else None, str(data.get("url") or ""), str(data.get("since") or ""))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


class ServerLock:
    """The bench's inspection lock, held from :meth:`acquire` to :meth:`release`; :meth:`record` writes the URL
    once the socket is bound."""

    def __init__(self, bench_dir: Path) -> None:
        self.path = bench_dir / LOCK_FILE
        self.bench_dir = bench_dir
        self._fd: int | None = None

    def acquire(self) -> ServerLock:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError as err:
                raise InspectError(f"{self.path}: cannot open the inspection lock ({err.strerror})") from None
            if fcntl is None:
                break
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._refusal() from None
            try:  # a server stopping removes the file: the lock must be on the file that is there now
                if os.path.samestat(os.fstat(fd), os.stat(self.path)):
                    break
            except FileNotFoundError:
                pass
            os.close(fd)
        if fcntl is None:
            holder = read_holder(self.bench_dir)
            if holder is not None and holder.pid is not None and holder.pid != os.getpid() and _alive(holder.pid):
                os.close(fd)
                raise self._refusal()
        self._fd = fd
        self.record("")  # ours now: a stale record (a dead server's) is replaced at once
        return self

    def _refusal(self) -> InspectLocked:
        holder = read_holder(self.bench_dir)
        who = holder.describe() if holder is not None else "another process (pid unknown)"
        return InspectLocked(
            f"{self.bench_dir} is already being inspected by {who}: use that page, or stop that server "
            "(Ctrl-C) before starting another; two pages on one bench would each miss the other's decisions"
        )

    def record(self, url: str) -> None:
        """Write this process's pid and ``url`` into the lock file."""
        if self._fd is None:
            return
        since = datetime.now().astimezone().isoformat(sep=" ", timespec="seconds")
        line = json.dumps({"pid": os.getpid(), "url": url, "since": since}) + "\n"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, line.encode(), 0)

    def release(self) -> None:
        """Remove the lock file and drop the lock (a server that opened the old file meanwhile sees it gone and
        opens the path anew, see :meth:`acquire`)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(self.path)):
                self.path.unlink()
        except OSError:
            pass  # gone already, or not ours: nothing to remove
        finally:
            os.close(fd)  # drops the flock
