"""espeak-ng worker process: the only code that loads libespeak-ng.

espeak-ng is GPL-3.0 and keeps process-global state (not thread-safe), so omnivchat never loads it in its own
process: it starts this script as a separate program (``python -I -S _espeak_worker.py LIB DATA``) and talks to
it over pipes. The script uses the standard library only, so it starts in a few milliseconds.

Protocol, one request at a time: the parent writes one JSON line
``{"text": str, "voice": str, "rate": int, "pitch": int, "range": int, "volume": int}``; the worker answers
with one JSON line ``{"sr": int, "nbytes": int, "events": [[kind, text_pos, length, sample], ...]}`` (or
``{"error": str}``) followed by ``nbytes`` of mono int16 little-endian samples. ``kind`` is ``"word"`` or
``"end"`` (end of a sentence); ``text_pos`` counts characters from 1; ``sample`` is the sample index at which
the event happens. End of input ends the worker.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

# speak_lib.h constants
AUDIO_OUTPUT_SYNCHRONOUS = 2
CHARS_UTF8 = 1
EVENT_LIST_TERMINATED, EVENT_WORD, EVENT_END = 0, 1, 5
RATE, VOLUME, PITCH, RANGE = 1, 2, 3, 4


class _Event(ctypes.Structure):
    """espeak_EVENT (speak_lib.h)."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_void_p),  # a union of int / const char* / char[8]: pointer-sized
    ]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))


def main(lib_path: str, data_path: str) -> int:
    """Serve synthesis requests from stdin until it closes."""
    lib = ctypes.CDLL(lib_path)
    lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    if hasattr(lib, "espeak_ng_SetRandSeed"):
        lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
    sr = lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, data_path.encode(), 0)
    out = sys.stdout.buffer
    if sr <= 0:
        out.write((json.dumps({"error": f"espeak_Initialize failed ({sr})"}) + "\n").encode())
        out.flush()
        return 1
    chunks: list[bytes] = []
    events: list[list[object]] = []

    def on_audio(wav: Any, n: int, ev: Any) -> int:
        if n > 0:
            chunks.append(ctypes.string_at(wav, n * 2))
        i = 0
        while ev[i].type != EVENT_LIST_TERMINATED:
            e = ev[i]
            if e.type in (EVENT_WORD, EVENT_END):
                kind = "word" if e.type == EVENT_WORD else "end"
                events.append([kind, e.text_position, e.length, e.sample])
            i += 1
        return 0

    callback = _CALLBACK(on_audio)  # kept referenced for the process lifetime
    lib.espeak_SetSynthCallback(callback)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        # espeak-ng carries state from one synthesis to the next (its output for a text depends on what was
        # said before), so each request runs in a fresh fork of the just-initialised process: the output is
        # then a function of the request alone. A fork costs about a millisecond.
        pid = os.fork()
        if pid == 0:
            try:
                _serve(lib, line, sr, chunks, events, out)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    return 0


def _serve(lib: Any, line: bytes, sr: int, chunks: list[bytes], events: list[list[object]], out: Any) -> None:
    """Synthesise one request and write the answer (header line, then samples) to ``out``."""
    try:
        req = json.loads(line)
        if lib.espeak_SetVoiceByName(str(req["voice"]).encode()) != 0:
            raise ValueError(f"unknown espeak-ng voice {req['voice']!r}")
        lib.espeak_SetParameter(RATE, int(req.get("rate", 160)), 0)
        lib.espeak_SetParameter(VOLUME, int(req.get("volume", 100)), 0)
        lib.espeak_SetParameter(PITCH, int(req.get("pitch", 50)), 0)
        lib.espeak_SetParameter(RANGE, int(req.get("range", 50)), 0)
        if hasattr(lib, "espeak_ng_SetRandSeed"):
            lib.espeak_ng_SetRandSeed(int(req.get("seed", 1)))
        text = str(req["text"]).encode("utf-8") + b"\0"
        rc = lib.espeak_Synth(text, len(text), 0, 0, 0, CHARS_UTF8, None, None)
        if rc != 0:
            raise RuntimeError(f"espeak_Synth failed ({rc})")
        lib.espeak_Synchronize()
        pcm = b"".join(chunks)
        head: dict[str, object] = {"sr": sr, "nbytes": len(pcm), "events": events}
    except Exception as exc:  # report, keep serving
        pcm = b""
        head = {"error": f"{type(exc).__name__}: {exc}"}
    out.write((json.dumps(head) + "\n").encode())
    out.write(pcm)
    out.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
