"""Media performance, as ratios measured in one run (run: ``uv run python perf/perf_media.py``).

1. trim + encode through omnivchat vs the very same ffmpeg command run directly (target: ratio <= 1.1);
2. a cached repeat vs the first call (target: under 5 %);
3. rendering a 10 s 640x360 clip with speech, pinned to one core (target: under 1.5 s);
4. a header probe under its time bound (its own thread) vs the same probe unbounded (target: ratio <= 1.1).

Times are medians of several runs; ratios are medians of per-pair ratios (the two sides of a pair run back to
back, alternating which goes first), which cancels most of the drift from other load on the machine.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from omnivchat import media, synth
from omnivchat.media._ffmpeg import ffmpeg_exe
from omnivchat.media._ops import trim_args

RENDER_BUDGET_S = 1.5
REPEATS = 12

SPEC = {
    "duration": 10.0,
    "size": [640, 360],
    "background": "lightsteelblue",
    "floor": "burlywood",
    "lighting": {"level": "normal", "tint": "warm", "vignette": 0.3},
    "camera": {"mode": "front", "label": True},
    "objects": [
        {"shape": "cube", "color": "red", "position": "left", "label": "box"},
        {"shape": "cylinder", "color": "green", "position": "right", "label": "cup"},
        {"shape": "star", "color": "gold", "position": "top-right", "appear": 4.0},
    ],
    "person": {"expression": "upset"},
    "placards": [{"text": "Kitchen, 9:30", "position": "top", "start": 1.0}],
    "speech": [
        {"text": "Which of these is on my left? [pause 0.6] The box or the cup?", "start": 0.5},
        {"text": "Not now, I'm busy.", "speaker": "friend", "start": 5.2, "style": "upset"},
        {"text": "左边是什么颜色？", "language": "zh", "start": 7.0},
    ],
    "noise": {"kind": "pink", "level_db": -48},
}

# Run in a child pinned to one core (children inherit the affinity: ffmpeg and the espeak-ng worker too).
_RENDER_CHILD = """
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
from omnivchat.synth import render_clip
spec = json.loads(sys.argv[2])
out = sys.argv[3]
times = []
for i in range(3):
    t = time.perf_counter()
    render_clip({**spec, "seed": i}, f"{out}/r{i}.mp4", use_cache=False)
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def _direct(args: list[str]) -> None:
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *args]
    subprocess.run(cmd, check=True, capture_output=True)


def main() -> None:
    """Measure and print the ratios."""
    with tempfile.TemporaryDirectory(prefix="omnivchat-perf-") as tmp_s:
        tmp = Path(tmp_s)
        os.environ["OMNIVCHAT_CACHE_DIR"] = str(tmp / "cache")
        src = synth.render_clip(SPEC, tmp / "src.mp4", use_cache=False).path
        info = media.probe(src, energy=False)
        media.trim(src, 4.0, cache_dir=tmp / "warmup")  # imports, encoder version, hash memo

        direct_s: list[float] = []
        ours_s: list[float] = []
        cached_s: list[float] = []

        def direct(i: int) -> None:
            t = time.perf_counter()
            _direct(trim_args(src, tmp / f"direct{i}.mp4", info, 5.0))
            direct_s.append(time.perf_counter() - t)

        def ours(i: int) -> None:
            cache = tmp / f"cache{i}"  # a fresh cache: a real miss every time
            t = time.perf_counter()
            media.trim(src, 5.0, cache_dir=cache)
            ours_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            media.trim(src, 5.0, cache_dir=cache)
            cached_s.append(time.perf_counter() - t)

        for i in range(REPEATS):  # alternate which side goes first, so drift and warm caches favour neither
            first, second = (direct, ours) if i % 2 else (ours, direct)
            first(i)
            second(i)

        unbounded = media.probe.__wrapped__  # type: ignore[attr-defined]  # the probe without media.bounded
        bound_ratios: list[float] = []
        bound_s: list[float] = []
        for i in range(REPEATS):  # batches of 50 header probes (about 1.5 ms each), alternating which goes first
            pair = []
            for fn in (media.probe, unbounded) if i % 2 else (unbounded, media.probe):
                t = time.perf_counter()
                for _ in range(50):
                    fn(src, energy=False, verify=False)
                pair.append((fn is media.probe, time.perf_counter() - t))
            timed = dict(pair)
            bound_s.append(timed[True])
            bound_ratios.append(timed[True] / timed[False])

        cpu = min(os.sched_getaffinity(0))
        child = subprocess.run(
            [sys.executable, "-c", _RENDER_CHILD, str(cpu), json.dumps(SPEC), str(tmp)],
            check=True,
            capture_output=True,
            text=True,
        )
        render_s = json.loads(child.stdout.strip().splitlines()[-1])

    d, o, c = statistics.median(direct_s), statistics.median(ours_s), statistics.median(cached_s)
    # Each pair ran back to back, so the median of per-pair ratios cancels drift from other load on the box.
    pair_ratio = statistics.median(a / b for a, b in zip(ours_s, direct_s, strict=True))
    cache_ratio = statistics.median(a / b for a, b in zip(cached_s, ours_s, strict=True))
    cold, warm = render_s[0], statistics.median(render_s[1:])
    trim_times = f"{o * 1e3:.1f} / {d * 1e3:.1f} ms"
    rows = [
        ("trim+encode 5 s of 10 s 640x360: omnivchat / direct ffmpeg", trim_times, pair_ratio, 1.1),
        ("cached repeat / first call", f"{c * 1e3:.2f} / {o * 1e3:.0f} ms", cache_ratio, 0.05),
        ("render 10 s 640x360 + speech, 1 core, first (worker start)", f"{cold:.3f} s", cold / RENDER_BUDGET_S, 1.0),
        ("render 10 s 640x360 + speech, 1 core, next", f"{warm:.3f} s", warm / RENDER_BUDGET_S, 1.0),
        (
            "header probe bounded (worker thread) / unbounded",
            f"{statistics.median(bound_s) / 50 * 1e3:.2f} ms each",
            statistics.median(bound_ratios),
            1.1,
        ),
    ]
    print(f"{'measure':64} {'times':>22} {'ratio':>7} {'target':>7}")
    for name, times, ratio, target in rows:
        flag = "ok" if ratio <= target else "OVER"
        print(f"{name:64} {times:>22} {ratio:7.3f} {'<=' + str(target):>7} {flag}")


if __name__ == "__main__":
    main()
