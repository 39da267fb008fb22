"""omnivchat.studio.tail: audio tail-artifact detection and repair (paper, Appendix D.1.2, Eq. 8-12).

A post-processing step of authoring: synthesized clips may end with a broadband *click* or a *cut-off*; both
are found with fixed measures and repaired with a 20 ms raised-cosine fade that keeps the clip's length.

- On decoded mono float audio (``_detect.py``): :func:`content_end` (Eq. 8), :func:`tail_scores`,
  :func:`locate_cutoff` (Eq. 9-10), :func:`fade_gain` / :func:`apply_fade` (Eq. 11), :func:`support_bound`
  (Eq. 12), :func:`repair_tail`, and the appendix's constants (``FADE_S``, ``T_BOUND_S``, ...).
- On clips (``_clip.py``): :func:`repair_clip` decodes a clip's audio at its native rate, repairs the mono
  mix's tail and re-muxes with the video stream copied, keeping the original as ``<stem>.orig.mp4``;
  :func:`repair_clips` does a batch where a bad file never sinks the others; :func:`find_clips` lists a
  bench's ``media/**/*.mp4``; :func:`load_tail_pair` gives the audio before and after, for
  :func:`plot_tail_pair` (``_plot.py``, a before/after PNG).

The ``omnivchat repair-tails BENCH_DIR [--dry-run]`` command is in ``omnivchat.cli.media``. Names are imported
lazily: importing this package loads neither numpy nor PyAV. See docs/studio.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names

if TYPE_CHECKING:
    from omnivchat.studio.tail._clip import (
        ClipTailResult,
        backup_path,
        find_clips,
        load_tail_pair,
        repair_clip,
        repair_clips,
    )
    from omnivchat.studio.tail._detect import (
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
    from omnivchat.studio.tail._plot import plot_tail_pair

_LAZY: dict[str, str] = {
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
    "LOUDNESS_THRESHOLD_DB",
    "MARGIN_S",
    "MAX_PASSES",
    "MIN_CONTENT_S",
    "MIN_PEAK_DB",
    "SEARCH_ZONE_S",
    "SKIP_AFTER_CONTENT_S",
    "TAIL_S",
    "TRANSIENT_THRESHOLD_DB",
    "T_BOUND_S",
    "ClipTailResult",
    "Cutoff",
    "TailRepair",
    "TailScores",
    "apply_fade",
    "background_level",
    "backup_path",
    "block_rms",
    "content_end",
    "cutoff_block",
    "fade_gain",
    "find_clips",
    "highpass_6k",
    "load_tail_pair",
    "locate_cutoff",
    "plot_tail_pair",
    "repair_clip",
    "repair_clips",
    "repair_tail",
    "support_bound",
    "tail_scores",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
