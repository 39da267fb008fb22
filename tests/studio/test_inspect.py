"""The human inspection page (`omnivchat studio inspect`): its JSON API over real HTTP on 127.0.0.1, the guards
(bad input, cross-origin posts, foreign Host headers, media path traversal), Range requests, the append-only
inspection.jsonl (concurrent posts, restarts), how load_bench and validate treat rejected instances, the command
line, and the page itself in headless Chromium."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from chromium import open_page, require_chromium
from typer.testing import CliRunner

from omnivchat.bench import INSPECTION_FILE, Bench, BenchError, inspection_decisions, load_bench
from omnivchat.cli import app
from omnivchat.studio.inspect import (
    DEFAULT_PORT,
    MAX_BODY_BYTES,
    DecisionLog,
    InspectError,
    InspectServer,
    media_file,
    served_clips,
)

IDS = ["s1", "s2", "s3", "m1"]  # the small bench of tests/conftest.py (m1 has two turns)


@pytest.fixture
def server(small_bench: Bench) -> Iterator[InspectServer]:
    with InspectServer(small_bench.root, port=0) as running:
        yield running


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        assert self.headers.get("content-type", "").startswith("application/json"), self.headers
        return json.loads(self.body)


def call(
    server: InspectServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request sent as given (http.client does not normalise ``..`` or percent escapes in the path)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def post(server: InspectServer, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return call(server, "POST", "/api/decisions", body, {"Content-Type": "application/json", **(headers or {})})


def log_lines(root: Path) -> list[dict[str, Any]]:
    path = root / INSPECTION_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------------------------
# The page and the API


def test_page_and_instances(server: InspectServer) -> None:
    page = call(server, "GET", "/")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert b"/static/inspect.js" in page.body and b"http" not in page.body.replace(b"http-equiv", b"")  # no CDN
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    for name in ("inspect.js", "inspect.css"):
        assert call(server, "GET", f"/static/{name}").status == 200
    assert call(server, "GET", "/static/index.html").status == 404
    missing = call(server, "GET", "/static/../_app.py")
    assert missing.status == 404 and "error" in missing.json()

    data = call(server, "GET", "/api/instances").json()
    assert data["bench"]["name"] == "small" and data["bench"]["file"] == INSPECTION_FILE
    views = {v["id"]: v for v in data["instances"]}
    assert list(views) == IDS
    m1 = views["m1"]
    assert m1["subcategory"] == "MDCC" and m1["subcategory_path"] == "DSLP-VCC-MDCC" and m1["line"] == 4
    assert [t["clip"] for t in m1["turns"]] == ["/media/m1/turn1.mp4", "/media/m1/turn2.mp4"]
    assert m1["turns"][0]["reply"] == "There is one square." and m1["turns"][1]["reply"] is None
    assert m1["reference"] == "reference reply for m1"
    assert [(c["number"], c["tier"]) for c in m1["rubric"]] == [(1, 0), (2, 1), (3, 2)]
    assert m1["trace"] is None  # not a Studio bench

    decisions = call(server, "GET", "/api/decisions").json()
    assert decisions["decisions"] == {}
    assert decisions["counts"] == {"accepted": 0, "rejected": 0, "undecided": 4, "total": 4}
    assert call(server, "GET", "/api/decisions").headers["cache-control"] == "no-store"


def test_decisions_are_appended_and_the_latest_wins(server: InspectServer) -> None:
    root = server.bench.root
    rejected = post(server, {"id": "s1", "decision": "reject", "reason": "  the clip shows the wrong door  "})
    assert rejected.status == 200, rejected.body
    assert rejected.json()["decision"]["reason"] == "the clip shows the wrong door"
    assert rejected.json()["counts"] == {"accepted": 0, "rejected": 1, "undecided": 3, "total": 4}
    assert post(server, {"id": "s2", "decision": "accept"}).status == 200  # an accept needs no reason
    [first, second] = log_lines(root)
    assert first["id"] == "s1" and first["decision"] == "reject" and first["time"].endswith("+00:00")
    assert second == {"id": "s2", "decision": "accept", "reason": "", "time": second["time"]}

    before = (root / INSPECTION_FILE).read_bytes()
    assert post(server, {"id": "s1", "decision": "accept", "reason": "looked again: fine"}).status == 200
    assert (root / INSPECTION_FILE).read_bytes().startswith(before)  # earlier lines never rewritten
    decisions = call(server, "GET", "/api/decisions").json()
    assert {i: d["decision"] for i, d in decisions["decisions"].items()} == {"s1": "accept", "s2": "accept"}
    assert decisions["counts"] == {"accepted": 2, "rejected": 0, "undecided": 2, "total": 4}
    assert inspection_decisions(root)["s1"].reason == "looked again: fine"


BAD_BODIES = [
    ({"id": "nope", "decision": "accept"}, "no instance with id 'nope'"),
    ({"id": "s1", "decision": "maybe"}, 'decision must be "accept" or "reject"'),
    ({"id": "s1"}, 'decision must be "accept" or "reject"'),
    ({"id": "s1", "decision": "reject"}, "a reject needs a reason"),
    ({"id": "s1", "decision": "reject", "reason": "   "}, "a reject needs a reason"),
    ({"id": "s1", "decision": "reject", "reason": 3}, "reason must be a string"),
    ({"id": "s1", "decision": "reject", "reason": "x" * 2001}, "longer than 2000"),
    ({"id": 7, "decision": "accept"}, "id must be"),
    ({"id": "s1", "decision": "accept", "extra": 1}, "unknown field(s): extra"),
    (["s1", "accept"], "must be a JSON object"),
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
]


@pytest.mark.parametrize(("payload", "message"), BAD_BODIES)
def test_bad_decisions_are_refused_and_nothing_is_written(server: InspectServer, payload: Any, message: str) -> None:
    reply = post(server, payload)
    assert reply.status == 400 and message in reply.json()["error"]
    assert not (server.bench.root / INSPECTION_FILE).exists()


def test_refused_requests(server: InspectServer) -> None:
    own = f"http://127.0.0.1:{server.port}"
    good = json.dumps({"id": "s1", "decision": "reject", "reason": "bad"}).encode()
    cases = [
        ("huge body", good[:-1] + b', "pad": "' + b"x" * MAX_BODY_BYTES + b'"}', {}, 413),
        ("wrong content type", good, {"Content-Type": "text/plain"}, 415),
        ("a form", b"id=s1&decision=accept", {"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ("another site", good, {"Origin": "http://evil.example"}, 403),
        ("another port", good, {"Origin": "http://127.0.0.1:1"}, 403),
        ("an opaque origin", good, {"Origin": "null"}, 403),
        ("cross-site fetch", good, {"Sec-Fetch-Site": "cross-site"}, 403),
        ("DNS rebinding", good, {"Host": f"evil.example:{server.port}"}, 403),
    ]
    for what, body, headers, status in cases:
        reply = call(server, "POST", "/api/decisions", body, {"Content-Type": "application/json", **headers})
        assert reply.status == status, (what, reply.body)
        assert reply.json()["error"], what
    rebound = call(server, "GET", "/api/instances", headers={"Host": f"attacker.example:{server.port}"})
    assert rebound.status == 403 and b"s1" not in rebound.body
    assert call(server, "PUT", "/api/decisions", good, {"Content-Type": "application/json"}).status == 405
    assert not (server.bench.root / INSPECTION_FILE).exists()

    # The page's own requests pass, under either name of the loopback host.
    assert post(server, json.loads(good), {"Origin": own, "Sec-Fetch-Site": "same-origin"}).status == 200
    other_name = {"Host": f"localhost:{server.port}", "Origin": f"http://localhost:{server.port}"}
    assert post(server, {"id": "s2", "decision": "accept"}, other_name).status == 200
    assert len(log_lines(server.bench.root)) == 2


def test_a_chunked_body_over_the_limit_is_refused(server: InspectServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    chunks = iter([b'{"id": "s1", "decision": "accept", "reason": "', b"x" * (MAX_BODY_BYTES + 10), b'"}'])
    connection.request(
        "POST", "/api/decisions", body=chunks, headers={"Content-Type": "application/json"}, encode_chunked=True
    )
    response = connection.getresponse()
    assert response.status == 413 and "error" in json.loads(response.read())
    connection.close()
    assert not (server.bench.root / INSPECTION_FILE).exists()


def test_concurrent_posts_give_whole_lines(server: InspectServer) -> None:
    barrier = threading.Barrier(20)

    def one(n: int) -> int:
        barrier.wait()
        decision = {"id": IDS[n % 4], "decision": "reject", "reason": f"reason {n} " + "é" * 300}
        return post(server, decision if n % 3 else {"id": IDS[n % 4], "decision": "accept"}).status

    with ThreadPoolExecutor(20) as pool:
        assert list(pool.map(one, range(20))) == [200] * 20
    lines = log_lines(server.bench.root)  # every line whole JSON
    assert len(lines) == 20 and server.log.lines == 20
    assert sorted(int(x["reason"].split()[1]) for x in lines if x["reason"]) == [n for n in range(20) if n % 3]
    latest = inspection_decisions(server.bench.root)
    assert {i: d.decision for i, d in latest.items()} == {
        i: d["decision"] for i, d in call(server, "GET", "/api/decisions").json()["decisions"].items()
    }


def test_decisions_survive_a_restart(small_bench: Bench) -> None:
    with InspectServer(small_bench.root, port=0) as first:
        assert post(first, {"id": "s3", "decision": "reject", "reason": "speech is cut off"}).status == 200
    before = (small_bench.root / INSPECTION_FILE).read_bytes()
    with InspectServer(small_bench.root, port=0) as second:
        shown = call(second, "GET", "/api/decisions").json()
        assert shown["decisions"]["s3"]["reason"] == "speech is cut off"
        assert shown["counts"]["rejected"] == 1
        assert post(second, {"id": "s1", "decision": "accept"}).status == 200
        assert second.log.made == 1 and second.log.lines == 2
    after = (small_bench.root / INSPECTION_FILE).read_bytes()
    assert after.startswith(before) and after.count(b"\n") == 2


def test_a_hand_edited_last_line_without_newline_is_not_glued_onto(small_bench: Bench) -> None:
    path = small_bench.root / INSPECTION_FILE
    path.write_text('{"id": "s1", "decision": "accept"}', encoding="utf-8")
    log = DecisionLog(small_bench.root, IDS)
    log.record("s2", "reject", "blurry")
    assert [x["id"] for x in log_lines(small_bench.root)] == ["s1", "s2"]


# ---------------------------------------------------------------------------------------------------------------
# Clips: media/ only, with Range


def test_media_path_traversal_is_refused(server: InspectServer, tmp_path: Path) -> None:
    root = server.bench.root
    (root / "media" / "notes.txt").write_text("not a clip", encoding="utf-8")
    secret = b"name: small"
    attempts = [
        "/media/../bench.yaml",
        "/media/%2e%2e/bench.yaml",
        "/media/%2E%2E%2Fbench.yaml",
        "/media/s1/..%2f..%2fbench.yaml",
        "/media/s1/%2e%2e/%2e%2e/bench.yaml",
        "/media/s1/turn1.mp4/../../../bench.yaml",
        "/media//etc/passwd",
        "/media/%2fetc%2fpasswd",
        f"/media/{root.resolve()}/bench.yaml",
        "/media/s1%5c..%5c..%5cbench.yaml",
        "/media/s1/turn1.mp4%00",
        "/media/notes.txt",  # in media/, but not a clip of the bench
        "/media/S1/turn1.mp4",
        "/media/",
        "/bench.yaml",
        "/instances.jsonl",
    ]
    for path in attempts:
        reply = call(server, "GET", path)
        assert 400 <= reply.status < 500, path
        assert secret not in reply.body and b"not a clip\n" not in reply.body, path

    # A clip replaced by a symlink that leaves media/ (inside the bench, then outside it) is not served.
    clip = root / "media" / "s2" / "turn1.mp4"
    inside = root / "elsewhere.mp4"
    shutil.copyfile(clip, inside)
    clip.unlink()
    clip.symlink_to(inside)
    assert call(server, "GET", "/media/s2/turn1.mp4").status == 404
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"outside the bench")
    clip.unlink()
    clip.symlink_to(outside)
    reply = call(server, "GET", "/media/s2/turn1.mp4")
    assert reply.status == 404 and b"outside" not in reply.body.replace(b"not a clip", b"")
    assert call(server, "GET", "/media/s1/turn1.mp4").status == 200  # the other clips are still served


def test_media_file_checks_the_path_itself(small_bench: Bench) -> None:
    """Even a hostile list of clips (which served_clips never builds) serves nothing outside media/."""
    root = small_bench.root
    hostile = {key: key for key in ("../bench.yaml", "/etc/passwd", "s1/./turn1.mp4", "s1\\turn1.mp4", "")}
    for key in hostile:
        assert media_file(root, hostile, key) is None, key
    assert media_file(root, served_clips(small_bench), "s1/turn1.mp4") == (root / "media/s1/turn1.mp4").resolve()
    assert media_file(root, served_clips(small_bench), "s1/turn9.mp4") is None


def test_clips_support_range_requests(server: InspectServer) -> None:
    data = (server.bench.root / "media" / "m1" / "turn2.mp4").read_bytes()
    size = len(data)
    full = call(server, "GET", "/media/m1/turn2.mp4")
    assert full.status == 200 and full.body == data
    assert full.headers["content-type"] == "video/mp4" and full.headers["accept-ranges"] == "bytes"
    for header, start, end in [
        ("bytes=0-99", 0, 99),
        ("bytes=100-", 100, size - 1),
        ("bytes=-50", size - 50, size - 1),
    ]:
        part = call(server, "GET", "/media/m1/turn2.mp4", headers={"Range": header})
        assert part.status == 206, header
        assert part.headers["content-range"] == f"bytes {start}-{end}/{size}"
        assert part.body == data[start : end + 1]
    assert call(server, "GET", "/media/m1/turn2.mp4", headers={"Range": f"bytes={size + 10}-"}).status == 416
    head = call(server, "HEAD", "/media/m1/turn2.mp4")
    assert head.status == 200 and int(head.headers["content-length"]) == size and head.body == b""
    assert full.headers["cross-origin-resource-policy"] == "same-origin"  # no embedding from other sites


# ---------------------------------------------------------------------------------------------------------------
# The bench layer: rejected instances leave the delivered set


def test_load_bench_leaves_rejected_instances_out(small_bench: Bench) -> None:
    root = small_bench.root
    unchanged = load_bench(root)
    assert unchanged == small_bench and unchanged.rejected == {}  # no inspection.jsonl: as before
    log = DecisionLog(root, IDS)
    log.record("s1", "reject", "wrong door")
    log.record("s2", "accept")
    with pytest.raises(ValueError, match="no instance with id 'ghost'"):
        log.record("ghost", "accept")

    bench = load_bench(root)
    assert [i.id for i in bench.instances] == ["s2", "s3", "m1"]
    assert list(bench.rejected) == ["s1"] and bench.rejected["s1"].reason == "wrong door"
    everything = load_bench(root, include_rejected=True)
    assert [i.id for i in everything.instances] == IDS and list(everything.rejected) == ["s1"]

    # A rejected instance is not delivered: its clip is not needed (but its line must still parse).
    (root / "media" / "s1" / "turn1.mp4").unlink()
    assert [i.id for i in load_bench(root).instances] == ["s2", "s3", "m1"]
    with pytest.raises(BenchError, match="missing media file"):
        load_bench(root, include_rejected=True)

    log.record("s1", "accept", "looked again")  # a later accept undoes the reject
    with pytest.raises(BenchError, match="missing media file"):
        load_bench(root)
    # A decision about an id the bench does not hold (a hand-written line) is ignored.
    with (root / INSPECTION_FILE).open("a", encoding="utf-8") as handle:
        handle.write('{"id": "gone", "decision": "reject", "reason": "old"}\n')
    shutil.copyfile(root / "media" / "s2" / "turn1.mp4", root / "media" / "s1" / "turn1.mp4")
    again = load_bench(root)
    assert [i.id for i in again.instances] == IDS and again.rejected == {}


def test_every_instance_rejected_is_a_problem(small_bench: Bench) -> None:
    log = DecisionLog(small_bench.root, IDS)
    for instance_id in IDS:
        log.record(instance_id, "reject", "all bad")
    with pytest.raises(BenchError, match="every instance is rejected"):
        load_bench(small_bench.root)
    assert len(load_bench(small_bench.root, include_rejected=True).instances) == 4


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ('{"id": "s1", "decision": "accept"}\n{"id": "s2", "decision"\n', "inspection.jsonl:2: not valid JSON"),
        ('{"id": "s1", "decision": "reject"}\n', "inspection.jsonl:1: a reject needs a reason"),
        ('{"id": "s1", "decision": "drop", "reason": "x"}\n', "inspection.jsonl:1: decision: Input should be"),
        ("\n[1, 2]\n", "inspection.jsonl:2: must be a JSON object"),
    ],
)
def test_a_malformed_inspection_line_is_an_error_naming_file_and_line(
    small_bench: Bench, lines: str, problem: str
) -> None:
    (small_bench.root / INSPECTION_FILE).write_text(lines, encoding="utf-8")
    for read in (load_bench, inspection_decisions):
        with pytest.raises(BenchError) as caught:
            read(small_bench.root)
        assert problem in str(caught.value)
    with pytest.raises(BenchError, match=r"inspection\.jsonl"):
        InspectServer(small_bench.root, port=0)


def test_validate_counts_rejected_instances(small_bench: Bench) -> None:
    runner = CliRunner()
    before = runner.invoke(app, ["validate", str(small_bench.root)])
    assert before.exit_code == 0, before.output
    assert "4 instances" in before.output and "human inspection" not in before.output
    DecisionLog(small_bench.root, IDS).record("s3", "reject", "placard unreadable")
    after = runner.invoke(app, ["validate", str(small_bench.root)])
    assert after.exit_code == 0, after.output
    text = " ".join(after.output.split())
    assert "3 instances" in text and "1 instance(s) rejected by human inspection (inspection.jsonl): s3" in text


def test_bench_make_force_keeps_human_decisions(tmp_path: Path) -> None:
    from omnivchat.studio.minibench import MiniBenchError, make_minibench

    out = tmp_path / "mini"
    bench = make_minibench(out, per_subcategory=1, languages=["en"], seed=0)
    DecisionLog(out, [i.id for i in bench.instances]).record(bench.instances[0].id, "reject", "mirror is wrong")
    assert len(load_bench(out).instances) == len(bench.instances) - 1
    with pytest.raises(MiniBenchError, match=INSPECTION_FILE):  # --force never deletes a person's decisions
        make_minibench(out, per_subcategory=1, languages=["en"], seed=0, force=True)
    assert (out / INSPECTION_FILE).is_file()


def test_a_studio_bench_shows_captions_and_traces(tmp_path: Path) -> None:
    out = tmp_path / "studio"
    made = CliRunner().invoke(app, ["studio", "run", "--config", "MDCC", "--n", "1", "-o", str(out), "--no-progress"])
    assert made.exit_code == 0, made.output
    with InspectServer(out, port=0) as server:
        [view] = call(server, "GET", "/api/instances").json()["instances"]
        assert len(view["turns"]) >= 2 and all(t["caption"] and t["question"] for t in view["turns"])
        assert dict(view["notes"])["camera"]
        trace = call(server, "GET", view["trace"]).json()
        assert trace["status"] == "accepted" and trace["steps"][0]["module"] == "0"
        assert call(server, "GET", "/api/trace/nope").status == 404


# ---------------------------------------------------------------------------------------------------------------
# Starting it, and the command line


def test_only_loopback_and_clear_errors(small_bench: Bench, tmp_path: Path) -> None:
    for host in ("0.0.0.0", "localhost", "::1", "192.168.1.10"):
        with pytest.raises(InspectError, match=r"127\.0\.0\.1 only"):
            InspectServer(small_bench.root, host=host, port=0)
    with pytest.raises(InspectError, match="no such directory"):
        InspectServer(tmp_path / "nowhere", port=0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InspectError, match="not a bench directory"):
        InspectServer(tmp_path / "empty", port=0)
    other = tmp_path / "other"
    shutil.copytree(small_bench.root, other)
    with InspectServer(small_bench.root, port=0) as running, pytest.raises(InspectError, match="in use"):
        InspectServer(other, port=running.port)
    with InspectServer(other, port=0):  # the refusal left no lock behind
        pass


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["studio", "inspect", str(tmp_path / "nowhere"), "--no-browser"])
    assert result.exit_code == 2
    assert "error:" in result.output and "no such directory" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_opens_the_browser_and_stops_on_ctrl_c(small_bench: Bench, monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    from omnivchat.cli.studio_inspect import DEFAULT_PORT as CLI_PORT

    assert CLI_PORT == DEFAULT_PORT
    opened: list[str] = []

    def open_url(url: str, *args: Any, **kwargs: Any) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", open_url)

    def interrupt(self: InspectServer, timeout: float | None = None) -> bool:
        assert post(self, {"id": "m1", "decision": "reject", "reason": "turn 2 is silent"}).status == 200
        raise KeyboardInterrupt

    monkeypatch.setattr(InspectServer, "wait", interrupt)
    result = CliRunner().invoke(app, ["studio", "inspect", str(small_bench.root), "--port", "0"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert len(opened) == 1 and opened[0].startswith("http://127.0.0.1:") and f"serving {opened[0]}" in text
    assert f"stopped; 1 decisions in {small_bench.root / INSPECTION_FILE} (1 made now)" in text


def test_the_command_serves_until_interrupted(small_bench: Bench) -> None:
    """The real process: start, read the URL it prints, post, Ctrl-C (SIGINT), a clean exit."""
    process = subprocess.Popen(
        [sys.executable, "-m", "omnivchat", "studio", "inspect", str(small_bench.root), "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    try:
        assert process.stdout is not None
        url = ""
        deadline = time.monotonic() + 60
        while not url and time.monotonic() < deadline:
            line = process.stdout.readline()
            assert line, "the command ended early"
            if line.startswith("serving "):
                url = line.split()[1]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        body = json.dumps({"id": "s2", "decision": "reject", "reason": "no audio"})
        connection.request("POST", "/api/decisions", body, {"Content-Type": "application/json"})
        assert connection.getresponse().status == 200
        connection.close()
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, rest
    assert "stopped; 1 decisions in" in " ".join(rest.split())
    assert list(load_bench(small_bench.root).rejected) == ["s2"]


# ---------------------------------------------------------------------------------------------------------------
# In a real browser (Debian's chromium; .ci/run installs it)


async def _inspect_in_browser(server: InspectServer, profile: Path, binary: str) -> dict[str, Any]:
    async with open_page(binary, profile) as page:
        await page.send("Page.navigate", url=server.url)
        await page.until("document.body && document.body.dataset.ready === 'true'")
        found: dict[str, Any] = {}
        found["cards"] = await page.js("document.querySelectorAll('article.instance').length")
        found["id_visible"] = await page.js(
            """(() => { const id = document.querySelector('[data-instance-id="s1"] code.id');
               const box = id.getBoundingClientRect();
               return id.textContent === 's1' && box.width > 0 && box.height > 0; })()"""
        )
        found["played"] = await page.js(
            """(async () => {
                 const video = document.querySelector('[data-instance-id="s1"] video');
                 await video.play();
                 const start = performance.now();
                 while (video.currentTime < 0.3 && performance.now() - start < 15000) {
                   await new Promise((r) => setTimeout(r, 50));
                 }
                 video.pause();
                 return {time: video.currentTime, ready: video.readyState, error: video.error && video.error.code,
                         width: video.videoWidth};
               })()"""
        )
        # Keyboard: the first card is current; r focuses its reason field, Enter rejects with that reason.
        await page.key("r", "KeyR", 82)
        assert await page.js("document.activeElement.classList.contains('reason')")
        await page.send("Input.insertText", text="the square is on the wrong side")
        await page.key("Enter", "Enter", 13)
        await page.until(
            "document.querySelector('[data-instance-id=\"s1\"] .decision').textContent.startsWith('rejected')"
        )
        # The page moved on to s2: a accepts it. Then the reject button on m1, with a typed reason.
        await page.until("document.querySelector('article.current').dataset.instanceId === 's2'")
        await page.key("a", "KeyA", 65)
        await page.until("document.getElementById('n-accepted').textContent === '1'")
        await page.js(
            """(() => { const card = document.querySelector('[data-instance-id="m1"]');
               card.querySelector('input.reason').value = 'turn 2 repeats turn 1';
               card.querySelector('button.reject').click(); })()"""
        )
        await page.until("document.getElementById('n-rejected').textContent === '2'")

        await page.js("window.beforeReload = true")
        await page.send("Page.reload", ignoreCache=True)
        await page.until("!window.beforeReload && document.body && document.body.dataset.ready === 'true'")
        found["after_reload"] = await page.js(
            """Object.fromEntries([...document.querySelectorAll('article.instance')].map(
                 (a) => [a.dataset.instanceId, a.querySelector('.decision').textContent]))"""
        )
        found["counts"] = await page.js(
            "['accepted', 'rejected', 'undecided'].map((n) => document.getElementById('n-' + n).textContent)"
        )
        found["status"] = await page.js("document.getElementById('status').textContent")
        return found


def test_chromium_plays_rejects_and_keeps_the_decision_after_reload(server: InspectServer, tmp_path: Path) -> None:
    binary = require_chromium()
    found = asyncio.run(asyncio.wait_for(_inspect_in_browser(server, tmp_path / "profile", binary), timeout=180))
    assert found["cards"] == 4 and found["id_visible"] is True
    played = found["played"]
    assert played["error"] is None and played["ready"] >= 2 and played["time"] >= 0.3 and played["width"] > 0, played
    assert found["after_reload"] == {
        "s1": "rejected: the square is on the wrong side",
        "s2": "accepted",
        "s3": "undecided",
        "m1": "rejected: turn 2 repeats turn 1",
    }
    assert found["counts"] == ["1", "2", "1"]
    assert "inspection.jsonl" in found["status"]
    lines = log_lines(server.bench.root)
    assert [(x["id"], x["decision"], x["reason"]) for x in lines] == [
        ("s1", "reject", "the square is on the wrong side"),
        ("s2", "accept", ""),
        ("m1", "reject", "turn 2 repeats turn 1"),
    ]
    assert [i.id for i in load_bench(server.bench.root).instances] == ["s2", "s3"]


def test_resuming_a_run_after_an_inspection_reject_says_why_it_is_refused(small_bench, tmp_path) -> None:
    from typer.testing import CliRunner

    from omnivchat.cli import app

    out = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(out), "--no-progress"]
    assert CliRunner().invoke(app, args).exit_code == 0
    first = small_bench.instances[0].id
    line = {"id": first, "decision": "reject", "reason": "the clip cuts off early", "time": "2026-12-01T05:00:00Z"}
    (small_bench.root / INSPECTION_FILE).write_text(json.dumps(line) + "\n", encoding="utf-8")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2
    assert "1 instance(s) rejected by human inspection" in again.output and "new output directory" in again.output
