"""Instances per minute of the Studio engine offline (``omnivchat studio run --backend offline``), and what the
engine costs on top of rendering.

Measures, in one run, with a fresh render cache (so every clip is really rendered):

- engine: ``studio_run`` over every subcategory, ``--n N`` each (default 1: 17 instances), defect rate 0, at the
  given concurrency: instances per minute;
- render only: the same subcategories' mini-bench drafts rendered by ``bench make`` (no sampling, no validation,
  no review, no traces), clips per minute;
- the ratio engine seconds per clip / render-only seconds per clip, which cancels most of the machine's speed:
  what sampling, timing the script, validation, reviewing every clip, replies and traces cost per clip;
- the CPU seconds (user + sys) of each part: this process and the ffmpeg processes it waited for (the espeak-ng
  worker is counted only when it exits), which a busy machine disturbs less than the wall clock.

Run: ``uv run python perf/perf_studio.py [--n 1] [--concurrency 2] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path


def cpu_seconds() -> float:
    """User + sys seconds of this process and of its children that have been waited for."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1, help="instances per subcategory")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OMNIVCHAT_CACHE_DIR"] = str(Path(tmp) / "cache-engine")
        from omnivchat.studio.backends import make_agents
        from omnivchat.studio.config import load_all
        from omnivchat.studio.engine import studio_run

        started, cpu = time.perf_counter(), cpu_seconds()
        summary = studio_run(
            load_all(), Path(tmp) / "engine", make_agents("offline"), n=args.n, concurrency=args.concurrency
        )
        engine_s, engine_cpu = time.perf_counter() - started, cpu_seconds() - cpu
        engine_clips = sum(1 for _ in (Path(tmp) / "engine" / "media").rglob("*.mp4"))

        os.environ["OMNIVCHAT_CACHE_DIR"] = str(Path(tmp) / "cache-render")
        from omnivchat.studio.minibench import make_minibench

        started, cpu = time.perf_counter(), cpu_seconds()
        make_minibench(Path(tmp) / "render", per_subcategory=args.n, workers=args.concurrency)
        render_s, render_cpu = time.perf_counter() - started, cpu_seconds() - cpu
        render_clips = sum(1 for _ in (Path(tmp) / "render" / "media").rglob("*.mp4"))

    ended = summary.accepted + sum(summary.discarded.values())
    figures = {
        "instances": ended,
        "accepted": summary.accepted,
        "engine_s": round(engine_s, 2),
        "engine_instances_per_min": round(60 * ended / engine_s, 1),
        "engine_cpu_s": round(engine_cpu, 2),
        "engine_clips": engine_clips,
        "render_only_s": round(render_s, 2),
        "render_only_cpu_s": round(render_cpu, 2),
        "render_only_clips": render_clips,
        "render_only_clips_per_min": round(60 * render_clips / render_s, 1),
        "engine_vs_render_per_clip": round((engine_s / engine_clips) / (render_s / render_clips), 2),
        "agent_calls": summary.calls_made,
        "cpus": os.cpu_count(),
        "concurrency": args.concurrency,
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"engine: {ended} instances ({summary.accepted} accepted, {engine_clips} clips) in {engine_s:.1f} s "
        f"(CPU {engine_cpu:.1f} s): "
        f"{figures['engine_instances_per_min']} instances/min on {os.cpu_count()} CPUs, concurrency {args.concurrency}"
    )
    print(
        f"render only (bench make): {render_clips} clips in {render_s:.1f} s (CPU {render_cpu:.1f} s): "
        f"{figures['render_only_clips_per_min']} clips/min"
    )
    print(f"engine / render-only, seconds per clip: {figures['engine_vs_render_per_clip']}")


if __name__ == "__main__":
    main()
