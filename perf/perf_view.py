"""How fast the run viewer lists and opens items of a large run; prints the figures measured in one run.

Builds a synthetic native run of N items (default 10,000; one rendered clip shared by all) with the real
commands: ``eval`` on the simulated model, ``judge`` by two LLM judges on loopback servers in their own
processes (A finds every criterion met, B only the first two: they disagree), ``score``. Then, over HTTP on
127.0.0.1 (server side: each request's wall time as the client sees it on this machine):

- first list: opening the run (the store's item rows and scores.json; replies, attempts and costs
  and the bench follow in the background) and the first ``GET /api/runs/0/items``          target < 1 s
- list again: a filtered, sorted page (judges disagree, sorted by score)                  target < 1 s
- open item: ``GET /api/runs/0/item`` of an item in the middle of the run, once the bench
  (read in the background from start) is in                                                target < 0.2 s
- the server process's peak memory (ru_maxrss) after all of it, and the page's JavaScript heap in headless
  Chromium after the list and one item (DevTools ``Performance.getMetrics``; skipped without chromium).

    uv run python perf/perf_view.py [-n 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from omnivchat.bench import Bench, BenchInfo, Instance, save_bench
from omnivchat.synth import render_clip
from omnivchat.testing import spawn_loopback
from omnivchat.view import ViewServer


def make_bench(root: Path, n: int) -> None:
    render_clip(
        {
            "size": [160, 90],
            "objects": [{"shape": "square", "color": "red"}],
            "speech": [{"text": "What do you see?", "language": "en"}],
        },
        root / "media" / "clip.mp4",
    )
    rubric = [
        {"tier": 0, "text": "The reply is in English."},
        {"tier": 1, "text": "Names the red square."},
        {"tier": 2, "text": "Says where it is."},
    ]
    instances = [
        Instance.model_validate(
            {
                "id": f"item-{k:05d}",
                "subcategory": ("SVMR", "ICC", "AOR", "UPC")[k % 4],
                "language": "en",
                "turns": [{"video": "media/clip.mp4"}],
                "reference": f"A red square, item {k}.",
                "rubric": rubric,
            }
        )
        for k in range(n)
    ]
    save_bench(Bench(root=root, info=BenchInfo(name="perf-view"), instances=instances))


def omnivchat(*args: str) -> None:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "omnivchat", *args], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"omnivchat {args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    print(f"  omnivchat {args[0]}: {time.perf_counter() - started:.1f} s", flush=True)


def timed(url: str) -> tuple[float, dict]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = json.loads(response.read())
    return time.perf_counter() - started, body


async def page_heap(url: str, profile: Path) -> float | None:
    """The page's used JavaScript heap (MiB) after the first list and one item opened, in headless Chromium."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from chromium import chromium_binary, open_page  # the tests' DevTools driver

    binary = chromium_binary()
    if binary is None:
        return None
    async with open_page(binary, profile) as page:
        await page.send("Performance.enable")
        await page.send("Page.navigate", url=url)
        await page.until("document.body && document.body.dataset.ready === 'true'", timeout=120)
        await page.js("document.querySelector('#rows tr.item').click()")
        await page.until("!!document.querySelector('#d-attempts')", timeout=60)
        metrics = {m["name"]: m["value"] for m in (await page.send("Performance.getMetrics"))["metrics"]}
    return float(metrics["JSHeapUsedSize"]) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="items in the synthetic run")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the run here instead of a temporary folder")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="perf-view-"))
    run = root / "run"
    try:
        if not (run / "scores.json").is_file():
            print(f"building a {args.n}-item run with two judges in {root}", flush=True)
            make_bench(root / "bench", args.n)
            eval_args = ["eval", "--bench", str(root / "bench"), "--model", "sim:healthy", "-o", str(run)]
            omnivchat(*eval_args, "--concurrency", "64", "--no-progress")
            with (
                spawn_loopback(text='{"hits": [1, 2, 3], "reasoning": "all"}') as a,
                spawn_loopback(text='{"hits": [1, 2], "reasoning": "not where"}') as b,
            ):
                judges = [
                    {"name": "A", "model": "judge-a", "base_url": a.base_url, "max_concurrency": 64},
                    {"name": "B", "model": "judge-b", "base_url": b.base_url, "max_concurrency": 64},
                ]
                (root / "judges.json").write_text(json.dumps({"judges": judges, "panels": {"default": ["A", "B"]}}))
                omnivchat("judge", str(run), "--judges", str(root / "judges.json"), "--no-progress")
            omnivchat("score", str(run), "--judges", str(root / "judges.json"), "--panel", "default")
        started = time.perf_counter()
        with ViewServer([run], port=0) as server:
            opening = time.perf_counter() - started
            first, body = timed(server.url + "api/runs/0/items?limit=100")
            total = body["counts"]["total"]
            again, filtered = timed(server.url + "api/runs/0/items?disagree=1&sort=score&order=desc&limit=100")
            middle = f"item-{total // 2:05d}"
            query = urlencode({"task": "candidate", "id": middle})
            server.runs[0].wait_full()
            full_read = time.perf_counter() - started
            server.benches_read.wait()
            bench_read = time.perf_counter() - started
            opened, detail = timed(server.url + f"api/runs/0/item?{query}")
            warm, _ = timed(server.url + f"api/runs/0/item?{query}")
            with tempfile.TemporaryDirectory() as profile:  # a fresh profile: no stale DevToolsActivePort
                heap = asyncio.run(page_heap(server.url, Path(profile)))
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        assert total == args.n and filtered["matched"]["total"] == args.n, (total, filtered["matched"])
        assert set(detail["native"]["judges"]) == {"A", "B"} and detail["row"]["disagree"]
        print(f"items: {total} ({body['counts']['scored']} scored), two judges disagreeing on every item")
        print(f"server start (the store's item rows and scores.json read): {opening:.3f} s")
        print(f"first list: {opening + first:.3f} s from start ({first:.3f} s the request)  (target < 1 s)")
        print(f"filtered and sorted page (judges disagree, by score): {again:.3f} s  (target < 1 s)")
        print(f"replies, attempts and costs (the export) read in the background: {full_read:.3f} s after start")
        print(f"the bench (rubrics, clips) read in the background: {bench_read:.3f} s after start")
        print(f"open one item (verdicts, attempts, clip checked): {opened:.3f} s, again {warm:.3f} s  (target < 0.2 s)")
        print(f"peak memory of this process (server and client): {peak_mib:.0f} MiB")
        print("page JavaScript heap: " + ("no chromium" if heap is None else f"{heap:.1f} MiB"))
        ok = opening + first < 1 and again < 1 and opened < 0.2
        print("targets met" if ok else "TARGETS MISSED")
        return 0 if ok else 1
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
