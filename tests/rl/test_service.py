"""The reward service: the rule judge on a mini-bench, LLM judges on the loopback server, grouping, caching, the
concurrency bound and the per-step log."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from omnivchat.bench import Instance
from omnivchat.rl import Completion, RewardError, RewardService, RewardTerms, efficiency_rewards, total_reward
from omnivchat.rl.curves import read_reward_logs
from omnivchat.rl.service import CACHE_FILE
from omnivchat.runs import RetryPolicy
from omnivchat.scoring import rubric_score
from omnivchat.testing import Behaviour, LoopbackServer, message_text

NO_STYLE = (1.0, 0.5, 0.1, 0.0)
FAST = RetryPolicy(max_attempts=3, backoff_base=0.001, backoff_cap=0.005)
ALL_STYLE = '{"hits": [1, 2, 3, 4, 5, 6, 7], "reasoning": "fine"}'


def door(id_: str = "d1", *, checks: bool = True) -> Instance:
    """A single-turn instance whose criteria carry machine checks (``checks=False``: the last one does not)."""
    rubric = [
        {"tier": 0, "text": "The reply is in English.", "check": {"language": "en"}},
        {"tier": 1, "text": "Says the left door is closed.", "check": {"all_of": ["closed"]}},
        {"tier": 2, "text": "Mentions the right door.", **({"check": {"any_of": ["right"]}} if checks else {})},
    ]
    return Instance.model_validate(
        {
            "id": id_,
            "subcategory": "SVMR",
            "language": "en",
            "turns": [{"video": f"media/{id_}/turn1.mp4"}],
            "reference": "The left door is closed; the right one is open.",
            "rubric": rubric,
        }
    )


GROUP = [
    "The left door is closed.",  # hits 1, 2: r = 1/2, w = 5
    "Closed. The right one is open.",  # hits 1, 2, 3: r = 1, w = 6
    "",  # empty: r = 0 without a grader, f = 0
    "<think>Which door?</think> The left door is closed, the right one is open.",  # r = 1, f = 0, w = 14
]


def batch_of(instance: Instance, replies: list[str], prompt_id: str | None = None) -> list[Completion]:
    return [Completion(prompt_id or instance.id, reply, instance) for reply in replies]


# --------------------------------------------------------------------------------------------- the rule judge


@pytest.fixture(scope="module")
def minibench(tmp_path_factory):
    from omnivchat.studio.minibench import make_minibench

    return make_minibench(tmp_path_factory.mktemp("rl") / "bench", per_subcategory=1, languages=("en", "zh"))


def test_rule_judge_on_a_minibench_by_hand(minibench):
    batch = []
    for instance in minibench.instances:
        padded = (
            instance.reference + (" 再说一遍：" if instance.language == "zh" else " Once more: ") + instance.reference
        )
        replies = [instance.reference, padded, "", f"<think>ok</think>{instance.reference}"]
        batch += batch_of(instance, replies)
    with RewardService(judge="rule", weights=NO_STYLE, group_size=4) as service:
        terms = service.score_sync(batch)
        assert service.stats.failures == 0 and service.stats.calls == 3 * len(minibench.instances)
    for k in range(len(minibench.instances)):
        group = terms[4 * k : 4 * k + 4]
        assert all(t.error is None and t.s is None for t in group)
        assert [t.f for t in group] == [1.0, 1.0, 0.0, 0.0]
        assert group[0].r == 1.0 and group[2].r == 0.0  # the reference meets its own checks; empty scores 0
        r = [t.r for t in group]
        assert [t.e for t in group] == pytest.approx(efficiency_rewards(r, [c.reply for c in batch[4 * k : 4 * k + 4]]))
        assert [t.total for t in group] == pytest.approx([total_reward(t.r, t.f, t.e, 0.0, NO_STYLE) for t in group])


def test_rule_judge_group_by_hand():
    with RewardService(judge="rule", weights=NO_STYLE) as service:
        terms = service.score_sync(batch_of(door(), GROUP))
    # ρ = 0.5/5, 1/6, 0/1, 1/14 -> min 0, max 1/6
    assert [t.r for t in terms] == [0.5, 1.0, 0.0, 1.0]
    assert [t.f for t in terms] == [1.0, 1.0, 0.0, 0.0]
    assert [t.e for t in terms] == pytest.approx([0.6, 1.0, 0.0, 6 / 14])
    assert [t.total for t in terms] == pytest.approx([0.5 + 0.5 + 0.06, 1.0 + 0.5 + 0.1, 0.0, 1.0 + 0.6 / 14])
    assert all(isinstance(t, RewardTerms) and t.s is None and t.error is None for t in terms)


def test_rule_judge_cannot_grade_style():
    with pytest.raises(RewardError, match=r"rule judge cannot grade it.*weights=\(1.0, 0.5, 0.1, 0.0\)"):
        RewardService(judge="rule")  # the default weights give style 0.5
    with pytest.raises(RewardError, match="cannot grade style"):
        RewardService(judge="rule", style=True, weights=NO_STYLE)


def test_setup_errors(tmp_path):
    with pytest.raises(RewardError, match="'nobody' is not 'rule' nor a judge or panel"):
        RewardService(judge="nobody", weights=NO_STYLE)
    with pytest.raises(RewardError, match="4 numbers"):
        RewardService(weights=(1.0, 0.5))
    with pytest.raises(RewardError, match="concurrency"):
        RewardService(weights=NO_STYLE, concurrency=0)
    (tmp_path / "other.txt").write_text("not a cache")
    with pytest.raises(Exception, match="not empty and is not a reward cache"):
        RewardService(weights=NO_STYLE, cache_dir=tmp_path)


def test_a_failed_verdict_is_none_and_leaves_e_of_its_group_undefined():
    unchecked = door("u", checks=False)  # the rule judge cannot decide criterion 3: no verdict, never a 0
    batch = [*batch_of(door("p"), GROUP[:2]), Completion("u", "Closed.", unchecked), Completion("u", "", unchecked)]
    with RewardService(weights=NO_STYLE) as service:
        terms = service.score_sync(batch)
        assert service.stats.failures == 1
    assert [t.e for t in terms[:2]] == [0.0, 1.0]  # group p is whole: ρ = 0.5/5 and 1/6
    failed, sibling = terms[2:]
    assert failed.r is None and failed.e is None and failed.total is None and failed.f == 1.0
    assert "rubric:rule: criteria [3] carry no machine check" in (failed.error or "")
    # the empty sibling's r is known (0), but Eq. 6 needs every r of the group: e and the total are not
    assert sibling.r == 0.0 and sibling.f == 0.0 and sibling.e is None and sibling.total is None
    assert sibling.error == "e undefined: 1 of the 2 replies of prompt 'u' have no rubric score"


def test_partial_groups_compute_e_over_the_graded_replies_and_say_so(tmp_path):
    unchecked = door("u", checks=False)
    group = [Completion("u", "Closed.", unchecked), Completion("u", "", unchecked)]
    log = tmp_path / "log.jsonl"
    with RewardService(weights=NO_STYLE, allow_partial_groups=True, log_path=log) as service:
        failed, sibling = service.score_sync(group)
    assert failed.r is None and failed.total is None
    assert sibling.e == 0.5 and sibling.total == pytest.approx(0.05) and sibling.error is None
    (line,) = [json.loads(text) for text in log.read_text().splitlines()]
    assert line["partial_groups"] == {"u": 1}


# --------------------------------------------------------------------------------------------- grouping


def test_incomplete_group_is_an_error_naming_the_prompt_and_the_counts():
    batch = batch_of(door("a"), GROUP) + batch_of(door("b"), GROUP[:3])
    with RewardService(weights=NO_STYLE, group_size=4) as service:
        with pytest.raises(RewardError, match=r"group_size=4\): prompt 'b' has 3 replies.*allow_partial_groups"):
            service.score_sync(batch)
        assert service.stats.calls == 0  # refused before anything is graded
        with pytest.raises(RewardError, match="larger than group_size=4: prompt 'a' has 5"):
            service.score_sync(batch_of(door("a"), [*GROUP, "more"]))
        with pytest.raises(RewardError, match=r"prompt 'x': its replies answer different instances \(a, b\)"):
            service.score_sync([Completion("x", "r", door("a")), Completion("x", "r", door("b"))])
    with RewardService(weights=NO_STYLE, group_size=4, allow_partial_groups=True) as service:
        terms = service.score_sync(batch)
    partial = efficiency_rewards([0.5, 1.0, 0.0], GROUP[:3])
    assert [t.e for t in terms[4:]] == pytest.approx(partial)


def test_reordered_batch_gives_the_same_results():
    batch = [c for k in range(3) for c in batch_of(door(f"i{k}"), [f"{g} {'x ' * k}" for g in GROUP])]
    order = [5, 0, 11, 2, 7, 9, 1, 4, 10, 3, 8, 6]  # interleaved prompts, as verl's balancing leaves them
    with RewardService(weights=NO_STYLE, group_size=4) as service:
        straight = service.score_sync(batch)
        shuffled = service.score_sync([batch[i] for i in order])
    assert shuffled == [straight[i] for i in order]


def test_score_is_awaitable_from_another_event_loop():
    with RewardService(weights=NO_STYLE) as service:
        terms = asyncio.run(service.score(batch_of(door(), GROUP)))
        assert terms == service.score_sync(batch_of(door(), GROUP))


# --------------------------------------------------------------------------------------------- LLM judges


REPLY = re.compile(r"\[REPLY\]\n(.*?)\n\n(?:\[|Return)", re.DOTALL)


def verdicts(request_json):
    """Rubric: all three criteria when the reply says "closed", else the gate; style: all seven unless the
    reply rambles. "GARBLE" never parses; "BOOM" is a server error."""
    text = message_text(request_json)
    reply = REPLY.search(text).group(1)  # type: ignore[union-attr]
    if "BOOM" in reply:
        return Behaviour(status=500)
    if "GARBLE" in reply:
        return Behaviour(text="I am not a judge")
    if "checklist of 7" in text:
        return Behaviour(text='{"hits": [1, 2, 3, 4, 5, 6], "reasoning": "long"}' if "ramble" in reply else ALL_STYLE)
    hits = [1, 2, 3] if "closed" in reply else [1]
    return Behaviour(text=json.dumps({"hits": hits, "reasoning": "ok"}))


@pytest.fixture
def server():
    with LoopbackServer(rules=verdicts) as srv:
        yield srv


def judges_file(tmp_path, server, **extra) -> str:
    judges = [
        {"name": "A", "model": "judge-a", "base_url": server.base_url, **extra},
        {"name": "B", "model": "judge-b", "base_url": server.base_url},
    ]
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": judges, "panels": {"AB": ["A", "B"], "A-rule": ["A", "rule"]}}))
    return str(path)


def test_llm_judge_rubric_and_style(tmp_path, server):
    replies = ["The left door is closed.", "It is open, I ramble on.", "", "<think>hm</think>closed"]
    with RewardService(judge="A", judges_file=judges_file(tmp_path, server), retry=FAST) as service:
        assert service.style_graded and service.style_judge == "A"
        terms = service.score_sync(batch_of(door(), replies))
    assert server.count == 6  # rubric + style for each non-empty reply; the empty one is never sent
    assert [t.r for t in terms] == [1.0, 0.0, 0.0, 1.0]
    assert [t.s for t in terms] == [1.0, 0.0, 0.0, 1.0]  # the empty reply's style is 0, as in evaluation
    assert [t.f for t in terms] == [1.0, 1.0, 0.0, 0.0]
    e = efficiency_rewards([1.0, 0.0, 0.0, 1.0], replies)
    assert [t.e for t in terms] == pytest.approx(e)
    assert [t.total for t in terms] == pytest.approx(
        [total_reward(t.r, t.f, ei, t.s) for t, ei in zip(terms, e, strict=True)]  # type: ignore[arg-type]
    )
    sent = [message_text(r.json) for r in server.chat_requests]
    assert any("[CRITERIA]" in s and "1. [tier 0] The reply is in English." in s for s in sent)
    assert any("<think>hm</think>closed" in s for s in sent)  # graded as the policy wrote it


def test_panel_mean_and_style_judge(tmp_path, server):
    path = judges_file(tmp_path, server)
    with pytest.raises(RewardError, match="panel 'AB': name the judge that grades style"):
        RewardService(judge="AB", judges_file=path)
    with RewardService(judge="AB", judges_file=path, style_judge="B", retry=FAST) as service:
        terms = service.score_sync(batch_of(door(), ["The left door is closed."]))
    # A finds all three criteria met (r = 1), B as well (same rules): the panel mean
    assert terms[0].r == 1.0 and terms[0].s == 1.0
    with RewardService(judge="A-rule", judges_file=path, style_judge="A", retry=FAST) as service:
        (mixed,) = service.score_sync(batch_of(door(), ["The left door is closed."]))
    assert mixed.r == pytest.approx((1.0 + rubric_score([0, 1, 2], [1, 2])) / 2)  # A: 1, rule: 1/2


def test_a_verdict_that_never_parses_is_none_not_zero(tmp_path, server):
    with RewardService(judge="A", judges_file=judges_file(tmp_path, server), retry=FAST) as service:
        terms = service.score_sync(batch_of(door(), ["closed GARBLE", "The left door is closed."]))
        assert service.stats.failures == 2  # its rubric and its style verdicts
        assert service.stats.calls == 2 * FAST.max_attempts + 2  # retried, bounded
    bad, good = terms
    assert bad.r is None and bad.s is None and bad.total is None
    assert "rubric:A: unparseable: rubric verdict does not parse (3 attempts)" in (bad.error or "")
    assert "style:A: unparseable" in (bad.error or "")
    assert good.r == 1.0 and good.e is None and good.total is None  # its group's e is undefined
    assert good.error == "e undefined: 1 of the 2 replies of prompt 'd1' have no rubric score"


def test_a_failing_judge_server_is_none_with_its_error(tmp_path, server):
    with RewardService(judge="A", judges_file=judges_file(tmp_path, server), retry=FAST) as service:
        (terms,) = service.score_sync(batch_of(door(), ["closed BOOM"]))
    assert terms.r is None and terms.total is None
    assert terms.error is not None and "rubric:A: server_error" in terms.error and "HTTP 500" in terms.error


def test_style_weight_zero_skips_style_and_a_style_failure_with_zero_weight_keeps_the_total(tmp_path, server):
    path = judges_file(tmp_path, server)
    with RewardService(judge="A", judges_file=path, weights=NO_STYLE, retry=FAST) as service:
        assert not service.style_graded
        (terms,) = service.score_sync(batch_of(door(), ["The left door is closed."]))
    assert terms.s is None and terms.total == pytest.approx(1.0 + 0.5 + 0.05)
    assert server.count == 1
    with pytest.raises(RewardError, match="style=False"):
        RewardService(judge="A", judges_file=path, style=False)


# --------------------------------------------------------------------------------------------- caching


def test_a_repeated_batch_costs_no_grader_call(tmp_path, server):
    replies = ["The left door is closed.", "The left door is closed.", "Open.", "Closed, right open."]
    batch = batch_of(door("a"), replies) + batch_of(door("b"), replies)
    with RewardService(judge="A", judges_file=judges_file(tmp_path, server), retry=FAST) as service:
        first = service.score_sync(batch)
        # a verdict depends on the rubric and the reply, not on the instance's id: a and b share their verdicts,
        # and identical requests within one batch are sent once: 3 distinct replies x (rubric, style)
        assert server.count == 6 and service.stats.calls == 6 and service.stats.cache_hits == 10
        second = service.score_sync(batch)
        assert server.count == 6 and service.stats.calls == 6 and service.stats.cache_hits == 10 + 16
    assert second == first


def test_sqlite_cache_survives_a_new_service(tmp_path, server):
    cache = tmp_path / "cache"
    batch = batch_of(door(), ["The left door is closed.", "Open.", "closed GARBLE"])
    with RewardService(judge="A", judges_file=judges_file(tmp_path, server), cache_dir=cache, retry=FAST) as service:
        first = service.score_sync(batch)
    assert (cache / CACHE_FILE).is_file()
    sent = server.count
    # a new process, a new server (another port): verdicts come from the cache; the failure is asked again
    with LoopbackServer(rules=verdicts) as other:
        path = judges_file(tmp_path, other)
        with RewardService(judge="A", judges_file=path, cache_dir=cache, retry=FAST) as service:
            again = service.score_sync(batch)
            assert service.stats.cache_hits == 4
            assert service.stats.calls == 2 * FAST.max_attempts  # only the unparseable reply's two verdicts
        assert all("GARBLE" in REPLY.search(message_text(r.json)).group(1) for r in other.chat_requests)  # type: ignore[union-attr]
    assert again == first and sent == 4 + 2 * FAST.max_attempts


def test_sqlite_cache_records_what_grading_cost(tmp_path, server):
    """Every grader attempt in the cache has its cost row (the judge's price of the server's usage), so the cache
    says what grading cost; a failed attempt is counted too, a cache hit costs nothing."""
    from omnivchat.runs import RunStore, tally

    cache = tmp_path / "cache"
    path = judges_file(tmp_path, server, price={"input_per_mtok": 1000.0, "output_per_mtok": 2000.0})
    batch = batch_of(door(), ["The left door is closed.", "closed GARBLE"])
    with RewardService(judge="A", judges_file=path, weights=NO_STYLE, cache_dir=cache, retry=FAST) as service:
        service.score_sync(batch)
        service.score_sync(batch)  # the good verdict from the cache; the unparseable one asked again
    with RunStore(cache / CACHE_FILE, read_only=True) as store:
        rows = store.cost_rows()
    assert len(rows) == server.count == 1 + 2 * FAST.max_attempts
    totals = tally(rows).total
    assert totals.attempts == totals.priced == len(rows) and totals.spent_usd > 0 and not totals.unknown


# --------------------------------------------------------------------------------------------- concurrency


def test_concurrency_bound_is_respected(tmp_path):
    latency, bound = 0.2, 4
    with LoopbackServer(Behaviour(text='{"hits": [1, 2], "reasoning": "ok"}', latency=latency)) as slow:
        path = judges_file(tmp_path, slow, max_concurrency=50)  # the service's bound is the smaller
        batch = [c for k in range(6) for c in batch_of(door(f"i{k}"), [f"closed {k} {j}" for j in range(2)])]
        with RewardService(judge="A", judges_file=path, weights=NO_STYLE, concurrency=bound) as service:
            started = time.monotonic()
            terms = service.score_sync(batch)
            wall = time.monotonic() - started
        arrivals = sorted(r.time for r in slow.chat_requests)
    assert len(arrivals) == 12 and all(t.r == 0.5 for t in terms)
    # a request holds its slot for at least `latency`: no window shorter than that sees more than `bound` arrive
    in_flight = max(sum(1 for u in arrivals if t - 0.9 * latency < u <= t) for t in arrivals)
    assert in_flight == bound
    assert wall >= (12 / bound) * latency * 0.95


def test_judges_file_max_concurrency_binds_when_set(tmp_path):
    latency = 0.2
    with LoopbackServer(Behaviour(text='{"hits": [1], "reasoning": "ok"}', latency=latency)) as slow:
        path = judges_file(tmp_path, slow, max_concurrency=2)
        batch = batch_of(door(), [f"reply {j}" for j in range(6)])
        with RewardService(judge="A", judges_file=path, weights=NO_STYLE) as service:
            service.score_sync(batch)
        arrivals = sorted(r.time for r in slow.chat_requests)
    assert max(sum(1 for u in arrivals if t - 0.9 * latency < u <= t) for t in arrivals) == 2


# --------------------------------------------------------------------------------------------- the log


def test_one_log_line_per_step(tmp_path, server):
    log = tmp_path / "logs" / "rewards.jsonl"
    batch = batch_of(door("a"), ["The left door is closed.", "Open."]) + batch_of(door("b"), ["closed BOOM", ""])
    path = judges_file(tmp_path, server)
    with RewardService(judge="A", judges_file=path, log_path=log, group_size=2, retry=FAST) as service:
        terms = service.score_sync(batch)
        service.score_sync(batch)
        service.score_sync(batch[:2], step=40)
    first, second, third = (json.loads(line) for line in log.read_text().splitlines())
    assert [first["step"], second["step"], third["step"]] == [1, 2, 40]
    assert first["n"] == 4 and first["groups"] == 2
    assert first["r"] == pytest.approx((1.0 + 0.0 + 0.0) / 3)  # means over the known values
    assert first["total"] == pytest.approx((terms[0].total + terms[1].total) / 2)  # type: ignore[operator]
    assert first["f"] == pytest.approx(0.75) and first["s"] == pytest.approx(2 / 3)
    # raw RE over the graded replies (1000 x (1 + 0 + 0) / (5 + 1 + 0) words), Len over the non-empty ones
    assert first["reply_efficiency"] == pytest.approx(1000 / 6) and first["reply_length"] == pytest.approx(8 / 3)
    assert first["unscored"] == 2 and first["failures"] == 2  # "BOOM" failed; "" has no e (its sibling failed)
    assert first["grader_calls"] == 4 + 2 * FAST.max_attempts and first["cache_hits"] == 0
    assert second["grader_calls"] == 2 * FAST.max_attempts and second["cache_hits"] == 4  # failures are re-asked
    assert third["grader_calls"] == 0 and third["cache_hits"] == 4
    steps = read_reward_logs([log])  # the training curves (Figure 4) read this log as it is
    assert [s.step for s in steps] == [1, 2, 40] and steps[0].r == pytest.approx(first["r"])


def test_closed_service_refuses_work():
    service = RewardService(weights=NO_STYLE)
    service.score_sync(batch_of(door(), ["closed"]))
    service.close()
    service.close()
    with pytest.raises(RuntimeError, match="closed"):
        service.score_sync(batch_of(door(), ["closed"]))
