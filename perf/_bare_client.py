"""The physical reference for perf_runner.py's whole-eval line: a bare aiohttp client, nothing of omnivchat.

It reads the bench's instances.jsonl, sends each instance's clip as a base64 data URL in a streamed chat request
(what the OpenAI route sends) at concurrency C, reads every reply whole and exits. Run as its own process, its wall
time from start to exit is what a minimal tool costs on the same server and machine: no validation, store,
manifest, retries or progress.

    python perf/_bare_client.py BENCH_DIR BASE_URL CONCURRENCY
"""

import asyncio
import base64
import json
import sys
from pathlib import Path

import aiohttp


async def main(bench: Path, base_url: str, concurrency: int) -> None:
    lines = (bench / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    videos = [bench / json.loads(line)["turns"][0]["video"] for line in lines if line.strip()]
    slots = asyncio.Semaphore(concurrency)
    ok = 0

    async def one(session: aiohttp.ClientSession, video: Path) -> None:
        nonlocal ok
        async with slots:
            url = "data:video/mp4;base64," + base64.b64encode(video.read_bytes()).decode("ascii")
            content = [{"type": "video_url", "video_url": {"url": url}}]
            body = {"model": "perf-model", "messages": [{"role": "user", "content": content}], "stream": True}
            async with session.post(f"{base_url}/chat/completions", json=body) as response:
                await response.read()
                ok += response.status == 200

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(one(session, video) for video in videos))
    if ok != len(videos):
        raise SystemExit(f"only {ok} of {len(videos)} answered")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2].rstrip("/"), int(sys.argv[3])))
