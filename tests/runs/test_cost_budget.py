"""Cost before and during a run (issue 17): prices from a defaults file, each attempt's cost from the server's
usage, `--dry-run` (nothing sent), `--budget` (stops part-way, exits 3 naming the budget, resumes with a larger
one without re-sending), "cost unknown" never shown as $0, and the state object behind the progress bar."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks import export as export_run
from omnivchat.benchmarks import status as run_status
from omnivchat.cli import app
from omnivchat.routes import SettingsError, get_route, resolve_settings
from omnivchat.runs import RetryPolicy, Runner, RunStore, RunSummary, run_cost
from omnivchat.testing import Behaviour, LoopbackServer

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
PRICE = {"input_per_mtok": 100.0, "output_per_mtok": 200.0}  # test prices: $0.10 + $0.10 per attempt
PER_ATTEMPT = 0.2


@pytest.fixture
def server():
    with LoopbackServer(default=Behaviour(text="An answer.", usage=USAGE)) as srv:
        yield srv


@pytest.fixture
def defaults(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("omni-test:\n  price:\n    input_per_mtok: 100\n    output_per_mtok: 200\n", encoding="utf-8")
    return path


def eval_args(bench, server, out, *extra):
    return [
        "eval", "--bench", str(bench.root), "--model", "omni-test", "--base-url", server.base_url, "--no-key",
        "-o", str(out), "--no-progress", "--max-attempts", "2", "--max-tokens", "64", *extra,
    ]  # fmt: skip


def invoke(args):
    return CliRunner().invoke(app, args)


def test_price_from_a_defaults_file_prices_every_attempt_from_usage(small_bench, server, defaults, tmp_path):
    out = tmp_path / "run"
    result = invoke(eval_args(small_bench, server, out, "--defaults", str(defaults)))
    assert result.exit_code == 0, result.output
    assert "cost of this invocation: $0.8000 for 4 attempts" in result.output
    with RunStore(out / "store.sqlite") as store:
        rows = store.cost_rows()
    assert [r["usd"] for r in rows] == pytest.approx([PER_ATTEMPT] * 4)
    assert {r["note"] for r in rows} == {"priced"}
    cost = run_cost(out)
    assert cost.total.spent_usd == pytest.approx(0.8) and cost.by_kind["candidate"].priced == 4
    shown = invoke(["runs", "show", str(out)])
    assert "Cost: $0.8000 for 4 attempts" in shown.output
    exported = export_run(out)
    assert exported.cost is not None and exported.cost.total.spent_usd == pytest.approx(0.8)
    assert all(r.cost is not None and r.cost.spent_usd == pytest.approx(PER_ATTEMPT) for r in exported.records)
    text = exported.model_dump_json()
    assert server.base_url not in text and "127.0.0.1" not in text  # nothing that locates the server
    # the price is not part of the run's identity: a changed price resumes the same run
    defaults.write_text("omni-test:\n  price:\n    input_per_mtok: 1\n    output_per_mtok: 1\n", encoding="utf-8")
    again = invoke(eval_args(small_bench, server, out, "--defaults", str(defaults)))
    assert again.exit_code == 0 and "resumed" in again.output and server.count == 4
    assert "price" not in json.loads((out / "manifest.json").read_text())["route"]["settings"]


def test_cost_unknown_without_price_or_without_usage_is_never_zero(small_bench, server, defaults, tmp_path):
    no_price = tmp_path / "no-price"
    result = invoke(eval_args(small_bench, server, no_price))
    assert result.exit_code == 0, result.output
    assert "cost unknown (no price: 4; 4 attempts)" in result.output
    shown = invoke(["runs", "show", str(no_price)]).output
    assert "Cost: cost unknown (no price: 4; 4 attempts)" in shown and "$0" not in shown
    server.default = Behaviour(text="An answer.", usage={})  # a server that reports no token counts
    no_usage = tmp_path / "no-usage"
    result = invoke(eval_args(small_bench, server, no_usage, "--defaults", str(defaults)))
    assert "cost unknown (no usage: 4; 4 attempts)" in result.output and "$0" not in result.output
    records = export_run(no_usage).records
    assert all(r.cost is not None and r.cost.priced == 0 and r.cost.unknown == {"no usage": 1} for r in records)


def test_refused_and_unusable_attempts(small_bench, server, defaults, tmp_path):
    """A 429 generated nothing (0, counted as priced); an answer cut at max_tokens was generated and is billed."""
    server.script(Behaviour(status=429, retry_after="0.01"), Behaviour(finish_reason="length", usage=USAGE))
    out = tmp_path / "run"
    result = invoke(eval_args(small_bench, server, out, "--defaults", str(defaults), "--concurrency", "1"))
    with RunStore(out / "store.sqlite") as store:
        rows = store.cost_rows()
    notes = [r["note"] for r in rows]
    assert notes[0] == "refused (HTTP 429)" and rows[0]["usd"] == 0.0
    assert rows[1]["usd"] == pytest.approx(PER_ATTEMPT)  # finish `length`: its usage still counts
    assert result.exit_code == 1  # the length failure ran out of attempts (2)


def test_budget_stops_part_way_then_a_larger_one_resumes(small_bench, server, defaults, tmp_path):
    out = tmp_path / "run"
    args = eval_args(small_bench, server, out, "--defaults", str(defaults), "--concurrency", "1")
    stopped = invoke([*args, "--budget", "0.5"])
    assert stopped.exit_code == 3, stopped.output
    assert "budget $0.5000 reached" in stopped.output
    sent = server.count
    assert 1 <= sent < 4  # part-way
    assert f"{sent} of 4 items done, {4 - sent} not sent (not run, not failed)" in stopped.output
    status = run_status(out)
    assert (status.instances.done, status.instances.failed, status.instances.not_run) == (sent, 0, 4 - sent)
    same = invoke([*args, "--budget", "0.5"])  # the budget is the run's total: nothing more fits
    assert same.exit_code == 3 and server.count == sent
    resumed = invoke([*args, "--budget", "5"])
    assert resumed.exit_code == 0, resumed.output
    assert server.count == 4  # the completed items were not sent again
    assert run_status(out).instances.done == 4
    assert run_cost(out).total.spent_usd == pytest.approx(0.8)


def test_budget_needs_a_price(small_bench, server, tmp_path):
    result = invoke([*eval_args(small_bench, server, tmp_path / "run"), "--budget", "1"])
    assert result.exit_code == 2
    assert "--budget needs a price for omni-test" in result.output and server.count == 0
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_dry_run_sends_nothing_and_prints_the_estimate(small_bench, server, defaults, tmp_path):
    out = tmp_path / "run"
    result = invoke([*eval_args(small_bench, server, out, "--defaults", str(defaults)), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert server.count == 0 and not out.exists()
    assert "omni-test: 4 request(s) to send for 4 item(s); nothing was sent" in result.output
    assert "media: " in result.output and " bytes, " in result.output
    assert "estimated cost: $" in result.output and "token rates: assumed" in result.output
    # after a partial run, a dry run counts only what is left, and what was spent
    invoke(eval_args(small_bench, server, out, "--defaults", str(defaults), "--limit", "2"))
    sent = server.count
    again = invoke([*eval_args(small_bench, server, out, "--defaults", str(defaults)), "--dry-run"])
    assert "2 request(s) to send for 4 item(s) (2 already answered in the store)" in again.output
    assert "already spent by this run: $0.4000 for 2 attempts" in again.output
    assert server.count == sent
    no_price = invoke([*eval_args(small_bench, server, tmp_path / "other"), "--dry-run"])
    assert "estimated cost: cost unknown (no price" in no_price.output and server.count == sent


def test_dry_run_estimate_follows_the_rates(small_bench, server, tmp_path):
    """Twice the audio rate gives more audio tokens; the prompt holds text, audio and video tokens."""
    from omnivchat.benchmarks import RunOptions, Source, estimate, get_benchmark

    bench = get_benchmark("omnivchat")
    data = bench.load(Source(data=small_bench.root))

    def dry(audio_per_s):
        rates = {"frames_per_s": 2, "pixels_per_token": 1568, "audio_per_s": audio_per_s, "source": "test"}
        route = get_route("omni-test", base_url=server.base_url, token_rates=rates, price=PRICE)
        return estimate(bench, data, route, tmp_path / "run", RunOptions())

    low, high = dry(10.0), dry(20.0)
    assert low.requests == 4 and low.audio_tokens > 0 and low.video_tokens > 0 and low.text_tokens > 0
    assert high.audio_tokens == pytest.approx(2 * low.audio_tokens, abs=4)
    assert high.usd > low.usd and server.count == 0


def test_bad_price_in_a_defaults_file_names_the_file(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("omni-*:\n  price:\n    input_per_mtok: -1\n    output_per_mtok: 2\n", encoding="utf-8")
    with pytest.raises(SettingsError, match=r"prices\.yaml \[omni-\*\].*price\.input_per_mtok"):
        resolve_settings("omni-test", user_file=path)


def test_progress_state_shows_concurrency_waits_cost_and_failures(small_bench, server, defaults, tmp_path):
    """The state behind the bar, read while a real run waits on a Retry-After: concurrency halved, one request
    waiting with the time left, failed attempts by kind, spent cost."""
    server.script(Behaviour(status=429, retry_after="0.6"))
    route = get_route("omni-test", base_url=server.base_url, price=PRICE, timeout_s=5.0)
    store = RunStore(tmp_path / "store.sqlite")
    runner = Runner(
        route,
        store,
        concurrency=4,
        retry=RetryPolicy(max_attempts=3, backoff_base=0.01, backoff_cap=1.0),
        kind="candidate",
    )
    from omnivchat.benchmarks.native import build_request
    from omnivchat.routes import Sampling

    work = [
        (build_request(small_bench, i, system_prompt=None, sampling=Sampling(max_tokens=8), simulated=False), {})
        for i in small_bench.instances[:2]
    ]
    summary = RunSummary(run_dir=tmp_path, total=2)
    seen = []

    async def main():
        task = asyncio.create_task(runner.run_all(work, summary, progress=False, label="t"))
        for _ in range(200):
            await asyncio.sleep(0.02)
            if runner.state.waiting():
                seen.append((runner.state.waiting(), runner.state.concurrency, runner.state.line()))
                break
        await task
        await route.aclose()

    asyncio.run(main())
    store.close()
    assert seen, "the run never showed a request waiting"
    waiting, concurrency, line = seen[0]
    n, left = waiting["retry-after"]
    assert n == 1 and 0 < left <= 0.6
    assert concurrency == 2  # halved by the 429
    assert "concurrency 2/4" in line and "1 waiting on retry-after (up to" in line
    assert "failed attempts: rate_limited 1" in line
    assert summary.done == 2 and runner.state.cost.priced == 3
    assert runner.state.line().startswith("concurrency")
    assert "$0.4000 spent" in runner.state.line()  # two answers; the refused 429 cost nothing


def test_progress_line_unit():
    from omnivchat.routes import AttemptCost
    from omnivchat.runs import RunProgress

    state = RunProgress(concurrency=3, max_concurrency=8, in_flight=2)
    state.wait_started("backoff", 4.0, now=100.0)
    state.wait_started("backoff", 1.0, now=100.0)
    state.attempt_ended(AttemptCost(None, "no price"), "server_error")
    state.extra["replicas"] = "a 3 · b 1"
    line = state.line(now=101.0)
    assert "concurrency 3/8" in line and "2 in flight" in line
    assert "2 waiting on backoff (up to 3.0 s)" in line
    assert "cost unknown (no price)" in line and "$0" not in line
    assert "failed attempts: server_error 1" in line and line.endswith("replicas a 3 · b 1")


def test_budget_scales_estimates_up_by_real_costs():
    """An estimate below the real cost would let a budget be passed: later estimates are scaled by the largest
    ratio seen, and an unknown cost stays counted at its reservation."""
    from omnivchat.routes import AttemptCost
    from omnivchat.runs import Budget, BudgetError

    budget = Budget(1.0)
    token = budget.reserve(0.1)
    budget.settle(token, AttemptCost(0.3, "priced"))
    assert budget.scale == pytest.approx(3.0) and budget.spent_total_usd == pytest.approx(0.3)
    token = budget.reserve(0.1)  # reserved at 0.3
    assert budget.reservation(token) == pytest.approx(0.3)
    budget.settle(token, AttemptCost(None, "no usage"))
    assert budget.spent_usd == pytest.approx(0.6)
    assert budget.reserve(0.15) is None and budget.stopped  # 0.6 + 0.45 > 1.0
    assert budget.reserve(0.0) is None  # once stopped, nothing more is sent
    assert budget.refused_estimate_usd == pytest.approx(0.45)
    with pytest.raises(BudgetError, match="positive"):
        Budget(0.0)


def test_budget_without_a_price_shows_valid_yaml_to_copy():
    """The refusal's hint is pasted into a defaults file: its braces must balance (it once said `...}}`)."""
    from omnivchat.runs import BudgetError
    from omnivchat.runs._budget import check_priced

    route = get_route("omni-test", base_url="http://127.0.0.1:9/v1", no_key=True)
    with pytest.raises(BudgetError) as caught:
        check_priced(route)
    assert "price: {input_per_mtok: ..., output_per_mtok: ...} under" in str(caught.value)


def test_runs_show_prints_token_counts_as_whole_numbers(small_bench, server, tmp_path):
    """Token counts are counts: `runs show` once printed them as floats ("prompt_tokens 4000.0")."""
    out = tmp_path / "run"
    assert invoke(eval_args(small_bench, server, out)).exit_code == 0
    shown = invoke(["runs", "show", str(out)]).output
    assert "Tokens: completion_tokens 2000, prompt_tokens 4000, total_tokens 6000" in shown, shown


def test_an_attempt_kept_out_only_by_in_flight_reservations_waits_for_them():
    """Reservations are scaled-up estimates: an attempt that fits once the attempts in flight settle at their (lower)
    real cost is sent then, instead of stopping the run with most of its budget unspent."""
    from omnivchat.routes import AttemptCost
    from omnivchat.runs import Budget

    async def scenario() -> tuple[int | None, int | None]:
        budget = Budget(1.0)
        first = budget.reserve(0.6)  # in flight, estimated at 0.6
        waiting = asyncio.create_task(budget.reserve_when_settled(0.6))  # 0.6 + 0.6 > 1.0: waits, does not stop
        await asyncio.sleep(0.01)
        assert not waiting.done() and not budget.stopped
        budget.settle(first, AttemptCost(0.1, "priced"))  # it cost less than estimated: the second one fits
        second = await waiting
        # a third one does not fit even with nothing in flight beyond the second: the run stops
        budget.settle(second, AttemptCost(0.5, "priced"))
        return second, await budget.reserve_when_settled(0.6)

    second, third = asyncio.run(scenario())
    assert second is not None and third is None


def test_a_small_budget_is_spent_before_the_run_stops(small_bench, server, defaults, tmp_path):
    """With many requests in flight, the stop comes when the budget is really spent, not when reservations fill it."""
    out = tmp_path / "run"
    args = eval_args(small_bench, server, out, "--defaults", str(defaults), "--concurrency", "4")
    stopped = invoke([*args, "--budget", "0.5"])
    assert stopped.exit_code == 3, stopped.output
    assert server.count == 2  # 2 x $0.20 fit in $0.50; a third would pass it
    assert run_cost(out).total.spent_usd == pytest.approx(0.4)
