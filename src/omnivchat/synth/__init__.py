"""omnivchat.synth: the clip authoring tools shared by the Studio and the diagnostics.

Below ``studio`` and ``diagnostics``, above ``benchmarks``: the Studio stages and repairs a bench's clips with
them; the diagnostics render test clips (the audio-track route check) and speak known text (the ASR
measurement) without importing the Studio.

The procedural renderer, a JSON scene spec -> an MP4 with real speech:

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
Failures raise :class:`omnivchat.media.MediaError` naming the output file.

Audio tail-artifact detection and repair (paper, Appendix D.1.2, Eq. 8-12): synthesized clips may end with a
broadband *click* or a *cut-off*; both are found with fixed measures and repaired with a 20 ms raised-cosine
fade that keeps the clip's length.

- On decoded mono float audio (``_detect.py``): :func:`content_end` (Eq. 8), :func:`tail_scores`,
  :func:`locate_cutoff` (Eq. 9-10), :func:`fade_gain` / :func:`apply_fade` (Eq. 11), :func:`support_bound`
  (Eq. 12), :func:`repair_tail`, and the appendix's constants (``FADE_S``, ``T_BOUND_S``, ...).
- On clips (``_clip.py``): :func:`repair_clip` decodes a clip's audio at its native rate, repairs the mono
  mix's tail and re-muxes with the video stream copied, keeping the original as ``<stem>.orig.mp4``
  (``ORIG_SUFFIX``); :func:`repair_clips` does a batch where a bad file never sinks the others;
  :func:`find_clips` lists a bench's ``media/**/*.mp4``; :func:`load_tail_pair` gives the audio before and
  after, for :func:`plot_tail_pair` (``_plot.py``, a before/after PNG).
- ``_signals.py``: speech-like test audio with controllable tails, for the tests and ``perf/perf_tail.py``.

The ``omnivchat repair-tails BENCH_DIR [--dry-run]`` command is in ``omnivchat.cli.media``. Names are imported
lazily: importing this package loads none of numpy, PyAV, Pillow or matplotlib. See docs/studio.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names

if TYPE_CHECKING:
    from omnivchat.synth._clip import (
        ORIG_SUFFIX,
        ClipTailResult,
        backup_path,
        decode_channels,
        find_clips,
        load_tail_pair,
        mono_mix,
        repair_clip,
        repair_clips,
    )
    from omnivchat.synth._detect import (
        BAND_EDGES_HZ,
        BLOCK_S,
        FADE_S,
        FADE_THRESHOLD_DB,
        HIGHPASS_HZ,
        LOUDNESS_THRESHOLD_DB,
        MARGIN_S,
        MAX_PASSES,
        MIN_CONTENT_S,
        MIN_PEAK_DB,
        SEARCH_ZONE_S,
        SKIP_AFTER_CONTENT_S,
        T_BOUND_S,
        TAIL_S,
        TRANSIENT_THRESHOLD_DB,
        Cutoff,
        TailRepair,
        TailScores,
        apply_fade,
        background_level,
        block_rms,
        content_end,
        cutoff_block,
        fade_gain,
        highpass_6k,
        locate_cutoff,
        repair_tail,
        support_bound,
        tail_scores,
    )
    from omnivchat.synth._plot import plot_tail_pair
    from omnivchat.synth._renderer import (
        LATEST_RENDER_RECIPE,
        RENDER_RECIPES,
        RenderedClip,
        load_spec,
        load_timeline,
        render_clip,
        sidecar_paths,
        speech_timing,
    )
    from omnivchat.synth._scene import (
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
    from omnivchat.synth._tts import Utterance, speak

_LAZY: dict[str, str] = {
    "LATEST_RENDER_RECIPE": "_renderer",
    "RENDER_RECIPES": "_renderer",
    "RenderedClip": "_renderer",
    "decode_channels": "_clip",
    "mono_mix": "_clip",
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
    "BAND_EDGES_HZ": "_detect",
    "BLOCK_S": "_detect",
    "FADE_S": "_detect",
    "FADE_THRESHOLD_DB": "_detect",
    "HIGHPASS_HZ": "_detect",
    "LOUDNESS_THRESHOLD_DB": "_detect",
    "MARGIN_S": "_detect",
    "MAX_PASSES": "_detect",
    "MIN_CONTENT_S": "_detect",
    "MIN_PEAK_DB": "_detect",
    "SEARCH_ZONE_S": "_detect",
    "SKIP_AFTER_CONTENT_S": "_detect",
    "TAIL_S": "_detect",
    "TRANSIENT_THRESHOLD_DB": "_detect",
    "T_BOUND_S": "_detect",
    "Cutoff": "_detect",
    "TailRepair": "_detect",
    "TailScores": "_detect",
    "apply_fade": "_detect",
    "background_level": "_detect",
    "block_rms": "_detect",
    "content_end": "_detect",
    "cutoff_block": "_detect",
    "fade_gain": "_detect",
    "highpass_6k": "_detect",
    "locate_cutoff": "_detect",
    "repair_tail": "_detect",
    "support_bound": "_detect",
    "tail_scores": "_detect",
    "ORIG_SUFFIX": "_clip",
    "ClipTailResult": "_clip",
    "backup_path": "_clip",
    "find_clips": "_clip",
    "load_tail_pair": "_clip",
    "repair_clip": "_clip",
    "repair_clips": "_clip",
    "plot_tail_pair": "_plot",
}

__all__ = [
    "BAND_EDGES_HZ",
    "BLOCK_S",
    "FADE_S",
    "FADE_THRESHOLD_DB",
    "HIGHPASS_HZ",
    "LATEST_RENDER_RECIPE",
    "LOUDNESS_THRESHOLD_DB",
    "MARGIN_S",
    "MAX_PASSES",
    "MIN_CONTENT_S",
    "MIN_PEAK_DB",
    "ORIG_SUFFIX",
    "RENDER_RECIPES",
    "SEARCH_ZONE_S",
    "SKIP_AFTER_CONTENT_S",
    "TAIL_S",
    "TRANSIENT_THRESHOLD_DB",
    "T_BOUND_S",
    "Camera",
    "ClipTailResult",
    "Cutoff",
    "Lighting",
    "Noise",
    "Person",
    "Placard",
    "RenderedClip",
    "SceneObject",
    "SceneSpec",
    "SpeechLine",
    "TailRepair",
    "TailScores",
    "Utterance",
    "apply_fade",
    "background_level",
    "backup_path",
    "block_rms",
    "content_end",
    "cutoff_block",
    "decode_channels",
    "fade_gain",
    "find_clips",
    "highpass_6k",
    "image_side",
    "load_spec",
    "load_tail_pair",
    "load_timeline",
    "locate_cutoff",
    "mono_mix",
    "plot_tail_pair",
    "render_clip",
    "repair_clip",
    "repair_clips",
    "repair_tail",
    "sidecar_paths",
    "speak",
    "speech_timing",
    "support_bound",
    "tail_scores",
    "user_side",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
