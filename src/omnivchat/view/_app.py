"""The viewer's aiohttp application: the page, its JSON API and the clips (HTTP Range, so a video can seek).

Routes: ``GET /`` (the page), ``GET /static/<file>``, ``GET /api/runs``, ``GET /api/runs/<n>/items`` (the
filtered, sorted page of rows), ``GET /api/runs/<n>/item?task=&id=``, ``GET /api/runs/<n>/clip?task=&id=&turn=``,
``GET /api/runs/<n>/audio?task=&id=`` and ``GET /api/compare?a=&b=`` (side by side). Items are named by query
parameters, never by a path: the server locates every file itself from the run, so a client cannot name one.
Every error is JSON ``{"error": "..."}``. Nothing is written: it serves GET only.
"""

from __future__ import annotations

import asyncio
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web

from omnivchat._loopback import error_response, local_app
from omnivchat.errors import OmnivchatError
from omnivchat.view._data import RunView
from omnivchat.view._item import ItemReader
from omnivchat.view._pair import PairQuery, compare, parse_pair_query
from omnivchat.view._query import QueryError, parse_query, run_query

STATIC = {"viewer.js": "text/javascript", "viewer.css": "text/css", "index.html": "text/html"}
MEDIA_TYPES = {".mp4": "video/mp4", ".webm": "video/webm", ".wav": "audio/wav", ".mp3": "audio/mpeg"}


def static_files() -> dict[str, bytes]:
    return {name: resources.files("omnivchat.view").joinpath("static", name).read_bytes() for name in STATIC}


class Viewer:
    """The runs being viewed and a reader of each one's items (the data side, shared by server and export)."""

    def __init__(self, runs: list[RunView]) -> None:
        self.runs = runs
        self.readers = [ItemReader(run) for run in runs]

    def run_list(self) -> list[dict[str, Any]]:
        out = []
        for n, run in enumerate(self.runs):
            run.refresh()
            out.append({"index": n, **run.info})
        return out


_VIEWER = web.AppKey("viewer", Viewer)
_STATIC = web.AppKey("static", dict)


def _run(request: web.Request) -> int:
    raw = request.match_info["run"]
    runs = request.app[_VIEWER].runs
    if not raw.isdigit() or int(raw) >= len(runs):
        raise web.HTTPNotFound(reason=f"no run {raw[:20]!r} (there are {len(runs)})")
    return int(raw)


def _item_key(request: web.Request) -> tuple[str, str]:
    task, item_id = request.query.get("task"), request.query.get("id")
    if task is None or item_id is None:
        raise web.HTTPBadRequest(reason="name the item with ?task=...&id=...")
    return task, item_id


def _file(path: Path) -> web.FileResponse:
    kind = MEDIA_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return web.FileResponse(path, headers={"Cache-Control": "no-cache", "Content-Type": kind})


async def _page(request: web.Request) -> web.Response:
    return _static_file(request, "index.html")


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC or name == "index.html":
        return error_response(404, "not found")
    return _static_file(request, name)


def _static_file(request: web.Request, name: str) -> web.Response:
    response = web.Response(body=request.app[_STATIC][name], content_type=STATIC[name], charset="utf-8")
    response.headers["Cache-Control"] = "no-cache"
    return response


async def _runs(request: web.Request) -> web.Response:
    viewer = request.app[_VIEWER]
    try:
        return web.json_response({"runs": await asyncio.to_thread(viewer.run_list)})
    except OmnivchatError as err:
        return error_response(500, str(err))


async def _items(request: web.Request) -> web.Response:
    run = request.app[_VIEWER].runs[_run(request)]
    try:
        query = parse_query(request.query)
        rows = await asyncio.to_thread(run.with_questions if query.text else run.rows)
    except QueryError as err:
        return error_response(400, str(err))
    except OmnivchatError as err:
        return error_response(500, str(err))
    return web.json_response({"run": run.info, **run_query(rows, query)})


async def _item(request: web.Request) -> web.Response:
    index = _run(request)
    task, item_id = _item_key(request)
    reader = request.app[_VIEWER].readers[index]
    try:
        detail = await asyncio.to_thread(reader.detail, task, item_id, index)
    except OmnivchatError as err:
        return error_response(500, str(err))
    if detail is None:
        return error_response(404, f"no item {item_id[:100]!r} of task {task[:40]!r} in this run")
    return web.json_response(detail)


async def _clip(request: web.Request) -> web.StreamResponse:
    index = _run(request)
    task, item_id = _item_key(request)
    turn = request.query.get("turn", "1")
    reader = request.app[_VIEWER].readers[index]
    try:
        clips = await asyncio.to_thread(reader.clips, task, item_id)
    except OmnivchatError as err:
        return error_response(500, str(err))
    clip = next((c for c in clips if str(c.turn) == turn), None)
    if clip is None or not clip.path.is_file():
        return error_response(404, f"no clip {turn[:10]!r} of item {item_id[:100]!r}")
    return _file(clip.path)


async def _audio(request: web.Request) -> web.StreamResponse:
    index = _run(request)
    task, item_id = _item_key(request)
    path = await asyncio.to_thread(request.app[_VIEWER].readers[index].audio, task, item_id)
    if path is None:
        return error_response(404, f"item {item_id[:100]!r} has no spoken reply")
    return _file(path)


async def _compare(request: web.Request) -> web.Response:
    viewer = request.app[_VIEWER]
    try:
        query: PairQuery = parse_pair_query(request.query, len(viewer.runs))
        body = await asyncio.to_thread(compare, viewer.runs, query)
    except QueryError as err:
        return error_response(400, str(err))
    except OmnivchatError as err:
        return error_response(500, str(err))
    return web.json_response(body)


def make_app(viewer: Viewer, port: int) -> web.Application:
    """The application for ``viewer`` served on 127.0.0.1:``port``."""
    app = local_app(port)
    app[_VIEWER] = viewer
    app[_STATIC] = static_files()
    app.router.add_get("/", _page)
    app.router.add_get("/static/{name}", _static)
    app.router.add_get("/api/runs", _runs)
    app.router.add_get("/api/runs/{run}/items", _items)
    app.router.add_get("/api/runs/{run}/item", _item)
    app.router.add_get("/api/runs/{run}/clip", _clip)
    app.router.add_get("/api/runs/{run}/audio", _audio)
    app.router.add_get("/api/compare", _compare)
    return app
