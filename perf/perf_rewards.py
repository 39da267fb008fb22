"""Reward service throughput against a loopback grader; prints ratios measured in one run (no assertion).

One training step of the paper's setup (Table 4: 32 prompts x 4 replies = 128 completions) through
`omnivchat.rl.RewardService` with an LLM judge that answers every rubric and style request after latency L, at
concurrency C. Each reply needs two grader requests (rubric and style), so the ideal wall time is 2 x 128 x L / C.

1. A fresh batch: wall / (2 x 128 x L / C)  (target <= 1.1 at C = 64).
2. The same batch again: grader calls made (target 0: every verdict comes from the cache).
3. The same with the SQLite cache (``cache_dir``): the ratio, and a new service on the same cache (a restarted
   trainer) scoring the batch with zero grader calls.
4. Pure overhead at L = 0: grader requests per second through the service. Each wave of C requests costs about
   C / (that rate) seconds of CPU beside its latency, which is what separates the ratio from 1 at small L.

Each is measured twice: with the grader in this process (on its own thread and loop, so its CPU and its share of
the GIL count too), and with the same grader in a process of its own, as a real grader is (``server: own
process``). The CPU line is this process's CPU seconds per grader request at L = 0: with the grader in its own
process, what the service alone costs, a figure the noise of a shared machine disturbs less than wall time.

    uv run python perf/perf_rewards.py [--prompts 32] [--group 4] [-c 64] [--latency 0.25 0.5 1.0] [--in-process]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from omnivchat.bench import Instance
from omnivchat.rl import Completion, RewardService
from omnivchat.testing import Behaviour, LoopbackServer, message_text

STYLE = json.dumps({"hits": [1, 2, 3, 4, 5, 6, 7], "reasoning": "natural and brief"})
RUBRIC = json.dumps({"hits": [1, 2, 3], "reasoning": "all covered"})


def instance(k: int) -> Instance:
    rubric = [
        {"tier": 0, "text": "The reply is in English."},
        {"tier": 1, "text": f"Says door {k} on the left is closed."},
        {"tier": 2, "text": "Mentions the door on the right."},
    ]
    return Instance.model_validate(
        {
            "id": f"p{k:03d}",
            "subcategory": "SVMR",
            "language": "en",
            "turns": [{"video": f"media/p{k:03d}/turn1.mp4"}],
            "reference": f"Door {k} on your left is closed; the right one is open.",
            "rubric": rubric,
        }
    )


def batch(prompts: int, group: int, tag: str) -> list[Completion]:
    """``prompts`` x ``group`` distinct replies (``tag`` makes a batch distinct from another)."""
    out = []
    for k in range(prompts):
        inst = instance(k)
        for j in range(group):
            padding = " Honestly, that is all I can see from here." * j
            out.append(Completion(inst.id, f"Door {k} on the left is closed ({tag}-{j}).{padding}", inst))
    return out


def grader(latency: float) -> LoopbackServer:
    def rules(request: dict[str, Any]) -> Behaviour:
        style = "checklist of 7" in message_text(request)
        return Behaviour(text=STYLE if style else RUBRIC, latency=latency)

    return LoopbackServer(rules=rules, record=False)


def _serve(latency: float, conn: Connection) -> None:
    """The child process of :func:`grader_process`: serve until the parent says stop (or goes away)."""
    with grader(latency) as server:
        conn.send(server.base_url)
        with contextlib.suppress(EOFError):
            conn.recv()


@contextlib.contextmanager
def grader_process(latency: float) -> Iterator[str]:
    """The same grader in a process of its own (spawned: a fresh interpreter, as a real grader is); its base URL."""
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(latency, child), daemon=True)
    process.start()
    try:
        if not parent.poll(60):
            raise RuntimeError("the grader process did not start")
        yield parent.recv()
    finally:
        with contextlib.suppress(OSError):
            parent.send("stop")
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join()


def measure(service: RewardService, completions: list[Completion]) -> tuple[float, int]:
    """(wall seconds, grader calls made) for one batch."""
    calls = service.stats.calls
    started = time.perf_counter()
    terms = service.score_sync(completions)
    wall = time.perf_counter() - started
    failed = [t.error for t in terms if t.total is None]
    if failed:
        raise RuntimeError(f"{len(failed)} completions unscored, e.g. {failed[0]}")
    return wall, service.stats.calls - calls


@contextlib.contextmanager
def served(latency: float, own_process: bool) -> Iterator[str]:
    """The grader's base URL: in this process (a thread) or in its own."""
    if own_process:
        with grader_process(latency) as base_url:
            yield base_url
    else:
        with grader(latency) as server:
            yield server.base_url


def judges_file(work: Path, base_url: str) -> Path:
    judges = work / "judges.json"
    judges.write_text(json.dumps({"judges": [{"name": "J", "model": "perf-judge", "base_url": base_url}]}))
    return judges


def latency_lines(work: Path, latency: float, args: argparse.Namespace, where: str, own_process: bool) -> None:
    """The memory-cache and SQLite-cache lines at one latency."""
    n, c = args.prompts * args.group, args.c
    ideal = 2 * n * latency / c
    with served(latency, own_process) as base_url:
        options: dict[str, Any] = {
            "judge": "J",
            "judges_file": judges_file(work, base_url),
            "concurrency": c,
            "group_size": args.group,
        }
        with RewardService(**options) as service:
            measure(service, batch(args.prompts, args.group, "warm"))  # connections, imports
            fresh = batch(args.prompts, args.group, f"L{latency}")
            wall, calls = measure(service, fresh)
            again, calls_again = measure(service, fresh)
        print(
            f"memory cache: N={n} C={c} L={latency}s  wall {wall:.3f}s  ideal {ideal:.3f}s  "
            f"ratio {wall / ideal:.3f}  (target <= 1.1; {calls} grader calls)  "
            f"repeated batch: {calls_again} grader calls in {again * 1000:.1f} ms  [{where}]"
        )

        cache = work / f"cache-{latency}-{where.replace(' ', '-')}"
        with RewardService(**options, cache_dir=cache) as service:
            measure(service, batch(args.prompts, args.group, "warm-sqlite"))
            fresh = batch(args.prompts, args.group, f"sqlite-L{latency}")
            wall, calls = measure(service, fresh)
        with RewardService(**options, cache_dir=cache) as restarted:
            again, calls_again = measure(restarted, fresh)
        print(
            f"SQLite cache: N={n} C={c} L={latency}s  wall {wall:.3f}s  ideal {ideal:.3f}s  "
            f"ratio {wall / ideal:.3f}  ({calls} grader calls)  "
            f"new service on the same cache: {calls_again} grader calls in {again * 1000:.1f} ms  [{where}]"
        )


def overhead_line(work: Path, args: argparse.Namespace, where: str, own_process: bool) -> None:
    """Grader requests per second at L = 0, and this process's CPU seconds per request."""
    with served(0.0, own_process) as base_url:
        judges = judges_file(work, base_url)
        with RewardService(judge="J", judges_file=judges, concurrency=args.c, group_size=args.group) as service:
            measure(service, batch(args.prompts, args.group, "warm-zero"))
            cpu = time.process_time()
            walls = [measure(service, batch(args.prompts, args.group, f"zero-{k}")) for k in range(3)]
            cpu = time.process_time() - cpu
    calls = sum(calls for _, calls in walls)
    rate = calls / sum(wall for wall, _ in walls)
    print(
        f"overhead at L=0: {rate:.0f} grader requests/s through the service, "
        f"{cpu / calls * 1000:.3f} ms of this process's CPU per request  [{where}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("-c", type=int, default=64)
    parser.add_argument("--latency", type=float, nargs="+", default=[0.25, 0.5, 1.0])
    parser.add_argument("--in-process", action="store_true", help="only the lines with the grader in this process")
    args = parser.parse_args()
    places = [("server: this process", False)] + ([] if args.in_process else [("server: own process", True)])
    work = Path(tempfile.mkdtemp(prefix="omnivchat-perf-rewards-"))
    try:
        for latency in args.latency:
            for where, own_process in places:
                latency_lines(work, latency, args, where, own_process)
        for where, own_process in places:
            overhead_line(work, args, where, own_process)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
