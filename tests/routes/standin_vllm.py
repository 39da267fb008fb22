"""A stand-in for `vllm serve MODEL --port P --served-model-name NAME ...` that answers like a small omni model.

The loopback server (real HTTP on 127.0.0.1:P) with rules that read what each request carries:

- the route check's question: the clip's audio is decoded (ffmpeg, through omnivchat.media); the stand-in gives
  the spoken password and number only when the track it was sent holds sound, and says the audio is unavailable
  for a silent or missing track, as an honest omni model would;
- a judge's verdict request: a valid verdict (the first criterion met);
- a multiple-choice question (lettered options): the letter "A";
- anything else: a short reply.

`--limit-mm-per-prompt JSON` is enforced as vLLM enforces it (HTTP 400 with its message). Flags it does not know (the
real server's) are ignored. `STANDIN_LATENCY` (seconds) delays every chat answer, so a
test can interrupt a run while requests are in flight; `STANDIN_PIDFILE` receives the server's own process id.
"""

from __future__ import annotations

import base64
import json
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


LIMITS = {"image": 999, "video": 999, "audio": 999}  # vLLM's default; --limit-mm-per-prompt JSON replaces some


def over_limit(request_json: dict[str, Any]) -> Behaviour | None:
    """vLLM's refusal of a request holding more items of a modality than --limit-mm-per-prompt allows (counted as
    vLLM does: a part each, and the track it takes out of each video when use_audio_in_video is asked)."""
    kinds = {"image_url": "image", "video_url": "video", "input_audio": "audio", "audio_url": "audio"}
    counts = dict.fromkeys(LIMITS, 0)
    for message in request_json.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if part.get("type") in kinds:
                counts[kinds[part["type"]]] += 1
    if (request_json.get("mm_processor_kwargs") or {}).get("use_audio_in_video"):
        counts["audio"] += counts["video"]
    for modality, n in counts.items():
        if n > LIMITS[modality]:
            message = f"At most {LIMITS[modality]} {modality}(s) may be provided in one prompt."
            return Behaviour(status=400, error_message=message)
    return None


def answer(request_json: dict[str, Any]) -> Behaviour:
    if (refused := over_limit(request_json)) is not None:
        return refused
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
        elif arg == "--limit-mm-per-prompt":
            LIMITS.update(json.loads(next(args)))
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
