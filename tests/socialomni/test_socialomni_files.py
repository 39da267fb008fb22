"""The typed files of SocialOmni (omnivchat.socialomni._files): a run's summary.json, a judging directory's
summary.json and scores.json, the rescoring input.json and results.json, and the export. They keep the hosted
runner's formats; files written by earlier versions load; a damaged file is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnivchat._files import InputError, write_model
from omnivchat.benchmarks import BenchmarkExport, read_export
from omnivchat.socialomni import SocialOmniError, classification_metrics, how_metrics
from omnivchat.socialomni._files import (
    ClassificationMetrics,
    HowGeneration,
    JudgeScores,
    JudgingSummary,
    RescoreInput,
    RescoreInputModel,
    RescoreRecord,
    RescoreResults,
    SocialOmniSummary,
    read_judge_scores,
    read_judging_summary,
    read_rescore_input,
    read_rescore_results,
    read_summary,
    rescore_input,
)
from omnivchat.socialomni._run import read_manifest

WHO = classification_metrics({"1": "A", "2": "B"}, {"1": "A", "2": "C"}, "ABCD", set(), expected=["1", "2", "3"])
HOW = how_metrics({"a": [75, 75, 50]}, {"a": True}, {"a": False}, n_gold=1, expected=["a"])


def test_summary_round_trip_keeps_the_task_keys(tmp_path: Path) -> None:
    summary = SocialOmniSummary(
        who=ClassificationMetrics.model_validate(WHO),
        who_lenient=ClassificationMetrics.model_validate(WHO),
        how_generation=HowGeneration(n=3, completed=2, empty=0, request_failures=1, missing=[], complete=False),
    )
    write_model(tmp_path / "summary.json", summary)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert list(data) == ["who", "who_lenient", "how_generation"]  # a task the run has not: no key at all
    assert data["who"] == WHO  # classification_metrics' dict, as it was written before
    back = read_summary(tmp_path)
    assert back == summary and back.task("when") is None and back.who is not None and back.who.n_missing == 1


def test_a_summary_of_an_earlier_version_loads() -> None:
    """Classification and How counts written before missing items were counted: none missing, complete."""
    old = {
        "who": {k: v for k, v in WHO.items() if k not in ("n_missing", "missing", "complete")},
        "how_generation": {"n": 3, "completed": 3, "empty": 1, "request_failures": 0},
    }
    summary = SocialOmniSummary.model_validate(old)
    assert summary.who is not None and summary.who.complete and summary.who.n_missing == 0
    assert summary.how_generation.complete and summary.how_generation.missing == []
    failed = SocialOmniSummary.model_validate({"how_generation": {"n": 3, "completed": 2, "request_failures": 1}})
    assert not failed.how_generation.complete


def test_judging_files_round_trip_and_older_metrics_load(tmp_path: Path) -> None:
    scores = JudgeScores({"video_0001": {"a": 75, "b": None}})
    (tmp_path / "scores.json").write_text(scores.to_json())
    assert (tmp_path / "scores.json").read_text() == json.dumps(scores.root, indent=2, sort_keys=True) + "\n"
    assert read_judge_scores(tmp_path / "scores.json").of("video_0001") == {"a": 75, "b": None}
    summary = JudgingSummary(panel="standard", judges=["a", "b", "c"], metrics=HOW, time=1.0)
    write_model(tmp_path / "summary.json", summary, ensure_ascii=True)
    assert read_judging_summary(tmp_path / "summary.json") == summary
    metrics = HOW.model_dump()
    for key in ("n_missing", "n_generation_failures", "n_when_missing", "n_unjudged"):  # not in the first files
        del metrics[key]
    old = {"panel": "paper-v3", "judges": ["a", "b", "c"], "metrics": metrics, "time": 0.0}
    (tmp_path / "old.json").write_text(json.dumps(old))
    back = read_judging_summary(tmp_path / "old.json")
    assert back.metrics.n_unjudged == 0 and back.metrics.qgold == HOW.qgold


def test_rescoring_files_round_trip(tmp_path: Path) -> None:
    data = RescoreInput(
        schema_version=1,
        source="archive.csv",
        source_sha256="0" * 64,
        models=[RescoreInputModel(model="m1", source="paper-archive", full_gold=False)],
        records=[
            RescoreRecord(
                model="m1", item_id="video_0001", context="c", target_question="q", reference="r", candidate="Hi."
            ),
            RescoreRecord(
                model="m1",
                item_id="video_0003",
                context="c",
                target_question="q",
                reference="r",
                candidate="",
                error="timeout",
            ),
        ],
    )
    write_model(tmp_path / "input.json", data)
    written = json.loads((tmp_path / "input.json").read_text())
    assert written["models"] == [{"model": "m1", "source": "paper-archive", "full_gold": False}]  # as before
    assert "error" not in written["records"][0] and written["records"][1]["error"] == "timeout"
    assert read_rescore_input(tmp_path / "input.json") == data == rescore_input(written)
    results = RescoreResults(
        complete=True,
        provenance={"source": "archive.csv", "panel": "standard", "judges": ["a"]},
        models=[{"model": "m1", "full_gold": False, "metrics": HOW}],
        records=[{"model": "m1", "item_id": "video_0001", "candidate": "Hi.", "judge_scores": {"a": 75}}],
    )
    write_model(tmp_path / "results.json", results)
    assert json.loads((tmp_path / "results.json").read_text())["schema_version"] == 1
    assert read_rescore_results(tmp_path / "results.json") == results


def test_rescoring_input_that_is_not_schema_version_1_is_refused() -> None:
    with pytest.raises(SocialOmniError, match="schema_version 1 and a records list"):
        rescore_input({"schema_version": 2, "records": []})
    with pytest.raises(SocialOmniError, match=r"rescoring input: records\.0\.item_id: Field required"):
        rescore_input({"schema_version": 1, "records": [{"model": "m"}]})


def test_an_old_socialomni_export_reads_as_the_one_export_schema(tmp_path: Path) -> None:
    """An omnivchat-socialomni-export-v1 file, as the code before one export schema wrote it, loads through
    read_export: its items become records (prediction, gold and judge scores in ``meta``), its metrics,
    completeness, quality and judging the ``extra``; a damaged one is one line naming the file."""
    old = {
        "schema": "omnivchat-socialomni-export-v1",
        "status": "complete",
        "incomplete_reasons": [],
        "model": "m",
        "protocol": "omnivchat-socialomni-v1",
        "judge_panel": "standard",
        "judges": ["a", "b", "c"],
        "judge_substitution": None,
        "metrics": {"who": WHO, "qgold": HOW.qgold},
        "completeness": {"how": {"n": 1, "n_unjudged": 0, "n_when_missing": 0}, "who": {"n": 3, "n_missing": 1}},
        "quality": HOW.model_dump(mode="json"),
        "manifest_sha256": "1" * 64,
        "items": [
            {"task": "who", "item_id": "1", "prediction": "A", "gold": "A", "request_success": True, "text": "A"},
            {"task": "how", "item_id": "a", "prediction": "Hi", "text": "Hi", "judge_scores": {"a": 75}},
            {"task": "when", "item_id": "v2", "prediction": None, "request_success": False, "redacted": False},
        ],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    back = read_export(tmp_path / "old.json")
    assert isinstance(back, BenchmarkExport) and back.schema_ == "omnivchat-benchmark-export-v1"
    assert back.benchmark == "socialomni" and back.status == "complete" and back.n_records == 3
    assert [(r.task, r.id, r.status, r.reply) for r in back.records] == [
        ("who", "who-1", "done", "A"),
        ("how", "how-a", "done", "Hi"),
        ("when", "when-v2", "failed", None),
    ]
    assert back.records[0].meta == {"prediction": "A", "gold": "A"} and back.records[1].meta["judge_scores"] == {
        "a": 75
    }
    assert back.extra["judge_panel"] == "standard" and back.extra["judge_substitution"] is None
    assert back.extra["completeness"]["who"]["n_missing"] == 1 and back.extra["quality"]["qgold"] == HOW.qgold
    (tmp_path / "bad.json").write_text(json.dumps({**old, "items": [{"item_id": "1"}]}))  # no task
    with pytest.raises(InputError, match=r"bad\.json: not a valid export") as caught:
        read_export(tmp_path / "bad.json")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "text", "reader", "expected"),
    [
        ("summary.json", '{"who": {"n": "many"}}', read_summary, "not a valid SocialOmni summary (who.n"),
        ("scores.json", '{"video_0001": {"a": "high"}}', read_judge_scores, "video_0001.a"),
        ("summary.json", "[", read_judging_summary, "cannot read the SocialOmni judging summary"),
        ("input.json", '{"models": 3}', read_rescore_input, "not a valid rescoring input (models"),
    ],
)
def test_a_damaged_file_is_one_line_naming_it(tmp_path: Path, name, text, reader, expected) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises((InputError, SocialOmniError)) as caught:
        reader(tmp_path / name)
    message = str(caught.value)
    assert str(tmp_path / name) in message and expected in message and "\n" not in message


def test_a_damaged_run_manifest_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"protocol": "omnivchat-socialomni-v1", "tasks": "who"}))
    with pytest.raises(Exception, match="not a valid omnivchat-socialomni-v1 manifest \\(tasks") as caught:
        read_manifest(tmp_path)
    assert str(tmp_path / "manifest.json") in str(caught.value)
