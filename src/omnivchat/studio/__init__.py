"""omnivchat.studio: authoring audio-visual dialogues -- everything that makes or repairs a bench's clips.

- ``omnivchat.studio.minibench``: the procedural mini-bench, ``make_minibench`` (all 17 subcategories), whose
  names are re-exported here.

The procedural renderer, TTS and tail repair are :mod:`omnivchat.synth` (shared with the diagnostics); the
request path (probe, derived clips, decoding, data URLs, the cache) is :mod:`omnivchat.media`. This package
builds on both. Names are imported lazily: importing this package loads none of numpy, PyAV, Pillow or
matplotlib. See docs/studio.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names

if TYPE_CHECKING:
    from omnivchat.studio.minibench import (
        BUILDERS,
        LANGUAGES,
        NOT_STAGED,
        STAGED,
        Draft,
        MiniBenchError,
        make_minibench,
        plan,
    )

_LAZY: dict[str, str] = {
    "BUILDERS": "minibench",
    "Draft": "minibench",
    "LANGUAGES": "minibench",
    "MiniBenchError": "minibench",
    "NOT_STAGED": "minibench",
    "STAGED": "minibench",
    "make_minibench": "minibench",
    "plan": "minibench",
}

__all__ = [
    "BUILDERS",
    "LANGUAGES",
    "NOT_STAGED",
    "STAGED",
    "Draft",
    "MiniBenchError",
    "make_minibench",
    "plan",
]


_SUBPACKAGES = ("minibench",)


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), _SUBPACKAGES)
