"""The key never reaches disk or the console, whatever the server sends (issue 11, item 1).

A hostile loopback server echoes the very key each request carried into every place a client may keep: HTTP
error bodies (JSON and HTML, 4xx and 5xx), a stream chunk that is not JSON, an error event, a finish reason,
the reply text and reasoning, the model name, the usage object, response headers, and long bodies where the
key repeats so that any cut splits one. Every command that talks to a server runs against it, then the
commands that read what was written (export, score, report, runs show). Then every file under the test's
directory (SQLite pages and WAL files read raw), the route-check registry, the media cache and all output are
searched for the key and for any 8-character piece of it, raw or in base64.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.testing import LoopbackServer, hostile_behaviours, rotation

runner = CliRunner()
PLACES = sorted(hostile_behaviours())
KEY_ENV = "OMNIVCHAT_TEST_JUDGE_KEY"
VERDICT = '{"hits": [1, 2], "reasoning": "fine"}'


def invoke(scan, label: str, args: list[str]):
    """Run one command; a crash (not an exit status) is a bug, and what it would print is scanned too, warnings
    included (a user sees them on stderr)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = scan.add_result(label, runner.invoke(app, [str(a) for a in args]))
    scan.add_text(f"{label}: warnings", "\n".join(str(w.message) for w in caught))
    assert result.exception is None or isinstance(result.exception, SystemExit), (label, result.output)
    return result


def read_what_was_written(scan, run: Path, tmp_path: Path, *score_args: str) -> None:
    """The commands that read a run back: export, score (scores.json), report (HTML), runs show."""
    invoke(scan, "export", ["export", run, "-o", tmp_path / "export.json", "--allow-incomplete"])
    invoke(scan, "score", ["score", run, "--allow-incomplete", *score_args])
    invoke(scan, "report", ["report", run, "-o", tmp_path / "report.html"])
    invoke(scan, "runs show", ["runs", "show", run])


def eval_args(bench: Path, model: str, base_url: str, out: Path, key_file: Path) -> list:
    return [
        "eval", "--bench", bench, "--model", model, "--base-url", base_url, "-o", out,
        "--key-file", key_file, "--key-field", "OMNIVCHAT_TEST_KEY", "--max-attempts", "1", "--no-progress",
    ]  # fmt: skip


@pytest.mark.parametrize("place", PLACES)
def test_eval_openai_route(place, small_bench, tmp_path, key_file, scan):
    run = tmp_path / "run"
    with LoopbackServer(hostile_behaviours()[place]) as server:
        invoke(scan, "eval", eval_args(small_bench.root, "hostile-omni", server.base_url, run, key_file))
        assert server.chat_requests, "nothing was sent"
    read_what_was_written(scan, run, tmp_path)
    scan.assert_clean()


@pytest.mark.parametrize("place", PLACES)
def test_eval_gemini_native_route(place, small_bench, tmp_path, key_file, scan):
    pytest.importorskip("google.genai")
    run = tmp_path / "run"
    with LoopbackServer(hostile_behaviours()[place]) as server:
        invoke(scan, "eval", eval_args(small_bench.root, "gemini:hostile-gemini", server.url, run, key_file))
        assert server.requests, "nothing was sent"
    read_what_was_written(scan, run, tmp_path)
    scan.assert_clean()


def judges_file(tmp_path: Path, base_url: str, names=("J",)) -> Path:
    path = tmp_path / "judges.json"
    judges = [{"name": n, "model": f"judge-{n}", "base_url": base_url, "api_key_env": KEY_ENV} for n in names]
    path.write_text(json.dumps({"judges": judges, "panels": {"default": list(names)}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("place", PLACES)
def test_judge(place, small_bench, tmp_path, key, scan, monkeypatch):
    from omnivchat.benchmarks.native import run_eval
    from omnivchat.routes import get_route

    monkeypatch.setenv(KEY_ENV, key)
    run = tmp_path / "run"
    run_eval(small_bench, get_route("sim:healthy"), run, system_prompt="x", progress=False)
    with LoopbackServer(hostile_behaviours(reply=VERDICT)[place]) as server:
        judges = judges_file(tmp_path, server.base_url)
        args = ["judge", run, "--judges", judges, "--style-judge", "J", "--max-attempts", "1", "--no-progress"]
        invoke(scan, "judge", args)
        assert server.chat_requests, "nothing was sent"
    read_what_was_written(scan, run, tmp_path, "--judges", str(judges), "--panel", "J")
    scan.assert_clean()


@pytest.mark.parametrize("place", PLACES)
def test_check_route(place, tmp_path, key_file, scan):
    with LoopbackServer(hostile_behaviours()[place]) as server:
        args = [
            "check-route", "--model", "hostile-omni", "--base-url", server.base_url, "-o", tmp_path / "check.json",
            "--key-file", key_file, "--key-field", "OMNIVCHAT_TEST_KEY",
        ]  # fmt: skip
        invoke(scan, "check-route", args)
        assert len(server.chat_requests) == 2
    assert (tmp_path / "home" / "route-checks.jsonl").is_file()  # the registry is in the scan
    scan.assert_clean()


def test_ablate_every_place_in_turn(small_bench, tmp_path, key_file, scan):
    out = tmp_path / "ablation"
    behaviours = hostile_behaviours()
    with LoopbackServer(rules=rotation(behaviours[p] for p in PLACES)) as server:
        args = [
            "ablate", "--bench", small_bench.root, "--model", "hostile-omni", "--base-url", server.base_url,
            "-o", out, "--key-file", key_file, "--key-field", "OMNIVCHAT_TEST_KEY", "--skip-self-check",
            "--no-progress",
        ]  # fmt: skip
        invoke(scan, "ablate", args)
        assert len(server.chat_requests) >= len(PLACES)  # every place was served at least once
    for condition in sorted(p for p in out.iterdir() if (p / "store.sqlite").is_file()):
        invoke(scan, "export", ["export", condition, "-o", tmp_path / f"{condition.name}.json", "--allow-incomplete"])
    invoke(scan, "report", ["report", out, "-o", tmp_path / "report.html"])
    scan.assert_clean()


def test_socialomni_evaluate_judge_rescore_export(tmp_path, key, key_file, scan, monkeypatch):
    from socialomni_factory import make_socialomni

    annotations, media, contexts = make_socialomni(tmp_path / "socialomni")
    monkeypatch.setenv(KEY_ENV, key)

    def evaluate(run: Path, rules) -> None:
        with LoopbackServer(rules=rules) as server:
            args = [
                "socialomni", "evaluate", "--annotations", annotations, "--media", media, "--output", run,
                "--model", "dashscope/qwen3.8-omni-flash", "--base-url", server.base_url,
                "--key-file", key_file, "--key-field", "OMNIVCHAT_TEST_KEY", "--limit", "4", "--no-progress",
            ]  # fmt: skip
            invoke(scan, "socialomni evaluate", args)
            assert server.chat_requests, "nothing was sent"

    # Every place in turn; then a run whose answers all complete (the key in their text, model and usage), as
    # judging needs every When and How record.
    behaviours = hostile_behaviours(reply="A")
    evaluate(tmp_path / "so-hostile", rotation(behaviours[p] for p in PLACES))
    run = tmp_path / "so-run"
    evaluate(run, rotation([behaviours["reply"], behaviours["reply-long"]]))
    judged = hostile_behaviours(reply="75")
    with LoopbackServer(rules=rotation(judged[p] for p in PLACES)) as server:
        judges = judges_file(tmp_path, server.base_url, names=("gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni"))
        args = ["socialomni", "judge", run, "--contexts", contexts, "--judges", judges, "--no-progress"]
        invoke(scan, "socialomni judge", args)
        # 14 verdict requests, each answered by the next place in turn (the eval above takes every place)
        assert server.count >= min(14, len(PLACES))
        sent = server.count
        args = [
            "socialomni", "rescore", "--run", run, "--contexts", contexts, "--model", "hostile", "--judges", judges,
            "-o", tmp_path / "rescored", "--no-progress",
        ]  # fmt: skip
        invoke(scan, "socialomni rescore", args)
        assert server.count > sent
    for name in ("so-hostile", "so-run"):
        args = ["socialomni", "export", tmp_path / name, "-o", tmp_path / f"{name}.json", "--allow-incomplete"]
        invoke(scan, "socialomni export", args)
    scan.assert_clean()
