"""A stand-in for `vllm serve MODEL --port P --served-model-name NAME ...` that answers like a small omni model.

The loopback server (real HTTP on 127.0.0.1:P) with rules that read what each request carries:

- the route check's question: the clip's audio is decoded (ffmpeg, through omnivchat.media); the stand-in gives
  the spoken password and number only when the track it was sent holds sound, and says the audio is unavailable
  for a silent or missing track, as an honest omni model would;
- a judge's verdict request: a valid verdict (the first criterion met);
- a multiple-choice question (lettered options): the letter "A";
- anything else: a short reply.

Flags it does not know (the real server's) are ignored. `STANDIN_LATENCY` (seconds) delays every chat answer, so a
test can interrupt a run while requests are in flight; `STANDIN_PIDFILE` receives the server's own process id.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from omnivchat.diagnostics.route_check import PROMPT, SIM_REFERENCE
from omnivchat.testing import Behaviour, LoopbackServer, message_text

LATENCY = float(os.environ.get("STANDIN_LATENCY", "0"))
_OPTION = re.compile(r"^\s*\(?[A-D][.)]\s", re.MULTILINE)


def media_parts(request_json: dict[str, Any]) -> list[bytes]:
    """The bytes of every clip and audio part of the request (data URLs and input_audio)."""
    found = []
    for message in request_json.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "video_url":
                url = part["video_url"]["url"]
                found.append(base64.b64decode(url.split(",", 1)[1]))
            elif part.get("type") == "input_audio":
                found.append(base64.b64decode(part["input_audio"]["data"]))
    return found


def hears_sound(request_json: dict[str, Any]) -> bool:
    """Whether any media part of the request carries an audio track with sound in it."""
    from omnivchat import media
    from omnivchat.errors import OmnivchatError

    for data in media_parts(request_json):
        with tempfile.NamedTemporaryFile(suffix=".bin") as handle:
            handle.write(data)
            handle.flush()
            try:
                samples = media.extract_audio(handle.name)
            except OmnivchatError:  # no audio track
                continue
            if samples.size and float(abs(samples).max()) > 0.01:
                return True
    return False


def answer(request_json: dict[str, Any]) -> Behaviour:
    text = message_text(request_json)
    if PROMPT in text:
        if hears_sound(request_json):
            reply = SIM_REFERENCE
        else:
            reply = "I see a red square on a dark blue background. The audio is unavailable: I hear no speech."
    elif '"hits"' in text:
        reply = '{"hits": [1], "reasoning": "the first criterion is met"}'
    elif len(_OPTION.findall(text)) >= 2:
        reply = "A"
    else:
        reply = "A reply from the stand-in model."
    return Behaviour(text=reply, latency=LATENCY, system_fingerprint="vllm-standin")


def main(argv: list[str]) -> int:
    port, names = 8000, []
    args = iter(argv)
    model = None
    for arg in args:
        if arg == "--port":
            port = int(next(args))
        elif arg == "--served-model-name":
            names.append(next(args))
        elif arg != "serve" and not arg.startswith("-") and model is None:
            model = arg
    if pidfile := os.environ.get("STANDIN_PIDFILE"):
        Path(pidfile).write_text(str(os.getpid()))
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with LoopbackServer(rules=answer, models=names or [model or "standin"], port=port, record=False):
        print(f"stand-in vllm serving on 127.0.0.1:{port}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
