"""Large clips in bounded memory: C concurrent requests carrying 20 MB clips against the loopback server.

Each request goes through the OpenAI route and the runner (store, limiter) with a distinct clip of about 20 MB
(a real mp4 with sound, remuxed per request so no two are the same). The client runs in a fresh child process so
its peak RSS is its own; the server runs in another process. Printed, measured in one run:

- peak RSS of the client against the bytes in flight (C x the base64 body of one clip); target <= 2x + 200 MB;
- the RSS of the same run with whole bodies (the clip's bytes, its base64 and the JSON text, built in memory per
  attempt, as before streaming), for comparison;
- wall time against N x L / C, and against N x L / C plus the transfer floor (the same run at L = 0: hashing,
  probing, base64 and the loopback upload of every clip, which no latency hides when N > C).

    uv run python perf/perf_large_clips.py [-n 64] [-c 32] [-l 1.0] [--mb 20]
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
from pathlib import Path


def make_clips(root: Path, n: int, megabytes: float) -> list[Path]:
    """One ~``megabytes`` MB mp4 with an audio track (high-bitrate noise video, so it cannot compress), remuxed
    n times with a distinct tag."""
    from omnivchat.media._ffmpeg import run_ffmpeg

    seconds = 4.0
    bitrate = int(megabytes * 8e6 / seconds)
    source = root / "source.mp4"
    run_ffmpeg(
        [
            "-f", "lavfi", "-i", "nullsrc=size=640x360:rate=25,geq=random(1)*255:128:128,format=yuv420p",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
            "-t", str(seconds), "-c:v", "libx264", "-b:v", str(bitrate), "-minrate", str(bitrate),
            "-maxrate", str(bitrate), "-bufsize", str(bitrate), "-c:a", "aac", "-shortest", str(source),
        ]
    )  # fmt: skip
    clips = []
    for i in range(n):
        clip = root / f"clip{i:04d}.mp4"
        run_ffmpeg(["-i", str(source), "-map", "0", "-c", "copy", "-metadata", f"comment=c{i}", str(clip)])
        clips.append(clip)
    return clips


async def client(base_url: str, clips: list[Path], concurrency: int, store_dir: Path) -> float:
    from omnivchat.routes import ChatRequest, get_route
    from omnivchat.runs import RetryPolicy, Runner, RunStore, RunSummary

    route = get_route("perf-model", base_url=base_url)
    store = RunStore(store_dir / "store.sqlite")
    runner = Runner(route, store, concurrency=concurrency, retry=RetryPolicy(), kind="candidate")
    work = [(ChatRequest(item_id=c.stem, clip=c, text="What is said?"), {}) for c in clips]
    summary = RunSummary(run_dir=store_dir, total=len(clips))
    started = time.perf_counter()
    await runner.run_all(work, summary, progress=False, label="perf")
    wall = time.perf_counter() - started
    await route.aclose()
    store.close()
    if summary.done != len(clips):
        raise RuntimeError(f"only {summary.done} of {len(clips)} done: {summary.failures}")
    return wall


def whole_bodies() -> None:
    """Replace the streamed body by the whole one (bytes, base64 and JSON text in memory), for comparison."""
    from omnivchat.routes import _media_parts as parts

    def body(self: parts.MediaStore, description: object) -> parts.StreamedBody:
        data = json.dumps(self.materialize(description), ensure_ascii=False).encode("utf-8")
        return parts.StreamedBody(pieces=(data,), size=len(data))

    parts.MediaStore.body = body  # type: ignore[method-assign]


def child(args: argparse.Namespace) -> None:
    if args.whole:
        whole_bodies()
    clips = sorted(Path(args.clips).glob("clip*.mp4"))
    store_dir = Path(tempfile.mkdtemp(prefix="omnivchat-perf-store-"))
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        wall = asyncio.run(client(args.base_url, clips, args.c, store_dir))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    finally:
        shutil.rmtree(store_dir, ignore_errors=True)
    print(json.dumps({"wall": wall, "peak_mib": peak, "before_mib": before}))


def run_child(args: argparse.Namespace, base_url: str, clips: Path, *, whole: bool) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", "--base-url", base_url, "--clips", str(clips), "-c", str(args.c)]
    out = subprocess.run(command + (["--whole"] if whole else []), check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=64, help="requests (one distinct clip each)")
    parser.add_argument("-c", type=int, default=32, help="concurrent requests")
    parser.add_argument("-l", "--latency", type=float, default=1.0, help="server latency per request, seconds")
    parser.add_argument("--mb", type=float, default=20.0, help="clip size in MB")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--whole", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--clips", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from omnivchat.testing import spawn_loopback

    work = Path(tempfile.mkdtemp(prefix="omnivchat-perf-large-"))
    try:
        clips = make_clips(work, args.n, args.mb)
        size = clips[0].stat().st_size
        in_flight = args.c * 4 * ((size + 2) // 3) / 2**20
        ideal = args.n * args.latency / args.c
        print(f"N={args.n} C={args.c} L={args.latency}s clip {size / 1e6:.1f} MB; bytes in flight {in_flight:.0f} MiB")
        with spawn_loopback(latency=0.0) as server:
            floor = run_child(args, server.base_url, work, whole=False)["wall"]
        print(f"transfer floor (L=0, streamed): {floor:.2f}s")
        with spawn_loopback(latency=args.latency) as server:
            for whole in (False, True):
                got = run_child(args, server.base_url, work, whole=whole)
                target = 2 * in_flight + 200
                print(
                    f"{'whole bodies (before)' if whole else 'streamed bodies'}: peak RSS {got['peak_mib']:.0f} MiB "
                    f"(at start {got['before_mib']:.0f}); ratio to bytes in flight {got['peak_mib'] / in_flight:.2f} "
                    f"(target <= 2x + 200 MB = {target:.0f} MiB: {'met' if got['peak_mib'] <= target else 'MISSED'}); "
                    f"wall {got['wall']:.2f}s, N x L / C {ideal:.2f}s, ratio {got['wall'] / ideal:.3f}; "
                    f"ratio to N x L / C + floor {got['wall'] / (ideal + floor):.3f}"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
