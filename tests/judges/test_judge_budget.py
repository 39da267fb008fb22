"""A judging pass's cost (issue 17): each verdict priced from usage at the judge's price, `judge --dry-run` sends
nothing, `judge --budget` stops part-way (exit 3, naming the budget) and resumes with a larger one."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks.native import run_eval
from omnivchat.cli import app
from omnivchat.routes import get_route
from omnivchat.runs import run_cost
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
VERDICT = Behaviour(
    text='{"hits": [1, 2, 3], "reasoning": "all"}',
    usage={"prompt_tokens": 0, "completion_tokens": 1000, "total_tokens": 1000},
)


@pytest.fixture
def server():
    with LoopbackServer(VERDICT) as srv:
        yield srv


@pytest.fixture
def run(small_bench, tmp_path):
    out = tmp_path / "run"
    assert run_eval(small_bench, get_route("sim:healthy"), out, system_prompt="x", progress=False).done == 4
    return out


def judges(tmp_path, server, price=True):
    judge = {"name": "A", "model": "judge-a", "base_url": server.base_url, "max_concurrency": 1, "max_tokens": 2048}
    if price:
        judge["price"] = {"input_per_mtok": 0.0, "output_per_mtok": 100.0}  # a verdict: $0.10; estimate <= $0.2048
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": [judge], "panels": {"default": ["A"]}}))
    return str(path)


def test_judge_dry_run_sends_nothing(run, server, tmp_path):
    result = runner.invoke(app, ["judge", str(run), "--judges", judges(tmp_path, server), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert server.count == 0 and not (run / "judges.json").exists()
    assert "rubric:A: 4 request(s) to send for 4 item(s); nothing was sent" in result.output
    assert "estimated cost: $" in result.output and "output tokens at most 8,192" in result.output


def test_judge_budget_stops_then_resumes(run, server, tmp_path):
    path = judges(tmp_path, server)
    args = ["judge", str(run), "--judges", path, "--no-progress"]
    stopped = runner.invoke(app, [*args, "--budget", "0.35"])
    assert stopped.exit_code == 3, stopped.output
    assert server.count == 2
    assert "budget $0.3500 reached" in stopped.output and "2 of 4 verdicts done, 2 not sent" in stopped.output
    assert "rubric:A: 2/4 verdicts" in stopped.output and "cost $0.2000 for 2 attempts" in stopped.output
    resumed = runner.invoke(app, [*args, "--budget", "1"])
    assert resumed.exit_code == 0, resumed.output
    assert server.count == 4  # the two verdicts given were not asked again
    cost = run_cost(run)
    assert cost.by_kind["rubric:A"].spent_usd == pytest.approx(0.4)
    assert cost.by_kind["candidate"].spent_usd == 0.0 and cost.by_kind["candidate"].priced == 4  # sim: free
    shown = runner.invoke(app, ["runs", "show", str(run)]).output
    assert "rubric:A: $0.4000 for 4 attempts" in shown


def test_judge_budget_needs_a_price(run, server, tmp_path):
    result = runner.invoke(app, ["judge", str(run), "--judges", judges(tmp_path, server, price=False), "--budget", "1"])
    assert result.exit_code == 2
    assert "--budget needs a price for judge-a (judge 'A': give it a price in the judges file)" in result.output
    assert server.count == 0 and not (run / "judges.json").exists()  # refused before anything was written


def test_a_price_does_not_change_a_judges_identity(run, server, tmp_path):
    """Adding a price to a judge that already graded the run keeps its verdicts (no new judge name needed)."""
    runner.invoke(app, ["judge", str(run), "--judges", judges(tmp_path, server, price=False), "--no-progress"])
    again = runner.invoke(app, ["judge", str(run), "--judges", judges(tmp_path, server), "--no-progress"])
    assert again.exit_code == 0, again.output
    assert server.count == 4


def test_judge_dry_run_without_a_price_points_at_the_judges_file(run, server, tmp_path):
    """`judge` has no --defaults option: the hint must name where a judge's price goes."""
    path = judges(tmp_path, server, price=False)
    result = runner.invoke(app, ["judge", str(run), "--judges", path, "--dry-run"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "cost unknown (no price" in result.output and "in its judges file" in result.output
    assert server.count == 0


def test_judge_says_an_unknown_cost_and_nothing_sent_once_each(run, server, tmp_path):
    """The cost part of each judge line reads as one phrase: "cost unknown (...)" without a price, "no requests
    sent" when every verdict was stored (it said "cost cost unknown" and "cost no requests sent")."""
    args = ["judge", str(run), "--judges", judges(tmp_path, server, price=False), "--no-progress"]
    first = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert first.exit_code == 0, first.output
    assert "rubric:A: 4/4 verdicts (0 stored, 4 requests sent), 0 unscored; cost unknown (no price: 4; 4 attempts)" in (
        first.output
    )
    again = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert again.exit_code == 0, again.output
    assert "rubric:A: 4/4 verdicts (4 stored, 0 requests sent), 0 unscored; no requests sent" in again.output
    assert "cost cost" not in first.output + again.output and server.count == 4
