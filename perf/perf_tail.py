"""Throughput of ``omnivchat.synth.repair_tail`` on decoded ten-second clips, on one core.

Target (issue 3, item 4): at least 200 ten-second clips per second on one core. The audio is the
speech-like test signal of ``omnivchat.synth._signals`` (harmonic syllables, fricatives, pauses,
a noise floor) at 44.1 kHz mono float32, the rate the bench renderer writes (clicks reach above
16 kHz there), and at 16 kHz for comparison. Each figure is measured in this run:

- clean: natural endings, returned unchanged after detection (the common case in a bench);
- click: a broadband click 15-65 ms before the end of speech, detected and repaired;
- cut-off: speech stopping abruptly, detected and repaired;
- bench mix: 75 % clean, 15 % click, 10 % cut-off (the paper repaired 695 clips of 2,800).

Run: ``uv run python perf/perf_tail.py`` (pins BLAS/FFT threads to 1 before importing numpy).
"""

from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

from omnivchat.synth import content_end, repair_tail  # noqa: E402
from omnivchat.synth._signals import add_click, speech_like  # noqa: E402

SECONDS = 10.0
N_CLIPS = 24
MIN_TIME = 1.5
TARGET = 200.0


def clips(sr: int, kind: str) -> list[np.ndarray]:
    out = []
    for seed in range(N_CLIPS):
        if kind == "clean":
            x = speech_like(sr, SECONDS, seed=seed, ending="fade" if seed % 2 else "fricative", trailing=0.1)
        elif kind == "cut-off":
            x = speech_like(sr, SECONDS, seed=seed, ending="cut", trailing=0.05)
        else:
            x = speech_like(sr, SECONDS, seed=seed, trailing=0.1, noise_db=-80)
            at = content_end(x, sr) - round((0.015 + 0.002 * seed) * sr)
            x = add_click(x, sr, at, amplitude=0.3, seed=seed)
        out.append(x)
    return out


def rate(xs: list[np.ndarray], sr: int) -> tuple[float, int]:
    """Clips per second over at least MIN_TIME of repeated passes; also how many came back changed."""
    changed = sum(repair_tail(x, sr)[1].changed for x in xs)  # warm-up (filter design, caches)
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < MIN_TIME:
        for x in xs:
            repair_tail(x, sr)
        n += len(xs)
    return n / elapsed, changed


def main() -> None:
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
        pinned = "pinned to one core"
    except (AttributeError, OSError):
        pinned = "not pinned (no sched_setaffinity)"
    print(f"repair_tail on {SECONDS:.0f} s mono float32 clips, {N_CLIPS} distinct clips per case, {pinned}")
    print(f"{'rate':>8}  {'case':<10} {'clips/s':>9} {'ms/clip':>8}  changed   target >= {TARGET:.0f}/s")
    for sr in (44100, 16000):
        results = {}
        for kind in ("clean", "click", "cut-off"):
            xs = clips(sr, kind)
            per_s, changed = rate(xs, sr)
            results[kind] = per_s
            ok = "ok" if per_s >= TARGET else "BELOW TARGET"
            print(f"{sr:>8}  {kind:<10} {per_s:>9.0f} {1000 / per_s:>8.2f}  {changed:>2}/{len(xs)}     {ok}")
        mix = 1.0 / (0.75 / results["clean"] + 0.15 / results["click"] + 0.10 / results["cut-off"])
        ok = "ok" if mix >= TARGET else "BELOW TARGET"
        print(f"{sr:>8}  {'bench mix':<10} {mix:>9.0f} {1000 / mix:>8.2f}             {ok}")


if __name__ == "__main__":
    main()
