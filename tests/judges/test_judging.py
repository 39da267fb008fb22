"""Judging a run end to end: LLM judges on the loopback server, caching, unscored verdicts, panels, styles."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks.native import collect_scores, judge_run, panel_hits_majority, run_eval
from omnivchat.cli import app
from omnivchat.judges import JudgesConfig, JudgesFileError, load_judges
from omnivchat.routes import get_route
from omnivchat.runs import RetryPolicy, RunError
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()


def verdict_rules(request_json):
    """Judge A: everything met. Judge B: only the gate. Style judge: all seven."""
    text = message_text(request_json)
    model = request_json["model"]
    if "checklist of 7" in text:
        return Behaviour(text='{"hits": [1, 2, 3, 4, 5, 6, 7], "reasoning": "fine"}')
    if model == "judge-a":
        return Behaviour(text='Verdict:\n```json\n{"hits": [1, 2, 3], "reasoning": "all"}\n```')
    if model == "judge-b":
        return Behaviour(text='{"hits": [1], "reasoning": "gate only"}')
    return Behaviour(text="I am not a judge")


@pytest.fixture
def server():
    with LoopbackServer(rules=verdict_rules) as srv:
        yield srv


@pytest.fixture
def judged_run(small_bench, tmp_path):
    out = tmp_path / "run"
    summary = run_eval(small_bench, get_route("sim:healthy"), out, system_prompt="x", progress=False)
    assert summary.done == 4
    return out


def judges_file(tmp_path, server, **extra) -> str:
    judges = [
        {"name": "A", "model": "judge-a", "base_url": server.base_url, **extra},
        {"name": "B", "model": "judge-b", "base_url": server.base_url},
        {"name": "G", "model": "garbage", "base_url": server.base_url},
    ]
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": judges, "panels": {"default": ["A", "B"], "ab-rule": ["A", "rule"]}}))
    return str(path)


def test_judge_then_score_and_second_pass_sends_nothing(judged_run, small_bench, server, tmp_path):
    config = load_judges(judges_file(tmp_path, server))
    report = judge_run(judged_run, small_bench, config, ["A", "B"], style_judge="A", progress=False)
    assert report.summaries["rubric:A"].done == 4 and report.summaries["style:A"].done == 4
    sent = server.count
    assert sent == 12  # 4 replies x (A, B, style by A)
    again = judge_run(judged_run, small_bench, config, ["A", "B"], style_judge="A", progress=False)
    assert server.count == sent and again.summaries["rubric:A"].reused == 4
    # rubric and style requests run concurrently: take the first rubric one, whichever went out first
    first = next(r.json for r in server.chat_requests if "[tier 0]" in message_text(r.json))
    assert first["temperature"] == 0.0 and "enable_thinking" not in first  # unknown route: field left out
    assert "[tier 0]" in message_text(first) and "reference reply for" in message_text(first)
    scores = {s.item_id: s for s in collect_scores(judged_run, small_bench, ["A", "B"], style_judge="A")}
    assert scores["s1"].per_judge == {"A": 1.0, "B": 0.0}
    assert scores["s1"].score == 0.5 and scores["s1"].style == 1.0
    majority = collect_scores(judged_run, small_bench, ["A", "B"], aggregate="majority")
    assert all(s.score == 0.0 for s in majority)  # ties are not a majority: only the gate is met by both


def test_garbage_verdicts_are_unscored_never_zero(judged_run, small_bench, server, tmp_path):
    config = load_judges(judges_file(tmp_path, server))
    report = judge_run(judged_run, small_bench, config, ["G"], max_attempts=3, progress=False)
    assert report.summaries["rubric:G"].failures == {"unparseable": 4}
    assert server.count == 12  # asked three times each, then given up
    scores = collect_scores(judged_run, small_bench, ["G"])
    assert all(s.score is None and "unparseable" in s.reason for s in scores)


def test_a_panel_missing_a_judge_gives_no_score(judged_run, small_bench, server, tmp_path):
    config = load_judges(judges_file(tmp_path, server))
    judge_run(judged_run, small_bench, config, ["A"], progress=False)  # --only-judge A
    scores = collect_scores(judged_run, small_bench, ["A", "B"])
    assert all(s.score is None and "B: not judged" in s.reason for s in scores)
    judge_run(judged_run, small_bench, config, ["B"], progress=False)  # later: B alone
    assert all(s.score == 0.5 for s in collect_scores(judged_run, small_bench, ["A", "B"]))


def test_empty_replies_score_zero_without_judging(small_bench, tmp_path):
    out = tmp_path / "run"
    with LoopbackServer(default=Behaviour(text="")) as candidate:
        route = get_route("omni", base_url=candidate.base_url)
        run_eval(small_bench, route, out, system_prompt="x", progress=False, retry=RetryPolicy(max_attempts=1))
    with LoopbackServer(rules=verdict_rules) as server:
        config = load_judges(judges_file(tmp_path, server))
        report = judge_run(out, small_bench, config, ["A"], style_judge="A", progress=False)
        assert server.count == 0 and report.empty_replies == 4
    scores = collect_scores(out, small_bench, ["A"], style_judge="A")
    assert all((s.score, s.style) == (0.0, 0.0) for s in scores)
    # without a style judge there is no style, and `score` shows no Style number (it printed 0.000 before)
    assert all(s.style is None for s in collect_scores(out, small_bench, ["A"]))
    row_file = tmp_path / "row.json"
    result = runner.invoke(app, ["score", str(out), "--panel", "rule", "-o", str(row_file)])
    assert result.exit_code == 0, result.output
    row = json.loads(row_file.read_text())
    assert row["Style"] is None and row["n_empty_replies"] == 4 and row["n_style_graded"] == 0


def test_a_punctuation_only_reply_is_empty_for_judging_too(small_bench, tmp_path):
    """One definition of an empty reply (no counted word) for judging, Style and Len alike."""
    out = tmp_path / "run"
    with LoopbackServer(default=Behaviour(text="... ?")) as candidate:
        run_eval(small_bench, get_route("omni", base_url=candidate.base_url), out, system_prompt="x", progress=False)
    with LoopbackServer(rules=verdict_rules) as server:
        report = judge_run(out, small_bench, load_judges(judges_file(tmp_path, server)), ["A"], progress=False)
        assert server.count == 0 and report.empty_replies == 4
    assert all(s.score == 0.0 for s in collect_scores(out, small_bench, ["A"]))


def test_judge_settings_changes_need_a_new_name(judged_run, small_bench, server, tmp_path):
    judge_run(judged_run, small_bench, load_judges(judges_file(tmp_path, server)), ["A"], progress=False)
    changed = load_judges(judges_file(tmp_path, server, temperature=0.7))
    with pytest.raises(RunError, match=r"judge 'A' already graded .*\(temperature\)"):
        judge_run(judged_run, small_bench, changed, ["A"], progress=False)


def test_cli_judge_and_score_with_rule_panel(judged_run, server, tmp_path):
    path = judges_file(tmp_path, server)
    result = runner.invoke(app, ["judge", str(judged_run), "--judges", path, "--panel", "ab-rule", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "rubric:A: 4/4 verdicts" in result.output
    out = tmp_path / "row.json"
    args = ["score", str(judged_run), "--judges", path, "--panel", "ab-rule", "-o", str(out)]
    # small-bench rubrics carry no machine checks: the rule judge cannot decide them, so nothing is scored and
    # the row is incomplete: exit 1, and the row is written only when that is accepted
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and not out.exists(), result.output
    result = runner.invoke(app, [*args, "--allow-incomplete"])
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())
    assert row["n_unscored"] == 4 and row["Mean"] is None and row["complete"] is False
    assert "Mean over 0 of 4 subcategories" in " ".join(result.output.split())
    assert "rule: criteria [1, 2, 3] carry no machine check" in result.output


def test_judges_file_errors(tmp_path):
    bad = tmp_path / "j.toml"
    bad.write_text('[judges.A]\nmodel = "m"\n[panels]\ndefault = ["A", "Z"]\n')
    with pytest.raises(ValueError, match="panel 'default' names judges not in the file: Z"):
        load_judges(bad)
    bad.write_text("[judges.A\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_judges(bad)
    good = tmp_path / "g.toml"
    good.write_text('[judges.A]\nmodel = "m"\nextra = { top_k = 1 }\n[panels]\nsolo = ["A"]\n')
    config = load_judges(good)
    assert isinstance(config, JudgesConfig) and config.judges["A"].extra == {"top_k": 1}
    assert config.panel("solo") == ["A"] and config.panel(None) == ["A"]
    with pytest.raises(JudgesFileError, match="no panel 'nope'"):
        config.panel("nope")


def test_majority_of_verdicts():
    assert panel_hits_majority([[1, 2], [1, 3], [1, 2, 3]], 3) == [1, 2, 3]
    assert panel_hits_majority([[1, 2], [1]], 2) == [1]


def test_cli_agreement_study(judged_run, server, tmp_path):
    path = judges_file(tmp_path, server)
    assert runner.invoke(app, ["judge", str(judged_run), "--judges", path, "--no-progress"]).exit_code == 0
    result = runner.invoke(app, ["judges", "agree", str(judged_run), "--judges", "A,B", "--resamples", "50"])
    assert result.exit_code == 0, result.output
    report = json.loads((judged_run / "agreement.json").read_text())
    rows = {r["judge"]: r for r in report["rows"]}
    assert rows["A"]["pooled"] == 1.0 and rows["B"]["pooled"] == 0.0 and rows["B"]["gate"] == 1.0
    (pair,) = report["pairs"]
    assert pair["criterion_agreement"] == pytest.approx(1 / 3) and pair["full_score_match"] == 0.0
    assert "Pooled" in result.output
    bad = runner.invoke(app, ["judges", "agree", str(judged_run), "--judges", "A,nobody"])
    assert bad.exit_code == 2 and "'nobody' has no verdicts" in bad.output
