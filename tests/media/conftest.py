"""Fixtures for the media tests: clips rendered once per session by the studio's renderer, in a temp dir, with
the derived-file cache pointed at a temp dir too (nothing is committed, nothing touches ~/.cache)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The main test clip: speech with a pause, objects left and right, a figure, a placard.
MAIN_SPEC: dict[str, Any] = {
    "duration": 3.6,
    "size": [320, 180],
    "background": "navy",
    "objects": [
        {"shape": "square", "color": "red", "position": "left", "label": "box"},
        {"shape": "circle", "color": "yellow", "position": "right"},
    ],
    "person": {"expression": "neutral"},
    "placards": [{"text": "QUIZ", "position": "top", "start": 1.0}],
    "speech": [{"text": "What colour is the square? [pause 0.8] Tell me.", "language": "en", "start": 0.3}],
}


@pytest.fixture(scope="session", autouse=True)
def media_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point the media cache at a session temp dir (``OMNIVCHAT_CACHE_DIR``) for every media test."""
    root = tmp_path_factory.mktemp("media-cache")
    old = os.environ.get("OMNIVCHAT_CACHE_DIR")
    os.environ["OMNIVCHAT_CACHE_DIR"] = str(root)
    yield root
    if old is None:
        os.environ.pop("OMNIVCHAT_CACHE_DIR", None)
    else:
        os.environ["OMNIVCHAT_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def clips_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session temp dir holding the rendered test clips (a stand-in bench ``media/`` dir)."""
    return tmp_path_factory.mktemp("clips")


@pytest.fixture(scope="session")
def rendered(clips_dir: Path, media_cache: Path):  # type: ignore[no-untyped-def]
    """The main clip, rendered once: a RenderedClip (320x180, 3.6 s, English speech with a pause)."""
    from omnivchat.synth import render_clip

    return render_clip(MAIN_SPEC, clips_dir / "main.mp4", use_cache=False)


@pytest.fixture(scope="session")
def clip(rendered) -> Path:  # type: ignore[no-untyped-def]
    """Path of the main clip."""
    return rendered.path


@pytest.fixture(scope="session")
def silent_video(clip: Path, clips_dir: Path) -> Path:
    """The main clip with its audio track removed (a file with no audio stream)."""
    from omnivchat.media import strip_audio

    return strip_audio(clip, out=clips_dir / "no_audio.mp4")


@pytest.fixture(scope="session")
def audio_only(clip: Path, clips_dir: Path) -> Path:
    """The main clip's audio alone, in an M4A (a file with no video stream)."""
    from omnivchat.media import export_audio

    return export_audio(clip, fmt="m4a", out=clips_dir / "audio_only.m4a")
