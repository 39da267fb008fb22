"""Replicas: one model on several real loopback servers. Least-outstanding dispatch, a replica killed mid-run (its
items finish on the other, nothing completed is sent twice), all replicas down then one back, resuming on another
replica set, the replica of every attempt in the store and in `runs show`, and bad --endpoints files."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import Bench, Instance, load_bench, save_bench
from omnivchat.benchmarks import export as export_run
from omnivchat.benchmarks import status as run_status
from omnivchat.benchmarks.native import run_eval
from omnivchat.cli import app
from omnivchat.routes import ReplicaError, ReplicaPolicy, ReplicaSpec, RouteError, get_route, load_endpoints
from omnivchat.routes._replicas import Replica, ReplicaSet, label_of
from omnivchat.runs import RetryPolicy, RunStore
from omnivchat.runs._store import SCHEMA
from omnivchat.testing import Behaviour, LoopbackServer

FAST = RetryPolicy(max_attempts=4, backoff_base=0.01, backoff_cap=0.05)
QUICK = ReplicaPolicy(fail_threshold=2, cooldown_s=0.2, max_cooldown_s=0.4, probe_timeout_s=1.0)
runner = CliRunner()


def wide_bench(small: Bench, n: int) -> Bench:
    """``n`` items sharing one rendered clip, each with its own typed question (so each request is its own)."""
    clip = small.instances[0].turns[0].video
    instances = [
        Instance.model_validate(
            {
                "id": f"w{i:02d}",
                "subcategory": "SVMR",
                "language": "en",
                "turns": [{"video": clip, "text": f"Question number {i}."}],
                "reference": "An answer.",
                "rubric": [{"tier": 0, "text": "The reply is in en."}, {"tier": 1, "text": "Answers."}],
            }
        )
        for i in range(n)
    ]
    save_bench(Bench(root=small.root, info=small.info, instances=instances))
    return load_bench(small.root)


def replica_route(urls, concurrency=None, policy=QUICK, model="omni-test", **overrides):
    specs = [ReplicaSpec(u, concurrency) for u in urls]
    return get_route(model, replicas=specs, replica_policy=policy, no_key=True, timeout_s=5.0, **overrides)


def run(bench, route, out, **kwargs):
    return run_eval(bench, route, out, system_prompt="Be brief.", retry=FAST, progress=False, **kwargs)


def attempts(out: Path) -> list[dict]:
    with RunStore(out / "store.sqlite", read_only=True) as store:
        return store.attempts()


def test_a_replica_killed_mid_run_its_items_finish_on_the_other(small_bench, tmp_path):
    bench = wide_bench(small_bench, 12)
    with (
        LoopbackServer(default=Behaviour(text="From A.", latency=0.3)) as a,
        LoopbackServer(default=Behaviour(text="From B.", latency=0.05)) as b,
    ):
        arrived = []

        def kill_soon(payload):  # A dies 0.1 s after its first request arrives, with requests in flight
            arrived.append(payload)
            if len(arrived) == 1:
                threading.Timer(0.1, a.close).start()

        a.rules = kill_soon
        out = tmp_path / "run"
        summary = run(bench, replica_route([a.base_url, b.base_url], concurrency=2), out)
        assert (summary.done, summary.failed) == (12, 0)
        rows = attempts(out)
        by_replica = Counter(r["replica"] for r in rows)
        assert set(by_replica) == {label_of(a.base_url), label_of(b.base_url)}
        ok = Counter(r["key"] for r in rows if r["status"] == "ok")
        assert len(ok) == 12 and set(ok.values()) == {1}  # each item answered once: nothing completed sent again
        on_a = [r for r in rows if r["replica"] == label_of(a.base_url)]
        failed_on_a = [r for r in on_a if r["status"] == "failed"]
        assert failed_on_a and {r["error_kind"] for r in failed_on_a} <= {"connection", "stream_cut"}
        # B answered every request it received, each for an item nobody had answered: nothing completed on A
        # was sent again
        on_b = [r for r in rows if r["replica"] == label_of(b.base_url)]
        assert len(b.chat_requests) == len(on_b) and all(r["status"] == "ok" for r in on_b)
        assert len(on_b) + len(on_a) - len(failed_on_a) == 12
        status = run_status(out)
        assert status.replicas[label_of(b.base_url)] == {"ok": len(on_b)}
        assert status.replicas[label_of(a.base_url)]["failed"] == len(failed_on_a)
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["route"]["endpoint"] == "replicas:/v1/chat/completions"
        assert [r["url"] for r in manifest["replicas"]] == [label_of(a.base_url), label_of(b.base_url)]
        export = export_run(out).model_dump(mode="json", by_alias=True)
        assert "replicas" not in export["manifest"] and str(b.port) not in json.dumps(export)

        # Resumed on another replica set (B and a new C): the same run; nothing is sent again.
        with LoopbackServer() as c:
            sent_before = len(b.chat_requests)
            again = run(bench, replica_route([b.base_url, c.base_url], concurrency=2), out)
            assert again.resumed and (again.reused, again.attempts) == (12, 0)
            assert len(b.chat_requests) == sent_before and c.count == 0
            log = [json.loads(line) for line in (out / "invocations.jsonl").read_text().splitlines()]
            assert [r["url"] for r in log[-1]["replicas"]] == [label_of(b.base_url), label_of(c.base_url)]


def test_least_outstanding_dispatch_sends_most_to_the_fast_replica(small_bench, tmp_path):
    bench = wide_bench(small_bench, 16)
    with (
        LoopbackServer(default=Behaviour(text="Slow.", latency=1.0)) as slow,
        LoopbackServer(default=Behaviour(text="Fast.", latency=0.02)) as fast,
    ):
        summary = run(bench, replica_route([slow.base_url, fast.base_url], concurrency=2), tmp_path / "run")
        assert summary.done == 16
        n_slow, n_fast = len(slow.chat_requests), len(fast.chat_requests)
        assert n_slow + n_fast == 16
        assert n_slow >= 1 and n_fast >= 3 * n_slow, (n_slow, n_fast)


def test_all_replicas_down_then_one_back(small_bench, tmp_path):
    bench = small_bench
    with LoopbackServer() as a, LoopbackServer() as b:
        urls, port_a = [a.base_url, b.base_url], a.port
    route = replica_route(urls)  # both are down now: every connection is refused
    notes: list[str | None] = []
    route.replicas.on_note = notes.append
    back: list[LoopbackServer] = []
    revive = threading.Timer(1.0, lambda: back.append(LoopbackServer(port=port_a).start()))
    revive.start()
    try:
        summary = run(bench, route, tmp_path / "run")
    finally:
        revive.join()
        for server in back:
            server.close()
    assert (summary.done, summary.failed) == (4, 0)  # waited for the cool-down instead of failing
    assert any(n and n.startswith("all 2 replicas drained: waiting") for n in notes)
    rows = attempts(tmp_path / "run")
    # A refused connection reached no server: the request waited for a replica within its one attempt.
    assert len(rows) == 4 and {(r["status"], r["replica"]) for r in rows} == {("ok", label_of(urls[0]))}
    assert len(back[0].chat_requests) == 4


def test_replica_set_dispatch_is_bounded_and_avoids_the_replica_that_failed():
    async def go():
        set_ = ReplicaSet.build(
            [ReplicaSpec("http://r1:8000/v1", 1), ReplicaSpec("http://r2:8000/v1", 2)],
            default_concurrency=4,
            policy=ReplicaPolicy(fail_threshold=2, cooldown_s=10.0),
        )

        async def never(_: Replica) -> bool:
            return False

        first = await set_.acquire(never)
        second = await set_.acquire(never)
        third = await set_.acquire(never)
        r1, r2 = "http://r1:8000/v1", "http://r2:8000/v1"
        assert (first.label, second.label, third.label) == (r1, r2, r2)
        blocked = asyncio.ensure_future(set_.acquire(never))
        await asyncio.sleep(0.05)
        assert not blocked.done()  # both at their concurrency
        set_.release(first, "unhealthy")  # one failure: not drained yet
        assert (await blocked).label == "http://r1:8000/v1"
        set_.release(second, None)
        retry = await set_.acquire(never, avoid=("http://r1:8000/v1",))
        assert retry.label == "http://r2:8000/v1"
        set_.release(retry, None)
        r1 = set_.replicas[0]
        set_.release(r1, "unhealthy")  # the second in a row: drained
        assert r1.drained and r1.drained_until is not None
        assert (await set_.acquire(never)).label == "http://r2:8000/v1"
        r2 = set_.replicas[1]
        set_.release(r2, "refused")  # a refused connection drains at once
        assert r2.drained and set_.capacity == 3
        await set_.aclose()

    asyncio.run(go())


def test_cooldown_doubles_while_probes_fail():
    async def go():
        now = [0.0]
        set_ = ReplicaSet.build(
            [ReplicaSpec("http://r1:8000/v1")], default_concurrency=1, policy=ReplicaPolicy(cooldown_s=5.0)
        )
        set_.clock = lambda: now[0]
        replica = await set_.acquire(lambda _: asyncio.sleep(0, False))
        set_.release(replica, "refused")
        assert replica.drained_until == 5.0
        now[0] = 5.0
        probes = []

        async def down(r: Replica) -> bool:
            probes.append(r.label)
            return False

        waiting = asyncio.ensure_future(set_.acquire(down))
        await asyncio.sleep(0.05)
        assert probes == ["http://r1:8000/v1"] and replica.drained_until == 15.0  # 5 s, then 10 s
        assert set_.note == "all 1 replicas drained: waiting (next probe in 10 s; giving up in 600 s)"
        waiting.cancel()
        await set_.aclose()

    asyncio.run(go())


def test_a_replica_set_down_for_too_long_fails_its_requests_instead_of_waiting_forever():
    """A wrong port or a job that never started must end the run with a reason, not look slow forever."""

    async def go() -> str:
        set_ = ReplicaSet.build(
            [ReplicaSpec("http://r1:8000/v1"), ReplicaSpec("http://r2:8000/v1")],
            default_concurrency=1,
            policy=ReplicaPolicy(cooldown_s=0.05, max_cooldown_s=0.05, give_up_s=0.3),
        )

        async def down(_: Replica) -> bool:
            return False

        for _ in range(2):
            set_.release(await set_.acquire(down), "refused")
        try:
            with pytest.raises(RouteError) as info:
                await asyncio.wait_for(set_.acquire(down), timeout=5)
        finally:
            await set_.aclose()
        assert info.value.kind == "connection"
        return str(info.value)

    message = asyncio.run(go())
    assert "all 2 replicas unreachable" in message and "gave up" in message and "r1:8000" in message


# ---------------------------------------------------------------------------------------------- the store


def test_an_older_store_is_read_as_it_is_and_migrated_by_a_writer(tmp_path):
    path = tmp_path / "store.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)  # the tables as stores were first made: no replica, no fingerprint
    db.execute("INSERT INTO requests VALUES ('k', 'candidate', 'm', 'e', '{}', 1.0)")
    db.execute("INSERT INTO attempts (key, item_id, started, ended, status) VALUES ('k', 'i', 1.0, 2.0, 'ok')")
    db.execute("INSERT INTO results VALUES ('k', 'hi', '', 'stop', '{}', 'served-m', 0.1, '{}', 2.0)")
    db.commit()
    db.close()
    before = path.read_bytes()
    with RunStore(path, read_only=True) as store:
        assert store.attempts()[0]["replica"] is None
        assert store.result("k").system_fingerprint is None and store.result("k").model == "served-m"
        assert store.replica_counts() == {} and store.served()["candidate"][0]["fingerprint"] is None
    assert path.read_bytes() == before  # a reader changes nothing
    with RunStore(path) as store:  # a writer adds the columns
        columns = {row[1] for row in store._db.execute("PRAGMA table_info(attempts)")}
        assert "replica" in columns
        assert store.result("k").text == "hi"


# -------------------------------------------------------------------------------------------------- served


def test_a_served_model_that_changes_mid_run_is_flagged(small_bench, tmp_path):
    with LoopbackServer(default=Behaviour(text="New.", model="model-b", system_fingerprint="fp-2")) as server:
        server.script(*[Behaviour(text="Old.", model="model-a", system_fingerprint="fp-1")] * 2)
        route = get_route("omni-test", base_url=server.base_url, no_key=True, timeout_s=5.0)
        out = tmp_path / "run"
        run(small_bench, route, out, concurrency=1)
    status = run_status(out)
    served = status.served["candidate"]
    assert [(s.model, s.fingerprint, s.replies) for s in served] == [("model-a", "fp-1", 2), ("model-b", "fp-2", 2)]
    with RunStore(out / "store.sqlite", read_only=True) as store:
        assert {store.result(i["key"]).system_fingerprint for i in store.items()} == {"fp-1", "fp-2"}
    shown = runner.invoke(app, ["runs", "show", str(out)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "Served (candidate): model-a, fingerprint fp-1: 2 replies; model-b, fingerprint fp-2: 2 replies" in (
        shown.output
    )
    assert "warning: candidate: the served model changed during the run" in shown.output


def test_the_report_flags_served_changes_prompts_and_versions(small_bench, tmp_path):
    from omnivchat.cli.judging import score_run
    from omnivchat.report import load_inputs

    def scored(name, prompt, fingerprints):
        with LoopbackServer(default=Behaviour(text="A reply.", model="served")) as server:
            server.script(*[Behaviour(text="A reply.", model="served", system_fingerprint=f) for f in fingerprints])
            route = get_route("omni-test", base_url=server.base_url, no_key=True, timeout_s=5.0)
            run_eval(
                small_bench, route, tmp_path / name, system_prompt=prompt, retry=FAST, progress=False, concurrency=1
            )
        score_run(tmp_path / name, None, None, "rule", "mean", None, allow_incomplete=True)
        return tmp_path / name

    steady = scored("steady", "Be brief.", ["fp-1"] * 4)
    swapped = scored("swapped", "Be very brief.", ["fp-1", "fp-1", "fp-9", "fp-9"])
    manifest = json.loads((swapped / "manifest.json").read_text())
    manifest["package"]["version"] = "0.0.1"  # made by other code (recorded, never identity)
    (swapped / "manifest.json").write_text(json.dumps(manifest))
    warnings = load_inputs([steady, swapped]).warnings
    assert any("swapped/store.sqlite: candidate: the served build (system_fingerprint) changed" in w for w in warnings)
    assert any(w.startswith("the runs compared were made by different omnivchat versions") for w in warnings)
    assert any(w.startswith("the runs compared used different system prompts") for w in warnings)
    assert any(w.startswith("runs of omni-test were served by different models or builds") for w in warnings)
    assert not [w for w in load_inputs([steady]).warnings if "served" in w or "different" in w]


# ------------------------------------------------------------------------------------------- the command line


def test_eval_with_endpoints_file_and_runs_show_per_replica(small_bench, tmp_path):
    with LoopbackServer() as a, LoopbackServer() as b:
        endpoints = tmp_path / "endpoints.txt"
        endpoints.write_text(f"# two replicas\n{a.base_url} 2\n\n{b.base_url}\n")
        out = tmp_path / "run"
        args = ["eval", "--bench", str(small_bench.root), "--model", "omni-test", "--no-key", "-o", str(out)]
        result = runner.invoke(app, [*args, "--endpoints", str(endpoints), "--no-progress"])
        assert result.exit_code == 0, result.output
        assert a.count + b.count == 4 and a.count >= 1 and b.count >= 1
        # resumed with --base-url twice, in the other order: nothing is sent again
        again = runner.invoke(app, [*args, "--base-url", b.base_url, "--base-url", a.base_url, "--no-progress"])
        assert again.exit_code == 0, again.output
        assert a.count + b.count == 4 and "(4 reused)" in again.output
    shown = runner.invoke(app, ["runs", "show", str(out)], env={"COLUMNS": "200"})
    assert f"Replica {label_of(a.base_url)}: {a.count} attempts, 0 failed" in shown.output
    assert f"Replica {label_of(b.base_url)}: {b.count} attempts, 0 failed" in shown.output
    both = runner.invoke(app, [*args, "--endpoints", str(endpoints), "--base-url", a.base_url])
    assert both.exit_code == 2 and "not both" in both.output


BAD_ENDPOINTS = [
    ("e.txt", "http://a:8000/v1\n# fine\nnot-a-url\n", "e.txt:3: 'not-a-url' is not an http(s)://host/... base URL"),
    ("e.txt", "http://a:8000/v1 zero\n", "e.txt:1: concurrency must be a whole number of at least 1, got 'zero'"),
    ("e.txt", "http://a:8000/v1 4 extra\n", "e.txt:1: expected 'URL [CONCURRENCY]', got 3 words"),
    ("e.txt", "http://a:8000/v1\nhttp://a:8000/v1/\n", "e.txt:2: http://a:8000/v1 is listed twice (first at "),
    ("e.txt", "http://u:p@a:8000/v1\n", "e.txt:1: the URL embeds credentials"),
    ("e.txt", "http://a:8000/v1\nhttp://b:8000/api/v1\n", "e.txt:2: every replica must serve the same API path"),
    ("e.txt", "# nothing\n\n", "e.txt: no replica listed"),
    ("e.json", '[\n  "http://a:8000/v1",\n  "http://b:8000/v1",\n]\n', "e.json:4: not valid JSON"),
    ("e.json", '["http://a:8000/v1",\n {"url": "http://b:8000/v1", "concurrency": 0}]', "e.json:2: concurrency must"),
    ("e.yaml", "- http://a:8000/v1\n- {uri: http://b:8000/v1}\n", "e.yaml:2: expected a URL or a mapping with 'url'"),
    ("e.yaml", "- url: http://a:8000/v1\n  weight: 2\n", "e.yaml:1: unknown field 'weight'"),
    ("e.yaml", "url: http://a:8000/v1\n", "e.yaml:1: expected a list of replicas"),
    ("e.yml", "- [unclosed\n", "e.yml:2: not valid YAML"),
    ("e.txt", b"\xff\xfe\x00bad", "e.txt"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD_ENDPOINTS)
def test_bad_endpoints_files_are_named_with_their_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ReplicaError) as info:
        load_endpoints(path)
    assert str(info.value).startswith(str(tmp_path / message.split(":")[0]))
    assert message in str(info.value)


def test_a_good_endpoints_file_in_each_format(tmp_path):
    text = tmp_path / "e.txt"
    text.write_text("http://a:8000/v1   8  # a comment\nhttp://b:8001/v1\n")
    yaml_file = tmp_path / "e.yaml"
    yaml_file.write_text("- http://a:8000/v1\n- url: http://b:8001/v1\n  concurrency: 3\n")
    json_file = tmp_path / "e.json"
    json_file.write_text('[{"url": "http://a:8000/v1", "concurrency": 2}, "http://b:8001/v1"]')
    assert [(s.url, s.concurrency) for s in load_endpoints(text)] == [
        ("http://a:8000/v1", 8),
        ("http://b:8001/v1", None),
    ]
    assert [s.concurrency for s in load_endpoints(yaml_file)] == [None, 3]
    assert [s.concurrency for s in load_endpoints(json_file)] == [2, None]
    route = get_route("omni-test", replicas=load_endpoints(yaml_file), no_key=True)
    assert route.capacity == 8 + 3 and route.endpoint == "replicas:/v1/chat/completions"


def test_replicas_need_an_openai_compatible_route():
    with pytest.raises(ReplicaError, match="OpenAI-compatible"):
        get_route("gemini:gemini-x", replicas=[ReplicaSpec("http://a:1/v1")], api_key=None, no_key=True)
    with pytest.raises(ReplicaError, match="not both"):
        get_route("omni-test", replicas=[ReplicaSpec("http://a:1/v1")], base_url="http://b:1/v1", no_key=True)


def test_waiting_note_is_cleared_when_a_replica_takes_a_request():
    async def go():
        set_ = ReplicaSet.build([ReplicaSpec("http://r1:8000/v1")], default_concurrency=1)
        notes: list[str | None] = []
        set_.on_note = notes.append
        replica = await set_.acquire(lambda _: asyncio.sleep(0, True))
        set_.release(replica, "refused")
        replica.drained_until = time.monotonic()  # the cool-down is over: the next acquire probes it

        async def up(_: Replica) -> bool:
            return True

        assert (await set_.acquire(up)).label == "http://r1:8000/v1"
        assert notes[-1] is None
        await set_.aclose()

    asyncio.run(go())


def test_a_fingerprint_echoing_the_key_is_redacted_before_it_is_kept(small_bench, tmp_path):
    from omnivchat.routes import Secret
    from omnivchat.testing import API_KEY

    secret = "sk-replica-test-0123456789abcdef"
    echo = Behaviour(text="Hi.", system_fingerprint=f"fp-{API_KEY}")  # a hostile server: the key in the fingerprint
    with LoopbackServer(default=echo) as a, LoopbackServer(default=echo) as b:
        specs = [ReplicaSpec(a.base_url), ReplicaSpec(b.base_url)]
        route = get_route("omni-test", replicas=specs, api_key=Secret(secret), timeout_s=5.0)
        out = tmp_path / "run"
        run(small_bench, route, out)
        sent = a.chat_requests + b.chat_requests
        assert len(sent) == 4 and {r.headers["Authorization"] for r in sent} == {f"Bearer {secret}"}  # one key
    stored = (out / "store.sqlite").read_bytes() + (out / "manifest.json").read_bytes()
    assert secret.encode() not in stored
    status = run_status(out)
    assert all(secret not in (s.fingerprint or "") for s in status.served["candidate"])
