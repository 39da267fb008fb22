"""The cascade model's wall time over its ideal; prints the ratios measured in one run.

N items, each on its own spoken clip, through a cascade (``--model cascade:FILE``) of three stages, each on a
loopback server in its own process with its own latency: speech recognition (``/audio/transcriptions``), a
captioner and a text model (``/chat/completions``), at concurrency C, through the run loop (every stage request
stored and priced in a run store). The ideal is the three latencies in sequence per item, items in parallel at
the concurrency: ceil(N / C) * (asr + captioner + llm). Target: wall / ideal <= 1.15. The cascade hears and sees
a clip side by side, so its own critical path is max(asr, captioner) + llm: that ratio is printed too.

    uv run python perf/perf_cascade.py [-n 48] [-c 16] [--asr 0.5] [--captioner 0.4] [--llm 0.8]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time
from pathlib import Path

from omnivchat.routes import ChatRequest, Sampling, get_route
from omnivchat.runs import RetryPolicy, Runner, RunStore, RunSummary
from omnivchat.synth import render_clip
from omnivchat.testing import spawn_loopback


def clips(root: Path, n: int) -> list[Path]:
    """N distinct short clips with speech and a visible square (distinct: no stage request is shared)."""
    out = []
    for i in range(n):
        scene = {
            "duration": 1.5,
            "size": [96, 64],
            "background": "navy",
            "objects": [{"shape": "square", "color": "red", "position": "center"}],
            "speech": [{"text": f"item {i}", "language": "en", "start": 0.1}],
        }
        out.append(render_clip(scene, root / f"clip{i}.mp4").path)
    return out


async def run(model: str, paths: list[Path], concurrency: int, folder: Path) -> float:
    route = get_route(model)
    folder.mkdir(parents=True)
    store = RunStore(folder / "store.sqlite")
    runner = Runner(route, store, concurrency=concurrency, retry=RetryPolicy(), kind="candidate")
    sampling = Sampling(temperature=0.0, max_tokens=16)
    work = [
        # each item its own question: no text-model request is shared or found stored
        (ChatRequest(item_id=f"i{n}", clip=path, text=f"Item {n}: which letter?", sampling=sampling), {})
        for n, path in enumerate(paths)
    ]
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
    parser.add_argument("-n", type=int, default=48)
    parser.add_argument("-c", type=int, default=16)
    parser.add_argument("--asr", type=float, default=0.5, help="the ASR stage's latency, seconds")
    parser.add_argument("--captioner", type=float, default=0.4, help="the captioner's latency, seconds")
    parser.add_argument("--llm", type=float, default=0.8, help="the text model's latency, seconds")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        spawn_loopback(latency=args.asr, text="item") as asr,
        spawn_loopback(latency=args.captioner, text="A red square.") as captioner,
        spawn_loopback(latency=args.llm, text="A") as llm,
    ):
        root = Path(tmp)
        paths = clips(root, args.n)
        model_file = root / "cascade.toml"
        model_file.write_text(
            f'[asr]\nmodel = "whisper-1"\nbase_url = "{asr.base_url}"\n\n'
            f'[captioner]\nmodel = "vision"\nbase_url = "{captioner.base_url}"\nframes_per_second = 1\n\n'
            f'[llm]\nmodel = "text"\nbase_url = "{llm.base_url}"\n'
        )
        wall = asyncio.run(run(f"cascade:{model_file}", paths, args.c, root / "run"))
    waves = math.ceil(args.n / args.c)
    ideal = waves * (args.asr + args.captioner + args.llm)
    critical = waves * (max(args.asr, args.captioner) + args.llm)
    print(f"cascade: {args.n} items at concurrency {args.c}, stages asr {args.asr} s, captioner {args.captioner} s, "
          f"llm {args.llm} s")  # fmt: skip
    print(f"wall {wall:.2f} s; ideal (stages in sequence) {ideal:.2f} s: ratio {wall / ideal:.3f} (target <= 1.15)")
    print(f"critical path (ASR and captioner side by side) {critical:.2f} s: ratio {wall / critical:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
