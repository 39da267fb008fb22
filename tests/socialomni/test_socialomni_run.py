"""SocialOmni on the shared runner, end to end against loopback servers: generation, panel, rescoring, export."""

from __future__ import annotations

import csv
import json

import pytest
from socialomni_factory import make_socialomni
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.media import probe
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()
SECRET = "so-test-SECRET-9c1d7e3f2a"
STANDARD = ("gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_socialomni(tmp_path_factory.mktemp("socialomni"))


def candidate_rules(request_json):
    text = message_text(request_json)
    if "Target participant:" in text:
        return Behaviour(text="Sure, let me start: I think we should begin.")
    if "(A, B, C or D)" in text or "\nD." in text:  # a Who question: four lettered options
        return Behaviour(text="B")
    return Behaviour(text="A")  # When: YES


def judge_rules(request_json):
    return Behaviour(text="75")


def evaluate_args(dataset, base_url, out, key_file, *extra):
    annotations, media, _ = dataset
    return [
        "socialomni",
        "evaluate",
        "--annotations",
        str(annotations),
        "--media",
        str(media),
        "--output",
        str(out),
        "--model",
        "dashscope/qwen3.8-omni-flash",
        "--base-url",
        base_url,
        "--key-file",
        str(key_file),
        "--key-field",
        "K",
        "--limit",
        "4",
        "--no-progress",
        *extra,
    ]


def judges_file(tmp_path, base_url, names=STANDARD):
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": [
        {"name": n, "model": f"judge-{n}", "base_url": base_url, "api_key_env": None, "max_concurrency": 2}
        for n in names
    ]}))  # fmt: skip
    return path


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "company.env"
    path.write_text(f"K={SECRET}\n")
    return path


def test_evaluate_judge_export_complete(dataset, tmp_path, key_file):
    out = tmp_path / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        result = runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file))
        assert result.exit_code == 0, result.output
        sent = server.chat_requests
        again = runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file))
        assert again.exit_code == 0 and server.count == len(sent)  # resumed: nothing sent twice
    assert len(sent) == 3 + 4 + 3  # Who 3 (fixture), When 4, How: the 3 gold-YES items
    first = sent[0].json
    content = first["messages"][0]["content"]
    assert [m["role"] for m in first["messages"]] == ["user"] and content[0]["type"] == "video_url"
    assert content[1]["type"] == "text" and "full_asr" not in json.dumps(first)
    assert first["temperature"] == 0.3 and first["top_p"] == 1.0 and first["max_tokens"] == 8192
    assert first["enable_thinking"] is False and first["modalities"] == ["text"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["who"]["n"] == 3 and summary["who"]["correct"] == 1  # answered "B" three times, gold B once
    assert summary["when"]["correct"] == 3 and summary["when"]["n"] == 4
    assert summary["who_lenient"]["n"] == 3  # reported apart, never instead of the strict metric
    prefixes = sorted((out / "prefixes").glob("*.mp4"))
    assert prefixes and all(abs(probe(p).duration - 2.0) < 0.05 or probe(p).duration < 2.0 for p in prefixes)
    with LoopbackServer(rules=judge_rules) as judges_server:
        judged = runner.invoke(
            app,
            [
                "socialomni",
                "judge",
                str(out),
                "--contexts",
                str(dataset[2]),
                "--judges",
                str(judges_file(tmp_path, judges_server.base_url)),
                "--no-progress",
            ],
        )
        assert judged.exit_code == 0, judged.output
        assert judges_server.count == 3 * 3
        body = judges_server.chat_requests[0].json
        assert body["temperature"] == 0.0 and body["top_p"] == 1.0 and body["max_tokens"] == 8192
        assert isinstance(body["messages"][0]["content"], str)
    metrics = json.loads((out / "judging" / "summary.json").read_text())["metrics"]
    assert metrics["qgold"] == 75.0 and metrics["cov_plus"] == 100.0 and metrics["qens"] == 75.0
    exported = runner.invoke(app, ["socialomni", "export", str(out), "-o", str(tmp_path / "results.json")])
    assert exported.exit_code == 0, exported.output
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["status"] == "complete" and data["judge_panel"] == "standard"
    assert data["metrics"]["when"]["accuracy"] == 75.0
    dumped = (tmp_path / "results.json").read_text()
    assert SECRET not in dumped and "127.0.0.1" not in dumped
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_failures_stay_in_denominators_and_make_exports_incomplete(dataset, tmp_path, key_file):
    out = tmp_path / "run"
    with LoopbackServer(default=Behaviour(text="A")) as server:  # a script is consumed only when no rule answers
        server.script(Behaviour(status=429, retry_after="0.01"), Behaviour(finish_reason="length"))
        result = runner.invoke(
            app, evaluate_args(dataset, server.base_url, out, key_file, "--tasks", "when", "--concurrency", "1")
        )
        assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())["when"]
    assert summary["n"] == 4 and summary["request_failures"] == 1  # `length` is a failure, 429 was retried
    refused = runner.invoke(app, ["socialomni", "export", str(out), "-o", str(tmp_path / "x.json")])
    assert refused.exit_code == 2 and "incomplete" in refused.output
    partial = runner.invoke(
        app, ["socialomni", "export", str(out), "-o", str(tmp_path / "x.json"), "--allow-incomplete"]
    )
    assert partial.exit_code == 0
    data = json.loads((tmp_path / "x.json").read_text())
    assert data["status"] == "incomplete" and data["metrics"]["qgold"] is None


def test_partial_panel_gives_null_quality_and_strict_panels(dataset, tmp_path, key_file):
    out = tmp_path / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        assert (
            runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file, "--tasks", "when,how")).exit_code
            == 0
        )
    with LoopbackServer(rules=judge_rules) as judges_server:
        path = judges_file(tmp_path, judges_server.base_url)
        args = ["socialomni", "judge", str(out), "--contexts", str(dataset[2]), "--judges", str(path), "--no-progress"]
        only = runner.invoke(app, [*args, "--only-judge", "gpt-5.6-sol"])
        assert only.exit_code == 1 and "incomplete" in only.output
        metrics = json.loads((out / "judging" / "summary.json").read_text())["metrics"]
        assert metrics["qgold"] is None and metrics["qens"] is None
        full = runner.invoke(app, args)
        assert full.exit_code == 0 and judges_server.count == 9  # the first judge's scores came from the cache
        two = judges_file(tmp_path, judges_server.base_url, names=STANDARD[:2])
        strict = runner.invoke(app, [*args[:-3], "--judges", str(two), "--no-progress", "-o", str(tmp_path / "j2")])
        assert strict.exit_code == 2


def test_rescore_archive_has_no_qgold(dataset, tmp_path):
    archive = tmp_path / "ensemble_response_scores.csv"
    with archive.open("w", newline="") as handle:
        writer = csv.DictWriter(
            handle, ["model", "display_model", "item_id", "context", "target_question", "reference", "candidate"]
        )
        writer.writeheader()
        writer.writerow(
            {
                "model": "m1",
                "display_model": "M1",
                "item_id": "video_0001",
                "context": "c",
                "target_question": "What should Anna say?",
                "reference": "r",
                "candidate": "Hi all.",
            }
        )
        writer.writerow(
            {
                "model": "m1",
                "display_model": "M1",
                "item_id": "video_0003",
                "context": "c",
                "target_question": "What should Carla say?",
                "reference": "r",
                "candidate": "",
            }
        )
    with LoopbackServer(rules=judge_rules) as judges_server:
        result = runner.invoke(
            app,
            [
                "socialomni",
                "rescore",
                "--paper",
                str(archive),
                "--judges",
                str(judges_file(tmp_path, judges_server.base_url)),
                "-o",
                str(tmp_path / "rs"),
                "--no-progress",
            ],
        )
        assert result.exit_code == 0, result.output
        assert judges_server.count == 3  # the empty answer is not judged
    data = json.loads((tmp_path / "rs" / "results.json").read_text())
    (model,) = data["models"]
    assert model["metrics"]["qgold"] is None and model["metrics"]["qens"] is not None


def test_media_escape_is_refused_before_any_request(dataset, tmp_path, key_file):
    annotations, media, _ = dataset
    bad = tmp_path / "bad"
    (bad / "level_1").mkdir(parents=True)
    rows = json.loads((annotations / "level_1" / "dataset.json").read_text())
    rows[0]["video_path"] = "../../etc/passwd"
    (bad / "level_1" / "dataset.json").write_text(json.dumps(rows))
    with LoopbackServer(rules=candidate_rules) as server:
        result = runner.invoke(
            app, evaluate_args((bad, media, None), server.base_url, tmp_path / "r", key_file, "--tasks", "who")
        )
        assert result.exit_code == 2 and server.count == 0


def test_who_request_failure_is_scored_with_request_failures_and_foreign_judging_refused(dataset, tmp_path, key_file):
    def rules(request_json):
        if "0:01 to 0:02" in message_text(request_json):  # one Who item: a non-retryable failure
            return Behaviour(status=400, error_message="bad request")
        return candidate_rules(request_json)

    out, other = tmp_path / "run", tmp_path / "other"
    with LoopbackServer(rules=rules) as server:
        assert runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file)).exit_code == 0
        assert (
            runner.invoke(app, evaluate_args(dataset, server.base_url, other, key_file, "--max-tokens", "99")).exit_code
            == 0
        )
    with LoopbackServer(rules=judge_rules) as judges_server:
        path = judges_file(tmp_path, judges_server.base_url)
        for run in (out, other):
            args = [
                "socialomni",
                "judge",
                str(run),
                "--contexts",
                str(dataset[2]),
                "--judges",
                str(path),
                "--no-progress",
            ]
            assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["socialomni", "export", str(out), "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["status"] == "scored_with_request_failures"
    assert data["metrics"]["who"]["n"] == 3 and data["metrics"]["who"]["request_failures"] == 1
    mixed = runner.invoke(
        app, ["socialomni", "export", str(out), "--judging", str(other / "judging"), "-o", str(tmp_path / "m.json")]
    )
    assert mixed.exit_code == 2 and "another candidate run" in mixed.output
