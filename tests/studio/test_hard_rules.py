"""Hard rules are hard (Section 3, Appendix C.2.2): the sampled assignment, language included, stays fixed, and a
later turn without a reference to earlier media invalidates the instance. A reviewer that dismisses or accepts
everything faces each hard violation; the run repairs it (rewrite, update plan, re-seed) or is discarded, never
accepts it as is, and the trace records the refused waiver. Soft violations can still be dismissed.

The agents are the engine tests' scripted ones, the real offline backend (template Director, procedural Renderer,
machine Reviewer), and the hosted Director and Reviewer over real HTTP on a loopback server."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from omnivchat.scoring.spoken import detect_language
from omnivchat.studio.engine import Budgets, Caption, Clip, RenderRequest, Result, Violation
from omnivchat.studio.engine._validator import validate_script

from .test_engine import GOOD_REPORT, MULTI, SINGLE, ScriptedDirector, ScriptedRenderer, ScriptedReviewer, _job, _run
from .test_engine import _script as good_script

DISMISS = {"action": "dismiss", "reason": "a contextual exception"}
ACCEPT = {"action": "accept", "reason": "looks fine"}


def dismisser(**first: list[Any]) -> ScriptedDirector:
    """A Director whose reviews waive everything: validation review dismisses, every other review accepts."""
    plan: dict[str, list[Any]] = {"validation_review": [DISMISS] * 20, **first}
    return ScriptedDirector(plan)


def drifted_colour(p: dict[str, Any]) -> dict[str, Any]:
    """A script whose cube, and its recorded attribute, drifted from the sampled red to blue."""
    script = good_script(p)
    script["fields"]["attributes"] = {**p["assignment"], "colour": "blue"}
    script["scene"] = {"objects": [{"shape": "cube", "color": "blue"}]}
    return script


def chinese(p: dict[str, Any], turn: int | None = None) -> dict[str, Any]:
    """A script written in Chinese (its attributes say so too) for an instance sampled in English."""
    script = good_script(p, turn=turn, question="这个方块是什么颜色？")
    script["language"] = "zh"
    script["fields"]["attributes"] = {**p["assignment"], "language": "zh"}
    return script


def steps(result: Result, module: str) -> list[Any]:
    return [s for s in result.trace.steps if s.module == module]


def accepted_scripts_hold_the_assignment(result: Result) -> None:
    """What the bench record is labelled with (the sampled assignment) is what was accepted."""
    sampled = result.trace.assignment
    for turn in result.turns:
        assert turn.script.language == sampled["language"]
        assert turn.script.fields["attributes"] == sampled


# ------------------------------------------------------------------------------------------- the Validator


def test_the_validator_marks_assignment_drift_and_a_missing_reference_hard_and_the_rest_soft():
    from omnivchat.studio.config import SubcategoryConfig

    job = _job(MULTI, turns="2")
    payload = {"assignment": job.assignment}
    cfg = SubcategoryConfig.model_validate({**MULTI, "validator": {"max_references": 1}})
    drift = validate_script(type_script(chinese(payload)), job.config, job.assignment, turn=1, n_turns=2, completed=())
    assert drift and all(v.hard and v.rule == "attribute" for v in drift), drift
    orphan = validate_script(
        type_script({**good_script(payload, turn=2), "references": []}), cfg, job.assignment, turn=2, n_turns=2
    )
    assert [(v.rule, v.hard) for v in orphan] == [("reference", True)]
    two = [{"turn": 1, "kind": "clip"}, {"turn": 1, "kind": "audio"}]
    over = validate_script(
        type_script({**good_script(payload, turn=2), "references": two}),
        cfg,
        job.assignment,
        turn=2,
        n_turns=2,
        completed={"turn1.clip", "turn1.audio"},
    )
    assert [(v.rule, v.hard) for v in over] == [("reference", False)]  # over the budget: soft
    slow = validate_script(type_script({**good_script(payload), "duration_s": 60.0}), job.config, job.assignment)
    assert slow and not any(v.hard for v in slow)


def test_the_rendered_language_is_checked_from_the_reviewers_transcript():
    from omnivchat.studio.engine._validator import validate_caption

    sampled = {"language": "en", "colour": "red"}
    heard = validate_caption("这个方块是什么颜色？", sampled)
    assert [(v.rule, v.hard) for v in heard] == [("attribute", True)]
    assert "'zh'" in heard[0].message and "'en' was sampled" in heard[0].message
    assert validate_caption("What colour is the cube?", sampled) == []
    assert validate_caption("", sampled) == []  # no speech heard: nothing to compare
    assert validate_caption("这个方块是什么颜色？", {"language": "zh"}) == []


def type_script(raw: dict[str, Any]) -> Any:
    from omnivchat.studio.engine import Script

    return Script.model_validate(raw)


# ------------------------------------------------------------------------------------------- (a) attribute drift


def test_a_dismissed_attribute_drift_is_refused_and_the_script_rewritten(tmp_path):
    renderer = ScriptedRenderer()
    director = dismisser(script=[drifted_colour])
    result = _run(tmp_path, director, renderer=renderer)
    assert result.trace.status == "accepted", result.trace.reason
    review = steps(result, "5")
    assert [s.decision for s in review] == ["revise", "skip"]  # the rewrite passes validation
    assert review[0].outputs["action"] == "dismiss" and review[0].outputs["refused"] == "dismiss"
    assert review[0].summary.startswith("refused 'dismiss': no review can waive a hard violation (attribute:")
    assert "'blue' in the script but 'red' was sampled" in review[0].summary
    assert result.trace.repairs == {"rewrite": 1}
    # only the repaired script was rendered, and the accepted one holds the sampled colour
    assert [r.script.scene["objects"][0]["color"] for r in renderer.requests] == ["red"]
    accepted_scripts_hold_the_assignment(result)


def test_an_attribute_drift_that_persists_is_discarded_never_accepted(tmp_path):
    renderer = ScriptedRenderer()
    result = _run(tmp_path, dismisser(script=[drifted_colour] * 20), renderer=renderer)
    assert result.trace.status == "discarded"
    assert result.trace.reason.startswith("rewrite budget (5) spent: validation: attribute 'colour'")
    assert renderer.requests == [] and result.turns == []
    assert [s.decision for s in steps(result, "5")] == ["revise"] * 6
    assert all(s.outputs["refused"] == "dismiss" for s in steps(result, "5"))


# ------------------------------------------------------------------------------------------- (b) the language


def test_a_dismissed_script_in_another_language_is_refused_and_rewritten(tmp_path):
    result = _run(tmp_path, dismisser(script=[chinese]))
    assert result.trace.status == "accepted", result.trace.reason
    review = steps(result, "5")[0]
    assert review.decision == "revise" and review.outputs["refused"] == "dismiss"
    assert "the script's language is 'zh' but 'en' was sampled" in review.summary
    assert result.trace.repairs == {"rewrite": 1}
    accepted_scripts_hold_the_assignment(result)


class DistinctRenderer(ScriptedRenderer):
    """Every render a different clip (its background by render number), so no caption is replayed from another."""

    COLOURS = ("navy", "teal", "olive", "maroon", "purple", "gray", "green", "black", "silver", "lime")

    def render(self, request: RenderRequest) -> Clip:
        from omnivchat._canonical import sha256_file
        from omnivchat.synth import render_clip

        self.requests.append(request)
        background = self.COLOURS[(len(self.requests) - 1) % len(self.COLOURS)]
        render_clip({"duration": 1.0, "size": [64, 36], "background": background}, request.out_path)
        return Clip(path=request.out_path.name, sha256=sha256_file(request.out_path), duration_s=1.0, seed=request.seed)


class HearsChinese(ScriptedReviewer):
    """A Reviewer that hears the first ``times`` clips spoken in Chinese (a generator that drifted)."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    def caption(self, clip: Path, *, language: str = "en") -> Caption:
        self.captions += 1
        said = "这个方块是什么颜色？" if self.captions <= self.times else "What colour is the cube?"
        return Caption(text="A cube on a desk.", transcript=said, report=GOOD_REPORT)


def test_an_accepted_clip_heard_in_another_language_is_refused_and_re_seeded(tmp_path):
    renderer = DistinctRenderer()
    director = dismisser()
    result = _run(tmp_path, director, renderer=renderer, reviewer=HearsChinese(1))
    assert result.trace.status == "accepted", result.trace.reason
    review = steps(result, "11")
    assert [s.decision for s in review] == ["reseed", "accept"]
    assert review[0].outputs["action"] == "accept" and review[0].outputs["refused"] == "accept"
    assert "heard the clip's speech in 'zh' but 'en' was sampled" in review[0].summary
    # the video review saw the hard violation; the second render's review saw the refusal among earlier reviews
    first, second = [r for r in director.requests if r.module == "video_review"]
    assert [v["hard"] for v in first.payload["violations"]] == [True]
    assert "violations" not in second.payload and second.payload["earlier_reviews"][0]["refused"] == "accept"
    assert result.trace.repairs == {"render": 1} and len(renderer.requests) == 2
    assert detect_language(result.turns[0].caption.transcript) == "en"


def test_a_clip_heard_in_another_language_again_rewrites_then_is_discarded_when_budgets_run_out(tmp_path):
    renderer = DistinctRenderer()
    budgets = Budgets(render=2, rewrite=1)
    result = _run(tmp_path, dismisser(), renderer=renderer, reviewer=HearsChinese(100), budgets=budgets)
    assert result.trace.status == "discarded" and result.turns == []
    decisions = [s.decision for s in steps(result, "11")]
    assert decisions == ["reseed", "rewrite", "reseed", "rewrite"]
    assert result.trace.reason.startswith("rewrite budget (1) spent")


# ------------------------------------------------------------------------------------------- (c) cross-turn reference


def orphan(p: dict[str, Any]) -> dict[str, Any]:
    return {**good_script(p, turn=p["turn"]), "references": []}


def test_an_accepted_later_turn_without_a_reference_is_refused_and_rewritten(tmp_path):
    renderer = ScriptedRenderer()
    director = dismisser(prompt=[lambda p: good_script(p, turn=1), orphan])
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"), renderer=renderer)
    assert result.trace.status == "accepted", result.trace.reason
    review = [(s.turn, s.decision) for s in steps(result, "e")]
    assert review == [(1, "accept"), (2, "rewrite"), (2, "accept")]
    refused = steps(result, "e")[1]
    assert refused.outputs["refused"] == "accept"
    assert "turn 2 uses no earlier media" in refused.summary
    assert result.trace.repairs == {"rewrite": 1}
    # the orphan prompt was never rendered; the accepted turn 2 uses turn 1's clip
    assert [sorted(r.references) for r in renderer.requests] == [[], ["turn1.clip"]]
    assert [r.media_id for r in result.turns[1].script.references] == ["turn1.clip"]


def test_a_later_turn_that_keeps_lacking_a_reference_is_discarded(tmp_path):
    renderer = ScriptedRenderer()
    director = dismisser(prompt=[lambda p: good_script(p, turn=1), *[orphan] * 20])
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"), renderer=renderer)
    assert result.trace.status == "discarded" and result.turns == []
    assert result.trace.reason.startswith("rewrite budget (5) spent: turn 2 prompt: refused 'accept'")
    assert len(renderer.requests) == 1  # turn 1 only


def test_a_dismissed_record_in_two_languages_updates_the_plan(tmp_path):
    # With no language sampled, each turn alone passes; the record's one-language rule is hard at module n.
    job = _job(MULTI, turns="2")
    job = dataclasses.replace(job, assignment={k: v for k, v in job.assignment.items() if k != "language"})
    zh = lambda p: {**good_script(p, turn=2), "language": "zh"}  # noqa: E731
    director = dismisser(prompt=[lambda p: good_script(p, turn=1), zh])
    result = _run(tmp_path, director, job=job)
    assert result.trace.status == "accepted", result.trace.reason
    first = steps(result, "n")[0]
    assert first.decision == "revise" and first.outputs["refused"] == "dismiss"
    assert "turn 2 is in 'zh' but turn 1 is in 'en'" in first.summary
    assert result.trace.repairs == {"plan": 1}
    assert {t.script.language for t in result.turns} == {"en"}


# ------------------------------------------------------------------------------------------- soft stays soft


def test_a_soft_violation_can_still_be_dismissed(tmp_path):
    def long_wait(p: dict[str, Any]) -> dict[str, Any]:
        wait = {"start": 2.5, "end": 60.0, "kind": "silence"}
        return {**good_script(p), "duration_s": 60.0, "segments": [*good_script(p)["segments"][:2], wait]}

    director = dismisser(script=[long_wait])
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    review = steps(result, "5")
    assert [s.decision for s in review] == ["dismiss"] and "refused" not in review[0].outputs
    assert director.modules().count("script") == 1 and result.trace.repairs == {}


def test_soft_and_hard_together_the_dismissal_is_refused_whole(tmp_path):
    both = lambda p: {**drifted_colour(p), "duration_s": 60.0}  # noqa: E731
    result = _run(tmp_path, dismisser(script=[both]))
    assert result.trace.status == "accepted"
    review = steps(result, "5")[0]
    assert review.decision == "revise" and review.outputs["refused"] == "dismiss"
    rules = {v["rule"]: v["hard"] for v in steps(result, "4")[0].outputs["violations"]}
    assert rules["attribute"] is True and rules["duration"] is False
    accepted_scripts_hold_the_assignment(result)


def test_violations_carry_hard_in_the_trace_and_the_review_request():
    v = Violation(rule="attribute", message="x", hard=True)
    assert json.loads(v.model_dump_json())["hard"] is True
    assert Violation(rule="duration", message="y").hard is False


# ------------------------------------------------------------------------------------------- the offline backend


def _offline_job(code: str, seed: int = 3) -> Any:
    from omnivchat.studio.config import load_config
    from omnivchat.studio.engine import Passage, plan_jobs

    passages = [Passage(id=f"{lang}{i}", language=lang, text="text") for lang in ("en", "zh") for i in range(3)]
    job = plan_jobs([load_config(code)], passages, n=1, seed=seed)[0]
    return dataclasses.replace(job, assignment={**job.assignment, "language": "en"})


def test_the_offline_backend_cannot_accept_a_chinese_clip_for_an_english_instance(tmp_path):
    """The real offline agents: the template Director drafts its first script in Chinese and its validation review
    dismisses; the procedural Renderer and the machine Reviewer run for real. The Chinese draft is never
    rendered; the accepted clip is heard in English, as sampled."""
    from omnivchat.studio.engine import AgentCalls, Agents, Synthesis
    from omnivchat.studio.offline import OfflineDirector, OfflineRenderer, OfflineReviewer

    class DriftsThenDismisses(OfflineDirector):
        drafts = 0

        def _script(self, payload: dict[str, Any]) -> dict[str, Any]:
            self.drafts += 1
            return super()._script({**payload, "language": "zh"} if self.drafts == 1 else payload)

        def _validation_review(self, payload: dict[str, Any]) -> dict[str, Any]:
            return DISMISS

    renderer = OfflineRenderer()
    calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
    agents = Agents(DriftsThenDismisses(), renderer, OfflineReviewer())
    try:
        result = Synthesis(_offline_job("SVMR"), agents, calls, tmp_path / "work", Budgets()).run()
    finally:
        calls.close()
    assert result.trace.status == "accepted", result.trace.reason
    review = steps(result, "5")[0]
    assert review.decision == "revise" and review.outputs["refused"] == "dismiss"
    assert "the script's language is 'zh' but 'en' was sampled" in review.summary
    assert [s.decision for s in steps(result, "8")] == ["pass"]  # one render, of the English script
    assert detect_language(result.turns[0].caption.transcript) == "en"
    accepted_scripts_hold_the_assignment(result)


# ------------------------------------------------------------------------------------------- the hosted backend


def _hosted_run(tmp_path: Path, rules: Any) -> Result:
    from omnivchat.studio.engine import AgentCalls, Agents, Synthesis
    from omnivchat.studio.hosted._agents import AgentSpec, RouteDirector, RouteReviewer
    from omnivchat.studio.hosted._bridge import LoopThread
    from omnivchat.testing import LoopbackServer

    loop = LoopThread()
    try:
        with LoopbackServer(rules=rules) as server:
            spec = {"base_url": server.base_url, "no_key": True}
            director = RouteDirector(AgentSpec(model="director-llm", **spec), loop)
            reviewer = RouteReviewer(AgentSpec(model="reviewer-omni", media_input="video_url", **spec), loop)
            calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
            try:
                agents = Agents(director, DistinctRenderer(), reviewer)
                return Synthesis(_job(SINGLE), agents, calls, tmp_path / "work", Budgets()).run()
            finally:
                calls.close()
                director.close()
                reviewer.close()
    finally:
        loop.close()


def test_a_hosted_director_that_dismisses_a_drift_is_refused_over_http(tmp_path):
    from .test_hosted_agents import Scripted

    drift = drifted_colour({"assignment": {"language": "en", "colour": "red"}})
    rules = Scripted({"script": [json.dumps(drift)], "validation_review": [json.dumps(DISMISS)] * 3})
    result = _hosted_run(tmp_path, rules)
    assert result.trace.status == "accepted", result.trace.reason
    review = steps(result, "5")
    assert review[0].decision == "revise" and review[0].outputs["refused"] == "dismiss"
    # the hosted Director was shown which violations are hard, and told that it cannot dismiss them
    sent = next(user for module, _, user in rules.seen if module == "validation_review")
    assert '"hard": true' in sent
    system = next(system for module, system, _ in rules.seen if module == "validation_review")
    assert "hard" in system and "never dismiss" in system
    accepted_scripts_hold_the_assignment(result)


def test_a_hosted_reviewer_that_hears_chinese_makes_the_accepted_clip_re_seed_over_http(tmp_path):
    from .test_hosted_agents import CAPTION, Scripted

    class HostedHearsChinese(Scripted):
        captions = 0

        def __call__(self, body: dict[str, Any]) -> Any:
            from omnivchat.testing import Behaviour

            system = body["messages"][0]["content"]
            system = system if isinstance(system, str) else json.dumps(system)
            if system.startswith("You are the Reviewer") and "Answer each question" not in json.dumps(body):
                self.captions += 1
                if self.captions == 1:
                    self.seen.append(("reviewer", system, ""))
                    return Behaviour(text=json.dumps({**CAPTION, "transcript": "这个方块是什么颜色？"}))
            return super().__call__(body)

    rules = HostedHearsChinese()
    result = _hosted_run(tmp_path, rules)
    assert result.trace.status == "accepted", result.trace.reason
    assert [s.decision for s in steps(result, "11")] == ["reseed", "accept"]
    assert steps(result, "11")[0].outputs["refused"] == "accept"
    assert result.trace.repairs == {"render": 1} and rules.captions == 2
    assert detect_language(result.turns[0].caption.transcript) == "en"
