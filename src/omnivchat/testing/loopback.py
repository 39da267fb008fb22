"""Process mode of the loopback server: `python -m omnivchat.testing.loopback --port 0 --latency 0.2`.

Prints its base URL (`http://127.0.0.1:PORT/v1`) as the first line of stdout, then answers every
chat-completions request with the behaviour the flags describe until SIGINT/SIGTERM. Used by performance
runs so that client and server do not share one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from omnivchat.testing._loopback import DEFAULT_MODEL, DEFAULT_TEXT, Behaviour, serve_forever


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (every flag maps to a `Behaviour` field)."""
    p = argparse.ArgumentParser(prog="python -m omnivchat.testing.loopback", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--latency", type=float, default=0.0, help="seconds before the first byte")
    p.add_argument("--text", default=DEFAULT_TEXT, help="reply content")
    p.add_argument("--reasoning", default=None, help="reasoning_content streamed before the content")
    p.add_argument("--chunk-chars", type=int, default=8, help="characters per delta (0: one delta)")
    p.add_argument("--write-size", type=int, default=None, help="raw mode: write the body in pieces of N bytes")
    p.add_argument("--chunk-interval", type=float, default=0.0, help="seconds between writes")
    p.add_argument("--finish-reason", default="stop")
    p.add_argument("--status", type=int, default=200, help="HTTP status (non-200: an error JSON)")
    p.add_argument("--retry-after", type=float, default=None, help="Retry-After header, seconds")
    p.add_argument("--model", action="append", default=None, help=f"model id for /models (default {DEFAULT_MODEL})")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Serve until killed."""
    args = parse_args(argv)
    behaviour = Behaviour(
        text=args.text,
        reasoning=args.reasoning,
        latency=args.latency,
        chunk_chars=args.chunk_chars or None,
        write_size=args.write_size,
        chunk_interval=args.chunk_interval,
        finish_reason=args.finish_reason,
        status=args.status,
        retry_after=args.retry_after,
    )

    def announce(url: str) -> None:
        print(url, flush=True)  # the parent reads exactly this first line

    asyncio.run(serve_forever(behaviour, port=args.port, announce=announce, models=args.model or ()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
