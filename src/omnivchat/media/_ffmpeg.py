"""Locating and running the ffmpeg binary (static build from imageio-ffmpeg; no apt needed)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path


class MediaError(RuntimeError):
    """A media operation failed; the message names the file concerned."""


@functools.cache
def ffmpeg_exe() -> str:
    """Resolve ffmpeg: ``$IMAGEIO_FFMPEG_EXE``, then the imageio-ffmpeg package, then ``ffmpeg`` on PATH."""
    env = os.environ.get("IMAGEIO_FFMPEG_EXE")
    if env and Path(env).is_file():
        return env
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except Exception:  # package missing or its binary unusable: fall back to PATH
        found = shutil.which("ffmpeg")
        if found:
            return found
    raise MediaError("ffmpeg not found: install imageio-ffmpeg or set IMAGEIO_FFMPEG_EXE")


def run_ffmpeg(args: list[str], *, subject: Path | str | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ffmpeg quietly with ``args``; raise MediaError naming ``subject`` with ffmpeg's last lines."""
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        where = f"{subject}: " if subject is not None else ""
        raise MediaError(f"{where}ffmpeg failed (exit {proc.returncode}): {' | '.join(tail)}")
    return proc
