"""Text to speech with espeak-ng (English and Mandarin), through a worker process, with word timings.

libespeak-ng comes from the ``espeakng-loader`` wheel. It is GPL-3.0 and not thread-safe, so it is only ever
loaded by ``_espeak_worker.py`` in a separate process (see that module); this module is the client. One worker
per omnivchat process is started on first use and reused; a lock serialises requests from threads.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from omnivchat.media import MediaError

OUTPUT_RATE = 44_100
# The worker runs as a program of its own, started by file path (never imported): it sits next to this module.
_WORKER_SCRIPT = Path(__file__).with_name("_espeak_worker.py")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORDISH = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")


@dataclass(frozen=True)
class Word:
    """A spoken word and when it is heard, in seconds from the start of its utterance."""

    text: str
    start: float
    end: float


@dataclass(frozen=True)
class Utterance:
    """Synthesised speech: mono float32 samples at ``sr`` Hz and the timing of each word."""

    samples: np.ndarray
    sr: int
    words: tuple[Word, ...]

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return self.samples.size / self.sr


class _Worker:
    """The client side of one espeak-ng worker process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            import espeakng_loader
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise MediaError(f"espeak-ng is unavailable: {exc}") from None
        if not _WORKER_SCRIPT.is_file():  # pragma: no cover - an installation that lost a package file
            raise MediaError(f"{_WORKER_SCRIPT}: the espeak-ng worker script is missing")
        cmd = [
            sys.executable,
            "-I",  # isolated: ignores PYTHON* env vars and the user site
            "-S",  # no site-packages: the worker needs the standard library only, and starts in milliseconds
            str(_WORKER_SCRIPT),
            str(espeakng_loader.get_library_path()),
            str(espeakng_loader.get_data_path()),
        ]
        # A session of its own: a terminal's Ctrl-C must not kill the worker under a render the engine lets finish.
        return subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )

    def synth(self, request: dict[str, object]) -> tuple[np.ndarray, int, list[list[object]]]:
        """Send one request; return (int16 samples, sample rate, events)."""
        with self._lock:
            # A forked child must not share its parent's pipes: it starts its own worker.
            if self._proc is None or self._proc.poll() is not None or self._owner != os.getpid():
                self._proc = self._start()
                self._owner = os.getpid()
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8"))
                proc.stdin.flush()
                head_line = proc.stdout.readline()
                if not head_line:
                    raise MediaError(f"espeak-ng worker exited (code {proc.poll()})")
                head = json.loads(head_line)
                if "error" in head:
                    raise MediaError(f"espeak-ng: {head['error']}")
                pcm = proc.stdout.read(int(head["nbytes"]))
            except (BrokenPipeError, OSError) as exc:
                self._proc = None
                raise MediaError(f"espeak-ng worker failed: {exc}") from None
        samples = np.frombuffer(pcm, dtype="<i2").copy()
        return samples, int(head["sr"]), head["events"]

    def close(self) -> None:
        """Stop the worker (it exits when its stdin closes)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and self._owner == os.getpid():
            try:
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=2)
            except Exception:
                proc.kill()


_worker = _Worker()
atexit.register(_worker.close)


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """Words of ``text`` as (word, start, end) character spans: runs of letters/digits (with inner ' or -),
    and each Han character on its own (Chinese has no spaces; one character is one timed unit)."""
    tokens: list[tuple[str, int, int]] = []
    for m in _WORDISH.finditer(text):
        start, chunk = m.start(), m.group()
        run_start: int | None = None
        for i, ch in enumerate(chunk + "\0"):
            if _HAN.match(ch) or ch == "\0":
                if run_start is not None:
                    tokens.append((chunk[run_start:i], start + run_start, start + i))
                    run_start = None
                if ch != "\0":
                    tokens.append((ch, start + i, start + i + 1))
            elif run_start is None:
                run_start = i
    return tokens


def _voiced_mask(x: np.ndarray, sr: int, hop_s: float = 0.005) -> tuple[np.ndarray, int]:
    """Per 5 ms hop: is the RMS above 2 % of full scale (or 5 % of the peak, for very quiet speech)?"""
    hop = max(1, int(sr * hop_s))
    n = math.ceil(x.size / hop)
    padded = np.pad(x, (0, n * hop - x.size))
    rms = np.sqrt((padded.reshape(n, hop).astype(np.float64) ** 2).mean(axis=1))
    threshold = min(0.02, 0.05 * float(np.abs(x).max() or 1.0))
    return rms > threshold, hop


def align_words(text: str, events: list[list[Any]], x: np.ndarray, sr: int) -> list[Word]:
    """Word timings from espeak-ng's word events, completed and tightened with the signal's energy.

    espeak reports a word event for most words (not all: it merges some function words and some Chinese
    characters), each with the sample where the word begins. Words without an event are placed by
    interpolating over character offsets between their neighbours. Each word then ends where the next one
    begins (or at its sentence's end), and leading and trailing silence is trimmed off both ends.
    """
    tokens = tokenize(text)
    if not tokens:
        return []
    total = x.size
    starts: list[float | None] = [None] * len(tokens)
    sentence_ends = sorted(int(e[3]) for e in events if e[0] == "end")
    for kind, pos, _length, sample in events:
        if kind != "word":
            continue
        idx = int(pos) - 1  # espeak counts characters from 1
        for i, (_w, _s, e) in enumerate(tokens):
            if e > idx:  # the token containing idx, or the first one after it
                if starts[i] is None:
                    starts[i] = float(sample)
                break
    # Interpolate missing starts over character offsets between known neighbours.
    known = [i for i, s in enumerate(starts) if s is not None]
    if not known:
        starts[0], known = 0.0, [0]
    anchor_chars = [tokens[i][1] for i in known] + [len(text)]
    anchor_samples = [starts[i] for i in known] + [float(total)]
    for i, (_w, s, _e) in enumerate(tokens):
        if starts[i] is None:
            starts[i] = float(np.interp(s, anchor_chars, anchor_samples))  # type: ignore[arg-type]  # a scalar position; numpy's stubs ask for an array-like
    # Keep starts monotonic (espeak's events always are; interpolation between them is too).
    fixed: list[int] = []
    for start in starts:
        fixed.append(max(int(start or 0), fixed[-1] if fixed else 0))
    voiced, hop = _voiced_mask(x, sr)
    words: list[Word] = []
    for i, (w, _s, _e) in enumerate(tokens):
        s = fixed[i]
        e = fixed[i + 1] if i + 1 < len(tokens) else total
        ends_after = [b for b in sentence_ends if b > s]
        if ends_after:
            e = min(e, ends_after[0])
        e = max(e, s + 1)
        frames = np.flatnonzero(voiced[s // hop : max(s // hop + 1, math.ceil(e / hop))])
        if frames.size:
            # A silence longer than any stop closure (100 ms) ends the word: voice after it belongs to the next
            # word, whose event espeak sometimes reports a millisecond late.
            gaps = np.flatnonzero(np.diff(frames) > int(0.1 / (hop / sr)))
            last_frame = int(frames[gaps[0]]) if gaps.size else int(frames[-1])
            s2 = max(s, (s // hop + int(frames[0])) * hop)
            e2 = min(e, (s // hop + last_frame + 1) * hop)
            if e2 > s2:
                s, e = s2, e2
        words.append(Word(text=w, start=round(s / sr, 4), end=round(e / sr, 4)))
    return words


def _resample(x: np.ndarray, sr_in: int, sr_out: int) -> np.ndarray:
    """Resample mono ``x``. An integer up-factor (espeak's 22,050 Hz to 44,100 Hz) uses zero-stuffing and a
    windowed-sinc low-pass; anything else falls back to linear interpolation. (scipy.signal would do, but
    importing it costs over a second.)"""
    if sr_in == sr_out or x.size == 0:
        return x.astype(np.float32, copy=False)
    if sr_out % sr_in == 0:
        up = sr_out // sr_in
        stuffed = np.zeros(x.size * up, dtype=np.float64)
        stuffed[::up] = x
        half = 16 * up
        n = np.arange(-half, half + 1)
        kernel = np.sinc(n / up) * np.hanning(2 * half + 1)  # cut-off at the input's Nyquist frequency
        kernel *= up / kernel.sum()  # unity gain: the stuffed signal holds 1/up of the energy
        return np.convolve(stuffed, kernel, mode="same").astype(np.float32)
    t_out = np.arange(round(x.size * sr_out / sr_in)) * (sr_in / sr_out)
    return cast("np.ndarray", np.interp(t_out, np.arange(x.size), x).astype(np.float32))


def speak(
    text: str,
    *,
    voice: str,
    rate: int = 160,
    pitch: int = 50,
    pitch_range: int = 50,
    volume: int = 100,
    sr: int = OUTPUT_RATE,
) -> Utterance:
    """Synthesise ``text`` with the espeak-ng ``voice`` (e.g. ``en-us+m3``, ``cmn+f2``) at ``sr`` Hz.

    ``rate`` is in words per minute (80-450), ``pitch`` and ``pitch_range`` 0-100, ``volume`` 0-200. Returns
    the samples (float32 in [-1, 1]) and word timings. Deterministic: the same arguments give the same samples.
    """
    if not text.strip():
        return Utterance(np.zeros(0, np.float32), sr, ())
    request = {"text": text, "voice": voice, "rate": rate, "pitch": pitch, "range": pitch_range, "volume": volume}
    pcm, sr_in, events = _worker.synth(request)
    native = (pcm.astype(np.float32) / 32768.0).astype(np.float32)
    words = align_words(text, events, native, sr_in)
    return Utterance(samples=_resample(native, sr_in, sr), sr=sr, words=tuple(words))


def shutdown_worker() -> None:
    """Stop the espeak-ng worker process now (it restarts on the next call)."""
    _worker.close()
