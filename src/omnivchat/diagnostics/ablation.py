"""The modality ablation grid: does a model use both streams? (The omni evaluation harness note "Omni
Evaluation: Does It Use Both Streams?", section 1, "The Ablation Grid".)

Four conditions score the same items: both (as is), video_only (audio muted), audio_only (video blanked),
neither (no usable media). From their means:

    fusion_gain    = both - max(video_only, audio_only)
    video_reliance = both - audio_only
    audio_reliance = both - video_only
    prior_floor    = neither

The prior floor is checked first: when ``neither`` is well above chance (its 95% interval's lower bound is above
chance + ``floor_margin``), the benchmark can be answered without the media, and no fusion gain is reported (it is
None, with no interval). The margin matters on rubric benches, where chance is 0 and a real model with no media
still earns a few points (a language gate met, a polite tier hit): such a floor does not make the gain noise.
Intervals are percentile bootstraps paired by item (every condition resampled with the same items).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from omnivchat.scoring.statistics import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_draws

CONDITIONS = ("both", "video_only", "audio_only", "neither")
METRICS = ("fusion_gain", "video_reliance", "audio_reliance", "prior_floor")
FLAGS = ("no_fusion", "video_ignored", "audio_ignored", "prior_floor_high")


class Diagnosis(BaseModel):
    """Means, derived metrics with paired-bootstrap 95% intervals, flags and a plain-words verdict."""

    model_config = ConfigDict(frozen=True)

    fusion_gain: float | None = Field(description="both - max(video_only, audio_only); None when refused.")
    video_reliance: float
    audio_reliance: float
    prior_floor: float
    refused: bool = Field(description="The prior floor is above chance + floor_margin: no fusion gain is reported.")
    flags: set[str] = Field(default_factory=set)
    means: dict[str, float] = Field(default_factory=dict, description="Mean score per condition.")
    intervals: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="95% interval of every condition mean and metric."
    )
    n_items: int = 0
    chance: float = 0.0
    margin: float = 0.05
    # 0 for files written before the margin existed: they refused at the bare chance level.
    floor_margin: float = Field(0.0, description="How far above chance the floor's lower bound may go.")
    verdict: str = ""
    lines: list[str] = Field(default_factory=list, description="The diagnosis in words, with its numbers.")


def _metrics(m: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {
        "fusion_gain": m["both"] - np.maximum(m["video_only"], m["audio_only"]),
        "video_reliance": m["both"] - m["audio_only"],
        "audio_reliance": m["both"] - m["video_only"],
        "prior_floor": m["neither"],
    }


def diagnose(
    scores: Mapping[str, Sequence[float]],
    chance: float = 0.0,
    *,
    margin: float = 0.05,
    floor_margin: float = 0.10,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Diagnosis:
    """Diagnose an ablation grid. ``scores`` maps the four conditions to per-item scores in the same item order.

    ``chance`` is the score of guessing (0 for rubric scores, 1/k for a k-way choice). A metric below
    ``margin`` counts as "near zero": fusion_gain -> no_fusion, video_reliance -> video_ignored,
    audio_reliance -> audio_ignored. The fusion gain is refused (None) when the lower 95% bound of ``neither``
    exceeds ``chance + floor_margin``. Raises ValueError when a condition is missing or lengths differ.
    """
    if floor_margin < 0:
        raise ValueError(f"floor_margin must be >= 0, got {floor_margin}")
    missing = [c for c in CONDITIONS if c not in scores]
    if missing:
        raise ValueError(f"conditions missing: {', '.join(missing)}")
    arrays = {c: np.asarray(scores[c], dtype=float) for c in CONDITIONS}
    n = len(arrays["both"])
    if n == 0 or any(len(a) != n for a in arrays.values()):
        raise ValueError(
            f"every condition needs the same non-zero number of items: {[len(a) for a in arrays.values()]}"
        )
    if any(np.isnan(a).any() for a in arrays.values()):
        raise ValueError("scores contain NaN: drop unscored items from every condition first")

    means = {c: float(a.mean()) for c, a in arrays.items()}
    point = {k: float(v) for k, v in _metrics({c: np.asarray(means[c]) for c in CONDITIONS}).items()}
    idx = bootstrap_draws(n, resamples=n_resamples, seed=seed)  # the same items for every condition: paired
    boot_means = {c: a[idx].mean(axis=1) for c, a in arrays.items()}
    boot = {**boot_means, **_metrics(boot_means)}
    # The 2.5th and 97.5th percentiles exactly (percentile_interval's tail, (1 - 0.95) / 2, is 0.025 plus 2e-17,
    # which moves some bounds here by 1e-15: the grid's intervals stay the numbers they always were).
    intervals = {k: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))) for k, v in boot.items()}

    flags: set[str] = set()
    floor_lo, floor_hi = intervals["neither"]
    refused = floor_lo > chance + floor_margin
    lines: list[str] = []
    gain: float | None = point["fusion_gain"]
    if refused:
        flags.add("prior_floor_high")
        gain = None
        del intervals["fusion_gain"]
        verdict = "refused: answerable without the media"
        lines.append(
            f"PRIOR FLOOR HIGH: with no usable media the model still scores {point['prior_floor']:.3f} "
            f"(95% CI {floor_lo:.3f}-{floor_hi:.3f}), above chance {chance:.3f} + margin {floor_margin:.3f}. The "
            "benchmark can be answered without the media, so no fusion gain is reported: every other number would "
            "measure a language model."
        )
    else:
        if point["fusion_gain"] < margin:
            flags.add("no_fusion")
        at_chance = means["both"] < chance + margin
        # At chance even with both streams, removing either costs nothing: that says nothing about which
        # stream is ignored, so neither "ignored" flag is raised.
        if point["video_reliance"] < margin and not at_chance:
            flags.add("video_ignored")
        if point["audio_reliance"] < margin and not at_chance:
            flags.add("audio_ignored")
        gain_lo, gain_hi = intervals["fusion_gain"]
        if at_chance:  # a gain among guesses is no evidence about fusion either way: no story is told
            lines.append(
                f"Fusion gain {point['fusion_gain']:+.3f} (95% CI {gain_lo:+.3f} to {gain_hi:+.3f}): not "
                "interpretable, since the model is at chance with both streams."
            )
        elif "no_fusion" in flags:
            lines.append(
                f"NO FUSION: adding the second stream gains only {point['fusion_gain']:+.3f} "
                f"(95% CI {gain_lo:+.3f} to {gain_hi:+.3f}); the model answers from one modality at a time."
            )
        else:
            lines.append(
                f"Fusion gain {point['fusion_gain']:+.3f} (95% CI {gain_lo:+.3f} to {gain_hi:+.3f}): the model "
                "does better with both streams than with either alone."
            )
        if at_chance:
            below = means["both"] < chance - margin  # worse than guessing: often replies that do not parse
            lines.append(
                f"{'BELOW' if below else 'AT'} CHANCE: with both streams the model scores {means['both']:.3f} (chance "
                f"{chance:.3f}); which stream it ignores cannot be told from these items"
                + ("; below chance usually means replies that do not parse: see `score` (unparsed)." if below else ".")
            )
        if "video_ignored" in flags:
            lines.append(f"VIDEO IGNORED: removing the video costs {point['video_reliance']:+.3f}.")
        if "audio_ignored" in flags:
            lines.append(f"AUDIO IGNORED: removing the audio costs {point['audio_reliance']:+.3f}.")
        verdict = (
            ("below chance" if means["both"] < chance - margin else "at chance")
            if at_chance
            else "healthy"
            if not flags
            else ", ".join(
                {"no_fusion": "no fusion", "video_ignored": "video ignored", "audio_ignored": "audio ignored"}[f]
                for f in ("no_fusion", "video_ignored", "audio_ignored")
                if f in flags
            )
        )
    lines.append(
        "means: "
        + ", ".join(f"{c} {means[c]:.3f}" for c in CONDITIONS)
        + f"; prior floor {point['prior_floor']:.3f} (95% CI {floor_lo:.3f}-{floor_hi:.3f}) vs chance {chance:.3f}"
        + f" + margin {floor_margin:.3f}; {n} items"
    )
    return Diagnosis(
        **{**point, "fusion_gain": gain},
        refused=refused,
        flags=flags,
        means=means,
        intervals=intervals,
        n_items=n,
        chance=chance,
        margin=margin,
        floor_margin=floor_margin,
        verdict=verdict,
        lines=lines,
    )
