"""Locating and running the ffmpeg binary (static build from imageio-ffmpeg; no apt needed)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from omnivchat.errors import OmnivchatError


class MediaError(OmnivchatError, RuntimeError):
    """A media operation failed; the message names the file concerned."""


class MediaKilled(MediaError):
    """ffmpeg was killed by a signal (an interrupt, the out-of-memory killer): nothing is known of the file, so
    this is never a verdict on it (a caller retries or stops; it never discards what it was making)."""


class MediaTimeout(MediaError):
    """An ffmpeg or PyAV call ran past its bound (:func:`media_timeout_s`): a clip that makes the decoder hang
    fails alone, with this kind, and the run goes on."""


TIMEOUT_ENV = "OMNIVCHAT_MEDIA_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 300.0  # an hour-long clip fitted on a slow machine takes a few minutes; a hang never ends


def media_timeout_s() -> float:
    """The bound on one ffmpeg or PyAV call, in seconds: ``$OMNIVCHAT_MEDIA_TIMEOUT_S`` or 300."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value > 0 and value != float("inf")):
        raise MediaError(f"{TIMEOUT_ENV}={raw!r}: not a positive number of seconds")
    return value


def timed_out(subject: str | os.PathLike[str] | None, what: str, limit: float) -> MediaTimeout:
    """The error of a media call stopped at its bound, naming the file and how to change the bound."""
    where = f"{subject}: " if subject is not None else ""
    return MediaTimeout(
        f"{where}{what} did not finish within {limit:g} s and was stopped (the clip may make the decoder hang; "
        f"{TIMEOUT_ENV} sets the bound)"
    )


# Flags that make an encode byte-identical from one run to the next on the same ffmpeg build: x264's output
# depends on its thread count, and the muxers otherwise stamp version strings and metadata.
DETERMINISTIC_ARGS: tuple[str, ...] = (
    "-threads",
    "1",
    "-map_metadata",
    "-1",
    "-fflags",
    "+bitexact",
    "-flags:v",
    "+bitexact",
    "-flags:a",
    "+bitexact",
)
# The one video and audio encoding every derived clip uses (H.264 + AAC in MP4, playable everywhere).
VIDEO_ENCODE_ARGS: tuple[str, ...] = (
    "-c:v",
    "libx264",
    "-preset",
    "veryfast",
    "-crf",
    "23",
    "-pix_fmt",
    "yuv420p",
)
AUDIO_ENCODE_ARGS: tuple[str, ...] = ("-c:a", "aac", "-b:a", "96k")

_calls_lock = threading.Lock()
_calls = 0


@functools.cache
def ffmpeg_exe() -> str:
    """Resolve ffmpeg: ``$IMAGEIO_FFMPEG_EXE``, then the imageio-ffmpeg package, then ``ffmpeg`` on PATH."""
    env = os.environ.get("IMAGEIO_FFMPEG_EXE")
    if env and Path(env).is_file():
        return env
    try:
        import imageio_ffmpeg

        return cast("str", imageio_ffmpeg.get_ffmpeg_exe())
    except Exception:  # package missing or its binary unusable: fall back to PATH
        found = shutil.which("ffmpeg")
        if found:
            return found
    raise MediaError("ffmpeg not found: install imageio-ffmpeg or set IMAGEIO_FFMPEG_EXE")


@functools.cache
def encoder_version() -> str:
    """The first line of ``ffmpeg -version`` (e.g. ``ffmpeg version n9.0.2-...``); part of every cache key.

    Encoded bytes differ between ffmpeg builds, so a cached file is only reused under the same build.
    """
    exe = ffmpeg_exe()
    limit = media_timeout_s()
    try:
        proc = subprocess.run([exe, "-version"], capture_output=True, check=False, timeout=limit)
    except subprocess.TimeoutExpired:
        raise timed_out(exe, "ffmpeg -version", limit) from None
    first = proc.stdout.decode("utf-8", "replace").splitlines()[:1]
    return first[0].strip() if first else f"unknown ffmpeg at {exe}"


def ffmpeg_calls() -> int:
    """How many ffmpeg processes this process has started through :func:`run_ffmpeg` / :func:`popen_ffmpeg`.

    Tests use it to prove that a cache hit runs no encoder.
    """
    return _calls


def _count() -> None:
    global _calls
    with _calls_lock:
        _calls += 1


def _base_cmd(args: list[str]) -> list[str]:
    return [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]


def _failure(subject: Path | str | None, code: int, stderr: bytes) -> MediaError:
    tail = stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
    where = f"{subject}: " if subject is not None else ""
    if code < 0:
        return MediaKilled(f"{where}ffmpeg was killed by signal {-code}")
    return MediaError(f"{where}ffmpeg failed (exit {code}): {' | '.join(tail)}")


def run_ffmpeg(args: list[str], *, subject: Path | str | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ffmpeg quietly with ``args``; raise MediaError naming ``subject`` with ffmpeg's last lines.

    ffmpeg runs in a session of its own (as every child process of the tool does): a terminal's Ctrl-C reaches only
    the tool, which decides what stops. On the calling thread an interrupt still kills it (``subprocess.run``
    kills its child on any exception); on a worker thread it finishes its (short) work. A call that runs past
    :func:`media_timeout_s` is killed and raises MediaTimeout."""
    cmd = _base_cmd(args)
    limit = media_timeout_s()
    _count()
    try:
        proc = subprocess.run(cmd, capture_output=True, check=False, start_new_session=True, timeout=limit)
    except subprocess.TimeoutExpired:  # subprocess.run has killed and reaped it
        raise timed_out(subject, "ffmpeg", limit) from None
    if proc.returncode != 0:
        raise _failure(subject, proc.returncode, proc.stderr)
    return proc


def popen_ffmpeg(args: list[str]) -> subprocess.Popen[bytes]:
    """Start ffmpeg with a writable stdin (raw frames are streamed into it); stderr is captured.

    Finish with :func:`finish_ffmpeg`, which closes stdin, waits and raises on failure. A process still running
    :func:`media_timeout_s` after its start is killed (a write into it then fails; finish_ffmpeg says it timed out).
    """
    limit = media_timeout_s()
    _count()
    proc = subprocess.Popen(
        _base_cmd(args),  # -nostdin only turns off key handling; `-i pipe:0` still reads stdin
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = _Deadline(limit, threading.Timer(limit, _expire, (proc,)))
    deadline.timer.daemon = True
    deadline.timer.start()
    _deadlines[proc] = deadline
    return proc


@dataclass
class _Deadline:
    limit: float
    timer: threading.Timer
    expired: bool = False


_deadlines: weakref.WeakKeyDictionary[subprocess.Popen[bytes], _Deadline] = weakref.WeakKeyDictionary()


def _expire(proc: subprocess.Popen[bytes]) -> None:
    deadline = _deadlines[proc]
    if proc.poll() is None:
        deadline.expired = True
        proc.kill()


def finish_ffmpeg(proc: subprocess.Popen[bytes], *, subject: Path | str | None = None) -> None:
    """Close ``proc``'s stdin, wait for it, and raise MediaError naming ``subject`` if it failed (MediaTimeout when
    it ran past its bound and was killed)."""
    if proc.stdin is not None and not proc.stdin.closed:
        with contextlib.suppress(BrokenPipeError):  # ffmpeg died early; its stderr says why
            proc.stdin.close()
    deadline = _deadlines.get(proc)
    stderr = proc.stderr.read() if proc.stderr is not None else b""  # bounded: the deadline kills a stuck one
    proc.wait()
    if deadline is not None:
        deadline.timer.cancel()
        if deadline.expired:
            raise timed_out(subject, "ffmpeg", deadline.limit)
    code = proc.returncode
    if code != 0:
        raise _failure(subject, code, stderr)
