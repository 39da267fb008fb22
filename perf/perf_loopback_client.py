"""Baseline: a bare aiohttp streaming client against the loopback server in its own process.

Two figures, which the route's own perf is compared with:

1. Latency-bound: N requests, each answered after a fixed latency L, at concurrency C. The ideal wall
   time is N x L / C; the script prints the ratio wall / (N x L / C) (target <= 1.10 at N=2000, C=64,
   L=0.2 s).
2. Overhead-bound: requests at L = 0 (10000 by default, for a stable figure); requests per second is pure
   client + server overhead (server in another process, so on another core when there is one).

Every request streams (`stream: true`, usage included) and the client parses each SSE event with
`json.loads`, accumulating the content, as a real route does. The server process is started and stopped
here (`omnivchat.testing.spawn_loopback`). Usage:

    uv run python perf/perf_loopback_client.py [-n 2000] [-c 64] [-l 0.2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from typing import Any

import aiohttp

from omnivchat.testing import DEFAULT_TEXT, spawn_loopback

FAKE_KEY = "test-key-not-secret"


async def one_request(session: aiohttp.ClientSession, url: str, body: bytes) -> str:
    """POST one streaming chat completion; return its content (raises if the stream is incomplete)."""
    parts: list[str] = []
    done = False
    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as resp:
        resp.raise_for_status()
        async for raw in resp.content:  # aiohttp yields whole lines, reassembled across reads
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                done = True
                break
            chunk = json.loads(data)
            for choice in chunk.get("choices") or ():
                content = choice.get("delta", {}).get("content")
                if content:
                    parts.append(content)
    if not done:
        raise RuntimeError("stream ended without [DONE]")
    return "".join(parts)


async def run_batch(base_url: str, n: int, concurrency: int, *, warmup: bool = True) -> float:
    """Wall seconds for `n` requests at `concurrency` (C workers pulling from one counter)."""
    url = base_url + "/chat/completions"
    body = json.dumps(
        {
            "model": "loopback-model",
            "messages": [{"role": "user", "content": "Which door is open?"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    headers = {"Authorization": f"Bearer {FAKE_KEY}"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker(counter: list[int]) -> None:
            while counter[0] > 0:
                counter[0] -= 1
                text = await one_request(session, url, body)
                if text != DEFAULT_TEXT:
                    raise RuntimeError(f"unexpected reply {text!r}")

        if warmup:  # open the C connections first: steady state is what we compare
            left = [concurrency]
            await asyncio.gather(*(worker(left) for _ in range(concurrency)))
        left = [n]
        start = time.perf_counter()
        await asyncio.gather(*(worker(left) for _ in range(concurrency)))
        return time.perf_counter() - start


def measure(n: int, concurrency: int, latency: float, *, warmup: bool = True) -> float:
    """Start a server process with `latency`, time the batch, stop the server."""
    with spawn_loopback(latency=latency) as server:
        return asyncio.run(run_batch(server.base_url, n, concurrency, warmup=warmup))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", "--requests", type=int, default=2000)
    p.add_argument("-c", "--concurrency", type=int, default=64)
    p.add_argument("-l", "--latency", type=float, default=0.2, help="server latency L, seconds")
    p.add_argument("--overhead-requests", type=int, default=10000, help="N for the L=0 run (long enough to be stable)")
    p.add_argument("--repeat", type=int, default=3, help="L=0 runs; the best is kept (noise only slows)")
    p.add_argument("--no-warmup", action="store_true", help="time connection setup too")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = p.parse_args(argv)
    n, c, lat = args.requests, args.concurrency, args.latency
    warmup = not args.no_warmup

    wall = measure(n, c, lat, warmup=warmup)
    ideal = n * lat / c
    ratio = wall / ideal if ideal > 0 else float("nan")
    # Even a zero-overhead client needs ceil(N/C) rounds of L: the last round is partly idle.
    floor = math.ceil(n / c) * lat / ideal if ideal > 0 else float("nan")
    n0 = args.overhead_requests
    wall0 = min(measure(n0, c, 0.0, warmup=warmup) for _ in range(max(1, args.repeat)))
    rps0 = n0 / wall0

    result: dict[str, Any] = {
        "requests": n,
        "concurrency": c,
        "latency_s": lat,
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "ratio": round(ratio, 4),
        "floor_ratio": round(floor, 4),
        "target_ratio": 1.10,
        "overhead_requests": n0,
        "overhead_repeats": max(1, args.repeat),
        "overhead_wall_s": round(wall0, 3),
        "overhead_rps": round(rps0, 1),
        "overhead_ms_per_request": round(1000 / rps0, 3),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "aiohttp": aiohttp.__version__,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"bare aiohttp client vs loopback server process ({result['cpus']} CPUs, aiohttp {aiohttp.__version__})")
        print(f"  N={n} C={c} L={lat:g}s: wall {wall:.3f} s, ideal N*L/C {ideal:.3f} s")
        print(f"  ratio wall / (N*L/C) = {ratio:.3f}  (target <= 1.10; ceil(N/C) rounds alone give {floor:.3f})")
        print(
            f"  overhead at L=0: N={n0} C={c}, best of {max(1, args.repeat)}: {rps0:.0f} requests/s"
            f" ({1000 / rps0:.3f} ms per request)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
