"""Prefix clips: the clip cut at the query time, audio and video alike, trimmed before encoding (frame-accurate),
with the protocol's fixed encoder settings; cached by an identity hash with an output-hash sidecar."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from omnivchat._canonical import sha256_file, sha256_json
from omnivchat.media import MediaError, run_ffmpeg

PREFIX_ENCODING = {
    "video": "libx264",
    "crf": 18,
    "audio": "aac",
    "audio_bitrate": "192k",
    "timing": "trim-video-and-audio-before-encode-v1",
}


def prefix_identity(source: Path, cutoff: float) -> dict[str, Any]:
    return {"source_sha256": sha256_file(source), "cutoff_seconds": cutoff, "encoding": PREFIX_ENCODING}


def make_prefix(source: Path, cutoff: float, cache_dir: Path) -> tuple[Path, str]:
    """(prefix clip, its sha256) for ``source`` cut at ``cutoff`` seconds; reused when the sidecar still matches."""
    identity = prefix_identity(source, cutoff)
    out = Path(cache_dir) / f"{sha256_json(identity)}.mp4"
    sidecar = out.with_suffix(".json")
    if out.is_file() and sidecar.is_file():
        recorded = json.loads(sidecar.read_text(encoding="utf-8"))
        output_sha = sha256_file(out)
        if recorded.get("identity") == identity and recorded.get("output_sha256") == output_sha:
            return out, output_sha
    out.parent.mkdir(parents=True, exist_ok=True)
    # Same identity, same bytes: concurrent makers each write their own temp file and replace atomically.
    tmp = out.with_name(f"{out.stem}.{os.getpid()}-{threading.get_ident()}.tmp.mp4")
    cut = f"{cutoff:.6f}"
    try:
        # The protocol's exact settings: trim both streams before encoding, x264 crf 18, AAC 192k, one thread.
        args = ["-threads", "1", "-i", str(source), "-t", cut, "-map", "0:v:0", "-map", "0:a?"]
        args += ["-vf", f"trim=end={cut},setpts=PTS-STARTPTS", "-af", f"atrim=end={cut},asetpts=PTS-STARTPTS"]
        args += ["-c:v", "libx264", "-threads", "1", "-preset", "fast", "-crf", "18"]
        args += ["-c:a", "aac", "-b:a", "192k", "-movflags", "+faststart", "-f", "mp4", str(tmp)]
        run_ffmpeg(
            args,
            subject=source,
        )
    except MediaError:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out)
    output_sha = sha256_file(out)
    tmp_sidecar = tmp.with_suffix(".json")
    tmp_sidecar.write_text(json.dumps({"identity": identity, "output_sha256": output_sha}, indent=2) + "\n", "utf-8")
    tmp_sidecar.replace(sidecar)
    return out, output_sha
