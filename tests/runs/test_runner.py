"""The resumable runner against the loopback server: retries, resume, manifest checks, failures kept apart."""

from __future__ import annotations

import json
import sqlite3

import pytest
from typer.testing import CliRunner

import omnivchat
from omnivchat.benchmarks import export as export_run
from omnivchat.benchmarks import status as run_status
from omnivchat.benchmarks.native import run_eval
from omnivchat.cli import app
from omnivchat.routes import Secret, get_route
from omnivchat.runs import ManifestMismatch, RetryPolicy, RunError, RunStore
from omnivchat.testing import Behaviour, LoopbackServer

FAST_RETRY = RetryPolicy(max_attempts=4, backoff_base=0.01, backoff_cap=0.05)


@pytest.fixture
def server():
    with LoopbackServer(default=Behaviour(text="An answer.")) as srv:
        yield srv


def route_for(server, **overrides):
    return get_route("omni-test", base_url=server.base_url, api_key=Secret("k-123"), **{"timeout_s": 5.0, **overrides})


def run(bench, server, run_dir, **kwargs):
    kwargs.setdefault("retry", FAST_RETRY)
    kwargs.setdefault("system_prompt", "Be brief.")
    return run_eval(bench, route_for(server), run_dir, progress=False, **kwargs)


def test_complete_run_then_resume_sends_nothing(small_bench, server, tmp_path):
    out = tmp_path / "run"
    first = run(small_bench, server, out)
    assert (first.total, first.done, first.failed, first.reused) == (4, 4, 0, 0)
    assert server.count == 4
    again = run(small_bench, server, out)
    assert again.resumed and (again.done, again.reused, again.attempts) == (4, 4, 0)
    assert server.count == 4  # nothing sent twice
    status = run_status(out)
    assert status.instances.done == 4 and status.attempts == {"ok": 4}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["route"]["settings"]["media_input"] == "video_url"
    assert set(manifest["bench"]["clips"]) == {
        "media/s1/turn1.mp4",
        "media/s2/turn1.mp4",
        "media/s3/turn1.mp4",
        "media/m1/turn1.mp4",
        "media/m1/turn2.mp4",
    }
    assert "base_url" not in manifest["route"]["settings"]


def test_retries_429_and_5xx_keeping_every_attempt(small_bench, server, tmp_path):
    server.script(Behaviour(status=429, retry_after="0.01"), Behaviour(status=500), Behaviour(hang=False, cut_after=0))
    summary = run(small_bench, server, tmp_path / "run", concurrency=1, limit=1)
    assert summary.done == 1 and summary.attempts == 4
    with RunStore(tmp_path / "run" / "store.sqlite") as store:
        attempts = store.attempts()
    assert [a["error_kind"] for a in attempts] == ["rate_limited", "server_error", "stream_cut", None]
    assert [a["status"] for a in attempts] == ["failed", "failed", "failed", "ok"]
    assert attempts[0]["http_status"] == 429


def test_non_retryable_failure_is_kept_apart_and_retried_on_resume(small_bench, server, tmp_path):
    out = tmp_path / "run"
    server.script(Behaviour(status=400, error_message="no such model"))
    first = run(small_bench, server, out, concurrency=1)
    assert (first.done, first.failed) == (3, 1) and first.failures == {"http_error": 1}
    with pytest.raises(Exception, match="incomplete"):
        export_run(out)
    partial = export_run(out, allow_incomplete=True)
    failed = [r for r in partial.records if r.status == "failed"]
    assert len(failed) == 1 and failed[0].reply is None and "no such model" in failed[0].error
    second = run(small_bench, server, out)
    assert (second.done, second.failed, second.reused, second.attempts) == (4, 0, 3, 1)
    with RunStore(out / "store.sqlite") as store:
        assert len(store.attempts()) == 5  # the failed attempt is still there
    assert export_run(out).status == "complete"


def test_length_and_empty_answers(small_bench, server, tmp_path):
    server.script(Behaviour(finish_reason="length"), Behaviour(text=""))
    summary = run(small_bench, server, tmp_path / "run", concurrency=1)
    assert summary.failures == {"length": 1} and summary.done == 3
    records = export_run(tmp_path / "run", allow_incomplete=True).records
    assert sorted(r.reply for r in records if r.status == "done")[0] == ""  # an empty answer is kept


def test_corrupt_clip_fails_its_item_only(small_bench, server, tmp_path):
    clip = small_bench.media_path(small_bench.get("s2").turns[0])
    clip.write_bytes(clip.read_bytes()[:300])  # truncated file
    summary = run(small_bench, server, tmp_path / "run")
    assert (summary.done, summary.failed, summary.failures) == (3, 1, {"media": 1})
    items = {i["item_id"]: i for i in RunStore(tmp_path / "run" / "store.sqlite").items()}
    assert "s2/turn1.mp4" in items["s2"]["error"]


def test_changed_prompt_or_clip_is_refused(small_bench, server, tmp_path):
    out = tmp_path / "run"
    run(small_bench, server, out, limit=1)
    with pytest.raises(ManifestMismatch, match=r"prompts\.system\.sha256"):
        run(small_bench, server, out, system_prompt="Another prompt.")
    clip = small_bench.media_path(small_bench.get("s3").turns[0])
    clip.write_bytes(clip.read_bytes() + b"\0")
    with pytest.raises(ManifestMismatch, match=r"bench\.clips\.media/s3/turn1\.mp4"):
        run(small_bench, server, out)


def test_a_run_made_by_another_version_resumes_with_a_warning(small_bench, server, tmp_path):
    """Any code change (even to the renderer) used to make every earlier run refuse to resume; request hashes
    already cover what is sent, so only inputs, prompts and settings are the run's identity."""
    out = tmp_path / "run"
    first = run(small_bench, server, out)
    assert first.done == 4 and not first.notes
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["package"] = {"version": "0.0.9", "source_sha256": "0" * 64}  # as an older omnivchat wrote it
    (out / "manifest.json").write_text(json.dumps(manifest))
    again = run(small_bench, server, out)
    assert again.resumed and (again.reused, server.count) == (4, 4)  # nothing sent again
    assert len(again.notes) == 1 and "version 0.0.9, now" in again.notes[0]
    log = [json.loads(line) for line in (out / "invocations.jsonl").read_text().splitlines()]
    assert [entry["package"]["version"] for entry in log] == [omnivchat.__version__] * 2


def test_eval_cli_warns_when_resuming_a_run_of_another_version(small_bench, tmp_path):
    out = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(out), "--no-progress"]
    assert CliRunner().invoke(app, args).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["package"]["source_sha256"] = "f" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "made by other omnivchat code" in result.output and "4 done (4 reused)" in result.output


def damage(store, how):
    """Flip bytes of a closed run store: in its schema, inside a stored reply, or in a table's page header; return
    the damaged bytes with their neighbours."""
    with sqlite3.connect(store) as db:
        reply = db.execute("SELECT text FROM results LIMIT 1").fetchone()[0].encode()
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'requests'").fetchone()[0]
    db.close()
    data = bytearray(store.read_bytes())
    if how == "schema":
        at, byte = data.index(b"NOT NULL") + 4, 0xB1  # SQLite's own message then quotes bytes Python cannot decode
    elif how == "reply":
        at, byte = data.index(reply) + 5, 0xFF
    else:
        at, byte = page_size * (root - 1), 0  # the b-tree page type of the requests table
    data[at] = byte
    store.write_bytes(bytes(data))
    return bytes(data[at - 8 : at + 8])


@pytest.mark.parametrize("how", ["schema", "reply", "page"])
def test_a_store_with_flipped_bytes_is_one_line_and_kept(small_bench, tmp_path, how):
    # each was a traceback (UnicodeDecodeError, OperationalError, DatabaseError) from eval (issue 36.7)
    out = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(out), "--no-progress"]
    assert CliRunner().invoke(app, args).exit_code == 0
    damaged = damage(out / "store.sqlite", how)
    before = (out / "store.sqlite").read_bytes()
    result = CliRunner().invoke(app, args, terminal_width=400)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {out / 'store.sqlite'}: not a readable run store ("), lines
    assert "damaged" in lines[0] and len(lines[0]) < 400
    after = (out / "store.sqlite").read_bytes()
    if how == "reply":  # refused at the damaged item, once the others were taken as they were
        assert len(after) >= len(before) and damaged in after
    else:  # refused on opening
        assert after == before


def test_limit_can_grow_on_resume(small_bench, server, tmp_path):
    out = tmp_path / "run"
    assert run(small_bench, server, out, limit=2).done == 2
    grown = run(small_bench, server, out)
    assert (grown.done, grown.reused, server.count) == (4, 2, 4)


def test_adaptive_concurrency_backs_off_on_429(small_bench, server, tmp_path):
    server.script(*[Behaviour(status=429, retry_after="0.01")] * 4)
    summary = run(small_bench, server, tmp_path / "run", concurrency=4)
    assert summary.done == 4 and summary.attempts == 8


def test_an_empty_store_is_refused_not_taken_for_a_new_run(small_bench, tmp_path):
    # a zero-byte store.sqlite reads as a fresh SQLite database: every request would be sent (and billed) again
    out = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(out), "--no-progress"]
    assert CliRunner().invoke(app, args).exit_code == 0
    for side in out.glob("store.sqlite*"):
        side.unlink()
    (out / "store.sqlite").write_bytes(b"")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 2, result.output
    assert "store.sqlite: an empty file (0 bytes), not a run store" in result.output
    assert "Traceback" not in result.output and (out / "store.sqlite").stat().st_size == 0
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before  # nothing written
    with pytest.raises(RunError, match="an empty file"):
        RunStore(out / "store.sqlite")


def test_items_are_built_a_few_ahead_of_the_sends_not_all_at_the_start(tmp_path):
    """At most ``lookahead`` (twice the concurrency) items are being built, prepared or sent at once: the whole
    bench's media work is not done in the first seconds, competing with the event loop for the GIL."""
    import asyncio

    from omnivchat.routes import ChatRequest
    from omnivchat.runs import Pending, Runner, RunSummary

    finished_when_built: list[int] = []
    with LoopbackServer(default=Behaviour(text="An answer.", latency=0.05)) as server:
        route = get_route("omni-test", base_url=server.base_url, api_key=Secret("k"), media_input="none")
        store = RunStore(tmp_path / "store.sqlite")
        runner = Runner(route, store, concurrency=2, retry=FAST_RETRY, kind="candidate")
        summary = RunSummary(run_dir=tmp_path, total=20)

        def pending(n: int) -> Pending:
            def build() -> ChatRequest:
                finished_when_built.append(summary.done + summary.failed)
                return ChatRequest(item_id=f"q{n:02d}", text=f"question {n}")

            return Pending(f"q{n:02d}", build)

        async def go() -> None:  # one event loop: the route's session is closed in the loop that opened it
            try:
                await runner.run_all([pending(n) for n in range(20)], summary, progress=False, label="t")
            finally:
                await route.aclose()

        asyncio.run(go())
        store.close()
    assert summary.done == 20 and runner.lookahead == 4
    # item k is built once k - lookahead + 1 items have finished (the first four at once)
    assert all(done >= k - runner.lookahead + 1 for k, done in enumerate(finished_when_built)), finished_when_built
