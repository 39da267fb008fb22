"""omnivchat.studio.render: the offline procedural renderer, a JSON scene spec -> an MP4 with real speech.

- ``render_clip(spec, out_path)`` -> :class:`RenderedClip`: H.264 + AAC 44.1 kHz, with ``<stem>.spec.json`` (the
  spec with every default filled in) and ``<stem>.timeline.json`` (word timings, object layout) next to it.
  Same spec, same bytes (on one ffmpeg build); renders are cached under ``<media cache>/render/``.
- The scene spec (``_scene.py``): :class:`SceneSpec` and its parts; ``load_spec`` reads one from a dict, JSON
  text or a .json/.yaml file; ``image_side`` / ``user_side`` say where an object is for the picture and for
  the user (the selfie camera mirrors them).
- ``load_timeline(clip)`` and ``sidecar_paths(clip)`` find what a render wrote beside a clip.
- ``speak(text, voice=...)`` -> :class:`Utterance`: the speech alone (samples and word timings), as clips say it.

Frames are drawn with Pillow (``_draw.py``); speech comes from espeak-ng (GPL-3.0), which runs only in a
separate worker process (``_espeak_worker.py``, started by file path from ``_tts.py``), never in this one.
Failures raise :class:`omnivchat.media.MediaError` naming the output file. Names are imported lazily, so
importing this package loads none of numpy, PyAV or Pillow. See docs/studio.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names

if TYPE_CHECKING:
    from omnivchat.studio.render._renderer import (
        RenderedClip,
        load_spec,
        load_timeline,
        render_clip,
        sidecar_paths,
        speech_timing,
    )
    from omnivchat.studio.render._scene import (
        Camera,
        Lighting,
        Noise,
        Person,
        Placard,
        SceneObject,
        SceneSpec,
        SpeechLine,
        image_side,
        user_side,
    )
    from omnivchat.studio.render._tts import Utterance, speak

_LAZY: dict[str, str] = {
    "RenderedClip": "_renderer",
    "load_spec": "_renderer",
    "load_timeline": "_renderer",
    "render_clip": "_renderer",
    "speech_timing": "_renderer",
    "sidecar_paths": "_renderer",
    "Camera": "_scene",
    "Lighting": "_scene",
    "Noise": "_scene",
    "Person": "_scene",
    "Placard": "_scene",
    "SceneObject": "_scene",
    "SceneSpec": "_scene",
    "SpeechLine": "_scene",
    "image_side": "_scene",
    "user_side": "_scene",
    "Utterance": "_tts",
    "speak": "_tts",
}

__all__ = [
    "Camera",
    "Lighting",
    "Noise",
    "Person",
    "Placard",
    "RenderedClip",
    "SceneObject",
    "SceneSpec",
    "SpeechLine",
    "Utterance",
    "image_side",
    "load_spec",
    "load_timeline",
    "render_clip",
    "sidecar_paths",
    "speak",
    "speech_timing",
    "user_side",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
