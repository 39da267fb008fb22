"""`omnivchat studio run` end to end with the offline backend: every subcategory, a valid bench, resume, the
trace command, and defects injected at a rate that the engine must catch before anything reaches the bench."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import SUBCATEGORIES, load_bench
from omnivchat.benchmarks.native import BenchClipChecker
from omnivchat.cli import app
from omnivchat.judges import rule_verdict
from omnivchat.studio.engine import read_trace

runner = CliRunner()


def _studio(*args: str) -> str:
    result = runner.invoke(app, ["studio", *args, "--no-progress"] if args[0] == "run" else ["studio", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("studio") / "bench"
    return out, _studio("run", "--all", "--n", "2", "-o", str(out), "--backend", "offline")


def test_all_subcategories_give_a_valid_bench_of_34_instances(full):
    out, printed = full
    bench = load_bench(out, check_media=BenchClipChecker())
    assert len(bench.instances) == 34
    assert {code: n for code, n in bench.info.subcategories.items()} == dict.fromkeys(SUBCATEGORIES, 2)
    assert "accepted 34 of 34" in printed and "repairs used:" in printed
    assert {i.language for i in bench.instances} <= {"en", "zh"}
    for instance in bench.instances:
        trace = read_trace(out / instance.meta["generator"]["trace"])
        assert trace.status == "accepted" and trace.id == instance.id
        assert instance.meta["assignment"]["language"] == instance.language
        assert instance.rubric[0].tier == 0
        hits, _ = rule_verdict(instance, instance.reference)
        assert hits == list(range(1, len(instance.rubric) + 1)), instance.id  # the reference meets its rubric
        multi = SUBCATEGORIES[instance.subcategory].kind == "multi"
        assert (len(instance.turns) > 1) == multi
        if multi:
            assert len(instance.turns) == int(instance.meta["assignment"]["turns"])


def test_a_finished_command_repeated_adds_nothing(full):
    out, _ = full
    before = (out / "instances.jsonl").read_bytes()
    printed = _studio("run", "--all", "--n", "2", "-o", str(out), "--backend", "offline")
    assert "0 instance(s) synthesized now, 34 already done" in printed
    assert "0 made" in printed
    assert (out / "instances.jsonl").read_bytes() == before


def test_the_trace_command_prints_the_modules_of_an_instance(full):
    out, _ = full
    bench = load_bench(out)
    single = next(i for i in bench.instances if i.subcategory == "SVMR")
    printed = _studio("trace", str(out), single.id)
    for module in ("attribute & corpus sampling", "script generation", "validation", "video review", "reply review"):
        assert module in printed
    multi = next(i for i in bench.instances if i.subcategory == "MDCC")
    printed = _studio("trace", str(out), multi.id)
    for module in ("plan review", "prompt generation", "prompt review", "final-reply plan", "validation review"):
        assert module in printed
    whole = json.loads(_studio("trace", str(out), multi.id, "--json"))
    assert whole["status"] == "accepted" and whole["steps"][0]["module"] == "0"


def test_injected_defects_are_repaired_or_discarded_never_delivered(tmp_path):
    out = tmp_path / "bench"
    configs = ["--config", "SVMR", "--config", "MVMS", "--config", "AOR"]
    printed = _studio("run", *configs, "--n", "3", "--defect-rate", "0.5", "--seed", "3", "-o", str(out))
    assert "repairs used:" in printed and "repairs used: none" not in printed
    traces = [read_trace(p) for p in sorted((out / "studio" / "traces").glob("*.json"))]
    assert len(traces) == 9
    repairs = sum(sum(t.repairs.values()) for t in traces)
    assert repairs > 0
    for trace in traces:
        if trace.status == "discarded":
            assert trace.reason
            continue
        # the clip each turn delivered is the one its review accepted, and it carries no injected defect
        renders = [s for s in trace.steps if s.module in ("8", "f") and s.decision == "pass"]
        reviews = [s for s in trace.steps if s.module in ("11", "i") and s.decision != "qa"]
        accepted = [r for r, v in zip(renders, reviews, strict=True) if v.decision == "accept"]
        assert accepted and all(not r.outputs.get("notes", {}).get("injected_defect") for r in accepted)
    bench = load_bench(out, check_media=BenchClipChecker())
    assert len(bench.instances) == sum(t.status == "accepted" for t in traces)
    for instance in bench.instances:
        hits, _ = rule_verdict(instance, instance.reference)
        assert hits == list(range(1, len(instance.rubric) + 1)), instance.id


def test_repair_budgets_come_from_the_config_and_the_command_line(tmp_path):
    import yaml

    from omnivchat.studio.config import SHIPPED_DIR

    data = yaml.safe_load((SHIPPED_DIR / "svmr.yaml").read_text(encoding="utf-8"))
    config = tmp_path / "svmr.yaml"
    config.write_text(yaml.safe_dump({**data, "budgets": {"rewrite": 0}}, allow_unicode=True), encoding="utf-8")
    args = ["studio", "run", "--config", str(config), "--n", "1", "--defect-rate", "1.0", "--no-progress"]

    def trace_of(out: Path):
        (trace,) = [read_trace(p) for p in (out / "studio" / "traces").glob("*.json")]
        return trace

    runner.invoke(app, [*args, "-o", str(tmp_path / "a")])
    trace = trace_of(tmp_path / "a")
    assert trace.status == "discarded" and trace.reason.startswith("rewrite budget (0) spent"), trace.reason

    runner.invoke(app, [*args, "--repair-budget", "rewrite=2", "--repair-budget", "total=7", "-o", str(tmp_path / "b")])
    trace = trace_of(tmp_path / "b")
    assert trace.repairs.get("rewrite") == 2 and not trace.reason.startswith("rewrite budget (0)"), trace.reason
    manifest = json.loads((tmp_path / "b" / "studio" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["budgets"] == {"render": 5, "rewrite": 2, "plan": 2, "qa": 1, "refine": 1, "total": 7}


@pytest.mark.parametrize("item", ["renders=2", "render=-1", "render", "render=two"])
def test_a_bad_repair_budget_is_one_line_naming_it(item, tmp_path):
    result = runner.invoke(
        app, ["studio", "run", "--config", "SVMR", "--n", "1", "--repair-budget", item, "-o", str(tmp_path / "x")]
    )
    assert result.exit_code != 0 and f"--repair-budget {item!r}" in result.output, result.output
    assert "Traceback" not in result.output and not (tmp_path / "x").exists()
