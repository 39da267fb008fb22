"""Fixtures for the renderer tests: clips rendered once per session, in a temp dir (the session's private media
cache is set up by tests/conftest.py; these renders bypass it)."""

from __future__ import annotations

import json
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

ZH_SPEC: dict[str, Any] = {
    "duration": 2.6,
    "size": [320, 180],
    "camera": "front",
    "objects": [{"shape": "cube", "color": "green", "position": "left"}],
    "speech": [{"text": "左边是什么颜色？", "language": "zh", "start": 0.2}],
}


@pytest.fixture(scope="session")
def main_spec() -> dict[str, Any]:
    """The spec of the main clip (a copy)."""
    return json.loads(json.dumps(MAIN_SPEC))


@pytest.fixture(scope="session")
def render_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session temp dir holding the rendered test clips."""
    return tmp_path_factory.mktemp("rendered")


@pytest.fixture(scope="session")
def rendered(render_dir: Path):  # type: ignore[no-untyped-def]
    """The main clip, rendered once: a RenderedClip (320x180, 3.6 s, English speech with a pause)."""
    from omnivchat.synth import render_clip

    return render_clip(MAIN_SPEC, render_dir / "main.mp4", use_cache=False)


@pytest.fixture(scope="session")
def zh_rendered(render_dir: Path):  # type: ignore[no-untyped-def]
    """A Mandarin clip under the front (selfie) camera."""
    from omnivchat.synth import render_clip

    return render_clip(ZH_SPEC, render_dir / "zh.mp4", use_cache=False)
