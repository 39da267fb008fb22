"""The typed files of the diagnostics: ablation.json (with its self-check record) and the route check's result and
registry. Written and read by the same models; files of earlier versions load; a damaged file is one line naming
it, and a damaged registry line is skipped, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnivchat._files import InputError, write_model
from omnivchat.diagnostics import CONDITIONS, diagnose
from omnivchat.diagnostics._files import (
    ABLATION_SCHEMA,
    ROUTE_CHECK_SCHEMA,
    AblationFile,
    ConditionEntry,
    RouteCheck,
    SelfCheckModel,
    SelfCheckRecord,
    read_ablation,
    read_route_check,
)
from omnivchat.diagnostics.route_check import checks_on_record, passing_check_on_record, record_check
from omnivchat.routes import get_route

SCORES = {
    "both": [1.0, 1.0, 0.5, 1.0],
    "video_only": [0.0, 0.5, 0.0, 0.0],
    "audio_only": [0.5, 0.0, 0.5, 0.0],
    "neither": [0.0, 0.0, 0.0, 0.0],
}


def ablation(self_check: SelfCheckRecord | None) -> AblationFile:
    diagnosis = diagnose(SCORES, n_resamples=200)
    return AblationFile(
        model="sim:healthy",
        simulated=True,
        benchmark="omnivchat",
        bench={"name": "small", "version": "1", "n_instances": 4},
        panel=["rule"],
        aggregate="mean",
        neither_mode="blank",
        conditions={c: ConditionEntry(run_dir=c, n_done=4, n_unscored=0, mean=sum(SCORES[c]) / 4) for c in CONDITIONS},
        n_items_used=4,
        diagnosis=diagnosis,
        categories={"SVMR": None, "AH": diagnosis},
        self_check=self_check,
    )


def test_ablation_round_trip(tmp_path: Path) -> None:
    record = SelfCheckRecord(
        passed=True,
        models={
            "sim:video-blind": SelfCheckModel(expected="flagged", flagged=True, diagnosis=None),
            "sim:healthy": SelfCheckModel(expected="not flagged", flagged=False),
        },
    )
    written = ablation(record)
    write_model(tmp_path / "ablation.json", written)
    data = json.loads((tmp_path / "ablation.json").read_text())
    assert data["schema"] == ABLATION_SCHEMA and data["self_check"]["models"]["sim:healthy"]["flagged"] is False
    assert isinstance(data["diagnosis"]["flags"], list) and data["categories"]["SVMR"] is None
    back = read_ablation(tmp_path)
    assert back == written and back.diagnosis == written.diagnosis


def test_a_skipped_self_check_is_written_as_before(tmp_path: Path) -> None:
    write_model(tmp_path / "ablation.json", ablation(SelfCheckRecord(skipped=True)))
    assert json.loads((tmp_path / "ablation.json").read_text())["self_check"] == {"skipped": True}
    back = read_ablation(tmp_path).self_check
    assert back is not None and back.skipped and back.passed is None and back.models is None


def test_an_ablation_file_of_an_earlier_version_loads(tmp_path: Path) -> None:
    """No benchmark name (the native bench's), and the self-check of one broken model in flat keys."""
    data = ablation(None).dump()
    del data["benchmark"]
    healthy = data["diagnosis"]
    data["self_check"] = {
        "skipped": False,
        "passed": True,
        "no_fusion_flagged": True,
        "healthy_flagged": False,
        "no_fusion": None,
        "healthy": healthy,
    }
    (tmp_path / "ablation.json").write_text(json.dumps(data))
    back = read_ablation(tmp_path / "ablation.json")
    assert back.benchmark == "omnivchat"
    record = back.self_check
    assert record is not None and record.passed and record.models is not None
    assert record.models["sim:no-fusion"] == SelfCheckModel(expected="flagged", flagged=True, diagnosis=None)
    assert record.models["sim:healthy"].flagged is False and record.models["sim:healthy"].diagnosis == back.diagnosis
    assert record.value("no_fusion_flagged") is True  # the old keys are kept


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "cannot read the ablation file (not valid JSON"),
        (json.dumps({"schema": ABLATION_SCHEMA, "conditions": {}}), "not a valid ablation file (diagnosis: Field"),
        (json.dumps({"schema": ABLATION_SCHEMA, "conditions": {}, "diagnosis": {}, "self_check": []}), "diagnosis"),
    ],
)
def test_a_damaged_ablation_file_is_one_line_naming_it(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "ablation.json").write_text(text)
    with pytest.raises(InputError) as caught:
        read_ablation(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "ablation.json") in message and expected in message and "\n" not in message


# ---------------------------------------------------------------------------------------------------- route check


def check_of(route, passed: bool) -> RouteCheck:
    from omnivchat._canonical import sha256_json

    settings = route.settings.model_dump(mode="json", exclude={"base_url"})
    return RouteCheck(
        model=route.model_id,
        route=route.settings.route,
        endpoint=route.endpoint,
        settings_sha256=sha256_json(settings),
        settings=settings,
        records=[
            {
                "control": "audible",
                "http_status": 200,
                "answer": "copper meadow, 53",
                "recovered": {"password": True, "number": True, "claims_speech": False},
            },
            {"control": "silent", "http_status": None, "error_kind": "timeout", "error": "slow", "answer": None},
        ],
        passed=passed,
        reasons=[] if passed else ["silent request failed: timeout (slow)"],
    )


def test_route_check_round_trip_and_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    route = get_route("sim:healthy")
    check = check_of(route, passed=True)
    write_model(tmp_path / "check.json", check)
    data = json.loads((tmp_path / "check.json").read_text())
    assert data["schema"] == ROUTE_CHECK_SCHEMA
    assert "error" not in data["records"][0] and "recovered" not in data["records"][1]  # each record as it was
    assert read_route_check(tmp_path / "check.json") == check
    assert not passing_check_on_record(route)
    registry = record_check(check_of(route, passed=False))
    with registry.open("a", encoding="utf-8") as handle:  # a damaged line, a foreign one, an empty one
        handle.write('{"model": "sim:healthy", "passed": tr\n[1, 2]\n\n')
    assert not passing_check_on_record(route)
    record_check(check)
    assert passing_check_on_record(route) and len(checks_on_record()) == 2


def test_a_registry_line_of_an_earlier_version_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line that lacks what this version adds still says whether the route passed."""
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    route = get_route("sim:healthy")
    line = {
        k: v
        for k, v in check_of(route, passed=True).dump().items()
        if k in ("model", "endpoint", "settings_sha256", "passed")
    }
    (tmp_path / "route-checks.jsonl").write_text(json.dumps(line) + "\n")
    assert passing_check_on_record(route)
