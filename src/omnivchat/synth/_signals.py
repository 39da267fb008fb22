"""Speech-like test audio with controllable tails, for the tail-repair tests and benchmark.

Not speech, but shaped like it where the detectors look: syllables of harmonic tones (f0 100-240 Hz,
harmonics to 5 kHz with a spectral tilt and two moving formant bumps) under attack/decay envelopes,
unvoiced fricatives (band-limited noise, 3.5-9 kHz) between some of them, pauses, and a background noise
floor. The ending is chosen: a natural decay followed by trailing silence, or an abrupt cut-off; a
broadband click can be added anywhere.
"""

from __future__ import annotations

from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray


def _envelope(n: int, sr: int, attack: float, release: float) -> NDArray[np.float64]:
    t = np.arange(n) / sr
    env = np.ones(n)
    na = max(1, int(attack * sr))
    env[:na] = 0.5 * (1 - np.cos(np.pi * np.arange(na) / na))
    rel_start = max(na, n - int(release * sr))
    if release > 0 and rel_start < n:  # exponential decay to -60 dB, then a 2 ms taper to 0
        env[rel_start:] *= np.exp(-(t[rel_start:] - t[rel_start]) / (release / 7.0))
        nt = min(n - rel_start, max(2, int(0.002 * sr)))
        env[n - nt :] *= 0.5 * (1 + np.cos(np.pi * np.arange(1, nt + 1) / nt))
    return env


def _voiced(n: int, sr: int, rng: np.random.Generator, f0: float) -> NDArray[np.float64]:
    t = np.arange(n) / sr
    glide = f0 * (1 + rng.uniform(-0.15, 0.15) * t / max(t[-1], 1e-3))
    phase = 2 * np.pi * np.cumsum(glide) / sr
    f1, f2 = rng.uniform(350, 900), rng.uniform(1000, 2600)
    out = np.zeros(n)
    for h in range(1, int(min(5000.0, sr / 2 - 500) / f0) + 1):
        fh = h * f0
        formant = 1 + 4 * np.exp(-(((fh - f1) / 250) ** 2)) + 2.5 * np.exp(-(((fh - f2) / 400) ** 2))
        out += formant / h**1.2 * np.sin(h * phase + rng.uniform(0, 2 * np.pi))
    return cast("NDArray[np.float64]", out / (np.max(np.abs(out)) + 1e-12))


def _fricative(n: int, sr: int, rng: np.random.Generator) -> NDArray[np.float64]:
    from scipy.signal import butter, sosfilt

    hi = min(9000.0, 0.45 * sr)
    sos = butter(4, [min(3500.0, hi * 0.6), hi], btype="bandpass", fs=sr, output="sos")
    out = sosfilt(sos, rng.standard_normal(n + 256))[256:]
    return cast("NDArray[np.float64]", out / (np.max(np.abs(out)) + 1e-12))


def speech_like(
    sr: int,
    duration: float,
    *,
    seed: int = 0,
    level: float = 0.3,
    ending: Literal["fade", "cut", "fricative"] = "fade",
    trailing: float = 0.15,
    noise_db: float = -90.0,
) -> NDArray[np.float32]:
    """``duration`` seconds of speech-like mono float32 audio at ``sr`` with peak about ``level``.

    ``ending``: ``"fade"`` -- the last syllable decays naturally, then ``trailing`` seconds of
    background only; ``"cut"`` -- the sound stops abruptly mid-syllable ``trailing`` seconds before the
    end (then background only); ``"fricative"`` -- the last sound is a fricative that decays naturally.
    ``noise_db`` is the background noise RMS in dBFS (-90 keeps it below Eq. 8's threshold; -50 puts
    room tone above it, so content runs to the end of the file).
    """
    rng = np.random.default_rng(seed)
    n_total = round(duration * sr)
    speech_end = n_total - round(trailing * sr)
    x = np.zeros(n_total)
    f0 = rng.uniform(100, 240)
    pos = round(rng.uniform(0.05, 0.2) * sr)
    min_final = round(0.15 * sr)
    while pos < speech_end - min_final:
        n = round(rng.uniform(0.12, 0.28) * sr)
        gap = round(rng.choice([rng.uniform(0.02, 0.1), rng.uniform(0.15, 0.35)], p=[0.8, 0.2]) * sr)
        last = pos + n + gap + min_final > speech_end
        if last:
            n = speech_end - pos
        fric = (ending == "fricative") if last else bool(rng.random() < 0.2)
        seg = 0.35 * _fricative(n, sr, rng) if fric else _voiced(n, sr, rng, f0 * rng.uniform(0.9, 1.1))
        if last and ending == "cut":
            env = _envelope(n, sr, 0.02, 0.0)  # no release: stops mid-syllable
        else:
            env = _envelope(n, sr, rng.uniform(0.01, 0.03), rng.uniform(0.05, 0.09))
        x[pos : pos + n] += rng.uniform(0.5, 1.0) * seg * env
        if last:
            break
        pos += n + gap
    x *= level / (np.max(np.abs(x)) + 1e-12)
    x += 10 ** (noise_db / 20) * rng.standard_normal(n_total)
    return x.astype(np.float32)


def add_click(
    x: NDArray[np.floating], sr: int, at: int, *, amplitude: float = 0.3, seed: int = 0
) -> NDArray[np.floating]:
    """A copy of ``x`` with a broadband click (about 1 ms, flat spectrum to Nyquist) starting at ``at``."""
    rng = np.random.default_rng(seed)
    n = max(2, round(0.001 * sr))
    click = amplitude * rng.choice([-1.0, 1.0], n) * np.exp(-np.arange(n) / (n / 4))
    y = x.copy()
    end = min(y.size, at + n)
    y[at:end] += click[: end - at].astype(y.dtype)
    return y
