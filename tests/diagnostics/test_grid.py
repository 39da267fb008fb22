"""The ablation grid on real rendered clips through the real runner and the rule judge; the route check."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from omnivchat.bench import Bench, load_bench, save_bench
from omnivchat.cli import app
from omnivchat.diagnostics.grid import SelfCheckFailed, run_grid, self_check
from omnivchat.diagnostics.route_check import evaluate, judge_answer, run_route_check
from omnivchat.routes import get_route
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()


def grid_for(bench, model, tmp_path, **kw):
    return run_grid(
        bench, lambda: get_route(model), tmp_path / model.replace(":", "-"), panel=["rule"], progress=False, **kw
    )


def test_broken_model_is_caught_and_healthy_is_not(checked_bench, tmp_path):
    broken = grid_for(checked_bench, "sim:custom?video=0&fusion=0", tmp_path)  # the seed's broken model
    d = broken.diagnosis
    assert d.means["both"] == pytest.approx(3 / 8) and d.means["audio_only"] == pytest.approx(3 / 8)
    assert d.means["video_only"] == 0.0 and d.means["neither"] == 0.0
    assert {"no_fusion", "video_ignored"} <= d.flags
    healthy = grid_for(checked_bench, "sim:healthy", tmp_path)
    h = healthy.diagnosis
    assert h.means["both"] == 1.0 and h.fusion_gain == pytest.approx(1 - 3 / 8) and h.flags == set()
    assert healthy.n_items_used == 8
    # every condition is a real run directory with its own scores.json
    scores = json.loads((tmp_path / "sim-healthy" / "audio_only" / "scores.json").read_text())
    assert scores["condition"] == "audio_only" and scores["metrics"]["table1"]["n_scored"] == 8
    manifest = json.loads((tmp_path / "sim-healthy" / "neither" / "manifest.json").read_text())
    assert manifest["condition"] == "neither:blank"


def test_prior_floor_refusal_on_a_bench_whose_answers_leak(checked_bench, tmp_path):
    """A bench whose typed text part gives the answer away: a text reader scores with no media at all."""
    root = tmp_path / "leaky"
    shutil.copytree(checked_bench.root, root)
    leaked = [
        i.model_copy(update={"turns": [i.turns[0].model_copy(update={"text": f"(hint: {i.reference})"})]})
        for i in checked_bench.instances
    ]
    save_bench(Bench(root=root, info=checked_bench.info, instances=leaked))
    leaky = grid_for(load_bench(root), "sim:prior-only", tmp_path)
    assert leaky.diagnosis.refused and "prior_floor_high" in leaky.diagnosis.flags
    assert leaky.diagnosis.means["neither"] == 1.0 and leaky.diagnosis.fusion_gain is None


def test_ablate_cli_shows_a_refusal_without_a_gain(checked_bench, tmp_path):
    root = tmp_path / "leaky"
    shutil.copytree(checked_bench.root, root)
    leaked = [
        i.model_copy(update={"turns": [i.turns[0].model_copy(update={"text": f"(hint: {i.reference})"})]})
        for i in checked_bench.instances
    ]
    save_bench(Bench(root=root, info=checked_bench.info, instances=leaked))
    out = tmp_path / "ab"
    args = ["ablate", "--bench", str(root), "--model", "sim:prior-only", "-o", str(out), "--no-progress"]
    result = runner.invoke(app, [*args, "--skip-self-check"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ablation.json").read_text())
    assert data["diagnosis"]["refused"] and data["diagnosis"]["fusion_gain"] is None
    assert "fusion_gain" not in data["diagnosis"]["intervals"]
    gain_line = next(line for line in result.output.splitlines() if line.strip("│┃ ").startswith("fusion_gain"))
    assert "refused" in gain_line and "—" in gain_line


def test_self_check_passes_with_a_judge_that_can_score(checked_bench, tmp_path):
    record = self_check(checked_bench, tmp_path / "sc", panel=["rule"], progress=False)
    models = record.models
    assert record.passed and models["sim:video-blind"].flagged and models["sim:audio-blind"].flagged
    assert not models["sim:healthy"].flagged


@pytest.fixture(scope="module")
def mixed_bench(checked_bench, tmp_path_factory):
    """Items that need the video only, the audio only, and both (the checked bench with two items made
    video-only)."""
    root = tmp_path_factory.mktemp("mixed") / "bench"
    shutil.copytree(checked_bench.root, root)
    video_only = {"c1", "c6"}
    instances = [
        i.model_copy(update={"requires": ["video"]}) if i.id in video_only else i for i in checked_bench.instances
    ]
    save_bench(Bench(root=root, info=checked_bench.info, instances=instances))
    bench = load_bench(root)
    assert {tuple(i.requires or ()) for i in bench.instances} == {("video",), ("audio",), ("video", "audio")}
    return bench


def test_self_check_passes_on_a_bench_with_video_only_audio_only_and_both_items(mixed_bench, tmp_path):
    """A model with both single-stream skills but no fusion gains from the second stream on such a bench, so it
    is not the seed's broken model; the video-ignoring and audio-ignoring models are caught, the healthy one not."""
    record = self_check(mixed_bench, tmp_path / "sc", panel=["rule"], progress=False)
    assert record.passed
    video_blind = record.models["sim:video-blind"].diagnosis
    assert video_blind.fusion_gain == pytest.approx(0.0) and "video_ignored" in video_blind.flags
    audio_blind = record.models["sim:audio-blind"].diagnosis
    assert "audio_ignored" in audio_blind.flags
    healthy = record.models["sim:healthy"].diagnosis
    assert healthy.flags == set() and healthy.fusion_gain == pytest.approx(1 - 3 / 8)
    # the model the old self-check used gains from the second stream here: calling it "no fusion" was wrong
    no_fusion = grid_for(mixed_bench, "sim:no-fusion", tmp_path)
    assert no_fusion.diagnosis.fusion_gain == pytest.approx(2 / 8)


def test_ablate_cli_runs_on_a_mixed_bench(mixed_bench, tmp_path):
    out = tmp_path / "ablate"
    args = ["ablate", "--bench", str(mixed_bench.root), "--model", "sim:healthy", "-o", str(out), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ablation.json").read_text())
    assert data["self_check"]["passed"] and data["diagnosis"]["verdict"] == "healthy"
    assert data["diagnosis"]["floor_margin"] == 0.10


def test_self_check_fails_when_nothing_can_be_scored(small_bench, tmp_path):
    with pytest.raises(SelfCheckFailed, match="sim:video-blind was not flagged"):
        self_check(small_bench, tmp_path / "sc", panel=["rule"], progress=False)  # no machine checks


def test_ablate_cli_writes_ablation_json(checked_bench, tmp_path):
    out = tmp_path / "ablate"
    args = ["ablate", "--bench", str(checked_bench.root), "--model", "sim:video-blind", "-o", str(out), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "ablation.json").read_text())
    assert data["self_check"]["passed"] and data["simulated"] and data["panel"] == ["rule"]
    assert "video_ignored" in data["diagnosis"]["flags"]
    assert set(data["conditions"]) == {"both", "video_only", "audio_only", "neither"}
    assert "VIDEO IGNORED" in result.output
    skipped = runner.invoke(app, [*args[:-3], "-o", str(tmp_path / "ab2"), "--skip-self-check", "--no-progress"])
    assert skipped.exit_code == 0
    manifest = json.loads((tmp_path / "ab2" / "both" / "manifest.json").read_text())
    assert manifest["ablation"] == {"self_check": "skipped"}


def test_route_check_passes_a_healthy_route(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    result = run_route_check(get_route("sim:healthy"))
    assert result.passed, result.reasons
    audible, silent = result.records
    assert audible.recovered.password and audible.recovered.number
    assert not silent.recovered.password and audible.media_sha256 != silent.media_sha256


def test_route_check_fails_a_route_that_invents_speech_for_both_clips(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    with LoopbackServer(
        default=Behaviour(text="A red square. The password is apple pie and the number is seven.")
    ) as s:
        result = runner.invoke(
            app, ["check-route", "--model", "omni", "--base-url", s.base_url, "-o", str(tmp_path / "c.json")]
        )
    assert result.exit_code == 1
    data = json.loads((tmp_path / "c.json").read_text())
    assert not data["passed"] and data["reasons"][0].startswith("answer wrong: the audible answer does not give")
    assert data["warnings"] == ["the silent answer invented speech (a password that was never spoken)"]
    assert "warning: the silent answer invented speech" in result.output
    assert data["records"][0]["http_status"] == 200
    assert (tmp_path / "route-checks.jsonl").is_file()


def test_route_check_fails_a_route_that_echoes_the_answer_for_silence(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    with LoopbackServer(default=Behaviour(text="The password is copper meadow, the number fifty-three.")) as s:
        result = run_route_check(get_route("omni", base_url=s.base_url))
    assert not result.passed and "silent answer recovered" in result.reasons[0]


def test_judge_answer_cases():
    assert judge_answer("It says copper meadow and 53.") == {"password": True, "number": True, "claims_speech": False}
    assert judge_answer("Audio unavailable; I see a red square.")["password"] is False
    assert judge_answer("The password is blue sky.")["claims_speech"] is True
    ok, reasons, warnings = evaluate(
        [
            {"control": "audible", "answer": None, "error_kind": "http_error", "error": "HTTP 404"},
            {"control": "silent", "answer": "x", "recovered": judge_answer("x")},
        ]
    )
    assert not ok and "audible request failed: http_error" in reasons[0] and warnings == []


def _answers(audible: str, silent: str) -> list[dict]:
    return [
        {"control": "audible", "answer": audible, "recovered": judge_answer(audible)},
        {"control": "silent", "answer": silent, "recovered": judge_answer(silent)},
    ]


def test_a_route_that_invents_a_password_for_silence_passes_with_a_warning():
    # seed 003 counts only the real values: recovered from the audible clip, not from the silent one
    ok, reasons, warnings = evaluate(
        _answers("The password is copper meadow and the number is 53.", "The password is apple pie, number seven.")
    )
    assert ok and reasons == []
    assert warnings == ["the silent answer invented speech (a password that was never spoken)"]
    ok, reasons, warnings = evaluate(_answers("Copper meadow, 53.", "I cannot hear any speech."))
    assert ok and reasons == [] and warnings == []
    ok, reasons, _ = evaluate(_answers("Copper meadow, 53.", "The password is copper meadow."))
    assert not ok and "silent answer recovered" in reasons[0]
