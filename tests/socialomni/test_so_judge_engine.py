"""SocialOmni's How panel through the one judge engine (issue 24, item 1): `socialomni judge` and `omnivchat judge`
on a SocialOmni run take --dry-run (an estimate, nothing sent or written) and --budget (stop before passing it,
exit 3; a rerun with a larger one resumes, asking nothing twice), and a partial panel is reported as incomplete,
never as a score."""

from __future__ import annotations

import json

import pytest
from socialomni_factory import candidate_answers, make_socialomni
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
STANDARD = ("gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni")
# a verdict costs $0.01 (1,000 output tokens at $10 per million); at most $0.08192 estimated (8,192 tokens)
SCORE = Behaviour(text="75", usage={"prompt_tokens": 0, "completion_tokens": 1000, "total_tokens": 1000})
PRICE = {"input_per_mtok": 0.0, "output_per_mtok": 10.0}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A complete --limit 4 When and How run (When 4, How 3), from a model served with no key."""
    annotations, media, contexts = make_socialomni(tmp_path_factory.mktemp("socialomni"))
    out = tmp_path_factory.mktemp("engine") / "run"
    args = ["socialomni", "evaluate", "--annotations", str(annotations), "--media", str(media), "--output", str(out)]
    args += ["--model", "self-served-omni", "--no-key", "--limit", "4", "--tasks", "when,how", "--no-progress"]
    with LoopbackServer(rules=candidate_answers) as server:
        result = runner.invoke(app, [*args, "--base-url", server.base_url])
        assert result.exit_code == 0, result.output
    return out, contexts


def judges_file(tmp_path, base_url, *, price=True, **extra):
    entries = [
        {"name": n, "model": f"judge-{n}", "base_url": base_url, "max_concurrency": 1, **extra} for n in STANDARD
    ]
    if price:
        entries = [{**e, "price": PRICE} for e in entries]
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": entries}))
    return path


def so_judge(run, contexts, judges, out, *extra):
    args = ["socialomni", "judge", str(run), "--contexts", str(contexts), "--judges", str(judges)]
    return [*args, "-o", str(out), "--no-progress", *extra]


def any_judge(run, contexts, judges, out, *extra):
    args = ["judge", str(run), "--contexts", str(contexts), "--judges", str(judges), "--panel", "standard"]
    return [*args, "-o", str(out), "--no-progress", *extra]


def flat(result):
    return " ".join(result.output.split())


@pytest.mark.parametrize("command", [so_judge, any_judge])
def test_dry_run_estimates_and_sends_nothing(run, tmp_path, monkeypatch, command):
    monkeypatch.delenv("UNSET_JUDGE_KEY", raising=False)
    out, contexts = run
    judging = tmp_path / "judging"
    with LoopbackServer(SCORE) as server:
        # a dry run needs the judges' prices, not their keys
        path = judges_file(tmp_path, server.base_url, api_key_env="UNSET_JUDGE_KEY")
        result = runner.invoke(app, command(out, contexts, path, judging, "--dry-run"))
        assert result.exit_code == 0, result.output
        assert server.count == 0 and not judging.exists()
    said = flat(result)
    assert "judges: 9 request(s) to send for 9 item(s); nothing was sent" in said
    assert "estimated cost: $" in said and "output tokens at most 73,728" in said


def test_dry_run_leaves_out_stored_verdicts(run, tmp_path):
    out, contexts = run
    judging = tmp_path / "judging"
    with LoopbackServer(SCORE) as server:
        path = judges_file(tmp_path, server.base_url)
        first = runner.invoke(app, so_judge(out, contexts, path, judging, "--only-judge", STANDARD[0]))
        assert first.exit_code == 1 and server.count == 3  # a partial panel: incomplete, no score
        assert "qgold null" in flat(first) and "incomplete over 3 How items" in flat(first)
        dry = runner.invoke(app, any_judge(out, contexts, path, judging, "--dry-run"))
        assert dry.exit_code == 0, dry.output
        assert server.count == 3
    said = flat(dry)
    assert "judges: 6 request(s) to send for 9 item(s) (3 already answered in the store)" in said
    assert "already spent by this run: $0.0300" in said


@pytest.mark.parametrize("command", [so_judge, any_judge])
def test_budget_stops_then_a_rerun_resumes(run, tmp_path, command):
    out, contexts = run
    judging = tmp_path / "judging"
    with LoopbackServer(SCORE) as server:
        path = judges_file(tmp_path, server.base_url)
        stopped = runner.invoke(app, command(out, contexts, path, judging, "--budget", "0.1"))
        assert stopped.exit_code == 3, stopped.output
        sent = server.count
        assert 0 < sent < 9
        assert "budget $0.1000 reached" in flat(stopped) and "verdicts done" in flat(stopped)
        assert "incomplete over 3 How items" in flat(stopped)  # a partial panel: reported as such
        metrics = json.loads((judging / "summary.json").read_text())["metrics"]
        assert metrics["qgold"] is None and not metrics["complete"]
        again = runner.invoke(app, command(out, contexts, path, judging, "--budget", "0.1"))
        assert again.exit_code == 3 and server.count == sent  # the same budget: spent already, nothing more
        resumed = runner.invoke(app, command(out, contexts, path, judging, "--budget", "10"))
        assert resumed.exit_code == 0, resumed.output
        assert server.count == 9  # the verdicts given were not asked again
        rerun = runner.invoke(app, command(out, contexts, path, judging))
        assert rerun.exit_code == 0 and server.count == 9  # resumed: every verdict stored, nothing sent
    metrics = json.loads((judging / "summary.json").read_text())["metrics"]
    assert metrics["qgold"] == 75.0 and metrics["complete"]


def test_budget_needs_a_price_before_anything_is_written(run, tmp_path):
    out, contexts = run
    judging = tmp_path / "judging"
    with LoopbackServer(SCORE) as server:
        path = judges_file(tmp_path, server.base_url, price=False)
        result = runner.invoke(app, so_judge(out, contexts, path, judging, "--budget", "1"))
        assert result.exit_code == 2
        assert "--budget needs a price for judge-gpt-5.6-sol" in flat(result)
        assert server.count == 0 and not judging.exists()
