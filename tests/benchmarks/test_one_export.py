"""One export schema for every benchmark (issue 24, item 2): a native run, a SocialOmni run and a run of a benchmark
read from its manifest's items (byo, as every public benchmark) all export omnivchat-benchmark-export-v1 through
the one `export`, refuse an incomplete run unless allowed, hold no key or server address, and read back through
`read_export`; the exports written before (omnivchat-export-v1, omnivchat-socialomni-export-v1) still load."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench_factory import RED_SQUARE_SCENE
from socialomni_factory import make_socialomni
from typer.testing import CliRunner

from omnivchat._files import InputError
from omnivchat.bench import Bench
from omnivchat.benchmarks import BenchmarkExport, export, read_export
from omnivchat.cli import app
from omnivchat.runs import RunError
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
SCHEMA = "omnivchat-benchmark-export-v1"


@pytest.fixture(scope="module")
def byo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo data file of two open questions on one real rendered clip."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("byo")
    render_clip(RED_SQUARE_SCENE, root / "media" / "red.mp4")
    rows = [
        {
            "qid": "q1",
            "question": "What colour is the square?",
            "answer": "red",
            "video": "media/red.mp4",
            "requires": ["video"],
        },
        {
            "qid": "q2",
            "question": "How many squares?",
            "answer": "one",
            "video": "media/red.mp4",
            "requires": ["video"],
        },
    ]
    (root / "open.json").write_text(json.dumps(rows))
    return root / "open.json"


@pytest.fixture(scope="module")
def socialomni_data(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_socialomni(tmp_path_factory.mktemp("socialomni"))


def _key() -> str:
    return "sk-" + secrets.token_hex(16)  # built at run time: no key-like string in the test's source


def _args(kind: str, data: Any, base_url: str, out: Path, key_file: Path) -> list[str]:
    """The eval command of each kind, against ``base_url`` with the key in ``key_file`` (one request at a time)."""
    common = ["--base-url", base_url, "--key-file", str(key_file), "--key-field", "K", "-o", str(out)]
    common += ["--model", "omni-test", "--no-progress", "--concurrency", "1"]
    if kind == "native":
        return ["eval", "--bench", str(data), *common, "--max-attempts", "1"]
    if kind == "byo":
        return ["eval", "--benchmark", "byo", "--data", str(data), *common, "--max-attempts", "1"]
    annotations, media, _ = data
    flags = ["--tasks", "when", "--limit", "2"]
    return ["socialomni", "evaluate", "--annotations", str(annotations), "--media", str(media), *common, *flags]


Kinds = Callable[[str], Any]


@pytest.fixture
def data_of(small_bench: Bench, byo_data: Path, socialomni_data: Any) -> Kinds:
    return {"native": small_bench.root, "byo": byo_data, "socialomni": socialomni_data}.__getitem__


@pytest.mark.parametrize(("kind", "benchmark"), [("native", "omnivchat"), ("byo", "byo"), ("socialomni", "socialomni")])
def test_every_benchmark_exports_the_one_schema(kind: str, benchmark: str, data_of: Kinds, tmp_path: Path) -> None:
    """The first request fails (HTTP 400): the export is refused, naming the run; allowed, it is incomplete with
    the failed record; resumed, it is complete. Each export has the one schema, reads back equal through
    read_export, and holds neither the key nor the server's address (nor a key variable, base URL or endpoint)."""
    key = _key()
    key_file = tmp_path / "keys.env"
    key_file.write_text(f"K={key}\n")
    out = tmp_path / "run"
    with LoopbackServer(default=Behaviour(text="YES"), api_key=key) as server:
        server.script(Behaviour(status=400, error_message="no such model"))
        first = runner.invoke(app, _args(kind, data_of(kind), server.base_url, out, key_file))
        assert first.exit_code in (0, 1), first.output  # a run with a failed item may say so by its exit code
        with pytest.raises(RunError, match="run is incomplete") as refused:
            export(out)
        assert str(out) in str(refused.value) and "--allow-incomplete" in str(refused.value)
        cli = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "refused.json")])
        assert cli.exit_code == 2 and "incomplete" in cli.output and not (tmp_path / "refused.json").exists()
        partial = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "partial.json"), "--allow-incomplete"])
        assert partial.exit_code == 0, partial.output
        resumed = runner.invoke(app, _args(kind, data_of(kind), server.base_url, out, key_file))
        assert resumed.exit_code == 0, resumed.output
        port = str(server.port)
    whole = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "whole.json")])
    assert whole.exit_code == 0, whole.output
    if kind != "socialomni":  # a judging directory is SocialOmni's: refused, never silently ignored
        judging = runner.invoke(app, ["export", str(out), "-o", str(tmp_path / "j.json"), "--judging", str(tmp_path)])
        assert judging.exit_code == 2 and not (tmp_path / "j.json").exists()
        assert f"the {benchmark} benchmark does not take --judging (export)" in " ".join(judging.output.split())
    for name, status in (("partial.json", "incomplete"), ("whole.json", "complete")):
        text = (tmp_path / name).read_text()
        data = json.loads(text)
        assert data["schema"] == SCHEMA and data["benchmark"] == benchmark and data["status"] == status
        for hidden in (key, "127.0.0.1", port, "api_key_env", "base_url", "endpoint"):
            assert hidden not in text, (name, hidden)
        back = read_export(tmp_path / name)
        assert isinstance(back, BenchmarkExport) and back.dump() == data
    partial_data = read_export(tmp_path / "partial.json")
    failed = [r for r in partial_data.records if r.status == "failed"]
    assert len(failed) == 1 and failed[0].error_kind == "http_error" and "no such model" in str(failed[0].error)
    assert partial_data.incomplete_reasons and sum(c.failed for c in partial_data.counts.values()) == 1
    complete = read_export(tmp_path / "whole.json")
    assert all(r.status == "done" and r.reply is not None and r.request_sha256 for r in complete.records)
    assert complete.model_dump() == export(out).model_dump()
    if kind == "socialomni":  # its own per record and per run: the parsed prediction, the metrics
        assert {r.meta["prediction"] for r in complete.records} == {"YES"}
        assert complete.extra["metrics"]["when"]["n"] == 2 and complete.extra["judge_substitution"] is None
    if kind == "native":
        assert complete.records[0].meta["subcategory"] and complete.extra["prompts"] == {"system": "omnivchat default"}


def test_an_old_native_export_loads_as_the_one_schema(tmp_path: Path) -> None:
    """An omnivchat-export-v1 file as the code before one schema wrote it (every field of its records and counts)
    loads: the item's own fields go to ``meta``, the error keeps its kind, the counts become the candidate task's."""
    cost = {"spent_usd": 0.01, "priced": 1, "unknown": {}}
    old = {
        "schema": "omnivchat-export-v1",
        "status": "incomplete",
        "simulated": True,
        "prompts": {"system": "omnivchat default"},
        "manifest": {"protocol": "omnivchat-run-v1", "benchmark": "omnivchat", "route": {"kind": "sim"}},
        "counts": {
            "instances": 3,
            "done": 1,
            "failed": 1,
            "not_run": 1,
            "failure_kinds": {"http_error": 1},
            "tokens": {"total_tokens": 12.0},
            "cost": {"total": cost, "by_kind": {"candidate": cost}},
        },
        "records": [
            {
                "id": "s1",
                "subcategory": "SVMR",
                "language": "en",
                "source": "studio",
                "status": "done",
                "reply": "Hi.",
                "reasoning": "thought",
                "finish_reason": "stop",
                "usage": {"total_tokens": 12},
                "delivered": {"video": True},
                "error_kind": None,
                "error": None,
                "attempts": 1,
                "request_sha256": "a" * 64,
                "cost": cost,
                "redacted": False,
            },
            {"id": "s2", "subcategory": "SIA", "status": "failed", "error_kind": "http_error", "error": "HTTP 400"},
        ],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    back = read_export(tmp_path / "old.json")
    assert back.schema_ == SCHEMA and back.benchmark == "omnivchat" and back.status == "incomplete"
    first, second = back.records
    assert (first.task, first.id, first.reply, first.reasoning, first.request_sha256) == (
        "candidate",
        "s1",
        "Hi.",
        "thought",
        "a" * 64,
    )
    assert first.meta == {"subcategory": "SVMR", "language": "en", "source": "studio"} and first.delivered
    assert first.cost is not None and first.cost.spent_usd == 0.01 and first.error is None
    assert (second.error_kind, second.error, second.meta) == (
        "http_error",
        "http_error: HTTP 400",
        {"subcategory": "SIA"},
    )
    assert back.counts["candidate"].model_dump() == {"declared": 3, "done": 1, "failed": 1, "not_run": 1}
    assert back.failure_kinds == {"http_error": 1} and back.tokens == {"total_tokens": 12.0}
    assert back.cost is not None and back.cost.total.spent_usd == 0.01
    assert back.extra == {"simulated": True, "prompts": {"system": "omnivchat default"}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "cannot read"),
        ('{"schema": "omnivchat-export-v1", "status": "complete", "records": []}', "not a valid export"),
        ('{"schema": "omnivchat-export-v1", "status": "x", "counts": {"instances": 1}}', "not a valid export"),
        ('{"schema": "omnivchat-socialomni-export-v1", "status": "x", "items": [3]}', "not a valid export"),
        ('{"schema": "omnivchat-benchmark-export-v1", "status": "x", "records": [{"id": 1}]}', "not a valid export"),
    ],
)
def test_a_malformed_export_is_one_line_naming_the_file(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_export(path)
    message = str(caught.value)
    assert str(path) in message and expected in message and "\n" not in message
