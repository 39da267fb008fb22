"""Runner performance against the loopback server in its own process; prints ratios measured in one run.

1. Runner loop: N text requests through the OpenAI route, the adaptive limiter and the SQLite store, at
   concurrency C with server latency L: wall / (N x L / C)  (target <= 1.10 at N=2000, C=64, L=0.2 s).
2. The whole `omnivchat eval` command as a user runs it (a fresh process: start-up, bench loading, clip
   hashing, media preparation, manifest, store, progress bar), on a bench of N instances with real clips:
   wall / (N x L / C)  (target <= 1.07 at N=2000, C=64, L=0.5 s; the floor is ceil(N/C) x L: 1.024), and where
   its fixed cost went: importing the CLI (a process that only imports it), the run loop (the time eval itself
   reports, from its first request to its last), and the rest (imports of the command, bench loading and
   validation, manifest and clip hashing, store, shut-down). The same requests from a bare aiohttp client in
   its own process (perf/_bare_client.py: no validation, store, manifest or retries) give the physical
   reference of this server and machine: the whole command cannot be closer to the ideal than that.
3. Pure overhead at L = 0: requests per second through the runner loop.
4. Peak memory (max RSS) of this process and of the eval child.

    uv run python perf/perf_runner.py [-n 2000] [-c 64] [--loop-latency 0.2] [--eval-latency 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from omnivchat.bench import Bench, BenchInfo, Instance, save_bench
from omnivchat.routes import ChatRequest, get_route
from omnivchat.runs import RetryPolicy, Runner, RunStore, RunSummary
from omnivchat.synth import render_clip
from omnivchat.testing import spawn_loopback


async def runner_loop(base_url: str, n: int, concurrency: int, store_dir: Path) -> float:
    route = get_route("perf-model", base_url=base_url, media_input="none")
    store_dir.mkdir(parents=True, exist_ok=True)
    store = RunStore(store_dir / "store.sqlite")
    runner = Runner(route, store, concurrency=concurrency, retry=RetryPolicy(), kind="candidate")
    work = [(ChatRequest(item_id=f"q{i:05d}", text=f"question {i}"), {}) for i in range(n)]
    summary = RunSummary(run_dir=store_dir, total=n)
    started = time.perf_counter()
    await runner.run_all(work, summary, progress=False, label="perf")
    wall = time.perf_counter() - started
    await route.aclose()
    store.close()
    if summary.done != n:
        raise RuntimeError(f"only {summary.done} of {n} done: {summary.failures}")
    return wall


def make_bench(root: Path, n: int) -> None:
    """N instances, each with its own clip: 20 rendered clips (small, with speech), remuxed with a distinct
    metadata tag per instance so that every request is different (identical requests share one result)."""
    from concurrent.futures import ThreadPoolExecutor

    from omnivchat.media._ffmpeg import run_ffmpeg

    sources = []
    for k in range(20):
        spec = {
            "size": [160, 90],
            "duration": 2.0,
            "seed": k,
            "objects": [{"shape": "square", "color": "red"}],
            "speech": [{"text": f"Question number {k}?", "language": "en", "start": 0.2}],
        }
        sources.append(render_clip(spec, root / "src" / f"c{k:02d}.mp4").path)

    def remux(i: int) -> str:
        video = f"media/i{i:05d}/turn1.mp4"
        (root / video).parent.mkdir(parents=True, exist_ok=True)
        src = sources[i % len(sources)]
        run_ffmpeg(["-i", str(src), "-map", "0", "-c", "copy", "-metadata", f"comment=i{i}", str(root / video)])
        return video

    with ThreadPoolExecutor(4) as pool:
        videos = list(pool.map(remux, range(n)))
    rubric = [{"tier": 0, "text": "English."}, {"tier": 1, "text": "Answers."}]
    instances = [
        Instance.model_validate(
            {
                "id": f"i{i:05d}",
                "subcategory": "UCR",
                "language": "en",
                "turns": [{"video": video}],
                "reference": "ref",
                "rubric": rubric,
            }
        )
        for i, video in enumerate(videos)
    ]
    save_bench(Bench(root=root, info=BenchInfo(name="perf"), instances=instances))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("-c", type=int, default=64)
    parser.add_argument("--loop-latency", type=float, default=0.2)
    parser.add_argument("--eval-latency", type=float, default=0.5)
    parser.add_argument("--overhead-requests", type=int, default=4000)
    args = parser.parse_args()
    n, c = args.n, args.c
    work = Path(tempfile.mkdtemp(prefix="omnivchat-perf-"))
    try:
        with spawn_loopback(latency=args.loop_latency) as server:
            asyncio.run(runner_loop(server.base_url, 2 * c, c, work / "warm"))  # connections, imports
            wall = asyncio.run(runner_loop(server.base_url, n, c, work / "loop"))
        ideal = n * args.loop_latency / c
        print(
            f"runner loop: N={n} C={c} L={args.loop_latency}s  wall {wall:.2f}s  ideal {ideal:.2f}s  "
            f"ratio {wall / ideal:.3f}  (target <= 1.10)"
        )

        with spawn_loopback(latency=0.0) as server:
            wall0 = asyncio.run(runner_loop(server.base_url, args.overhead_requests, c, work / "zero"))
        print(f"overhead at L=0: {args.overhead_requests / wall0:.0f} requests/s through the runner loop")

        bench = work / "bench"
        make_bench(bench, n)
        env_cache = {"OMNIVCHAT_CACHE_DIR": str(work / "cache")}
        with spawn_loopback(latency=args.eval_latency) as server:
            command = [
                sys.executable,
                "-c",
                "from omnivchat.cli import app; app()",
                "eval",
                "--bench",
                str(bench),
                "--model",
                "perf-model",
                "--base-url",
                server.base_url,
                "--output",
                str(work / "run"),
                "--concurrency",
                str(c),
                "--no-progress",
            ]
            import os

            env = {**os.environ, **env_cache}
            started = time.perf_counter()
            done = subprocess.run(command, check=True, env=env, stdout=subprocess.PIPE, text=True)
            wall_eval = time.perf_counter() - started
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "from omnivchat.cli import app"], check=True, env=env)
            wall_import = time.perf_counter() - started
            started = time.perf_counter()  # the same requests from a bare aiohttp client: the physical reference
            client = Path(__file__).with_name("_bare_client.py")
            subprocess.run([sys.executable, str(client), str(bench), server.base_url, str(c)], check=True)
            wall_bare = time.perf_counter() - started
        ideal_eval = n * args.eval_latency / c
        floor = math.ceil(n / c) * args.eval_latency
        print(
            f"omnivchat eval: N={n} C={c} L={args.eval_latency}s  wall {wall_eval:.2f}s  ideal {ideal_eval:.2f}s  "
            f"ratio {wall_eval / ideal_eval:.3f}  (target <= 1.07, floor {floor / ideal_eval:.3f}; start-up, clip "
            "hashing and media included)"
        )
        print(
            f"  bare aiohttp client (perf/_bare_client.py: the same clips and server, nothing else): wall "
            f"{wall_bare:.2f}s  ratio {wall_bare / ideal_eval:.3f}; omnivchat eval over it {wall_eval / wall_bare:.3f} "
            f"(+{wall_eval - wall_bare:.2f}s)"
        )
        ran = re.search(r"ran \d+ items in ([0-9.]+) s", done.stdout)
        if ran is not None:
            loop = float(ran.group(1))
            print(
                f"  where it went: CLI import {wall_import:.2f}s (a process that only imports it), run loop "
                f"{loop:.2f}s (floor {floor:.2f}s: {loop - floor:+.2f}s), "
                f"the rest {wall_eval - wall_import - loop:.2f}s "
                "(the command's imports, bench loading, manifest and clip hashing, store, shut-down)"
            )
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"peak memory: runner loop process {own:.0f} MiB, eval process (largest child) {child:.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
