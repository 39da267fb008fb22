"""Multiple-choice benchmark throughput (byo) against the loopback server in its own process; prints ratios
measured in one run.

A byo file of N multiple-choice items (an options list each; the items share a few real rendered clips with
speech, and every question differs, so every request does) goes through the real eval path: `omnivchat eval
--benchmark byo` as a user runs it, in a fresh process (start-up, loading and validating the file, clip hashing,
the manifest, media preparation, the store, the runner), against a server that answers every request after a
fixed latency L with a reply that parses ("B").

1. `omnivchat eval --benchmark byo`: wall / (N x L / C)  (target <= 1.25 at N=2000, C=64, L=0.5 s).
2. The same at L = 0: the fixed cost of the command (start-up and per-item work), in seconds and ms per item.
3. The score step (`ByoBench.score`, strict and lenient parsing, bootstrap intervals, in this process): ms per
   item, and the whole `omnivchat score RUN` command (a fresh process, writes scores.json) in seconds.

    uv run python perf/perf_mc.py [-n 2000] [-c 64] [--latency 0.5] [--clips 4] [--options 4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from omnivchat.synth import render_clip
from omnivchat.testing import spawn_loopback

CATEGORIES = ("cross-modal", "video-only", "audio-only")
SHAPES = ("square", "circle", "triangle", "star", "hexagon", "diamond")
COLOURS = ("red", "blue", "green", "yellow")


def make_data(root: Path, n: int, clips: int, options: int) -> Path:
    """bench.json with N multiple-choice items over `clips` real rendered clips (small, with speech)."""
    media = []
    for k in range(clips):
        spec = {
            "size": [160, 90],
            "duration": 3.0,
            "seed": k,
            "objects": [{"shape": SHAPES[k % len(SHAPES)], "color": COLOURS[k % len(COLOURS)]}],
            "speech": [{"text": f"Which shape is this, number {k}?", "language": "en", "start": 0.2}],
        }
        render_clip(spec, root / "media" / f"c{k:02d}.mp4")
        media.append(f"media/c{k:02d}.mp4")
    rows = []
    for i in range(n):
        choices = [f"{COLOURS[(i + j) % len(COLOURS)]} {SHAPES[(i + j) % len(SHAPES)]}" for j in range(options)]
        rows.append(
            {
                "qid": f"q{i:05d}",
                "question": f"Question {i}: which object is on the table?",
                "options": choices,
                "answer": "B",
                "requires": ["video", "audio"] if i % 3 == 0 else ["video"],
                "category": CATEGORIES[i % len(CATEGORIES)],
                "video": media[i % len(media)],
            }
        )
    path = root / "bench.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def cli(*args: str, env: dict[str, str]) -> float:
    """Run `omnivchat ARGS` in a fresh process (as a user does); its wall time in seconds."""
    command = [sys.executable, "-c", "from omnivchat.cli import app; app()", *args]
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def run_eval(data: Path, run: Path, latency: float, concurrency: int, env: dict[str, str]) -> float:
    with spawn_loopback(latency=latency, text="B") as server:
        return cli(
            "eval",
            "--benchmark",
            "byo",
            "--bench",
            str(data),
            "--model",
            "perf-model",
            "--base-url",
            server.base_url,
            "--output",
            str(run),
            "--concurrency",
            str(concurrency),
            "--no-progress",
            env=env,
        )


def score_step(run: Path, n: int) -> float:
    """Seconds of `ByoBench.score` on the run (in this process), after checking every item was scored right."""
    from omnivchat.benchmarks import ScoreOptions, get_benchmark

    benchmark = get_benchmark("byo")
    started = time.perf_counter()
    scores = benchmark.score(None, run, ScoreOptions())
    wall = time.perf_counter() - started
    overall = scores.metrics["overall"]
    if overall["n"] != n or overall["correct"] != n or overall["unparsed"]:
        raise RuntimeError(f"unexpected scores: {overall}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000, help="multiple-choice items")
    parser.add_argument("-c", type=int, default=64, help="concurrency")
    parser.add_argument("--latency", type=float, default=0.5, help="server latency L, seconds")
    parser.add_argument("--clips", type=int, default=4, help="real clips the items share")
    parser.add_argument("--options", type=int, default=4, help="options per item")
    args = parser.parse_args()
    n, c, lat = args.n, args.c, args.latency
    work = Path(tempfile.mkdtemp(prefix="omnivchat-perf-mc-"))
    try:
        data = make_data(work / "data", n, args.clips, args.options)
        env = {**os.environ, "OMNIVCHAT_CACHE_DIR": str(work / "cache")}
        wall = run_eval(data, work / "run", lat, c, env)
        ideal = n * lat / c
        print(
            f"omnivchat eval --benchmark byo: N={n} ({args.options} options, {args.clips} shared clips) C={c} "
            f"L={lat}s  wall {wall:.2f}s  ideal N*L/C {ideal:.2f}s  ratio {wall / ideal:.3f}  (target <= 1.25)"
        )
        wall0 = run_eval(data, work / "run0", 0.0, c, env)
        print(f"same at L=0 (fixed cost of the command): {wall0:.2f}s, {1000 * wall0 / n:.2f} ms per item")
        step = score_step(work / "run", n)
        print(f"score step (ByoBench.score, in process): {step:.2f}s, {1000 * step / n:.3f} ms per item")
        wall_score = cli("score", str(work / "run"), env=env)
        print(f"omnivchat score RUN (fresh process, writes scores.json): {wall_score:.2f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
