"""Judge calibration: rule perturbations of the references, the rule judge on the mini-bench, a weak and a correct
LLM judge on the loopback server, reruns that send nothing, and one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from omnivchat.bench import Check, Criterion, Instance, Turn, load_bench
from omnivchat.cli.calibrate import calibrate_command
from omnivchat.judges import JudgesConfig, calibrate, perturb, rule_verdict, wilson
from omnivchat.studio.minibench import make_minibench
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()
app = typer.Typer()
app.command("calibrate")(calibrate_command)
app.command("other")(lambda: None)  # two commands: `calibrate` is a subcommand, as on the judges app


@pytest.fixture(scope="module")
def minibench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mini") / "bench"
    make_minibench(root, per_subcategory=1)
    return root


def test_wilson_interval() -> None:
    assert wilson(0, 0)["rate"] is None
    w = wilson(5, 10)
    assert w["rate"] == 0.5 and w["low"] == pytest.approx(0.236593, abs=1e-5)
    assert w["high"] == pytest.approx(0.763407, abs=1e-5)
    assert wilson(10, 10)["high"] == 1.0


def test_rule_judge_on_the_minibench(minibench: Path, tmp_path: Path) -> None:
    bench = load_bench(minibench)
    report = calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", progress=False)
    (rule,) = report["reports"]
    assert rule["reference_full_score_rate"]["rate"] == 1.0
    assert rule["reference_full_score_rate"]["n"] == len(bench.instances)
    assert set(rule["detection_rate"]) >= {"0", "1", "2"}
    assert all(d["rate"] == 1.0 for d in rule["detection_rate"].values())
    assert rule["false_miss_rate"]["rate"] == 0.0 and rule["false_miss_rate"]["n"] > 0
    assert rule["unscored"] == 0
    ids = [p["id"] for p in report["perturbations"]]
    assert len(ids) == len(set(ids))
    assert {p["rule"] for p in report["perturbations"]} >= {"language", "negate", "swap", "remove", "list"}
    assert all({"instance", "criterion", "reason"} <= set(s) for s in report["not_perturbed"])
    # every perturbation breaks its target only (by the machine checks)
    by_id = {i.id: i for i in bench.instances}
    for p in report["perturbations"]:
        instance = by_id[p["instance"]]
        hits, _ = rule_verdict(instance, p["text"])
        assert hits is not None
        if isinstance(p["target"], int) and p["tier"] != 0:
            assert set(hits) == set(range(1, len(instance.rubric) + 1)) - {p["target"]}
    # the stored set is reused on a rerun, byte for byte
    stored = (tmp_path / "cal" / "perturbations.json").read_bytes()
    again = calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", progress=False)
    assert (tmp_path / "cal" / "perturbations.json").read_bytes() == stored
    assert again["reports"] == report["reports"]


def test_stored_perturbations_are_what_judges_see(minibench: Path, tmp_path: Path) -> None:
    bench = load_bench(minibench)
    calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", progress=False)
    path = tmp_path / "cal" / "perturbations.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["perturbations"] = [p for p in data["perturbations"] if p["tier"] != 0]
    path.write_text(json.dumps(data), encoding="utf-8")
    report = calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", progress=False)
    assert "0" not in report["reports"][0]["detection_rate"]


def test_a_criterion_without_a_check_is_not_perturbed() -> None:
    instance = Instance(
        id="x-1",
        subcategory="AR",
        language="en",
        turns=[Turn(video="media/x/turn1.mp4")],
        reference="It is yellow. It is the hexagon.",
        rubric=[
            Criterion(tier=0, text="English.", check=Check(language="en")),
            Criterion(tier=1, text="Says yellow."),
            Criterion(tier=2, text="Names the hexagon.", check=Check(any_of=["hexagon"])),
        ],
    )
    made, skipped = perturb(instance)
    assert [s["criterion"] for s in skipped] == [2]
    assert "no machine check" in skipped[0]["reason"]
    assert {p.target for p in made} == {1, 3, "style"}
    removal = next(p for p in made if p.target == 3)
    assert removal.rule == "remove" and removal.text == "It is yellow."


def _rubric_size(text: str) -> int:
    return len(re.findall(r"^\d+\. \[tier \d+\]", text, flags=re.MULTILINE))


def _judges(tmp_path: Path, server: LoopbackServer) -> Path:
    path = tmp_path / "judges.json"
    judges = [
        {"name": "weak", "model": "weak", "base_url": server.base_url},
        {"name": "good", "model": "good", "base_url": server.base_url},
    ]
    path.write_text(json.dumps({"judges": judges, "panels": {"both": ["weak", "good", "rule"]}}))
    return path


def test_a_weak_and_a_correct_llm_judge_are_told_apart(minibench: Path, tmp_path: Path) -> None:
    bench = load_bench(minibench)
    # every (reply, rubric) a judge can be shown -> the hits a correct judge gives
    known: dict[tuple[str, str], list[int]] = {}
    for instance in bench.instances:
        rubric = "\n".join(c.text for c in instance.rubric)
        for text in [instance.reference, *(p.text for p in perturb(instance)[0])]:
            known[text, rubric] = rule_verdict(instance, text)[0] or []

    def shown(key: tuple[str, str], text: str) -> bool:
        return key[0] in text and all(line in text for line in key[1].splitlines())

    def rules(request: dict[str, Any]) -> Behaviour:
        text = message_text(request)
        if request["model"] == "weak":
            hits = list(range(1, _rubric_size(text) + 1))
        else:
            hits = known[max((k for k in known if shown(k, text)), key=lambda k: (len(k[0]), len(k[1])))]
        return Behaviour(text=json.dumps({"hits": hits, "reasoning": "scripted"}))

    out = tmp_path / "calibration.json"
    with LoopbackServer(rules=rules) as server:
        args = ["calibrate", str(minibench), "--judges", str(_judges(tmp_path, server)), "--panel", "both"]
        result = runner.invoke(app, [*args, "-o", str(out), "--no-progress"])
        assert result.exit_code == 0, result.output
        sent = server.count
        assert sent > 0
        again = runner.invoke(app, [*args, "-o", str(out), "--no-progress"])
        assert again.exit_code == 0, again.output
        assert server.count == sent  # the run store answers a rerun
    report = json.loads(out.read_text(encoding="utf-8"))
    by_judge = {r["judge"]: r for r in report["reports"]}
    weak, good = by_judge["weak"], by_judge["good"]
    assert weak["reference_full_score_rate"]["rate"] == 1.0
    assert all(d["rate"] == 0.0 for d in weak["detection_rate"].values())
    assert all(d["rate"] == 1.0 for d in good["detection_rate"].values())
    assert good["false_miss_rate"]["rate"] == 0.0 and good["reference_full_score_rate"]["rate"] == 1.0
    assert good["detection_rate"] == by_judge["rule"]["detection_rate"]
    assert (tmp_path / "calibration" / "perturbations.json").is_file()
    assert (tmp_path / "calibration" / "store.sqlite").is_file()


def test_the_rule_panel_needs_no_judges_file(minibench: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    result = runner.invoke(app, ["calibrate", str(minibench), "--panel", "rule", "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text(encoding="utf-8"))["reports"][0]["judge"] == "rule"


def _one_line_error(result: Any, needle: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], result.output


def test_bad_input_is_one_line(minibench: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "c.json")
    judges = tmp_path / "judges.json"
    judges.write_text(json.dumps({"judges": [{"name": "a", "model": "m"}], "panels": {"p": ["a"]}}))
    _one_line_error(
        runner.invoke(app, ["calibrate", str(minibench), "--judges", str(judges), "--panel", "nope", "-o", out]),
        "no panel 'nope'",
    )
    broken = tmp_path / "broken.toml"
    broken.write_text("judges = [")
    _one_line_error(
        runner.invoke(app, ["calibrate", str(minibench), "--judges", str(broken), "--panel", "p", "-o", out]),
        "broken.toml",
    )
    _one_line_error(
        runner.invoke(
            app, ["calibrate", str(minibench), "--judges", str(tmp_path / "missing.json"), "--panel", "p", "-o", out]
        ),
        "missing.json",
    )
    bare = tmp_path / "bare"
    make_minibench(bare, per_subcategory=1)
    lines = (bare / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    stripped = [json.dumps({k: v for k, v in json.loads(line).items() if k != "reference"}) for line in lines]
    (bare / "instances.jsonl").write_text("\n".join(stripped) + "\n", encoding="utf-8")
    _one_line_error(runner.invoke(app, ["calibrate", str(bare), "--panel", "rule", "-o", out]), "reference")


def test_the_report_never_replaces_a_file_it_did_not_write(minibench: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from omnivchat.cli import app

    out = tmp_path / "calibration.json"
    out.write_text("the user's notes\n", encoding="utf-8")
    args = ["judges", "calibrate", str(minibench), "--panel", "rule", "-o", str(out), "--no-progress"]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "--force" in refused.output
    assert out.read_text(encoding="utf-8") == "the user's notes\n"
    out.unlink()
    assert CliRunner().invoke(app, args).exit_code == 0
    assert CliRunner().invoke(app, args).exit_code == 0  # a rerun rewrites its own report
    assert "reports" in json.loads(out.read_text(encoding="utf-8"))
