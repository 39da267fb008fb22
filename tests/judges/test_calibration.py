"""Judge calibration: rule perturbations of the references (numbers and style lists included), the rule judge on the
mini-bench, a weak and a correct LLM judge on the loopback server (rubric and style), unscored verdicts counted
apart, a Director route whose perturbations are verified (garbage rejected and counted), the writer lock of the
output folder, reruns that send nothing, and one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from omnivchat.bench import Bench, BenchInfo, Check, Criterion, Instance, Turn, load_bench
from omnivchat.cli.calibrate import calibrate_command
from omnivchat.judges import (
    CalibrationError,
    Director,
    JudgesConfig,
    Target,
    calibrate,
    change_numbers,
    perturb,
    rule_style_verdict,
    rule_verdict,
    verify_proposal,
    wilson,
    written_form,
)
from omnivchat.routes import get_route
from omnivchat.runs import lock_holder
from omnivchat.studio.minibench import make_minibench
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()
app = typer.Typer()
app.command("calibrate")(calibrate_command)
app.command("other")(lambda: None)  # two commands: `calibrate` is a subcommand, as on the judges app

ALL_STYLE = list(range(1, 8))


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
    # the closed forms at the edges: k = 0 gives [0, z²/(n+z²)], k = n its mirror
    z2 = 1.959963984540054**2
    assert wilson(0, 10)["low"] == 0.0 and wilson(0, 10)["high"] == pytest.approx(z2 / (10 + z2), abs=1e-6)
    assert wilson(10, 10)["high"] == 1.0 and wilson(10, 10)["low"] == pytest.approx(10 / (10 + z2), abs=1e-6)
    assert wilson(1, 3)["low"] == pytest.approx(0.061492, abs=1e-5)  # published value for 1 of 3
    with pytest.raises(ValueError):
        wilson(4, 3)


def test_rule_judge_on_the_minibench(minibench: Path, tmp_path: Path) -> None:
    bench = load_bench(minibench)
    report = calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", progress=False)
    (rule,) = report["reports"]
    assert rule["reference_full_score_rate"]["rate"] == 1.0
    assert rule["reference_full_score_rate"]["n"] == len(bench.instances)
    assert set(rule["detection_rate"]) >= {"0", "1", "2", "style"}
    assert all(d["rate"] == 1.0 for d in rule["detection_rate"].values())
    assert rule["detection_rate"]["style"]["n"] == len(bench.instances)  # every reference has its list
    assert rule["false_miss_rate"]["rate"] == 0.0 and rule["false_miss_rate"]["n"] > 0
    assert rule["unscored"] == 0
    # the rule judge proves style failures only: the references' style is unscored, not a pass and not a miss
    assert rule["reference_style_rate"]["n"] == 0 and rule["style_unscored"] == len(bench.instances)
    assert rule["unscored_reasons"] == {"style: undecided": len(bench.instances)}
    ids = [p["id"] for p in report["perturbations"]]
    assert len(ids) == len(set(ids))
    assert {p["rule"] for p in report["perturbations"]} >= {"language", "negate", "swap", "remove", "list", "number"}
    assert {p["origin"] for p in report["perturbations"]} == {"rule"}
    assert all({"instance", "criterion", "reason"} <= set(s) for s in report["not_perturbed"])
    # every perturbation breaks its target only (by the machine checks); a list keeps every criterion
    by_id = {i.id: i for i in bench.instances}
    for p in report["perturbations"]:
        instance = by_id[p["instance"]]
        hits, _ = rule_verdict(instance, p["text"])
        assert hits is not None
        everything = set(range(1, len(instance.rubric) + 1))
        if p["target"] == "style":
            assert set(hits) == everything and written_form(p["text"]) == "a list"
        elif p["tier"] != 0:
            assert set(hits) == everything - {p["target"]}
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
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CalibrationError, match=r"perturbations\.json: not a perturbations file"):
        calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", progress=False)


def _instance(reference: str, rubric: list[Criterion], language: str = "en", id: str = "x-1") -> Instance:
    return Instance(
        id=id,
        subcategory="AR",
        language=language,
        turns=[Turn(video=f"media/{id}/turn1.mp4")],
        reference=reference,
        rubric=rubric,
    )


def test_a_criterion_without_a_check_is_not_perturbed() -> None:
    instance = _instance(
        "It is yellow. It is the hexagon.",
        [
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
    listed = next(p for p in made if p.target == "style")
    assert listed.text == "- It is yellow.\n- It is the hexagon."


def test_numbers_are_changed_in_the_form_they_are_written() -> None:
    assert change_numbers("We counted the stars: there are two.", [2]) == "We counted the stars: there are three."
    assert change_numbers("一共有四个。", [4]) == "一共有五个。"
    assert change_numbers("一共有一个。", [1]) == "一共有两个。"  # the 一 of 一共 is no number and stays
    assert change_numbers("There are 4 cups and Two plates.", [4, 2]) == "There are 5 cups and Three plates."
    assert change_numbers("It is 3.5 metres.", [3.5]) == "It is 4.5 metres."
    assert change_numbers("There are twenty-one.", [21]) == "There are twenty-two."
    assert change_numbers("No number here.", [3]) is None
    # a tier-1 criterion whose key fact is a number: the number rule comes first, and the rule judge catches it
    instance = _instance(
        "There are three cups on the table. The red one is on your left.",
        [
            Criterion(tier=0, text="English.", check=Check(language="en")),
            Criterion(tier=1, text="Says there are three cups.", check=Check(numbers=[3])),
            Criterion(tier=2, text="Says the red cup is on the left.", check=Check(any_of=["on your left"])),
        ],
    )
    made, _ = perturb(instance)
    number = next(p for p in made if p.target == 2)
    assert number.rule == "number" and number.tier == 1
    assert number.text == "There are four cups on the table. The red one is on your left."
    assert rule_verdict(instance, number.text)[0] == [1, 3]
    zh = _instance(
        "桌上有三个杯子。",
        [
            Criterion(tier=0, text="Chinese.", check=Check(language="zh")),
            Criterion(tier=1, text="Says three cups.", check=Check(any_of=[["三个", "3个"]])),
        ],
        language="zh",
    )
    made, _ = perturb(zh)
    assert next(p for p in made if p.target == 2).text == "桌上有四个杯子。"


def test_the_style_list_and_the_rule_style_check() -> None:
    one_sentence = _instance(
        "The hexagon is yellow, and it is on your left.",
        [
            Criterion(tier=0, text="English.", check=Check(language="en")),
            Criterion(tier=1, text="Yellow.", check=Check(any_of=["yellow"])),
        ],
    )
    listed = next(p for p in perturb(one_sentence)[0] if p.target == "style")
    assert listed.text == "- The hexagon is yellow,\n- and it is on your left."  # clause by clause
    assert rule_style_verdict(listed.text)[0] is False
    assert "requirement 4" in rule_style_verdict(listed.text)[1]
    assert rule_style_verdict(one_sentence.reference)[0] is None  # never a guessed pass
    for text, form in [
        ("1. Red\n2. Blue", "a list"),
        ("一、红色\n二、蓝色", "a list"),
        ("| a | b |", "a table"),
        ("Run `ls` first.", "code"),
        ("**Red** it is.", "bold markup"),
        ("Great job 🎉", "an emoji"),
        ("## Answer\nRed.", "a heading"),
    ]:
        assert written_form(text) == form, text
    for prose in ["It is a well-known place - really.", "It costs 5 dollars.", "It is -3 degrees outside.", "红色。"]:
        assert written_form(prose) is None, prose


def _rubric_size(text: str) -> int:
    return len(re.findall(r"^\d+\. \[tier \d+\]", text, flags=re.MULTILINE))


def _style_reply(text: str) -> str | None:
    """The reply a style request shows (None for a rubric request)."""
    m = re.search(r"\[USER'S LANGUAGE\].*?\[REPLY\]\n(.*)\n\nReturn only", text, flags=re.S)
    return m.group(1) if m else None


def _judges(tmp_path: Path, server: LoopbackServer, names: tuple[str, ...] = ("weak", "good"), **extra: Any) -> Path:
    path = tmp_path / "judges.json"
    judges = [{"name": n, "model": n, "base_url": server.base_url, **extra} for n in names]
    path.write_text(json.dumps({"judges": judges, "panels": {"both": [*names, "rule"]}}))
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
        reply = _style_reply(text)
        if reply is not None:  # the style checklist: the weak judge passes everything, the good one sees lists
            hits = ALL_STYLE if request["model"] == "weak" or not written_form(reply) else [1, 2, 3, 5, 6, 7]
        elif request["model"] == "weak":
            hits = list(range(1, _rubric_size(text) + 1))
        else:
            hits = known[max((k for k in known if shown(k, text)), key=lambda k: (len(k[0]), len(k[1])))]
        return Behaviour(text=json.dumps({"hits": hits, "reasoning": "scripted"}))

    out = tmp_path / "calibration.json"
    with LoopbackServer(rules=rules) as server:
        args = ["calibrate", str(minibench), "--judges", str(_judges(tmp_path, server)), "--panel", "both"]
        result = runner.invoke(app, [*args, "-o", str(out), "--no-progress"])
        assert result.exit_code == 0, result.output
        assert "detect style" in result.output
        sent = server.count
        assert sent > 0
        again = runner.invoke(app, [*args, "-o", str(out), "--no-progress"])
        assert again.exit_code == 0, again.output
        assert server.count == sent  # the run store answers a rerun
    report = json.loads(out.read_text(encoding="utf-8"))
    by_judge = {r["judge"]: r for r in report["reports"]}
    weak, good = by_judge["weak"], by_judge["good"]
    assert weak["reference_full_score_rate"]["rate"] == 1.0 and weak["reference_style_rate"]["rate"] == 1.0
    assert all(d["rate"] == 0.0 for d in weak["detection_rate"].values())
    assert weak["detection_rate"]["style"]["n"] == len(bench.instances)
    assert all(d["rate"] == 1.0 for d in good["detection_rate"].values())
    assert good["reference_style_rate"]["rate"] == 1.0
    assert good["false_miss_rate"]["rate"] == 0.0 and good["reference_full_score_rate"]["rate"] == 1.0
    assert good["detection_rate"] == by_judge["rule"]["detection_rate"]
    assert good["unscored"] == good["style_unscored"] == 0
    assert (tmp_path / "calibration" / "perturbations.json").is_file()
    assert (tmp_path / "calibration" / "store.sqlite").is_file()


def test_unscored_verdicts_are_counted_apart_never_as_misses(minibench: Path, tmp_path: Path) -> None:
    """A judge that fails some requests (HTTP 500) and answers others with prose: those verdicts are unscored,
    left out of every denominator, and counted by reason; the rest are graded as usual."""
    from omnivchat.judges._perturb import OTHER_LANGUAGE

    bench = load_bench(minibench)
    served: dict[str, int] = {}
    other_language = [sentence for _, sentence in OTHER_LANGUAGE.values()]

    def rules(request: dict[str, Any]) -> Behaviour:
        text = message_text(request)
        if _style_reply(text) is not None:
            return Behaviour(text="Looks fine to me.")  # every style verdict unparseable
        if any(f"[REPLY]\n{i.reference}\n\n[MODEL" in text for i in bench.instances):
            served["failed"] = served.get("failed", 0) + 1
            return Behaviour(status=500)  # every reference fails
        if any(f"[REPLY]\n{sentence}\n" in text for sentence in other_language):
            return Behaviour(text="The reply is in the wrong language.")  # tier-0 perturbations: no verdict
        return Behaviour(text=json.dumps({"hits": list(range(1, _rubric_size(text) + 1)), "reasoning": "all"}))

    with LoopbackServer(rules=rules) as server:
        config = JudgesConfig.model_validate(
            {"judges": [{"name": "flaky", "model": "flaky", "base_url": server.base_url}]}
        )
        report = calibrate(bench, config, ["flaky"], tmp_path / "cal", max_attempts=1, progress=False)
    (flaky,) = report["reports"]
    n_refs = len(bench.instances)
    tiers = [p["tier"] for p in report["perturbations"]]
    n_lists, n_language = tiers.count("style"), tiers.count(0)
    assert n_language == n_refs and n_lists == n_refs
    assert flaky["reference_full_score_rate"]["n"] == 0  # every reference failed: no rate, not a 0
    assert flaky["reference_full_score_rate"]["rate"] is None
    assert flaky["unscored"] == n_refs + n_language and served["failed"] == n_refs
    assert flaky["style_unscored"] == n_refs + n_lists
    assert flaky["unscored_reasons"] == {
        "rubric: server_error": n_refs,
        "rubric: unparseable": n_language,
        "style: unparseable": n_refs + n_lists,
    }
    assert "0" not in flaky["detection_rate"] and "style" not in flaky["detection_rate"]  # no verdict, no rate
    detected = sum(d["n"] for d in flaky["detection_rate"].values())
    assert detected == len(tiers) - n_lists - n_language  # the scored perturbations aimed at a criterion
    assert all(d["rate"] == 0.0 for d in flaky["detection_rate"].values())  # it gave everything: a miss each
    assert flaky["false_miss_rate"]["rate"] == 0.0


# --- the Director ------------------------------------------------------------------------------------------------

COUNTED = _instance(
    "There are three cups on the table. The red one is on your left.",
    [
        Criterion(tier=0, text="The reply is in English.", check=Check(language="en")),
        Criterion(tier=1, text="Says there are three cups.", check=Check(numbers=[3])),
        Criterion(tier=2, text="Says the red cup is on the user's left.", check=Check(any_of=["on your left"])),
    ],
    id="cups",
)
UNCHECKED = _instance(
    "That mug has a red reindeer pattern on it, very festive!",
    [
        Criterion(tier=0, text="The reply is in English."),
        Criterion(tier=1, text="Identifies the pattern as a reindeer."),
        Criterion(tier=2, text="Says the pattern is red."),
    ],
    id="mug",
)


def _director_answer(text: str) -> str:
    """A scripted Director: good answers for most targets, garbage or unusable ones for three."""
    reference = re.search(r"\[REFERENCE REPLY\]\n(.*?)\n\n\[RUBRIC\]", text, flags=re.S).group(1)  # type: ignore[union-attr]
    target = re.search(r"\[TARGET\]\n(\w+): (?:criterion (\d+))?", text).groups()  # type: ignore[union-attr]
    kind, number = target[0], int(target[1] or 0)
    cups = reference == COUNTED.reference
    if kind == "language":
        return json.dumps({"reply": "桌子上有三个杯子。" if cups else "That mug is red."})  # mug: still English
    if kind == "number":
        return json.dumps({"reply": reference.replace("three", "four")})
    if kind == "detail" and cups:
        return "Sorry, I cannot help with that."  # garbage
    if kind in ("fact", "detail"):
        return (
            "```json\n"
            + json.dumps({"reply": reference.replace("reindeer" if number == 2 else "red", "snowman")})
            + "\n```"
        )
    if kind == "list":
        sentences = [s for s in re.split(r"(?<=[.!])\s+", reference) if s]
        return json.dumps({"reply": "\n".join(f"- {s}" for s in sentences) if cups else reference + " Truly."})
    raise AssertionError(f"unexpected target {target}")


def _small_bench(root: Path) -> Bench:
    return Bench(root=root, info=BenchInfo(name="small"), instances=[COUNTED, UNCHECKED])


def test_director_proposals_are_verified() -> None:
    number = Target(COUNTED, 2, "number")
    assert verify_proposal(number, json.dumps({"reply": COUNTED.reference.replace("three", "four")}))[1] == "ok"
    assert verify_proposal(number, json.dumps({"reply": COUNTED.reference.replace("left", "right")}))[0] is None
    fenced = "```json\n" + json.dumps({"reply": COUNTED.reference.replace("three", "five")}) + "\n```"
    assert verify_proposal(number, fenced)[0] is not None
    for answer, why in [
        ("Sure! Here it is: there are four cups.", "not one JSON object"),
        (json.dumps({"text": "x"}), "not one JSON object"),
        (json.dumps({"reply": "  "}), "empty"),
        (json.dumps({"reply": COUNTED.reference.upper()}), "unchanged"),
        (json.dumps({"reply": "桌子上有四个杯子。"}), "not in English"),
        (json.dumps({"reply": "- There are four cups.\n- The red one is on your left."}), "would test style too"),
        (json.dumps({"reply": COUNTED.reference + " Four" * 200}), "far longer"),
    ]:
        text, reason = verify_proposal(number, answer)
        assert text is None and why in reason, (answer, reason)
    wrong_one = json.dumps({"reply": COUNTED.reference.replace("three", "four")})  # breaks criterion 2, not 3
    assert "machine checks disagree" in verify_proposal(Target(COUNTED, 3, "detail"), wrong_one)[1]
    listing = Target(UNCHECKED, "style", "list")
    assert "not a list" in verify_proposal(listing, json.dumps({"reply": UNCHECKED.reference + " Yes."}))[1]
    fact = Target(UNCHECKED, 2, "fact")
    rewritten = json.dumps({"reply": "Trains are faster than cars, you know."})
    assert "shares too little" in verify_proposal(fact, rewritten)[1]  # a rewrite, not one change
    from omnivchat.judges._calibration import director_request
    from omnivchat.routes import Sampling

    asked = director_request(fact, Sampling())
    prompt = f"{asked.system_prompt}\n{asked.text}"
    for echo in ["the rewritten reply", "Identifies the pattern as a reindeer."]:  # the template, a criterion
        assert "copies the request" in verify_proposal(fact, json.dumps({"reply": echo}), prompt)[1]
    changed = json.dumps({"reply": "That mug has a red snowman pattern on it, very festive!"})
    assert verify_proposal(fact, changed, prompt)[1] == "ok"
    language = Target(UNCHECKED, 1, "language")
    assert "still English" in verify_proposal(language, json.dumps({"reply": "It is red."}))[1]
    assert verify_proposal(language, json.dumps({"reply": "那个杯子上有红色的驯鹿图案。"}))[1] == "ok"


def test_a_director_route_writes_perturbations_every_judge_sees(tmp_path: Path) -> None:
    bench = _small_bench(tmp_path / "bench")
    with LoopbackServer(rules=lambda r: Behaviour(text=_director_answer(message_text(r)))) as server:
        route = get_route("dir-model", base_url=server.base_url, media_input="none")
        director = Director(route, structured_output="json_object")
        report = calibrate(
            bench, JudgesConfig(), ["rule"], tmp_path / "cal", director=director, max_attempts=2, progress=False
        )
        asked = server.count
        assert asked == 8 + 3  # 8 targets (3 criteria and style, twice), and the 3 rejected ones asked again
        sent = server.chat_requests[0].json
        assert sent["response_format"]["type"] == "json_object"  # llama.cpp's form of the answer's schema
        assert sent["response_format"]["schema"]["required"] == ["reply"]
        again = calibrate(
            bench,
            JudgesConfig(),
            ["rule"],
            tmp_path / "cal",
            director=Director(
                get_route("dir-model", base_url=server.base_url, media_input="none"), structured_output="json_object"
            ),
            progress=False,
        )
        assert server.count == asked  # the stored set is reused: the Director is not asked again
        other = Director(get_route("other-model", base_url=server.base_url, media_input="none"))
        with pytest.raises(CalibrationError, match="made with the Director dir-model"):
            calibrate(bench, JudgesConfig(), ["rule"], tmp_path / "cal", director=other, progress=False)
    assert again["reports"] == report["reports"]
    stored = json.loads((tmp_path / "cal" / "perturbations.json").read_text(encoding="utf-8"))
    origins = {(p["instance"], str(p["target"])): p for p in stored["perturbations"] if p["origin"] != "rule"}
    assert {p["origin"] for p in origins.values()} == {"director:dir-model"}
    assert set(origins) == {("cups", "1"), ("cups", "2"), ("cups", "style"), ("mug", "2"), ("mug", "3")}
    assert origins["cups", "2"]["rule"] == "number" and "four cups" in origins["cups", "2"]["text"]
    assert origins["mug", "2"]["text"] == "That mug has a red snowman pattern on it, very festive!"  # fence tolerated
    rejected = {(r["instance"], str(r["target"])): r["reason"] for r in stored["director_rejected"]}
    assert set(rejected) == {("cups", "3"), ("mug", "1"), ("mug", "style")}
    assert "not one JSON object" in rejected["cups", "3"]
    assert "still English" in rejected["mug", "1"]
    assert "not a list" in rejected["mug", "style"]
    assert stored["director_counts"] == {
        "targets": 8,
        "accepted": 5,
        "rejected_targets": 3,
        "rejected_answers": 6,
        "requests": 11,
    }
    assert stored["director"]["model"] == "dir-model" and report["director_counts"] == stored["director_counts"]
    (rule,) = report["reports"]
    # the rule judge sees them too: the Director's number change on the checked instance is caught
    assert rule["detection_by_rule"]["number (director:dir-model)"]["rate"] == 1.0
    assert report["perturbation_origins"]["director:dir-model"] == 5
    # the mug's criteria carry no machine check: the rule judge leaves its reference and perturbations unscored
    mug = sum(p["instance"] == "mug" for p in report["perturbations"])
    assert rule["unscored"] == 1 + mug and rule["unscored_reasons"]["rubric: undecided"] == 1 + mug


def test_the_director_flags_on_the_command_line(minibench: Path, tmp_path: Path) -> None:
    bench = load_bench(minibench)
    first = bench.instances[0]
    answers: list[str] = []

    def rules(request: dict[str, Any]) -> Behaviour:
        answers.append(request["model"])
        return Behaviour(text="not json at all")

    out = tmp_path / "c.json"
    with LoopbackServer(rules=rules) as server:
        args = ["calibrate", str(minibench), "--panel", "rule", "-o", str(out), "--no-progress"]
        args += ["--director", "dir-model", "--base-url", server.base_url, "--max-attempts", "1"]
        result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert set(answers) == {"dir-model"}
    report = json.loads(out.read_text(encoding="utf-8"))
    counts = report["director_counts"]
    assert counts["accepted"] == 0 and counts["rejected_targets"] == counts["targets"] == len(answers)
    assert counts["targets"] == sum(len(i.rubric) + 1 for i in bench.instances)
    assert f"0 of {counts['targets']} targets accepted" in result.output
    assert all(p["origin"] == "rule" for p in report["perturbations"])
    assert any(r["instance"] == first.id for r in report["director_rejected"])


# --- the writer lock -----------------------------------------------------------------------------------------------


def test_two_calibrations_of_one_folder_the_second_is_refused(minibench: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    folder = tmp_path / "calibration"

    def rules(request: dict[str, Any]) -> Behaviour:
        text = message_text(request)
        size = 7 if _style_reply(text) is not None else _rubric_size(text)
        return Behaviour(text=json.dumps({"hits": list(range(1, size + 1)), "reasoning": "slow"}), latency=1.5)

    with LoopbackServer(rules=rules) as server:
        judges = _judges(tmp_path, server, names=("slow",), max_concurrency=64)
        args = ["calibrate", str(minibench), "--judges", str(judges), "--panel", "both", "-o", str(out)]
        command = [sys.executable, "-c", "from omnivchat.cli import app; app()", "judges", *args, "--no-progress"]
        env = {**os.environ, "NO_COLOR": "1"}
        first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 60
            while lock_holder(folder) is None:
                assert first.poll() is None, first.communicate()[0].decode()
                assert time.monotonic() < deadline, "the first calibration never took the lock"
                time.sleep(0.05)
            second = runner.invoke(app, [*args, "--no-progress"])
            assert second.exit_code == 2, second.output
            line = " ".join(second.output.split())
            assert f"{folder} is being written by pid {first.pid}" in line and "judges calibrate" in line
            output, _ = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
    assert first.returncode == 0, output.decode()
    assert "reports" in json.loads(out.read_text(encoding="utf-8"))
    assert lock_holder(folder) is None
    assert runner.invoke(app, [*args, "--no-progress"]).exit_code == 0  # once it is done, a rerun goes ahead


# --- the command line ----------------------------------------------------------------------------------------------


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
    # a perturbations folder of another bench
    runner.invoke(app, ["calibrate", str(minibench), "--panel", "rule", "-o", out, "--no-progress"])
    other = tmp_path / "other"
    make_minibench(other, per_subcategory=1, seed=3)
    _one_line_error(runner.invoke(app, ["calibrate", str(other), "--panel", "rule", "-o", out]), "another bench")


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
