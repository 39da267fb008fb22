"""The viewer's data side over real runs: every declared item listed with its state and why it has no score
(never a 0), filters, sorting and paging with counts, one item's clips as sent, verdicts per judge and criterion,
the Eq. 1 score and its gating tier, the style checklist, multiple-choice letters, attempts; pairs of runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnivchat.view import (
    ItemReader,
    Query,
    QueryError,
    RunView,
    ViewError,
    compare,
    expand_runs,
    gating_tier,
    open_runs,
    parse_pair_query,
    parse_query,
    run_query,
)


def opened(path: Path) -> RunView:
    """A run opened as the server opens it, its replies, attempts and costs read (no longer partial)."""
    [run] = open_runs([path])
    assert run.wait_full(60)
    run.refresh()
    return run


def test_a_native_run_lists_every_declared_item_with_its_state(native_run: Path) -> None:
    [first] = open_runs([native_run])  # a scored run: listed at once, replies and costs read behind
    quick = [(r.id, r.state, r.why, r.score, r.group, r.language, r.per_judge) for r in first.rows()]
    run = opened(native_run)
    assert run.info["partial"] is False
    rows = {r.id: r for r in run.rows()}
    assert quick == [(r.id, r.state, r.why, r.score, r.group, r.language, r.per_judge) for r in rows.values()]
    assert list(rows) == ["s1", "s2", "s3", "m1"]  # the bench's order; m1 never ran but is listed
    assert rows["s1"].state == "scored" and rows["s1"].score == 0.5
    assert rows["s1"].per_judge == {"A": 1.0, "B": 0.0} and rows["s1"].disagree
    assert rows["s2"].state == "failed" and rows["s2"].score is None and rows["s2"].why.startswith("media")
    assert rows["s3"].state == "unscored" and rows["s3"].score is None and "B" in rows["s3"].why
    assert rows["m1"].state == "not run" and rows["m1"].score is None and rows["m1"].reply_len is None
    assert rows["s1"].group == "SVMR" and rows["s1"].language == "en" and rows["s1"].reply_len
    assert rows["s1"].attempts == 1 and rows["s1"].cost_usd == 0.0
    assert run.info["benchmark"] == "omnivchat" and run.info["scored"] is True


def test_filters_sorting_and_paging_keep_counts(native_run: Path) -> None:
    run = opened(native_run)
    rows = run.rows()
    everything = run_query(rows, Query())
    assert everything["counts"] == {"scored": 1, "unscored": 1, "failed": 1, "not run": 1, "total": 4}
    failed = run_query(rows, parse_query({"state": "failed"}))
    assert [r["id"] for r in failed["rows"]] == ["s2"] and failed["matched"]["total"] == 1
    assert failed["counts"]["total"] == 4  # the run's counts stay beside the filter's
    assert [r["id"] for r in run_query(rows, parse_query({"state": "unscored"}))["rows"]] == ["s3"]
    assert [r["id"] for r in run_query(rows, parse_query({"below": "0.9"}))["rows"]] == ["s1"]
    assert run_query(rows, parse_query({"below": "0.4"}))["rows"] == []  # unscored items are never "below"
    assert [r["id"] for r in run_query(rows, parse_query({"disagree": "1"}))["rows"]] == ["s1"]
    assert [r["id"] for r in run_query(rows, parse_query({"q": "S3"}))["rows"]] == ["s3"]
    by_score = run_query(rows, parse_query({"sort": "score", "order": "desc"}))["rows"]
    assert by_score[0]["id"] == "s1" and {r["id"] for r in by_score[1:]} == {"s2", "s3", "m1"}  # no score: last
    page = run_query(rows, parse_query({"offset": "1", "limit": "2"}))
    assert [r["id"] for r in page["rows"]] == ["s2", "s3"] and page["matched"]["total"] == 4
    group = run_query(rows, parse_query({"group": "MDCC"}))
    assert [r["id"] for r in group["rows"]] == ["m1"] and "SVMR" in group["groups"]
    for bad, message in [
        ({"state": "odd"}, "state="),
        ({"sort": "x"}, "sort="),
        ({"below": "nan"}, "below=nan"),
        ({"below": "high"}, "below="),
        ({"limit": "0"}, "limit=0"),
        ({"offset": "-1"}, "offset="),
    ]:
        with pytest.raises(QueryError, match=message):
            parse_query(bad)


def test_one_native_item_shows_verdicts_gating_style_clips_and_attempts(native_run: Path) -> None:
    run = opened(native_run)
    reader = ItemReader(run)
    detail = reader.detail("candidate", "s1", 0)
    assert detail is not None
    native = detail["native"]
    assert [c["tier"] for c in native["criteria"]] == [0, 1, 2]
    assert native["judges"]["A"]["hits"] == [1, 2, 3] and native["judges"]["A"]["gated_at"] is None
    assert native["judges"]["B"]["hits"] == [1] and native["judges"]["B"]["score"] == 0.0
    assert native["judges"]["B"]["gated_at"] == 1  # the tier that stopped it
    assert native["panel"] == ["A", "B"] and native["panel_hits"] == [1] and native["panel_gated_at"] == 1
    assert native["style"] == {"judge": "A", "met": [1, 2, 3, 4, 5], "of": 7}
    assert native["reference"] == "reference reply for s1"
    [clip] = detail["clips"]
    assert clip["label"] == "media/s1/turn1.mp4" and "sha256 matches the request" in clip["note"]
    assert reader.clips("candidate", "s1")[0].path.is_file()
    [attempt] = detail["attempts"]
    assert attempt["status"] == "ok" and attempt["cost_usd"] == 0.0 and attempt["tokens"]["completion_tokens"]
    assert detail["reply"] and detail["score"] == {"score": 0.5, "reason": "panel mean of 2"}

    unscored = reader.detail("candidate", "s3", 0)
    assert unscored is not None and unscored["native"]["judges"]["B"]["hits"] is None
    assert "unparseable" in unscored["native"]["judges"]["B"]["why"] and unscored["native"]["panel_hits"] is None
    failed = reader.detail("candidate", "s2", 0)
    assert failed is not None and failed["reply"] is None and failed["error"].startswith("media")
    assert failed["attempts"] == []  # the clip could not be read: nothing was sent
    never = reader.detail("candidate", "m1", 0)
    assert never is not None and never["attempts"] == [] and never["row"]["state"] == "not run"
    assert [c["turn"] for c in never["clips"]] == [1, 2]  # a multi-turn item: each turn's clip
    assert reader.detail("candidate", "nope", 0) is None and reader.detail("other", "s1", 0) is None


def test_a_multiple_choice_run_shows_letters_gold_and_the_released_clip(worldsense_run: Path) -> None:
    run = opened(worldsense_run)
    rows = {r.id: r for r in run.rows()}
    assert set(rows) == {"vidA/task0", "vidA/task1", "vidB/task0"}
    assert all(r.state == "scored" and r.score == 1.0 and r.task == "mc4" for r in rows.values())
    assert rows["vidA/task0"].group == "Recognition"
    reader = ItemReader(run)
    detail = reader.detail("mc4", "vidA/task0", 0)
    assert detail is not None and detail["native"] is None
    assert detail["choice"]["gold"] == "A" and detail["choice"]["strict"] == "A"
    assert detail["choice"]["options"] == ["Red", "Blue", "A square", "A circle"]
    assert "What colour is the shape?" in detail["question"]
    [clip] = detail["clips"]
    assert clip["label"] == "videos/vidA.mp4" and "sha256 matches" in clip["note"]
    assert run_query(run.with_questions(), parse_query({"q": "what shape"}))["rows"][0]["id"] == "vidA/task1"


def test_an_unscored_run_says_so_and_refreshes_when_scored(worldsense_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(worldsense_run, copy)
    scores = (copy / "scores.json").read_bytes()
    (copy / "scores.json").unlink()
    run = opened(copy)
    assert {r.state for r in run.rows()} == {"unscored"}
    assert all(r.score is None and "not scored yet" in r.why for r in run.rows())
    (copy / "scores.json").write_bytes(scores)  # scored meanwhile: the next read sees it
    assert {r.state for r in run.rows()} == {"scored"}


def test_pairs_of_runs_and_ablation_directories(native_run: Path, worldsense_run: Path, tmp_path: Path) -> None:
    import json
    import shutil

    other = tmp_path / "other"
    shutil.copytree(native_run, other)
    scores = json.loads((other / "scores.json").read_text())
    for item in scores["items"]:
        if item["key"] == "s1":
            item["score"] = 0.0  # B's run got s1 wrong
    (other / "scores.json").write_text(json.dumps(scores))
    runs = open_runs([native_run, other])
    assert [r.label for r in runs] == ["run", "other"]
    body = compare(runs, parse_pair_query({"filter": "a_right_b_wrong"}, 2))
    assert [r["id"] for r in body["rows"]] == ["s1"] and body["rows"][0]["diff"] == -0.5
    assert body["counts"]["a_right_b_wrong"] == 1 and body["counts"]["b_right_a_wrong"] == 0
    assert body["counts"]["all"] == 4
    assert compare(runs, parse_pair_query({"filter": "b_right_a_wrong"}, 2))["rows"] == []
    with pytest.raises(QueryError, match="filter="):
        parse_pair_query({"filter": "x"}, 2)
    with pytest.raises(QueryError, match="two runs"):
        parse_pair_query({}, 1)

    grid = tmp_path / "grid"
    for condition in ("both", "audio_only"):
        shutil.copytree(native_run, grid / condition)
    labels = [label for _, label in expand_runs([grid])]
    assert labels == ["grid/both", "grid/audio_only"]


def test_bad_run_directories_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ViewError, match="no such run directory"):
        open_runs([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ViewError, match="not a run directory"):
        open_runs([tmp_path / "empty"])
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    with pytest.raises(ViewError, match=r"manifest\.json"):
        open_runs([broken])
    with pytest.raises(ViewError, match="at least one"):
        open_runs([])


def test_gating_tier_is_the_first_tier_not_fully_met() -> None:
    assert gating_tier([0, 1, 1, 2], [1, 2, 3, 4]) is None
    assert gating_tier([0, 1, 1, 2], [2, 3, 4]) == 0
    assert gating_tier([0, 1, 1, 2], [1, 2, 4]) == 1
    assert gating_tier([0, 1, 1, 2], [1, 2, 3]) == 2


def test_an_http_route_run_shows_the_text_and_clip_its_body_carried(hostile_run: Path) -> None:
    run = opened(hostile_run)
    [row] = run.rows()
    detail = ItemReader(run).detail(row.task, row.id, 0)
    assert detail is not None and "<script>window.pwned=2</script>" in detail["question"]
    assert "sha256 matches" in detail["clips"][0]["note"]  # the body named the clip omnivchat-media:<sha256>
    assert detail["reply"].startswith("<b>bold</b>")


def test_a_socialomni_item_plays_the_trimmed_prefix_it_sent(socialomni_run: Path) -> None:
    run = opened(socialomni_run)
    rows = run.rows()
    assert len(rows) == 4 and {r.task for r in rows} == {"when"}
    assert all(r.state == "unscored" and "not scored yet" in r.why for r in rows)  # no scores.json: said so
    reader = ItemReader(run)
    [clip] = reader.clips("when", rows[0].id)
    assert clip.label == "prefix" and "sha256 matches" in clip.note
    assert clip.path.parent.name == "prefixes" and clip.path.is_relative_to(socialomni_run.resolve())


def test_a_spoken_reply_has_its_audio_and_a_byo_item_its_clip(spoken_run: Path) -> None:
    run = opened(spoken_run)
    reader = ItemReader(run)
    detail = reader.detail("open", "q1", 0)
    assert detail is not None and detail["question"] == "What colour is the square?"
    assert detail["spoken"]["format"] == "wav" and detail["spoken"]["server_transcript"] == "red"
    assert detail["spoken"]["url"] == "api/runs/0/audio?task=open&id=q1"
    audio = reader.audio("open", "q1")
    assert audio is not None and audio.parent == (spoken_run / "audio").resolve() and audio.suffix == ".wav"
    [clip] = detail["clips"]
    assert clip["label"] == "media/red.mp4" and "sha256" in clip["note"]
    assert reader.audio("open", "nope") is None
