"""Spoken replies on disk: each reply's audio as a content-addressed file in its run directory.

A reply's audio is written as ``RUN/audio/<sha256>.<format>`` before the store records its result, so a stored
result never names a file that was not written whole (a temporary file, then a rename). The same audio is
written once, whatever the number of replies that hold it; a resumed run reuses the files it finds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from omnivchat._files import write_bytes_atomic

AUDIO_DIR = "audio"


def audio_path(run_dir: Path, sha256: str, fmt: str) -> Path:
    """Where the audio of that content is kept in ``run_dir``."""
    return Path(run_dir) / AUDIO_DIR / f"{sha256}.{fmt}"


def save_audio(run_dir: Path, data: bytes, fmt: str) -> tuple[str, str]:
    """Write ``data`` as ``RUN/audio/<sha256>.<fmt>`` unless a whole copy is there; returns (the path relative to
    the run directory, the sha256)."""
    sha = hashlib.sha256(data).hexdigest()
    path = audio_path(run_dir, sha, fmt)
    if not (path.is_file() and path.stat().st_size == len(data)):
        write_bytes_atomic(path, data)
    return path.relative_to(run_dir).as_posix(), sha
