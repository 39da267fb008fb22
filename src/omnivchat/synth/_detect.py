"""Audio tail-artifact detection and repair (paper, Appendix D.1.2, Eq. 8-12).

Two recurring defects sit at the end of synthesized clips: a broadband *click* near the end (a narrow
vertical band in a spectrogram, reaching above 16 kHz) and a *cut-off* that ends active sound with no
natural fade. This module detects them with two fixed measures and repairs them with the appendix's
raised-cosine fade, which never changes the clip's length (so audio-visual sync is kept).

Pure functions on decoded mono float audio:

- :func:`content_end` -- Eq. 8, the exclusive end of non-silent content.
- :func:`tail_scores` -- the detection step: a *transient* score (final 150 ms against the preceding
  second, per frequency band) and a *truncation* score (loudness and fade at the very end).
- :func:`locate_cutoff` -- Eq. 9 and 10: 6 kHz high-pass, 1 ms RMS envelope, 160 ms search zone, peak,
  background, threshold, three-block look-back, cut-off sample ``n0``.
- :func:`fade_gain` / :func:`apply_fade` -- Eq. 11, the 20 ms raised-cosine fade ending at ``n0``.
- :func:`support_bound` -- Eq. 12, the first sample a repair may change.
- :func:`repair_tail` -- detect, then (only if flagged) repair in at most three passes.

The paper ranks severity with fixed measures *and* a model that ranks waveform/spectrogram panels; this
implementation uses only the fixed measures (no model ranking).

The clip level (decode, repair, re-mux) is in ``_clip.py``; both are served from :mod:`omnivchat.synth`.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

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
    "Cutoff",
    "TailRepair",
    "TailScores",
    "apply_fade",
    "background_level",
    "block_rms",
    "content_end",
    "cutoff_block",
    "fade_gain",
    "highpass_6k",
    "locate_cutoff",
    "repair_tail",
    "support_bound",
    "tail_scores",
]

# --- constants of Appendix D.1.2 -------------------------------------------------------------------
HIGHPASS_HZ = 6000.0  # high-pass corner for the artifact's broadband component
BLOCK_S = 0.001  # RMS envelope block length (1 ms)
SEARCH_ZONE_S = 0.160  # search zone Z: final 160 ms of complete blocks before n_end
MARGIN_S = 0.001  # M, safety margin before the onset block
T_BOUND_S = 0.080  # T, how far the cut-off may precede the content boundary
FADE_S = 0.020  # L, raised-cosine fade length
MIN_PEAK_DB = 8.0  # below this peak-to-background ratio the fallback n0 = n_end applies
MAX_PASSES = 3  # at most three passes apply the fade
SKIP_AFTER_CONTENT_S = 0.300  # clip level: skip when the file ends this long after the content boundary

# --- detection (our design; the paper gives the idea, not the formulas) -----------------------------
TAIL_S = 0.150  # final window compared with ...
REFERENCE_S = 1.0  # ... the preceding second
MIN_CONTENT_S = 0.250  # shorter content: no reference to compare with, returned unchanged ("too short")
FRAME_S = 0.005  # analysis frame for band energies (Hann, 50 % hop)
BAND_EDGES_HZ = (0.0, 500.0, 1000.0, 2000.0, 4000.0, 6000.0, 8000.0, 12000.0, 16000.0)
TRANSIENT_LOW_HZ = 4000.0  # the transient score averages the bands from here up
CONTEXT_S = 0.015  # "short": compared with the median of the frames within +-15 ms
BAND_FLOOR_DB = -60.0  # band energies are floored 60 dB below the reference's strongest band
TRANSIENT_THRESHOLD_DB = 6.0  # flag a transient above this (band-averaged excess, dB)
END_S = 0.005  # "the very end": final 5 ms of content
FADE_WINDOW_S = 0.050  # compared with the 50 ms before it
LEVEL_FRAME_S = 0.010  # speech level: the clip's loudest 10 ms frame
LOUDNESS_THRESHOLD_DB = -25.0  # truncation needs the end louder than this re the speech level ...
FADE_THRESHOLD_DB = -6.0  # ... and a fade shallower than this

_EPS = 1e-20


def _as_signal(x: ArrayLike) -> NDArray[np.floating]:
    """Return ``x`` as a 1-D float array (float32/float64 kept; anything else becomes float64)."""
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"expected mono audio (1-D array), got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    return a


def _check_rate(sr: int) -> int:
    if isinstance(sr, bool) or not isinstance(sr, (int, np.integer)) or sr <= 0:
        raise ValueError(f"sample rate must be a positive integer, got {sr!r}")
    return int(sr)


def _samples(seconds: float, sr: int) -> int:
    """A duration in seconds converted to a sample count (rounded, at least 1)."""
    return max(1, round(seconds * sr))


def _peak(x: NDArray[np.floating]) -> float:
    if x.size == 0:
        return 0.0
    peak = max(float(x.max()), -float(x.min()))
    if not math.isfinite(peak):
        raise ValueError("audio contains NaN or infinite samples")
    return peak


# --- Eq. 8 -------------------------------------------------------------------------------------------


def content_end(x: ArrayLike, sr: int) -> int:
    """Exclusive boundary of non-silent content (Eq. 8).

    ``n_end = 1 + max{n : |x[n]| > max(1e-4, 1e-3 * max_m |x[m]|)}``: the last sample above the larger
    of an absolute floor (-80 dBFS) and a level 60 dB below the clip peak, plus one. Low-level digital
    silence left by the encoder is thereby excluded. Eq. 8 does not depend on ``sr`` (kept for a uniform
    signature). A silent (or empty) signal, where no sample passes the threshold, returns 0.
    Raises ValueError for non-finite samples or non-mono input.
    """
    _check_rate(sr)
    a = _as_signal(x)
    thr = max(1e-4, 1e-3 * _peak(a))
    end, chunk = a.size, 4096
    while end > 0:  # scan backwards in growing chunks: content usually ends near the end
        start = max(0, end - chunk)
        hits = np.flatnonzero(np.abs(a[start:end]) > thr)
        if hits.size:
            return start + int(hits[-1]) + 1
        end, chunk = start, chunk * 2
    return 0


# --- 6 kHz high-pass and 1 ms RMS envelope -------------------------------------------------------------


@functools.cache
def _highpass_sos(sr: int) -> NDArray[np.float64]:
    from scipy.signal import butter

    return cast("NDArray[np.float64]", butter(4, HIGHPASS_HZ, btype="highpass", fs=sr, output="sos"))


def highpass_6k(x: ArrayLike, sr: int) -> NDArray[np.float64]:
    """The 6 kHz high-pass ``x~ = h_6k * x`` of Appendix D.1.2.

    A 4th-order Butterworth high-pass applied forwards and backwards (zero phase, so the envelope's peak
    and onset are not shifted in time; effective roll-off 48 dB/octave). It keeps a click's broadband
    component and removes most voiced speech. Needs ``sr > 12 kHz`` (ValueError otherwise).
    """
    from scipy.signal import sosfiltfilt

    sr = _check_rate(sr)
    if sr <= 2 * HIGHPASS_HZ:
        raise ValueError(f"sample rate {sr} Hz has no band above {HIGHPASS_HZ / 1000:g} kHz (need > 12 kHz)")
    a = np.asarray(x, dtype=np.float64)
    sos = _highpass_sos(sr)
    padlen = min(3 * (2 * len(sos) + 1), max(0, a.size - 1))
    if a.size < 2:
        return np.zeros_like(a)
    return cast("NDArray[np.float64]", sosfiltfilt(sos, a, padlen=padlen))


def block_rms(xh: ArrayLike, block: int) -> NDArray[np.float64]:
    """RMS envelope over consecutive blocks: ``q[k] = sqrt(|B_k|^-1 sum_{n in B_k} x~[n]^2)``.

    ``xh`` is cut into ``len(xh) // block`` complete blocks of ``block`` samples; a trailing partial block
    is dropped.
    """
    a = np.asarray(xh, dtype=np.float64)
    k = a.size // block
    b = a[: k * block].reshape(k, block)
    return cast("NDArray[np.float64]", np.sqrt(np.einsum("ij,ij->i", b, b) / block))


# --- Eq. 9 and Eq. 10 ----------------------------------------------------------------------------------


def background_level(q: ArrayLike, k_peak: int) -> tuple[float, bool]:
    """Background level beta of Eq. 9, for an envelope ``q`` over the search zone Z.

    ``q`` is indexed by block within Z (0 = first block of Z) and ``k_peak`` is the peak block
    ``k* = argmax_{k in Z} q[k]``. The background window ``P = {k in Z : k* - 80 <= k < k* - 30}`` is
    half-open and covers 30-80 ms (blocks) before the peak; ``beta = median q[P]`` when ``|P| >= 5``,
    otherwise (peak too close to the start of Z) the fallback ``beta = median q[Z]``.
    Returns ``(beta, used_fallback)``.
    """
    qa = np.asarray(q, dtype=np.float64)
    lo, hi = max(0, k_peak - 80), max(0, k_peak - 30)
    if hi - lo >= 5:
        return float(np.median(qa[lo:hi])), False
    return float(np.median(qa)), True


def cutoff_block(q: ArrayLike, k_peak: int, beta: float) -> tuple[int, float]:
    """Threshold and three-block look-back of Eq. 10 (block indices relative to Z).

    ``theta = max(2 beta, 10^(-45/20) q[k*])`` (6 dB above the local background, 45 dB below the peak);
    ``k^0 = max{k in Z : k <= k*, q[j] <= theta for every j in Z ∩ [k-3, k)}``: scanning back from the
    peak, the latest block whose (up to) three preceding blocks inside Z are all at or below ``theta``.
    The first block of Z always qualifies (its look-back is empty), so ``k^0`` always exists.
    Returns ``(k^0, theta)``.
    """
    qa = np.asarray(q, dtype=np.float64)
    theta = max(2.0 * beta, 10.0 ** (-45.0 / 20.0) * float(qa[k_peak]))
    below = qa[:k_peak] <= theta  # below[j] for j < k*
    for k in range(k_peak, 0, -1):
        if below[max(0, k - 3) : k].all():
            return k, theta
    return 0, theta


@dataclass(frozen=True, slots=True)
class Cutoff:
    """Where a repair pass cuts (Eq. 9-10). Sample indices are absolute, into the signal."""

    n0: int
    """Cut-off sample: the fade reaches 0 at ``n0 - 1`` and samples ``>= n0`` become silent."""
    n_end: int
    """Content boundary (Eq. 8) the search zone was anchored to."""
    peak_sample: int | None
    """First sample of the peak block ``b(k*)`` (None when the zone is empty)."""
    onset_sample: int | None
    """First sample of the onset block ``b(k^0)`` (None when the fallback applied)."""
    peak_db: float
    """Peak over background, ``20 log10(q[k*] / beta)`` (inf when beta is 0)."""
    fallback: bool
    """True when the peak was less than 8 dB above the background, so ``n0 = n_end``."""


def _hp_envelope(x: NDArray[np.floating], sr: int, n_end: int) -> tuple[NDArray[np.float64], int, int]:
    """1 ms RMS envelope of the 6 kHz high-pass over Z; returns ``(q, first block of Z, block size)``.

    Blocks are aligned to sample 0 (``b(k) = k * block``); Z holds the last 160 complete blocks ending
    at or before ``n_end``. Only Z plus a 10 ms margin each side is filtered (filter edge effects stay
    outside Z), which is what makes the repair cheap on long clips.
    """
    block = _samples(BLOCK_S, sr)
    k_hi = n_end // block
    k_lo = max(0, k_hi - round(SEARCH_ZONE_S / BLOCK_S))
    if k_hi <= k_lo:
        return np.zeros(0), k_lo, block
    pad = _samples(0.010, sr)
    a, b = k_lo * block, k_hi * block
    s0, s1 = max(0, a - pad), min(x.size, b + pad)
    xh = highpass_6k(x[s0:s1], sr)[a - s0 : b - s0]
    return block_rms(xh, block), k_lo, block


def locate_cutoff(x: ArrayLike, sr: int, n_end: int | None = None) -> Cutoff:
    """One repair pass's cut-off sample ``n0`` (Eq. 9 and 10).

    ``x~ = h_6k * x`` (6 kHz high-pass), ``q`` its 1 ms RMS envelope, Z the final 160 ms of complete
    blocks before ``n_end`` (Eq. 8 of ``x`` unless given). Peak ``k*``, background ``beta`` (Eq. 9),
    threshold and look-back ``k^0`` (Eq. 10), then ``n0 = max(n_end - T, b(k^0) - M)`` with
    ``M = 1 ms`` and ``T = 80 ms`` in samples. If the peak is less than 8 dB above the background, the
    fallback sets ``n0 = n_end``.
    """
    sr = _check_rate(sr)
    a = _as_signal(x)
    if n_end is None:
        n_end = content_end(a, sr)
    q, k_lo, block = _hp_envelope(a, sr, n_end)
    if q.size == 0:
        return Cutoff(n_end, n_end, None, None, 0.0, True)
    k_peak = int(np.argmax(q))
    beta, _ = background_level(q, k_peak)
    qp = float(q[k_peak])
    peak_db = math.inf if beta <= 0.0 < qp else 20.0 * math.log10(max(qp, _EPS) / max(beta, _EPS))
    peak_sample = (k_lo + k_peak) * block
    if peak_db < MIN_PEAK_DB:
        return Cutoff(n_end, n_end, peak_sample, None, peak_db, True)
    k0, _ = cutoff_block(q, k_peak, beta)
    onset = (k_lo + k0) * block
    n0 = max(n_end - _samples(T_BOUND_S, sr), onset - _samples(MARGIN_S, sr))
    return Cutoff(n0, n_end, peak_sample, onset, peak_db, False)


# --- Eq. 11 and Eq. 12 --------------------------------------------------------------------------------


def fade_gain(n: ArrayLike, n0: int, fade_len: int) -> NDArray[np.float64]:
    """Raised-cosine gain of Eq. 11 at sample indices ``n``.

    ``g[n] = 1`` for ``n < n0 - L``; ``(1 + cos(pi (n - n0 + L) / (L - 1))) / 2`` for
    ``n0 - L <= n < n0``; ``0`` for ``n >= n0``. The cosine includes both endpoints: 1 at ``n0 - L``,
    0 at ``n0 - 1``. (``L = 1`` degenerates to a hard cut at ``n0``.)
    """
    idx = np.asarray(n, dtype=np.float64)
    g = np.where(idx < n0, 1.0, 0.0)
    if fade_len > 1:
        inside = (idx >= n0 - fade_len) & (idx < n0)
        ramp = 0.5 * (1.0 + np.cos(np.pi * (idx - n0 + fade_len) / (fade_len - 1)))
        g = np.where(inside, ramp, g)
    return g


def apply_fade(x: ArrayLike, n0: int, sr: int, *, axis: int = 0) -> NDArray[np.floating]:
    """``y[n] = g[n] x[n]`` with the 20 ms fade of Eq. 11 ending at ``n0`` (a new array, same dtype).

    Only samples from ``n0 - L`` on are touched, so earlier samples are bit-identical; samples from
    ``n0`` on become exactly 0. ``x`` may be multichannel: the same gain is applied to every channel
    along ``axis`` (the time axis).
    """
    a = np.asarray(x)
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    fade_len = _samples(FADE_S, _check_rate(sr))
    y = np.moveaxis(a.copy(), axis, 0)
    n = y.shape[0]
    start, stop = min(n, max(0, n0 - fade_len)), min(n, max(0, n0))
    g = fade_gain(np.arange(start, stop), n0, fade_len).astype(a.dtype)
    y[start:stop] *= g.reshape((-1,) + (1,) * (y.ndim - 1))
    y[stop:] = 0
    return np.moveaxis(y, 0, axis)


def support_bound(n_end: int, sr: int) -> int:
    """First sample a repair may change (Eq. 12): ``{n : y[n] != x[n]} ⊆ [n_end - (T + L), N)``."""
    sr = _check_rate(sr)
    return n_end - (_samples(T_BOUND_S, sr) + _samples(FADE_S, sr))


# --- detection ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TailScores:
    """Detection scores of one signal (all in dB; see :func:`tail_scores`)."""

    transient: float
    """Largest band-averaged excess (dB, >= 0) of a 5 ms frame of the final 150 ms over both the
    loudest frame of the preceding second and its own +-15 ms surroundings, bands from 4 kHz up.
    Clean tails score 0 to about 4 dB; a broadband click 10 dB or more."""
    truncation: float
    """Loudness of the final 5 ms of content relative to the speech level (the clip's loudest 10 ms
    frame), dB. Natural endings sit far below -25 dB; a cut-off during active sound near 0 dB."""
    fade: float
    """Level of the final 5 ms relative to the 50 ms before it, dB: negative for a fade, ~0 for none."""

    @property
    def transient_flag(self) -> bool:
        """A broadband transient (click) in the final 150 ms."""
        return self.transient > TRANSIENT_THRESHOLD_DB

    @property
    def truncation_flag(self) -> bool:
        """Active sound ends abruptly: loud at the very end and no fade."""
        return self.truncation > LOUDNESS_THRESHOLD_DB and self.fade > FADE_THRESHOLD_DB

    @property
    def flagged(self) -> bool:
        """Either defect."""
        return self.transient_flag or self.truncation_flag

    def describe(self) -> str:
        """Short human-readable form, e.g. ``transient 34.1 dB, truncation -48.2 dB (fade -31.0 dB)``."""
        return f"transient {self.transient:.1f} dB, truncation {self.truncation:.1f} dB (fade {self.fade:.1f} dB)"


@functools.cache
def _band_matrix(frame: int, sr: int) -> NDArray[np.float64]:
    """(bins x bands+1) 0/1 matrix summing rfft power into the BAND_EDGES_HZ bands from 4 kHz up to
    Nyquist, plus a last column over all bins (the frame's total energy, for the floor)."""
    freqs = np.fft.rfftfreq(frame, 1.0 / sr)
    edges = [e for e in BAND_EDGES_HZ if TRANSIENT_LOW_HZ <= e < sr / 2] + [sr / 2 + 1.0]
    cols = [((freqs >= lo) & (freqs < hi)) for lo, hi in itertools.pairwise(edges)]
    cols = [c for c in cols if c.any()] + [np.ones_like(freqs, dtype=bool)]
    return np.stack([c.astype(np.float64) for c in cols], axis=1)


@functools.cache
def _hann(n: int) -> NDArray[np.float64]:
    return np.hanning(n + 2)[1:-1]


def _band_energies(seg: NDArray[np.floating], sr: int, frame: int, hop: int) -> NDArray[np.float64]:
    """(frames x bands) energies of Hann frames (``frame`` samples, every ``hop``) over ``seg``."""
    n_frames = 1 + (seg.size - frame) // hop
    frames = np.lib.stride_tricks.sliding_window_view(seg, frame)[::hop][:n_frames]
    spec = np.fft.rfft(frames * _hann(frame).astype(seg.dtype, copy=False), axis=1)
    return (spec.real**2 + spec.imag**2) @ _band_matrix(frame, sr)


def _transient_score(a: NDArray[np.floating], sr: int, n_end: int) -> float:
    frame = _samples(FRAME_S, sr)
    hop = max(1, frame // 2)
    ctx = max(1, round(CONTEXT_S * sr / hop))
    t0 = n_end - _samples(TAIL_S, sr)
    r0 = max(0, t0 - _samples(REFERENCE_S, sr))
    stop = n_end + frame + (ctx + 1) * hop  # tail frames plus their right-hand context
    seg = a[r0 : min(a.size, stop)]
    if seg.size < stop - r0:  # beyond the file: silence
        seg = np.concatenate([seg, np.zeros(stop - r0 - seg.size, dtype=seg.dtype)])
    energies = _band_energies(seg, sr, frame, hop)
    n_ref = max(1, (t0 - r0 - frame) // hop + 1)  # frames that end by t0
    first = -(-(t0 - r0 - frame // 2) // hop)  # first frame centred at or after t0
    last = -(-(n_end - r0) // hop)  # frames starting before n_end
    ref_max = energies[:n_ref].max(axis=0)
    floor = max(float(ref_max[-1]) * 10.0 ** (BAND_FLOOR_DB / 10.0), 1e-12 * frame)
    energies, ref_max = energies[:, :-1], ref_max[:-1]  # drop the all-bins column
    tail = energies[first:last]
    windows = np.lib.stride_tricks.sliding_window_view(energies, 2 * ctx + 1, axis=0)
    local = np.median(windows[first - ctx : last - ctx], axis=-1)
    over_ref = np.log10((tail + floor) / (ref_max + floor))
    over_local = np.log10((tail + floor) / (local + floor))
    excess = 10.0 * np.maximum(np.minimum(over_ref, over_local), 0.0)
    return float(excess.mean(axis=1).max()) if tail.size else 0.0


def tail_scores(x: ArrayLike, sr: int, n_end: int | None = None) -> TailScores | None:
    """Detection scores of the tail of ``x`` (transient and truncation), or None when there is no tail
    to judge (silent, or content shorter than 250 ms).

    *Transient* (final 150 ms against the preceding second, across frequency bands). The content's final
    150 ms ``[n_end - 150 ms, n_end)`` and the second before it are cut into 5 ms Hann frames (hop
    2.5 ms); each frame's energy is summed in bands with edges 4, 6, 8, 12, 16 kHz and Nyquist (below 4 kHz
    voiced speech dominates and hides a click). For every tail frame
    and band, the excess in dB is the smaller of (a) the excess over the band's loudest frame in the
    preceding second and (b) the excess over the median of the frame's +-15 ms neighbours (energies are
    floored 60 dB below the reference's loudest frame, all bands; negative excess counts as 0). The score is the
    largest mean over bands. (a) says "louder up there than anything this voice did in the last second",
    (b) says "short": a fricative or a new syllable lasts longer than 15 ms, a click about 1 ms. A click
    raises every high band at once, a band-limited sound only some, so averaging over bands also
    favours broadband events.

    *Truncation* (loudness and fade at the very end). ``truncation`` is the power of the final 5 ms of
    content relative to the speech level (the clip's loudest 10 ms frame before ``n_end``), ``fade`` that
    power relative to the 50 ms before it. A cut-off during active sound is loud at the very end *and*
    does not fade; a natural ending, trailing room tone, or a faded end fails one of the two conditions.

    Thresholds: transient > 6 dB; truncation > -25 dB and fade > -6 dB.
    """
    sr = _check_rate(sr)
    a = _as_signal(x)
    if n_end is None:
        n_end = content_end(a, sr)
    if n_end == 0 or n_end < _samples(MIN_CONTENT_S, sr):
        return None
    transient = _transient_score(a, sr, n_end)

    end, win, lf = _samples(END_S, sr), _samples(FADE_WINDOW_S, sr), _samples(LEVEL_FRAME_S, sr)
    p_end = _power(a[n_end - end : n_end])
    p_prev = _power(a[max(0, n_end - end - win) : n_end - end])
    k = n_end // lf
    blocks = a[n_end - k * lf : n_end].reshape(k, lf)
    level = max(float(np.einsum("ij,ij->i", blocks, blocks).max()) / lf, p_end)
    truncation = 10.0 * math.log10((p_end + _EPS) / (level + _EPS))
    fade = 10.0 * math.log10((p_end + _EPS) / (p_prev + _EPS))
    return TailScores(transient=transient, truncation=truncation, fade=fade)


def _power(seg: NDArray[np.floating]) -> float:
    if seg.size == 0:
        return 0.0
    s = seg.astype(np.float64, copy=False)
    return float(np.dot(s, s) / s.size)


# --- repair -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TailRepair:
    """What :func:`repair_tail` did."""

    changed: bool
    """Whether any sample changed."""
    cutoff: int | None
    """Cut-off sample ``n0`` (Eq. 10): silent from here on; None when nothing changed."""
    n_end: int
    """Content boundary (Eq. 8) of the input."""
    passes: int
    """Fade passes applied (0 to 3)."""
    scores_before: TailScores | None
    """Detection scores of the input (None when silent or too short)."""
    scores_after: TailScores | None
    """Detection scores of the output (equal to ``scores_before`` when unchanged)."""
    reason: str
    """``repaired``; ``fallback`` (peak < 8 dB above background: fade at the content end, n0 = n_end);
    or why nothing changed: ``clean``, ``silent``, ``too short``, ``empty``, ``rate too low``,
    ``peak below 8 dB`` (only with ``fallback="none"``)."""
    peak_db: float | None = None
    """Peak over background of the first pass (Eq. 9), dB."""
    sample_rate: int | None = None

    @property
    def first_changed(self) -> int | None:
        """First sample the fade touches, ``n0 - L`` (clamped at 0); None when unchanged."""
        if not self.changed or self.cutoff is None or self.sample_rate is None:
            return None
        return max(0, self.cutoff - _samples(FADE_S, self.sample_rate))


def repair_tail(
    x: ArrayLike, sr: int, *, fallback: Literal["fade", "none"] = "fade"
) -> tuple[NDArray[np.floating], TailRepair]:
    """Detect, then repair, the tail of mono float audio ``x`` (Appendix D.1.2). Returns ``(y, info)``.

    ``y`` has the length and dtype of ``x``. A tail that shows no artifact (:func:`tail_scores`, neither
    flag set), a silent input, content shorter than 250 ms or a rate of 12 kHz or less come back
    unchanged, sample for sample (a copy), with ``info.reason`` saying why.

    Otherwise, with ``n_end`` from Eq. 8 fixed for all passes: each pass computes ``n0`` on the current
    output (Eq. 9-10; fallback ``n0 = n_end`` when the peak is less than 8 dB above the background) and
    the output becomes ``g x`` with the Eq. 11 fade ending at the earliest ``n0`` found so far. A further
    pass runs only if a transient remains, and stops when the onset no longer moves earlier; at most
    three passes. Because every ``n0 >= n_end - T``, no sample before ``n_end - (T + L)`` ever changes
    (Eq. 12).

    ``fallback="none"`` reads the 8 dB rule as "no repair" instead of the paper's ``n0 = n_end``
    (a 20 ms fade ending at the content boundary, which is what repairs a plain cut-off).
    """
    sr = _check_rate(sr)
    a = _as_signal(x)
    nothing = functools.partial(TailRepair, False, None, passes=0, sample_rate=sr)
    if a.size == 0:
        return a.copy(), nothing(0, scores_before=None, scores_after=None, reason="empty")
    n_end = content_end(a, sr)
    if n_end == 0:
        return a.copy(), nothing(0, scores_before=None, scores_after=None, reason="silent")
    before = tail_scores(a, sr, n_end)
    if before is None:
        return a.copy(), nothing(n_end, scores_before=None, scores_after=None, reason="too short")
    if not before.flagged:
        return a.copy(), nothing(n_end, scores_before=before, scores_after=before, reason="clean")
    if sr <= 2 * HIGHPASS_HZ:
        return a.copy(), nothing(n_end, scores_before=before, scores_after=before, reason="rate too low")

    after: TailScores | None = before
    y, n0, passes, peak_db, used_fallback = a, None, 0, None, False
    for _ in range(MAX_PASSES):
        cut = locate_cutoff(y, sr, n_end)
        if peak_db is None:
            peak_db = cut.peak_db
        if cut.fallback and fallback == "none":
            break
        if n0 is not None and cut.n0 >= n0:
            break  # the onset does not move earlier: nothing left to do
        n0 = cut.n0
        used_fallback = cut.fallback
        y = apply_fade(a, n0, sr)
        passes += 1
        after = tail_scores(y, sr)
        if after is None or not after.transient_flag:
            break
    if n0 is None:
        return a.copy(), nothing(n_end, scores_before=before, scores_after=before, reason="peak below 8 dB")
    first = max(0, n0 - _samples(FADE_S, sr))
    if np.array_equal(y[first:], a[first:]):  # the tail was already silent where the fade applies
        return a.copy(), nothing(n_end, scores_before=before, scores_after=before, reason="clean")
    reason = "fallback" if used_fallback else "repaired"
    return y, TailRepair(True, n0, n_end, passes, before, after, reason, peak_db, sr)
