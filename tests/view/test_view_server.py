"""The viewer over real HTTP on 127.0.0.1: the page and its API, JSON errors for unknown runs and items and for
anything that looks like a path, Range requests (206) on clips, the Host guard, read-only (every file of the run
and its bench byte for byte the same afterwards), counts that follow a run being written, and the command line."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.view import ViewError, ViewServer


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        assert self.headers.get("content-type", "").startswith("application/json"), self.headers
        return json.loads(self.body)


def call(server: ViewServer, path: str, headers: dict[str, str] | None = None, method: str = "GET") -> Reply:
    """One request sent as given (http.client does not normalise ``..`` or percent escapes in the path)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def hashes(*roots: Path) -> dict[str, str]:
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def server(native_run: Path, worldsense_run: Path) -> Iterator[ViewServer]:
    with ViewServer([native_run, worldsense_run], port=0) as running:
        yield running


def item(run: int, task: str, item_id: str, what: str = "item", **extra: str) -> str:
    return f"/api/runs/{run}/{what}?" + urlencode({"task": task, "id": item_id, **extra})


def test_page_runs_items_and_one_item(server: ViewServer) -> None:
    page = call(server, "/")
    assert page.status == 200 and b"static/viewer.js" in page.body
    assert b"http" not in page.body.replace(b"http-equiv", b"")  # no CDN, no outside asset
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    for name in ("viewer.js", "viewer.css"):
        static = call(server, f"/static/{name}")
        assert static.status == 200 and b"http://" not in static.body and b"https://" not in static.body
    runs = call(server, "/api/runs").json()["runs"]
    labels = [(r["label"], r["benchmark"], r["items"]) for r in runs]
    assert labels == [("view-native0/run", "omnivchat", 4), ("view-worldsense0/run", "worldsense", 3)]
    listed = call(server, "/api/runs/0/items?state=failed").json()
    assert [r["id"] for r in listed["rows"]] == ["s2"] and listed["counts"]["total"] == 4
    assert listed["matched"] == {"scored": 0, "unscored": 0, "failed": 1, "not run": 0, "total": 1}
    detail = call(server, item(0, "candidate", "s1")).json()
    assert detail["native"]["judges"]["B"]["gated_at"] == 1 and detail["attempts"][0]["status"] == "ok"
    mc = call(server, item(1, "mc4", "vidA/task1")).json()  # an id with a slash: a query parameter, not a path
    assert mc["choice"]["gold"] == "C" and mc["row"]["id"] == "vidA/task1"
    assert call(server, "/api/runs/0/items").headers["cache-control"] == "no-store"
    found = call(server, "/api/runs/1/items?q=WHAT%20SHAPE").json()  # the question's text, read on first search
    assert [r["id"] for r in found["rows"]] == ["vidA/task1"] and found["matched"]["total"] == 1


def test_clips_answer_range_requests_with_206(server: ViewServer, native_run: Path) -> None:
    detail = call(server, item(0, "candidate", "s1")).json()
    url = "/" + detail["clips"][0]["url"]
    whole = call(server, url)
    assert whole.status == 200 and whole.headers["content-type"] == "video/mp4"
    assert whole.headers.get("accept-ranges") == "bytes"
    part = call(server, url, {"Range": "bytes=100-199"})
    assert part.status == 206 and part.body == whole.body[100:200]
    assert part.headers["content-range"] == f"bytes 100-199/{len(whole.body)}"
    tail = call(server, url, {"Range": "bytes=-50"})
    assert tail.status == 206 and tail.body == whole.body[-50:]
    assert call(server, url, {"Range": f"bytes={len(whole.body) + 10}-"}).status == 416
    mc = call(server, item(1, "mc4", "vidB/task0", "clip", turn="1"))
    assert mc.status == 200 and mc.body[4:8] == b"ftyp"


@pytest.mark.parametrize(
    "path",
    [
        "/api/runs/7/items",
        "/api/runs/x/items",
        "/api/runs/-1/item?task=candidate&id=s1",
        "/api/runs/0/item?task=candidate&id=nope",
        "/api/runs/0/item?task=candidate",
        "/api/runs/0/item?task=candidate&id=../../manifest.json",
        "/api/runs/0/clip?task=candidate&id=s1&turn=9",
        "/api/runs/0/clip?task=candidate&id=..%2F..%2Fstore.sqlite&turn=1",
        "/api/runs/0/clip?task=candidate&id=%00&turn=1",
        "/api/runs/0/clip?task=candidate&id=m1&turn=1",  # never run, but its clip is the bench's: served
        "/api/runs/0/audio?task=candidate&id=s1",
        "/api/runs/0/items?state=../../etc",
        "/api/runs/0/items?limit=100000",
        "/api/compare?a=0&b=9",
        "/static/../_app.py",
        "/static/%2e%2e/_app.py",
        "/../../etc/passwd",
        "/media/../../store.sqlite",
    ],
)
def test_unknown_ids_and_traversal_get_json_errors(server: ViewServer, path: str) -> None:
    reply = call(server, path)
    if path.endswith("id=m1&turn=1"):
        assert reply.status == 200  # the one good request among them
        return
    assert 400 <= reply.status < 500, (path, reply.status)
    assert "error" in reply.json(), path
    assert b"root:" not in reply.body and b"SQLite" not in reply.body


def test_foreign_hosts_and_writes_are_refused(server: ViewServer) -> None:
    rebound = call(server, "/api/runs", {"Host": "evil.example:80"})
    assert rebound.status == 403 and "127.0.0.1" in rebound.json()["error"]
    assert call(server, "/api/runs", method="POST").status == 405
    assert call(server, "/api/runs/0/items", method="DELETE").status == 405


def test_viewing_changes_no_file(native_run: Path, worldsense_run: Path, tmp_path: Path) -> None:
    before = hashes(native_run, native_run.parent / "bench", worldsense_run)
    with ViewServer([native_run, worldsense_run], port=0) as server:
        for run in (0, 1):
            for row in call(server, f"/api/runs/{run}/items").json()["rows"]:
                detail = call(server, item(run, row["task"], row["id"])).json()
                for clip in detail["clips"]:
                    call(server, "/" + clip["url"], {"Range": "bytes=0-10"})
    assert hashes(native_run, native_run.parent / "bench", worldsense_run) == before


def test_counts_follow_a_run_being_written(native_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(native_run, copy)
    (copy / "scores.json").unlink()
    with ViewServer([copy], port=0) as server:
        first = call(server, "/api/runs/0/items").json()
        assert first["counts"]["unscored"] == 2 and first["counts"]["scored"] == 0 and first["counts"]["failed"] == 1
        assert first["run"]["unnamed_not_run"] == 1  # m1: declared by the bench, named only by scores.json
        shutil.copyfile(native_run / "scores.json", copy / "scores.json")  # the run is scored meanwhile
        again = call(server, "/api/runs/0/items").json()
        assert again["counts"]["scored"] == 1 and again["counts"]["not run"] == 1
        assert again["run"]["unnamed_not_run"] == 0


def test_a_server_refuses_a_wider_host_and_a_busy_port(native_run: Path) -> None:
    with pytest.raises(ViewError, match=r"127\.0\.0\.1 only"):
        ViewServer([native_run], host="0.0.0.0", port=0)
    with ViewServer([native_run], port=0) as first, pytest.raises(ViewError, match="in use"):
        ViewServer([native_run], port=first.port)


def start_view(run: Path) -> tuple[subprocess.Popen[str], int, str]:
    """``omnivchat view RUN --port 0`` in a process of its own: the process, its port and what it printed first."""
    env = {**os.environ, "COLUMNS": "200"}
    command = [sys.executable, "-m", "omnivchat", "view", str(run), "--port", "0", "--no-browser"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline() if process.stdout else ""
        lines.append(line)
        if line.startswith("serving http://127.0.0.1:") or not line:
            break
    url = lines[-1].split()[1]
    return process, int(url.rsplit(":", 1)[1].strip("/")), "".join(lines)


def runs_status(port: int) -> int:
    """The HTTP status of the viewer's ``/api/runs`` on ``port``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/api/runs")
        return connection.getresponse().status
    finally:
        connection.close()


def stop_view(process: subprocess.Popen[str]) -> str:
    """Ctrl-C, then what the process printed after its first lines."""
    try:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    return rest


def test_the_command_prints_the_url_and_stops_on_ctrl_c(native_run: Path) -> None:
    help_text = CliRunner().invoke(app, ["view", "--help"], terminal_width=200).output
    assert "--no-browser" in help_text and "--export" in help_text and "--port" in help_text
    bad = CliRunner().invoke(app, ["view", str(native_run.parent / "nowhere"), "--no-browser"])
    assert bad.exit_code == 2 and "no such run directory" in bad.output
    process, port, first = start_view(native_run)
    try:
        assert "viewing run: omnivchat, 4 items" in first
        assert runs_status(port) == 200
    finally:
        rest = stop_view(process)
    assert process.returncode == 0 and "stopped" in rest


MALFORMED = [
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Length: abc\r\n\r\n",
    b"GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n",
    b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nBad Header\r\n\r\n",
    b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(64)),
]


def test_malformed_requests_get_a_quiet_400_and_the_viewer_goes_on(native_run: Path) -> None:
    """Requests aiohttp cannot parse printed its tracebacks in the user's terminal (issue 36.7): each gets its 400,
    nothing is printed, and the viewer still answers."""
    process, port, _ = start_view(native_run)
    try:
        for raw in MALFORMED:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
                client.sendall(raw.replace(b"PORT", str(port).encode()))
                status_line = client.makefile("rb").readline()
                assert status_line.split()[1:2] == [b"400"], (raw, status_line)
        assert runs_status(port) == 200
    finally:
        rest = stop_view(process)
    assert process.returncode == 0 and "stopped" in rest
    assert "Traceback" not in rest and "Error handling request" not in rest, rest


def test_the_report_the_command_and_the_server_agree_on_the_port() -> None:
    from omnivchat.cli.view import DEFAULT_PORT as CLI_PORT
    from omnivchat.report import VIEWER_URL
    from omnivchat.view import DEFAULT_PORT

    assert f"http://127.0.0.1:{DEFAULT_PORT}/" == VIEWER_URL and CLI_PORT == DEFAULT_PORT


def test_the_command_exports_static_files(native_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "viewer"
    result = CliRunner().invoke(app, ["view", str(native_run), "--export", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "wrote the viewer of 1 run(s), 4 items" in result.output and (out / "index.html").is_file()
    page = (out / "index.html").read_text()
    assert '<script src="data/runs.js"></script>' in page and "http" not in page.replace("http-equiv", "")
    assert len(list((out / "data").glob("item-0-*.js"))) == 4
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    refused = CliRunner().invoke(app, ["view", str(native_run), "--export", str(tmp_path / "taken")])
    assert refused.exit_code == 2 and "not empty" in refused.output
    inside = CliRunner().invoke(app, ["view", str(native_run), "--export", str(native_run / "viewer")])
    assert inside.exit_code == 2 and "is inside the run" in inside.output and not (native_run / "viewer").exists()


def test_a_spoken_reply_is_served_with_range(spoken_run: Path) -> None:
    with ViewServer([spoken_run], port=0) as server:
        detail = call(server, item(0, "open", "q2")).json()
        url = "/" + detail["spoken"]["url"]
        whole = call(server, url)
        assert whole.status == 200 and whole.headers["content-type"] == "audio/wav" and whole.body[:4] == b"RIFF"
        part = call(server, url, {"Range": "bytes=0-11"})
        assert part.status == 206 and part.body == whole.body[:12]
        clip = call(server, "/" + detail["clips"][0]["url"])
        assert clip.status == 200 and clip.body[4:8] == b"ftyp"
