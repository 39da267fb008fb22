"""omnivchat.studio: authoring audio-visual dialogues -- everything that makes or repairs a bench's clips.

- ``omnivchat.studio.render``: the offline procedural renderer, ``render_clip(spec, out_path)`` ->
  :class:`RenderedClip` (a JSON scene spec, :class:`SceneSpec`, to an MP4 with espeak-ng speech, plus
  ``<stem>.spec.json`` and ``<stem>.timeline.json``); ``load_timeline``, ``sidecar_paths``, ``image_side``,
  ``user_side``.
- ``omnivchat.studio.tail``: audio tail-artifact detection and repair (Appendix D.1.2, Eq. 8-12):
  ``repair_tail`` on samples, ``repair_clip`` / ``repair_clips`` / ``find_clips`` on clips.
- ``omnivchat.studio.minibench``: the procedural mini-bench, ``make_minibench`` (all 17 subcategories).

Those names are re-exported here. The request path (probe, derived clips, decoding, data URLs, the cache) is
:mod:`omnivchat.media`, which this package builds on. Names are imported lazily: importing this package loads
none of numpy, PyAV, Pillow or matplotlib. See docs/studio.md.
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
    from omnivchat.studio.render import (
        RenderedClip,
        SceneSpec,
        image_side,
        load_spec,
        load_timeline,
        render_clip,
        sidecar_paths,
        user_side,
    )
    from omnivchat.studio.tail import (
        ClipTailResult,
        TailRepair,
        TailScores,
        content_end,
        find_clips,
        repair_clip,
        repair_clips,
        repair_tail,
        tail_scores,
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
    "RenderedClip": "render",
    "SceneSpec": "render",
    "image_side": "render",
    "load_spec": "render",
    "load_timeline": "render",
    "render_clip": "render",
    "sidecar_paths": "render",
    "user_side": "render",
    "ClipTailResult": "tail",
    "TailRepair": "tail",
    "TailScores": "tail",
    "content_end": "tail",
    "find_clips": "tail",
    "repair_clip": "tail",
    "repair_clips": "tail",
    "repair_tail": "tail",
    "tail_scores": "tail",
}

__all__ = [
    "BUILDERS",
    "LANGUAGES",
    "NOT_STAGED",
    "STAGED",
    "ClipTailResult",
    "Draft",
    "MiniBenchError",
    "RenderedClip",
    "SceneSpec",
    "TailRepair",
    "TailScores",
    "content_end",
    "find_clips",
    "image_side",
    "load_spec",
    "load_timeline",
    "make_minibench",
    "plan",
    "render_clip",
    "repair_clip",
    "repair_clips",
    "repair_tail",
    "sidecar_paths",
    "tail_scores",
    "user_side",
]


_SUBPACKAGES = ("minibench", "render", "tail")


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), _SUBPACKAGES)
