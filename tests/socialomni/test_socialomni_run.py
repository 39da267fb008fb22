"""SocialOmni on the shared runner, end to end against loopback servers: generation, panel, rescoring, export."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from socialomni_factory import make_socialomni
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.cli.socialomni import task_lines
from omnivchat.media import probe
from omnivchat.socialomni._run import candidate_records, record_key, summarize
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
    assert data["status"] == "complete" and data["extra"]["judge_panel"] == "standard"
    assert data["extra"]["metrics"]["when"]["accuracy"] == 75.0
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
    assert data["status"] == "incomplete" and data["extra"]["metrics"]["qgold"] is None


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
    assert data["extra"]["metrics"]["who"]["n"] == 3 and data["extra"]["metrics"]["who"]["request_failures"] == 1
    mixed = runner.invoke(
        app, ["socialomni", "export", str(out), "--judging", str(other / "judging"), "-o", str(tmp_path / "m.json")]
    )
    assert mixed.exit_code == 2 and "another candidate run" in mixed.output


# ------------------------------------------------------------------------------ completeness from the release


def flat(result):
    """A command's output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def drop_records(run, *labels):
    """Remove item records from a run's store: the state a run stopped before recording these items leaves."""
    with sqlite3.connect(run / "store.sqlite") as db:
        for label in labels:
            task = label.split("-", 1)[0]
            assert db.execute("DELETE FROM items WHERE item_id=? AND kind=?", (label, task)).rowcount == 1, label


def judge_args(run, contexts, judges, *extra):
    return [
        "socialomni",
        "judge",
        str(run),
        "--contexts",
        str(contexts),
        "--judges",
        str(judges),
        "--no-progress",
        *extra,
    ]


def rescore_run_args(run, contexts, judges, out):
    return [
        "socialomni", "rescore", "--run", str(run), "--contexts", str(contexts), "--model", "m",
        "--judges", str(judges), "-o", str(out), "--no-progress",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def complete_run(dataset, tmp_path_factory):
    """A complete --limit 4 run (Who 3, When 4, How 3), judged by the full panel."""
    root = tmp_path_factory.mktemp("complete")
    key = root / "company.env"
    key.write_text(f"K={SECRET}\n")
    out = root / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        assert runner.invoke(app, evaluate_args(dataset, server.base_url, out, key)).exit_code == 0
    with LoopbackServer(rules=judge_rules) as judges_server:
        judged = runner.invoke(app, judge_args(out, dataset[2], judges_file(root, judges_server.base_url)))
        assert judged.exit_code == 0, judged.output
    return out


def test_who_when_denominators_are_the_release_counts(complete_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(complete_run, run)
    drop_records(run, "who-2", "when-video_0002", "how-video_0003")
    summary = summarize(run)
    who, when, how = summary.who, summary.when, summary.how_generation
    assert who.n == 3 and who.n_missing == 1 and who.missing == ["2"] and not who.complete
    assert who.accuracy is None and who.request_failures == 0 and who.parse_failures == 0
    assert when.n == 4 and when.n_missing == 1 and when.accuracy is None and when.correct == 3
    assert summary.when_lenient.n == 4 and summary.when_lenient.accuracy is None
    assert how.n == 3 and how.n_missing == 1 and how.missing == ["video_0003"] and not how.complete
    lines = "\n".join(task_lines(summary))  # what `socialomni evaluate` prints
    assert "who: [yellow]incomplete[/]: 1 of 3 items missing" in lines
    assert "when: [yellow]incomplete[/]: 1 of 4 items missing" in lines
    assert "1 missing[/] (no record)" in lines and "run the same command again" in lines
    complete = "\n".join(task_lines(summarize(complete_run)))
    assert "incomplete" not in complete and "who: accuracy 33.33" in complete


def test_missing_or_failed_when_record_is_never_a_no(dataset, tmp_path, key_file):
    def rules(request_json):
        text = message_text(request_json)
        if "Anna" in text and "Target participant:" not in text:  # the When request of video_0001 fails
            return Behaviour(status=400, error_message="bad request")
        return candidate_rules(request_json)

    failed, dropped = tmp_path / "failed", tmp_path / "dropped"
    with LoopbackServer(rules=rules) as server:
        assert (
            runner.invoke(
                app, evaluate_args(dataset, server.base_url, failed, key_file, "--tasks", "when,how")
            ).exit_code
            == 0
        )
    with LoopbackServer(rules=candidate_rules) as server:
        assert (
            runner.invoke(
                app, evaluate_args(dataset, server.base_url, dropped, key_file, "--tasks", "when,how")
            ).exit_code
            == 0
        )
    drop_records(dropped, "when-video_0001")
    with LoopbackServer(rules=judge_rules) as judges_server:
        judges = judges_file(tmp_path, judges_server.base_url)
        for run in (failed, dropped):
            out = tmp_path / f"rs-{run.name}"
            result = runner.invoke(app, rescore_run_args(run, dataset[2], judges, out))
            assert result.exit_code == 1, result.output
            assert "1 without a When decision" in flat(result) and "incomplete" in flat(result)
            (model,) = json.loads((out / "results.json").read_text())["models"]
            m = model["metrics"]
            assert not m["complete"] and m["n_when_missing"] == 1
            assert {"item": record_key("m", "video_0001"), "phase": "when"} in m["failures"]
            assert m["cov_plus"] is None and m["qgold"] is None  # never 2/3 covered with video_0001 as a "NO"
        refused = runner.invoke(app, judge_args(dropped, dataset[2], judges))
        assert refused.exit_code == 2 and "when: 1 of 4 missing (video_0001)" in flat(refused)


def test_judge_refuses_a_run_with_missing_how_records(dataset, tmp_path, key_file):
    out = tmp_path / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        assert (
            runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file, "--tasks", "when,how")).exit_code
            == 0
        )
    drop_records(out, "how-video_0004")
    with LoopbackServer(rules=judge_rules) as judges_server:
        result = runner.invoke(app, judge_args(out, dataset[2], judges_file(tmp_path, judges_server.base_url)))
        assert result.exit_code == 2 and judges_server.count == 0  # never judged over the 2 stored answers
    assert "how: 1 of 3 missing (video_0004)" in flat(result) and "resume" in flat(result)


def test_rescore_of_a_run_with_a_failed_how_generation_is_incomplete(dataset, tmp_path, key_file):
    def rules(request_json):
        if "Target participant: Carla" in message_text(request_json):  # How of video_0003 fails
            return Behaviour(status=400, error_message="bad request")
        return candidate_rules(request_json)

    out = tmp_path / "run"
    with LoopbackServer(rules=rules) as server:
        assert (
            runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file, "--tasks", "when,how")).exit_code
            == 0
        )
    with LoopbackServer(rules=judge_rules) as judges_server:
        result = runner.invoke(
            app, rescore_run_args(out, dataset[2], judges_file(tmp_path, judges_server.base_url), tmp_path / "rs")
        )
        assert result.exit_code == 1, result.output
        assert judges_server.count == 3 * 2  # the failed generation is not judged
    assert "1 failed generations" in flat(result)
    data = json.loads((tmp_path / "rs" / "results.json").read_text())
    (model,) = data["models"]
    m = model["metrics"]
    assert not data["complete"] and not m["complete"] and m["n_gold"] == 3  # the declared limit, not 128
    assert m["n_generation_failures"] == 1 and m["qgold"] is None and m["qens_joint"] is None
    failed = [r for r in data["records"] if r["item_id"] == "video_0003"]
    assert failed and failed[0]["error"] and failed[0]["judge_scores"] == {name: None for name in STANDARD}
    prepared = json.loads((tmp_path / "rs" / "input.json").read_text())["models"][0]
    assert prepared["expected_response_ids"] == ["video_0001", "video_0003", "video_0004"]


def test_rescore_of_an_archive_with_a_failed_generation_is_incomplete(tmp_path):
    archive = tmp_path / "ensemble_response_scores.csv"
    columns = ["model", "display_model", "item_id", "context", "target_question", "reference", "candidate", "error"]
    with archive.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        base = {"model": "m1", "display_model": "M1", "context": "c", "reference": "r"}
        writer.writerow(
            {
                **base,
                "item_id": "video_0001",
                "target_question": "What should Anna say?",
                "candidate": "Hi all.",
                "error": "",
            }
        )
        writer.writerow(
            {
                **base,
                "item_id": "video_0003",
                "target_question": "What should Carla say?",
                "candidate": "",
                "error": "timeout",
            }
        )
    with LoopbackServer(rules=judge_rules) as judges_server:
        result = runner.invoke(
            app,
            [
                "socialomni", "rescore", "--paper", str(archive), "--judges",
                str(judges_file(tmp_path, judges_server.base_url)), "-o", str(tmp_path / "rs"), "--no-progress",
            ],
        )  # fmt: skip
        assert result.exit_code == 1, result.output
        assert judges_server.count == 3  # the failed generation is never judged
    assert "1 failed generations" in flat(result) and "incomplete" in flat(result)
    data = json.loads((tmp_path / "rs" / "results.json").read_text())
    (model,) = data["models"]
    m = model["metrics"]
    assert not data["complete"] and not m["complete"] and m["n_generation_failures"] == 1
    assert m["qens"] is None and m["qens_joint"] is None and m["qgold"] is None  # not an empty answer worth 0


def test_export_is_complete_only_with_every_item_answered_and_judged(complete_run, tmp_path):
    whole = runner.invoke(app, ["socialomni", "export", str(complete_run), "-o", str(tmp_path / "whole.json")])
    assert whole.exit_code == 0 and json.loads((tmp_path / "whole.json").read_text())["status"] == "complete"
    for label, reason in (
        ("who-3", "who: 1 of 3 items missing"),
        ("when-video_0004", "when: 1 of 4 items missing"),
        ("how-video_0004", "how: 1 of 3 items missing"),  # judged before the record went: the stored judge
    ):  # summary still says complete, the export recomputes
        run = tmp_path / label
        shutil.copytree(complete_run, run)
        drop_records(run, label)
        refused = runner.invoke(app, ["socialomni", "export", str(run), "-o", str(tmp_path / "x.json"), "--force"])
        assert refused.exit_code == 2 and reason in flat(refused), refused.output
        partial = runner.invoke(
            app, ["socialomni", "export", str(run), "-o", str(tmp_path / "x.json"), "--allow-incomplete", "--force"]
        )
        assert partial.exit_code == 0 and reason in flat(partial)
        data = json.loads((tmp_path / "x.json").read_text())
        task = label.split("-", 1)[0]
        assert data["status"] == "incomplete" and data["extra"]["completeness"][task]["n_missing"] == 1
        if task != "who":  # How quality needs every How answer and every When decision
            assert data["extra"]["metrics"]["qgold"] is None and data["extra"]["quality"]["complete"] is False
        else:
            assert data["extra"]["metrics"]["who"]["accuracy"] is None and data["extra"]["metrics"]["qgold"] == 75.0


def test_export_of_a_run_without_how_can_be_complete(dataset, tmp_path, key_file):
    out = tmp_path / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        assert (
            runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file, "--tasks", "who,when")).exit_code
            == 0
        )
    result = runner.invoke(app, ["socialomni", "export", str(out), "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert (
        data["status"] == "complete"
        and data["extra"]["quality"] is None
        and set(data["extra"]["completeness"]) == {"who", "when"}
    )


# ------------------------------------------------------------------------------ cut-offs that cannot be read


def test_an_unreadable_cutoff_fails_its_item_and_the_run_goes_on(tmp_path, key_file):
    annotations, media, _ = make_socialomni(tmp_path / "so")
    level1 = annotations / "level_1" / "dataset.json"
    rows = json.loads(level1.read_text())
    rows[1]["question"] = "Who was speaking sometime later?"  # no time at all
    rows[2]["question"] = "What happened from 0:6 to 0:12?"  # the official parser's phrasing: read
    level1.write_text(json.dumps(rows))
    level2 = annotations / "level_2" / "annotations_200.json"
    data = json.loads(level2.read_text())
    data["data"][1]["question_1"]["timestamp"] = "soon"
    level2.write_text(json.dumps(data))
    out = tmp_path / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        result = runner.invoke(app, evaluate_args((annotations, media, None), server.base_url, out, key_file))
        assert result.exit_code == 0, result.output  # failed items are counted: not a crash, not a bad-input stop
        sent = [message_text(r.json) for r in server.chat_requests]
    assert not any("sometime later" in text for text in sent)
    assert any("from 0:6 to 0:12" in text for text in sent)
    assert len(sent) == 2 + 3 + 3  # Who 3 - 1, When 4 - 1, How: the 3 gold-YES (the failed When item is gold NO)
    output = " ".join(result.output.split())
    assert "input: 2" in output and "'soon'" in output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["who"]["n"] == 3 and summary["who"]["request_failures"] == 1 and summary["who"]["complete"]
    assert summary["when"]["n"] == 4 and summary["when"]["request_failures"] == 1
    assert summary["when"]["parse_failures"] == 0
    records = candidate_records(out)
    failed = records["who"][str(json.loads(level1.read_text())[1]["id"])]
    assert failed["request_failed"] and failed["prediction"] is None and failed["error"].startswith("input: ")
    assert "sometime later" in failed["error"]
    shown = runner.invoke(app, ["runs", "show", str(out)])
    cells = [line.replace("│", " ").split() for line in shown.output.splitlines() if line.startswith("│")]
    table = {row[0]: row[1:] for row in cells}
    assert shown.exit_code == 0 and table["who"] == ["3", "2", "1", "0"] and table["when"] == ["4", "3", "1", "0"]
    shutil.rmtree(tmp_path / "so")


def test_a_run_made_by_other_harness_code_is_refused_in_one_line(dataset, tmp_path, key_file):
    # seed 003, section 4: "Changed inputs or code require a new output directory"
    out = tmp_path / "run"
    with LoopbackServer(rules=candidate_rules) as server:
        assert runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file)).exit_code == 0
        sent = server.count
        manifest = json.loads((out / "manifest.json").read_text())
        manifest["harness_sha256"] = "0" * 64  # as another version of the harness wrote it
        (out / "manifest.json").write_text(json.dumps(manifest))
        stored = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
        again = runner.invoke(app, evaluate_args(dataset, server.base_url, out, key_file))
        assert server.count == sent  # nothing sent
    assert again.exit_code == 2, again.output
    line = " ".join(again.output.split())
    assert "was made by other harness code (harness_sha256 000000000000 ->" in line
    assert "use a new output directory" in line and "Traceback" not in again.output
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == stored  # nothing touched


def test_the_harness_hash_covers_socialomnis_own_modules(tmp_path):
    import omnivchat
    from omnivchat.runs._manifest import _HASHED_PACKAGES, source_hash, tree_hash
    from omnivchat.socialomni._run import HARNESS_SOURCES

    root = tmp_path / "omnivchat"
    shutil.copytree(Path(omnivchat.__file__).parent, root, ignore=shutil.ignore_patterns("__pycache__"))
    packages = (*_HASHED_PACKAGES, *HARNESS_SOURCES)
    before = tree_hash(root, packages)
    assert before == source_hash(*HARNESS_SOURCES) != source_hash()
    for module in ("socialomni/_time.py", "benchmarks/socialomni.py", "judges/__init__.py"):
        path = root / module
        original = path.read_bytes()
        path.write_bytes(original + b"\n# changed\n")
        assert tree_hash(root, packages) != before, module
        path.write_bytes(original)
    assert tree_hash(root, packages) == before
