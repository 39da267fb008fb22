"""Before/after figure of one repaired tail: waveform and spectrogram of the final 500 ms (as Fig. 5)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from omnivchat.synth._detect import FADE_S, TailRepair

WINDOW_S = 0.5


def plot_tail_pair(
    before: NDArray[np.floating],
    after: NDArray[np.floating],
    sr: int,
    info: TailRepair | None,
    out: str | os.PathLike[str],
    *,
    title: str = "",
) -> Path:
    """Write a PNG with the waveform (top) and spectrogram (bottom) of the final 500 ms of ``before``
    (left) and ``after`` (right); both spectrograms share one colour scale and a dashed line marks the
    fade onset ``n0 - L``. Returns the path written."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from scipy.signal import spectrogram

    n = round(WINDOW_S * sr)
    segs = [np.asarray(s, dtype=np.float64)[-n:] for s in (before, after)]
    length = min(len(before), len(after))
    nperseg = max(16, round(0.006 * sr))
    specs = []
    for seg in segs:
        f, t, sxx = spectrogram(seg, fs=sr, nperseg=nperseg, noverlap=nperseg * 3 // 4, window="hann")
        specs.append((f, t, 10 * np.log10(sxx + 1e-14)))
    vmax = max(float(s[2].max()) for s in specs)
    vmin = vmax - 100.0
    onset_ms = None
    if info is not None and info.changed and info.cutoff is not None:
        onset = info.cutoff - round(FADE_S * sr)
        onset_ms = (onset - length) / sr * 1000.0

    fig, axes = plt.subplots(2, 2, figsize=(11, 6), sharex=True, constrained_layout=True)
    amp = max(1e-6, max(float(np.abs(s).max()) for s in segs)) * 1.05
    mesh = None
    for col, (seg, (f, t, db), label) in enumerate(zip(segs, specs, ("Before repair", "After repair"), strict=True)):
        ms = (np.arange(seg.size) - seg.size) / sr * 1000.0
        ax = axes[0, col]
        ax.plot(ms, seg, lw=0.6, color="#1f4e79")
        ax.set_ylim(-amp, amp)
        ax.set_title(label)
        ax.set_ylabel("Amplitude" if col == 0 else "")
        ax = axes[1, col]
        tm = (t - seg.size / sr) * 1000.0
        mesh = ax.pcolormesh(tm, f / 1000.0, db, shading="auto", vmin=vmin, vmax=vmax, cmap="magma")
        ax.set_xlabel("Time before end of clip (ms)")
        ax.set_ylabel("Frequency (kHz)" if col == 0 else "")
        if onset_ms is not None and onset_ms > -WINDOW_S * 1000:
            for r in (0, 1):
                axes[r, col].axvline(onset_ms, ls="--", lw=1.0, color="tab:green", label="fade onset")
    if onset_ms is not None and onset_ms > -WINDOW_S * 1000:
        axes[0, 0].legend(loc="upper left", fontsize=8)
    if mesh is not None:
        fig.colorbar(mesh, ax=axes[1, :], label="dB", shrink=0.9)
    if title:
        fig.suptitle(title, fontsize=10)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
