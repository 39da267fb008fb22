"""What replicas buy and cost; prints ratios measured in one run.

N text requests through the runner against loopback servers in their own processes, each answering after a fixed
latency (a busy GPU server, much simplified), at C requests in flight per server:

- dispatch overhead: one server given as --base-url, then the same server as a one-replica set (least-outstanding
  dispatch, health bookkeeping), both at latency 0, alternated, best of three: time(replica set) / time(base URL)
  (target: <= 1.10);
- scaling: 1 replica, then 2 replicas (twice the capacity): time(1) / time(2) at latency L (target: >= 1.8);
- a slow replica: one server at latency L and one at 4 L; the share of requests the fast one took (target: >= 0.7;
  a round-robin split would give 0.5).

    uv run python perf/perf_replicas.py [-n 400] [-c 8] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from omnivchat.routes import ChatRequest, ReplicaSpec, Sampling, get_route
from omnivchat.routes._replicas import label_of
from omnivchat.runs import RetryPolicy, Runner, RunStore, RunSummary
from omnivchat.testing import spawn_loopback


async def timed(route, work: list, concurrency: int, folder: Path) -> float:
    folder.mkdir(parents=True)
    store = RunStore(folder / "store.sqlite")
    runner = Runner(route, store, concurrency=concurrency, retry=RetryPolicy(), kind="candidate")
    summary = RunSummary(run_dir=folder, total=len(work))
    started = time.perf_counter()
    await runner.run_all(work, summary, progress=False, label="perf")
    elapsed = time.perf_counter() - started
    store.close()
    await route.aclose()
    assert summary.done == len(work), summary
    return elapsed


def replicas(urls: list[str], concurrency: int):
    specs = [ReplicaSpec(u, concurrency) for u in urls]
    return get_route("perf-model", replicas=specs, no_key=True, max_concurrency=concurrency)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=400, help="requests per measurement")
    parser.add_argument("-c", type=int, default=8, help="requests in flight per server")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds each server takes to answer")
    args = parser.parse_args()
    n, c, latency = args.n, args.c, args.latency

    def work(tag: str) -> list:
        return [
            (ChatRequest(item_id=f"{tag}{i}", text=f"{tag} question {i}", sampling=Sampling(max_tokens=8)), {})
            for i in range(n)
        ]

    root = Path(tempfile.mkdtemp(prefix="perf-replicas-"))
    with (
        spawn_loopback(latency=0.0) as zero,
        spawn_loopback(latency=latency) as a,
        spawn_loopback(latency=latency) as b,
        spawn_loopback(latency=4 * latency) as slow,
    ):
        # alternated, best of three: the machine's noise is larger than what is measured
        bases, sets = [], []
        for k in range(3):
            single = get_route("perf-model", base_url=zero.base_url, no_key=True)
            bases.append(asyncio.run(timed(single, work(f"b{k}"), c, root / f"base{k}")))
            sets.append(asyncio.run(timed(replicas([zero.base_url], c), work(f"s{k}"), c, root / f"set{k}")))
        t_base, t_set = min(bases), min(sets)
        t_one = asyncio.run(timed(replicas([a.base_url], c), work("one"), c, root / "one"))
        t_two = asyncio.run(timed(replicas([a.base_url, b.base_url], c), work("two"), 2 * c, root / "two"))
        mixed = replicas([slow.base_url, a.base_url], c)
        asyncio.run(timed(mixed, work("mix"), 2 * c, root / "mix"))
        with RunStore(root / "mix" / "store.sqlite", read_only=True) as store:
            per = store.replica_counts()
    fast_share = per.get(label_of(a.base_url), {}).get("ok", 0) / n
    print(f"{n} requests, {c} in flight per server, latency {latency:g} s")
    print(
        f"dispatch overhead, replica set / base URL at latency 0: {t_set / t_base:.2f} ({t_set:.2f} / {t_base:.2f} s)"
    )
    print(f"scaling, 1 replica / 2 replicas: {t_one / t_two:.2f} ({t_one:.2f} / {t_two:.2f} s)")
    print(f"slow replica, share of requests the fast one took: {fast_share:.2f} (round robin: 0.50)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
