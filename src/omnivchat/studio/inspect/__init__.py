"""The human inspection page (paper, Appendix D.1.1): ``omnivchat studio inspect BENCH_DIR``.

A local web page, on 127.0.0.1 only, that lists every instance of a bench with its clips, what is said and shown
in each turn (the script, transcript and caption; a Studio bench's trace), the reference reply and the tiered
rubric, and lets a person accept it or reject it with a reason. Each decision is appended to
``BENCH_DIR/inspection.jsonl`` (fsynced) as it is made; the latest per instance wins, and a rejected instance
leaves the delivered set (``omnivchat.bench.load_bench`` skips it). See docs/studio.md, "Human inspection".

- :class:`InspectServer`: serve a bench (``with InspectServer(bench_dir, port=0) as server: server.url``).
- :func:`make_app`: the aiohttp application, for embedding; :class:`DecisionLog`: the append-only log.
"""

from omnivchat._loopback import HOST
from omnivchat.studio.inspect._app import make_app
from omnivchat.studio.inspect._lock import LOCK_FILE, InspectError, InspectLocked
from omnivchat.studio.inspect._log import (
    MAX_BODY_BYTES,
    MAX_REASON_CHARS,
    DecisionError,
    DecisionLog,
    parse_decision,
)
from omnivchat.studio.inspect._server import DEFAULT_PORT, InspectServer, open_bench
from omnivchat.studio.inspect._views import instance_view, media_file, served_clips, trace_view

__all__ = [
    "DEFAULT_PORT",
    "HOST",
    "LOCK_FILE",
    "MAX_BODY_BYTES",
    "MAX_REASON_CHARS",
    "DecisionError",
    "DecisionLog",
    "InspectError",
    "InspectLocked",
    "InspectServer",
    "instance_view",
    "make_app",
    "media_file",
    "open_bench",
    "parse_decision",
    "served_clips",
    "trace_view",
]
