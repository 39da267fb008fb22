"""The aiohttp application behind the inspection page: the page, its JSON API and the clips.

Routes: ``GET /`` (the page), ``GET /static/<file>``, ``GET /api/instances``, ``GET /api/decisions``,
``POST /api/decisions``, ``GET /api/trace/<id>`` and ``GET /media/<path>`` (with HTTP Range, so a video can seek).
Every error is JSON, ``{"error": "..."}``.

A page on 127.0.0.1 can still be reached by other sites through the user's browser, so every request must name
this server in its Host header (no DNS rebinding), and a POST must be JSON (a cross-site form cannot send that
without a preflight, which is never granted) with an Origin, when it has one, of this server. Responses forbid
framing and cross-origin embedding.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from typing import Any

from aiohttp import web

from omnivchat._loopback import HOST, error_response, local_app
from omnivchat.bench import INSPECTION_FILE, Bench
from omnivchat.errors import OmnivchatError
from omnivchat.studio.inspect._log import MAX_BODY_BYTES, DecisionError, DecisionLog, parse_decision
from omnivchat.studio.inspect._views import (
    instance_view,
    media_file,
    served_clips,
    trace_view,
    unstaged_attributes,
)

STATIC = {"inspect.js": "text/javascript", "inspect.css": "text/css", "index.html": "text/html"}


class _State:
    """What the handlers share: the bench, its decision log, and the names this server answers to."""

    def __init__(self, bench: Bench, log: DecisionLog, port: int) -> None:
        self.bench = bench
        self.log = log
        self.port = port
        self.hosts = frozenset({f"{HOST}:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self.clips = served_clips(bench)
        unstaged = unstaged_attributes(bench)
        self.by_id = {i.id: i for i in bench.instances}
        self.instances = {
            "bench": {
                "name": bench.info.name,
                "version": bench.info.version,
                "description": bench.info.description,
                "file": INSPECTION_FILE,
            },
            "instances": [instance_view(bench, i, unstaged) for i in bench.instances],
        }
        self.static = {
            name: resources.files("omnivchat.studio.inspect").joinpath("static", name).read_bytes() for name in STATIC
        }


_STATE = web.AppKey("inspect", _State)


_error = error_response


def _state(request: web.Request) -> _State:
    return request.app[_STATE]


async def _page(request: web.Request) -> web.Response:
    return _static_file(request, "index.html")


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC or name == "index.html":
        return _error(404, "not found")
    return _static_file(request, name)


def _static_file(request: web.Request, name: str) -> web.Response:
    response = web.Response(body=_state(request).static[name], content_type=STATIC[name], charset="utf-8")
    response.headers["Cache-Control"] = "no-cache"
    return response


async def _instances(request: web.Request) -> web.Response:
    return web.json_response(_state(request).instances)


def _decisions_body(log: DecisionLog) -> dict[str, Any]:
    latest = log.latest()
    return {
        "decisions": {i: d.model_dump(mode="json") for i, d in latest.items()},
        "counts": log.counts(),
        "file": INSPECTION_FILE,
    }


async def _get_decisions(request: web.Request) -> web.Response:
    return web.json_response(_decisions_body(_state(request).log))


def _cross_origin(request: web.Request, state: _State) -> str | None:
    """Why a POST is refused as coming from another site, or None. A request without Origin comes from a
    program, not a page (browsers send Origin with every POST)."""
    origin = request.headers.get("Origin")
    if origin is not None and origin.lower() not in state.origins:
        return f"cross-origin request refused (Origin {origin[:100]!r})"
    if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
        return "cross-site request refused"
    return None


async def _post_decision(request: web.Request) -> web.Response:
    state = _state(request)
    refused = _cross_origin(request, state)
    if refused:
        return _error(403, refused)
    if request.content_type != "application/json":
        return _error(415, "send the decision as JSON (Content-Type: application/json)")
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return _error(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
    body = await request.read()  # aiohttp refuses a longer chunked body (client_max_size) with 413
    try:
        instance_id, decision, reason = parse_decision(body, state.log.known)
        entry = await asyncio.to_thread(state.log.record, instance_id, decision, reason)
    except DecisionError as err:
        return _error(400, str(err))
    except OSError as err:
        return _error(500, f"cannot write {INSPECTION_FILE}: {err.strerror or err}; the decision was not saved")
    return web.json_response({"decision": entry.model_dump(mode="json"), "counts": state.log.counts()})


async def _trace(request: web.Request) -> web.Response:
    state = _state(request)
    instance = state.by_id.get(request.match_info["id"])
    try:
        view = None if instance is None else await asyncio.to_thread(trace_view, state.bench, instance)
    except OmnivchatError as err:  # a damaged trace file: say so, the page goes on
        return _error(500, str(err))
    if view is None:
        return _error(404, "no Studio trace for this instance")
    return web.json_response(view)


async def _media(request: web.Request) -> web.StreamResponse:
    state = _state(request)
    path = media_file(state.bench.root, state.clips, request.match_info["path"])
    if path is None:
        return _error(404, "not a clip of this bench")
    return web.FileResponse(path, headers={"Cache-Control": "no-cache"})


def make_app(bench: Bench, log: DecisionLog, port: int) -> web.Application:
    """The application for ``bench`` (loaded with its rejected instances) served on 127.0.0.1:``port``."""
    app = local_app(port, client_max_size=MAX_BODY_BYTES)
    app[_STATE] = _State(bench, log, port)
    app.router.add_get("/", _page)
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/api/instances", _instances)
    app.router.add_get("/api/decisions", _get_decisions)
    app.router.add_post("/api/decisions", _post_decision)
    app.router.add_get("/api/trace/{id}", _trace)
    app.router.add_get("/media/{path:.+}", _media)
    return app
