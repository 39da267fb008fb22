"""What cost accounting adds to the runner loop; prints ratios measured in one run.

N requests through the OpenAI route against the loopback server in its own process (latency 0: pure overhead;
``--latency`` for a server that takes its time),
at concurrency C, three ways: no price (each attempt's cost row says "no price"), a price (each attempt priced
from usage), and a price with a budget (each request's cost estimated before sending, reserved and settled).
Text requests, then requests that carry a clip (the budget's estimate probes the clip). Prints each way's wall
time over the no-price time (target at --latency 0.2: <= 1.10 either way; the budget's estimate reuses what
preparing probed, so it adds no media work).

    uv run python perf/perf_cost.py [-n 400] [-c 32] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from omnivchat.routes import ChatRequest, Sampling, get_route
from omnivchat.runs import Budget, RetryPolicy, Runner, RunStore, RunSummary
from omnivchat.synth import render_clip
from omnivchat.testing import spawn_loopback

PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


async def one_way(base_url: str, work: list, concurrency: int, folder: Path, *, price: bool, budget: bool) -> float:
    route = get_route("perf-model", base_url=base_url, price=PRICE if price else None)
    folder.mkdir(parents=True)
    store = RunStore(folder / "store.sqlite")
    runner = Runner(
        route,
        store,
        concurrency=concurrency,
        retry=RetryPolicy(),
        kind="candidate",
        budget=Budget(1e9) if budget else None,
    )
    summary = RunSummary(run_dir=folder, total=len(work))
    started = time.perf_counter()
    await runner.run_all(work, summary, progress=False, label="perf")
    elapsed = time.perf_counter() - started
    store.close()
    await route.aclose()
    assert summary.done == len(work), summary
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=400)
    parser.add_argument("-c", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.0, help="server latency in seconds (0: pure overhead)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, spawn_loopback(latency=args.latency) as server:
        root = Path(tmp)
        clip = render_clip({"duration": 3.0, "size": [160, 90]}, root / "clip.mp4").path
        sampling = Sampling(max_tokens=64)
        kinds = {
            "text": [
                (ChatRequest(item_id=f"t{i}", text=f"question {i}", sampling=sampling), {}) for i in range(args.n)
            ],
            "clip": [
                (ChatRequest(item_id=f"c{i}", clip=clip, text=f"question {i}", sampling=sampling), {})
                for i in range(args.n)
            ],
        }
        for kind, work in kinds.items():
            times = {}
            for way, price, budget in (("no price", False, False), ("price", True, False), ("budget", True, True)):
                times[way] = asyncio.run(
                    one_way(server.base_url, work, args.c, root / f"{kind}-{way}", price=price, budget=budget)
                )
            base = times["no price"]
            print(
                f"{kind}: {args.n} requests at concurrency {args.c}: no price {base:.2f} s "
                f"({args.n / base:.0f}/s); price / no price {times['price'] / base:.2f}; "
                f"budget / no price {times['budget'] / base:.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
