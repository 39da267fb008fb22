"""One writer per run directory: an advisory lock on ``RUN/.lock``.

Every command that writes into a run directory (``eval`` and the ablation grid through :func:`run_tasks`,
``judge``, SocialOmni ``evaluate``, ``judge`` and ``rescore``) takes the lock first, before it reads or writes
the manifest and before any request is sent. A second writer fails at once with :class:`RunLocked`, whose message
names the holder's pid, what it is doing and since when; two writers would otherwise send (and pay for) every
request twice.

How it works:

- ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``RUN/.lock`` (created when missing, never deleted: it is harmless). The
  lock belongs to the open file, so the operating system drops it when the process ends in any way, SIGKILL
  included: a lock is never stale, and the pid written in the file is only there for the message.
- The file descriptor is not inherited by programs the writer starts (ffmpeg, the speech worker), so a
  surviving child never keeps a dead writer's lock. (A child forked without exec, e.g. multiprocessing's "fork",
  would share it.)
- Within one process the lock is re-entrant for the thread that holds it (a command that holds it may call
  :func:`run_tasks`, which takes it again); another thread of the same process is refused like another process.
- Readers (``runs show``, ``export``, ``score``, ``report``) never take it and never create the file.
  :func:`lock_holder` tells them who is writing: it tries a shared lock for an instant, and a writer that meets
  that instant retries for a moment (``CONTENTION_S``) before it gives up.
- Where ``fcntl`` is missing (Windows, not a target) there is no lock between processes: writers go on, and
  keeping to one writer per run directory is then the user's care.
- On network file systems the lock is as good as their ``flock`` (Linux NFS maps it onto NFS byte-range locks).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from omnivchat.runs._errors import RunError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks between processes (see the module docstring)
    fcntl = None  # type: ignore[assignment]  # Windows: the name is None there and checked before each use

LOCK_FILE = ".lock"
#: Seconds a writer retries a lock held by someone else before it fails: covers a reader's momentary probe.
CONTENTION_S = 0.3
#: Whether run directories are locked between processes on this platform.
LOCKING = fcntl is not None

F = TypeVar("F", bound=Callable[..., Any])


class RunLocked(RunError):
    """Another process (or thread) is writing the run directory; the message names its pid."""


@dataclass(frozen=True)
class LockHolder:
    """Who holds a run directory's lock, as written into the lock file by the holder."""

    pid: int | None
    command: str
    since: str
    host: str

    def describe(self) -> str:
        """'pid 123 (eval, since 2025-01-02 10:11:12)', with the host when it is another machine's."""
        if self.pid is None:
            return "another process (pid unknown)"
        details = [self.command] if self.command else []
        if self.since:
            details.append(f"since {self.since}")
        if self.host and self.host != socket.gethostname():
            details.append(f"on host {self.host}")
        return f"pid {self.pid}" + (f" ({', '.join(details)})" if details else "")


@dataclass
class _Held:
    fd: int
    thread: int
    depth: int
    created: bool  # this lock made the directory: it goes again if it holds nothing but the lock file
    run_dir: Path
    holder: LockHolder


_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


def _key(run_dir: Path) -> str:
    return os.path.realpath(run_dir)


def _read_holder(path: Path, wait_s: float = 1.0) -> LockHolder | None:
    """The holder recorded in ``path``; a holder that has just taken the lock may not have written it yet."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pid = data.get("pid")
            return LockHolder(
                pid=pid if isinstance(pid, int) else None,
                command=str(data.get("command") or ""),
                since=str(data.get("since") or ""),
                host=str(data.get("host") or ""),
            )
        except (OSError, ValueError, AttributeError):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


def _locked(run_dir: Path, holder: LockHolder | None) -> RunLocked:
    who = holder.describe() if holder is not None else "another process (pid unknown)"
    return RunLocked(f"{run_dir} is being written by {who}; wait for it or stop it")


def _open_locked(run_dir: Path, command: str) -> tuple[int, LockHolder]:
    """Open and lock RUN/.lock, then record this process in it."""
    assert fcntl is not None
    path = run_dir / LOCK_FILE
    deadline = time.monotonic() + CONTENTION_S
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except FileNotFoundError:  # a writer that had made the directory removed it again: make it anew
            run_dir.mkdir(parents=True, exist_ok=True)
            continue
        except OSError as err:
            raise RunError(f"{path}: cannot open the lock file ({err.strerror}); is {run_dir} writable?") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() < deadline:  # perhaps a reader looking for an instant: ask again shortly
                time.sleep(0.02)
                continue
            raise _locked(run_dir, _read_holder(path)) from None
        except OSError as err:
            os.close(fd)
            raise RunError(f"{path}: cannot lock the run directory ({err.strerror})") from None
        try:  # the file may have been removed (and made anew) while we waited: the lock must be on the one there
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        holder = LockHolder(
            pid=os.getpid(),
            command=command,
            since=datetime.now().astimezone().isoformat(sep=" ", timespec="seconds"),
            host=socket.gethostname(),
        )
        record = json.dumps({"pid": holder.pid, "command": command, "since": holder.since, "host": holder.host})
        os.ftruncate(fd, 0)
        os.pwrite(fd, (record + "\n").encode(), 0)
        return fd, holder


def acquire(run_dir: str | Path, command: str) -> None:
    """Take the lock of ``run_dir`` (made when missing) for ``command``; :class:`RunLocked` when someone else holds
    it. Pair every call with :func:`release`; prefer :func:`run_lock`."""
    run_dir = Path(run_dir)
    with _GUARD:
        created = False
        if not run_dir.is_dir():
            try:
                run_dir.mkdir(parents=True)
                created = True
            except FileExistsError:
                if not run_dir.is_dir():
                    raise RunError(f"{run_dir} exists and is not a directory") from None
            except OSError as err:
                raise RunError(f"{run_dir}: cannot make the run directory ({err.strerror})") from None
        key = _key(run_dir)
        held = _HELD.get(key)
        if held is not None:
            if held.thread != threading.get_ident():
                who = f"another thread of this process (pid {os.getpid()}, {held.holder.command})"
                raise RunLocked(f"{run_dir} is being written by {who}; wait for it or stop it")
            held.depth += 1
            return
        if fcntl is None:
            holder = LockHolder(os.getpid(), command, "", socket.gethostname())
            _HELD[key] = _Held(-1, threading.get_ident(), 1, False, run_dir, holder)
            return
        try:
            fd, holder = _open_locked(run_dir, command)
        except BaseException:
            if created:
                with suppress(OSError):
                    run_dir.rmdir()
            raise
        _HELD[key] = _Held(fd, threading.get_ident(), 1, created, run_dir, holder)


def release(run_dir: str | Path) -> None:
    """Give back one :func:`acquire` of ``run_dir``; the last one unlocks it. A directory the lock made and that
    holds nothing else is removed again, so that a writer that failed early leaves nothing behind."""
    with _GUARD:
        key = _key(Path(run_dir))
        held = _HELD.get(key)
        if held is None:
            return
        held.depth -= 1
        if held.depth > 0:
            return
        del _HELD[key]
        if held.fd < 0:
            return
        try:
            if held.created and os.listdir(held.run_dir) == [LOCK_FILE]:
                with suppress(OSError):  # still locked while removed: a waiting writer sees the change and retries
                    (held.run_dir / LOCK_FILE).unlink()
                    held.run_dir.rmdir()
            else:
                os.ftruncate(held.fd, 0)  # the holder is gone: nothing to name any more
        except OSError:
            pass
        finally:
            os.close(held.fd)


@contextmanager
def run_lock(run_dir: str | Path, command: str) -> Iterator[None]:
    """Hold the writer lock of ``run_dir`` while the block runs (see the module docstring)."""
    acquire(run_dir, command)
    try:
        yield
    finally:
        release(run_dir)


def writes_run_dir(param: str, command: str) -> Callable[[F], F]:
    """Decorate a function (or coroutine function) that writes into the run directory passed as ``param``: it
    holds that directory's lock while it runs, taken before its first line."""

    def decorate(fn: F) -> F:
        signature = inspect.signature(fn)

        def where(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Path:
            return Path(signature.bind(*args, **kwargs).arguments[param])

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def locked_coroutine(*args: Any, **kwargs: Any) -> Any:
                with run_lock(where(args, kwargs), command):
                    return await fn(*args, **kwargs)

            return locked_coroutine  # type: ignore[return-value]  # the wrapper keeps fn's parameters; mypy cannot see that through the coroutine branch

        @functools.wraps(fn)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with run_lock(where(args, kwargs), command):
                return fn(*args, **kwargs)

        return locked  # type: ignore[return-value]  # the wrapper keeps fn's parameters; mypy cannot see that through the coroutine branch

    return decorate


def lock_holder(run_dir: str | Path) -> LockHolder | None:
    """Who is writing ``run_dir`` now, or None (nobody, or no locking on this platform). Creates no file and
    changes none: it opens an existing lock file read-only and tries a shared lock for an instant."""
    if fcntl is None:
        return None
    run_dir = Path(run_dir)
    with _GUARD:
        held = _HELD.get(_key(run_dir))
        if held is not None:
            return held.holder
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_holder(path) or LockHolder(None, "", "", "")
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops the shared lock, if it was taken
    return None
