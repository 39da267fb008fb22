"""The Studio state machines, driven by scripted agents that fail at chosen modules: each repair route, each
budget, the discard rule, the fixed assignment, the Director's state after a rewrite, resume, and the trace."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omnivchat.studio.config import SubcategoryConfig
from omnivchat.studio.engine import (
    AgentCalls,
    Agents,
    Answer,
    Aspect,
    Budgets,
    Caption,
    Clip,
    DirectorRequest,
    Job,
    Passage,
    QualityReport,
    Question,
    RenderRequest,
    Synthesis,
)

# ------------------------------------------------------------------------------------------- scripted agents

SINGLE = {
    "code": "SVMR",
    "name": "Single-turn Visual Mode Recognition",
    "category": "DSLP",
    "turns": "single",
    "definition": "The user's left and right under the current camera.",
    "attributes": {
        "language": {"description": "reply language", "values": {"en": {"probability": 1.0, "description": "English"}}},
        "colour": {
            "description": "the cube's colour",
            "values": {
                "red": {"probability": 0.5, "description": "a red cube"},
                "blue": {"probability": 0.5, "description": "a blue cube"},
            },
        },
    },
    "fragments": [
        {"id": "single_shot", "text": "One continuous shot."},
        {"id": "no_subtitles", "text": "No subtitles."},
        {"id": "clear_face", "text": "The face is clear.", "conflicts": [{"colour": "blue"}]},
    ],
}
MULTI = {
    **SINGLE,
    "code": "MVMS",
    "turns": "multi",
    "attributes": {
        **SINGLE["attributes"],
        "turns": {
            "description": "turns",
            "values": {
                "2": {"probability": 0.5, "description": "two"},
                "3": {"probability": 0.5, "description": "three"},
            },
        },
    },
}
GOOD_REPORT = QualityReport(**{a: Aspect(ok=True) for a in QualityReport.model_fields})


def _script(payload: dict[str, Any], *, turn: int | None = None, question: str = "What colour is the cube?") -> dict:
    refs = [] if not turn or turn == 1 else [{"turn": turn - 1, "kind": "clip"}]
    return {
        "language": "en",
        "duration_s": 5.0,
        "question": question,
        "segments": [
            {"start": 0.0, "end": 0.5, "kind": "action", "text": "looks up"},
            {"start": 0.5, "end": 2.5, "kind": "speech", "text": question},
            {"start": 2.5, "end": 5.0, "kind": "silence", "text": "waits"},
        ],
        "scene": {"objects": [{"shape": "cube", "color": payload["assignment"]["colour"]}]},
        "fields": {"attributes": dict(payload["assignment"]), "requires": ["video", "audio"]},
        "references": refs,
    }


GATE = {"tier": 0, "text": "The reply is in English.", "check": {"language": "en"}}
CORE = {"tier": 1, "text": "Names the colour.", "check": {"any_of": ["red", "blue"]}}


class ScriptedDirector:
    """Answers every module with a valid default; ``plan[module]`` holds answers to give first, in order (a dict,
    or a callable of the payload). Every request is recorded."""

    name = "scripted-director"

    def __init__(self, plan: dict[str, list[Any]] | None = None) -> None:
        self.plan = {k: list(v) for k, v in (plan or {}).items()}
        self.requests: list[DirectorRequest] = []

    def ask(self, request: DirectorRequest) -> dict[str, Any] | str:
        self.requests.append(request)
        queue = self.plan.get(request.module)
        if queue:
            answer = queue.pop(0)
            return answer(request.payload) if callable(answer) else answer
        return self.default(request.module, request.payload)

    def default(self, module: str, p: dict[str, Any]) -> dict[str, Any]:
        turn = p.get("turn")
        match module:
            case "description":
                return {"description": "a desk scene", "passage": p["passages"][0]["id"]}
            case "plan":
                return {"plan": "a cube on a desk", "review": "the cube is visible"}
            case "joint_plan":
                refs = lambda t: [] if t == 1 else [{"turn": t - 1, "kind": "clip"}]  # noqa: E731
                return {
                    "plan": "same room",
                    "turns": [{"turn": t, "references": refs(t)} for t in range(1, p["turns"] + 1)],
                }
            case "script" | "prompt":
                return _script(p, turn=turn)
            case "validation_review":
                return {"action": "revise", "reason": "fix it"}
            case "script_review" | "plan_review" | "prompt_review" | "reply_review" | "video_review":
                return {"action": "accept", "reason": "fine"}
            case "video_plan":
                return {"fragments": [f["id"] for f in p["fragments"]]}
            case "reply_plan" | "final_reply_plan":
                return {"facts": [f"the cube is {p['assignment']['colour']}"]}
            case "reply":
                reply = f"It is {p['assignment']['colour']}."
                return {"reply": reply, "rubric": [GATE, CORE] if p["final"] else []}
        raise AssertionError(module)

    def modules(self) -> list[str]:
        return [r.module for r in self.requests]


class ScriptedRenderer:
    """Renders a real (tiny, silent) clip per request, so hashes, files and extraction are real."""

    name = "scripted-renderer"

    def __init__(self) -> None:
        self.requests: list[RenderRequest] = []

    def render(self, request: RenderRequest) -> Clip:
        from omnivchat._canonical import sha256_file
        from omnivchat.synth import render_clip

        self.requests.append(request)
        spec = {"duration": 1.0, "size": [64, 36], "seed": request.seed % 1000, "background": "navy"}
        render_clip(spec, request.out_path)
        return Clip(path=request.out_path.name, sha256=sha256_file(request.out_path), duration_s=1.0, seed=request.seed)


class ScriptedReviewer:
    name = "scripted-reviewer"

    def __init__(self) -> None:
        self.captions = 0
        self.questions: list[Question] = []

    def caption(self, clip: Path, *, language: str = "en") -> Caption:
        self.captions += 1
        return Caption(text="A cube on a desk.", transcript="What colour is the cube?", report=GOOD_REPORT)

    def answer(self, clip: Path, questions: Sequence[Question]) -> list[Answer]:
        self.questions += questions
        return [Answer(question=q, answer="red") for q in questions]


def _job(config: dict, **assignment: str) -> Job:
    cfg = SubcategoryConfig.model_validate(config)
    values = {"language": "en", "colour": "red", **assignment}
    passages = tuple(Passage(id=f"p{i}", language="en", text="text") for i in range(3))
    return Job("inst-1", cfg, values, None, passages, seed=7)


def _run(
    tmp_path: Path,
    director: ScriptedDirector,
    job: Job | None = None,
    budgets: Budgets | None = None,
    calls: AgentCalls | None = None,
    renderer: Any = None,
    reviewer: Any = None,
):
    job = job or _job(SINGLE)
    own = calls is None
    calls = calls or AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
    agents = Agents(director, renderer or ScriptedRenderer(), reviewer or ScriptedReviewer())
    try:
        return Synthesis(job, agents, calls, tmp_path / "work", budgets or Budgets()).run()
    finally:
        if own:
            calls.close()


def _modules(result) -> list[tuple[str, str]]:
    return [(s.module, s.decision) for s in result.trace.steps]


# ------------------------------------------------------------------------------------------- single turn


def test_a_clean_single_turn_run_passes_modules_0_to_14_in_order(tmp_path):
    result = _run(tmp_path, ScriptedDirector())
    assert result.trace.status == "accepted"
    assert _modules(result) == [
        ("0", "pass"),
        ("1", "pass"),
        ("2", "pass"),
        ("3", "pass"),
        ("4", "pass"),
        ("5", "skip"),
        ("6", "accept"),
        ("7", "pass"),
        ("8", "pass"),
        ("9", "pass"),
        ("10", "skip"),
        ("11", "accept"),
        ("12", "pass"),
        ("13", "pass"),
        ("14", "accept"),
    ]
    assert result.reference == "It is red."
    assert [c.tier for c in result.rubric] == [0, 1]
    assert result.trace.repairs == {}
    step = result.trace.steps[3]
    assert step.name == "script generation" and step.cost.calls == 1 and step.outputs["question"]


def test_a_validation_failure_returns_to_script_generation_with_the_director_state_restored(tmp_path):
    bad = lambda p: {**_script(p), "duration_s": 1.0, "segments": _script(p)["segments"][:1]}  # noqa: E731
    director = ScriptedDirector({"script": [lambda p: {**bad(p), "question": "SECRET-REASONING"}]})
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    assert ("4", "fail") in _modules(result) and ("5", "revise") in _modules(result)
    assert result.trace.repairs == {"rewrite": 1}
    scripts = [r for r in director.requests if r.module == "script"]
    assert len(scripts) == 2
    # the rewrite starts from the Director's state before drafting: the discarded script is not in its history
    assert "SECRET-REASONING" not in str(scripts[1].history)
    assert [h["module"] for h in scripts[1].history] == [h["module"] for h in scripts[0].history] + ["feedback"]
    assert scripts[1].history[-1]["answer"]["errors"][0]["violations"]
    assert scripts[1].payload["feedback"]["violations"]


def test_a_dismissed_violation_keeps_the_script(tmp_path):
    director = ScriptedDirector(
        {
            "script": [
                lambda p: {
                    **_script(p),
                    "duration_s": 60.0,
                    "segments": [*_script(p)["segments"][:2], {"start": 2.5, "end": 60.0, "kind": "silence"}],
                }
            ],
            "validation_review": [{"action": "dismiss", "reason": "a long wait is the point here"}],
        }
    )
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    assert ("5", "dismiss") in _modules(result)
    assert director.modules().count("script") == 1 and result.trace.repairs == {}


def test_an_unparseable_validation_verdict_returns_the_script_for_revision(tmp_path):
    bad = lambda p: {**_script(p), "duration_s": 60.0}  # noqa: E731
    director = ScriptedDirector({"script": [bad], "validation_review": ["I think it is fine?"]})
    result = _run(tmp_path, director)
    assert ("5", "revise") in _modules(result)
    assert director.modules().count("script") == 2


def test_script_review_rewrite_and_discard(tmp_path):
    director = ScriptedDirector({"script_review": [{"action": "rewrite", "reason": "audio alone answers it"}]})
    result = _run(tmp_path / "a", director)
    assert result.trace.status == "accepted" and result.trace.repairs == {"rewrite": 1}
    assert ("6", "rewrite") in _modules(result) and director.modules().count("script") == 2

    director = ScriptedDirector({"script_review": [{"action": "discard", "reason": "the cube is red-and-white"}]})
    result = _run(tmp_path / "b", director)
    assert result.trace.status == "discarded"
    assert "red-and-white" in result.trace.reason
    assert "video_plan" not in director.modules()  # nothing after a discard


def test_a_reseed_keeps_the_script_and_renders_with_a_new_seed(tmp_path):
    renderer = ScriptedRenderer()
    director = ScriptedDirector({"video_review": [{"action": "reseed", "reason": "artifacts: malformed arms"}]})
    result = _run(tmp_path, director, renderer=renderer)
    assert result.trace.status == "accepted" and result.trace.repairs == {"render": 1}
    assert director.modules().count("script") == 1
    assert len(renderer.requests) == 2
    assert renderer.requests[0].script == renderer.requests[1].script
    assert renderer.requests[0].seed != renderer.requests[1].seed


def test_the_render_budget_spent_discards_the_run(tmp_path):
    director = ScriptedDirector({"video_review": [{"action": "reseed", "reason": "bad hands"}] * 10})
    result = _run(tmp_path, director, budgets=Budgets(render=2))
    assert result.trace.status == "discarded"
    assert result.trace.reason.startswith("render budget (2) spent")
    assert result.trace.repairs == {"render": 2}


def test_a_video_rewrite_goes_back_to_the_script(tmp_path):
    director = ScriptedDirector({"video_review": [{"action": "rewrite", "reason": "the same defect twice"}]})
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    assert director.modules().count("script") == 2 and director.modules().count("script_review") == 2
    second = [r for r in director.requests if r.module == "script"][1]
    assert second.payload["feedback"] == {"video_review": "the same defect twice"}


def test_focused_qa_runs_on_request_and_within_its_budget(tmp_path):
    question = {"text": "Is the door on the left open?", "about": {"object": "door", "ask": "state"}}
    reviewer = ScriptedReviewer()
    director = ScriptedDirector(
        {"video_review": [{"action": "qa", "reason": "doors unclear", "questions": [question]}]}
    )
    result = _run(tmp_path / "a", director, reviewer=reviewer)
    assert result.trace.status == "accepted"
    assert ("10", "pass") in _modules(result) and ("11", "qa") in _modules(result)
    assert [q.text for q in reviewer.questions] == [question["text"]]
    review = [r for r in director.requests if r.module == "video_review"][-1]
    assert review.payload["answers"][0]["answer"] == "red" and review.payload["qa_left"] == 0

    director = ScriptedDirector({"video_review": [{"action": "qa", "reason": "x", "questions": [question]}] * 3})
    result = _run(tmp_path / "b", director)
    assert result.trace.status == "discarded" and "Q-A budget" in result.trace.reason


def test_one_reply_refinement_then_the_run_continues(tmp_path):
    director = ScriptedDirector({"reply_review": [{"action": "refine", "reason": "too formal"}] * 5})
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    assert director.modules().count("reply") == 2
    decisions = [d for m, d in _modules(result) if m == "14"]
    assert decisions == ["refine", "continue"]
    assert result.trace.repairs == {"refine": 1}


def test_a_reply_without_a_language_gate_is_discarded_not_saved(tmp_path):
    director = ScriptedDirector({"reply": [{"reply": "It is red.", "rubric": [CORE]}] * 3})
    result = _run(tmp_path, director)
    assert result.trace.status == "discarded"
    assert "no tier-0 language gate" in result.trace.reason
    assert result.turns == []


def test_the_global_budget_bounds_every_repair_together(tmp_path):
    director = ScriptedDirector(
        {
            "script_review": [{"action": "rewrite", "reason": "again"}] * 2,
            "video_review": [{"action": "reseed", "reason": "x"}] * 10,
        }
    )
    result = _run(tmp_path, director, budgets=Budgets(render=5, rewrite=5, total=4))
    assert result.trace.status == "discarded"
    assert result.trace.reason.startswith("global repair budget (4) spent")
    assert sum(result.trace.repairs.values()) == 4


def test_the_sampled_assignment_is_fixed_in_every_director_request_and_checked_by_the_validator(tmp_path):
    drift = lambda p: {**_script(p), "fields": {"attributes": {**p["assignment"], "colour": "blue"}}}  # noqa: E731
    director = ScriptedDirector({"script": [drift]})
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    violations = next(s for s in result.trace.steps if s.module == "4").outputs["violations"]
    assert [v["rule"] for v in violations] == ["attribute"]
    assert all(r.payload["assignment"] == {"language": "en", "colour": "red"} for r in director.requests)


def test_an_unparseable_video_plan_uses_every_compatible_fragment(tmp_path):
    renderer = ScriptedRenderer()
    director = ScriptedDirector({"video_plan": ["single shot please"]})
    _run(tmp_path, director, renderer=renderer)
    assert renderer.requests[0].fragments == ("One continuous shot.", "No subtitles.", "The face is clear.")
    renderer = ScriptedRenderer()
    _run(tmp_path / "blue", ScriptedDirector(), job=_job(SINGLE, colour="blue"), renderer=renderer)
    assert "The face is clear." not in renderer.requests[0].fragments  # conflicts with the sampled scene


def test_a_rerun_replays_every_call_from_the_run_store(tmp_path):
    plan = {
        "video_review": [{"action": "reseed", "reason": "x"}],
        "script_review": [{"action": "rewrite", "reason": "y"}],
    }
    calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
    first = _run(tmp_path, ScriptedDirector(copy.deepcopy(plan)), calls=calls)
    made, replayed = calls.made, calls.replayed
    assert made > 0

    class Refuses(ScriptedDirector):
        def ask(self, request):
            raise AssertionError("a call already made was made again")

    renderer = ScriptedRenderer()
    second = _run(tmp_path, Refuses(), calls=calls, renderer=renderer)
    calls.close()
    assert calls.made == made  # nothing paid twice
    assert calls.replayed == replayed + made + replayed
    assert renderer.requests == []
    assert _modules(second) == _modules(first)
    assert second.reference == first.reference


def test_a_clip_deleted_since_is_rendered_again_on_resume(tmp_path):
    calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
    _run(tmp_path, ScriptedDirector(), calls=calls)
    for clip in (tmp_path / "work").glob("*.mp4"):
        clip.unlink()
    renderer = ScriptedRenderer()
    result = _run(tmp_path, ScriptedDirector(), calls=calls, renderer=renderer)
    calls.close()
    assert result.trace.status == "accepted" and len(renderer.requests) == 1


def test_a_failing_director_call_is_retried_and_recorded(tmp_path):
    from omnivchat.routes import RouteError

    class Flaky(ScriptedDirector):
        failures = 0

        def ask(self, request):
            if request.module == "plan" and self.failures < 2:
                self.failures += 1
                raise RouteError("server_error", "HTTP 503")
            return super().ask(request)

    calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
    result = _run(tmp_path, Flaky(), calls=calls)
    attempts = calls.store.attempts()
    calls.close()
    assert result.trace.status == "accepted"
    assert [a["status"] for a in attempts].count("failed") == 2


# ------------------------------------------------------------------------------------------- multi turn


def test_a_clean_multi_turn_run_records_every_turn_and_its_media(tmp_path):
    director = ScriptedDirector()
    result = _run(tmp_path, director, job=_job(MULTI, turns="3"))
    assert result.trace.status == "accepted", result.trace.reason
    per_turn = defaultdict(list)
    for step in result.trace.steps:
        per_turn[step.turn].append(step.module)
    assert per_turn[None] == ["0", "a", "b", "c", "m", "n"]
    assert per_turn[1] == ["d", "e", "f", "g", "h", "i", "j", "k", "l"]
    assert per_turn[3] == ["d", "e", "f", "g", "h", "i", "j", "k", "l"]
    assert [s.decision for s in result.trace.steps if s.module == "j"] == ["skip", "skip", "pass"]
    assert len(result.turns) == 3 and [c.tier for c in result.rubric] == [0, 1]
    for turn in (1, 2):
        assert (tmp_path / "work" / f"turn{turn}.audio.wav").stat().st_size > 0
        assert (tmp_path / "work" / f"turn{turn}.final_frame.png").stat().st_size > 0
    prompts = [r for r in director.requests if r.module == "prompt"]
    assert prompts[2].payload["available_media"] == [
        "turn1.clip",
        "turn1.audio",
        "turn1.final_frame",
        "turn2.clip",
        "turn2.audio",
        "turn2.final_frame",
    ]
    assert prompts[2].payload["dialogue_so_far"][1]["reply"] == "It is red."


def test_prompt_review_can_update_the_plan_from_the_first_affected_turn(tmp_path):
    renderer = ScriptedRenderer()
    director = ScriptedDirector(
        {
            "prompt_review": [
                {"action": "accept", "reason": "ok"},
                {"action": "update_plan", "reason": "turn 2 needs the final frame", "turn": 2},
            ]
        }
    )
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"), renderer=renderer)
    assert result.trace.status == "accepted", result.trace.reason
    assert director.modules().count("joint_plan") == 2
    replan = [r for r in director.requests if r.module == "joint_plan"][1]
    assert replan.payload["feedback"] == {"update_plan": "turn 2 needs the final frame", "from_turn": 2}
    assert result.trace.repairs == {"plan": 1}
    assert len(renderer.requests) == 2  # turn 1 was kept, not rendered again


def test_a_turn_without_a_valid_cross_turn_reference_is_caught_before_rendering(tmp_path):
    orphan = lambda p: {**_script(p, turn=p["turn"]), "references": []}  # noqa: E731
    director = ScriptedDirector(
        {
            "prompt": [lambda p: _script(p, turn=1), orphan],
            "prompt_review": [
                {"action": "accept", "reason": "ok"},
                {"action": "rewrite", "reason": "turn 2 has no reference"},
            ],
        }
    )
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"))
    assert result.trace.status == "accepted"
    review = [r for r in director.requests if r.module == "prompt_review"][1]
    assert [v["rule"] for v in review.payload["violations"]] == ["reference"]
    assert result.trace.repairs == {"rewrite": 1}


def test_record_validation_failure_updates_the_plan(tmp_path):
    # Turn 2 speaks another language: with no language sampled each turn alone passes the turn checks (a sampled
    # one would make prompt review rewrite it: a hard violation), the assembled record does not.
    import dataclasses

    job = _job(MULTI, turns="2")
    job = dataclasses.replace(job, assignment={k: v for k, v in job.assignment.items() if k != "language"})
    zh = lambda p: {**_script(p, turn=2), "language": "zh"}  # noqa: E731
    director = ScriptedDirector({"prompt": [lambda p: _script(p, turn=1), zh]})
    result = _run(tmp_path, director, job=job)
    decisions = [(s.module, s.decision) for s in result.trace.steps if s.module in ("m", "n")]
    assert decisions[:2] == [("m", "fail"), ("n", "revise")]
    assert decisions[-2:] == [("m", "pass"), ("n", "skip")]
    assert result.trace.repairs.get("plan") == 1 and result.trace.status == "accepted"


def test_plan_review_revisions_are_bounded(tmp_path):
    director = ScriptedDirector({"plan_review": [{"action": "revise", "reason": "wrong language"}] * 5})
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"), budgets=Budgets(plan=2))
    assert result.trace.status == "discarded" and result.trace.reason.startswith("plan budget (2) spent")


def test_a_reference_that_misses_its_own_rubric_is_discarded_even_when_review_accepts_it(tmp_path):
    director = ScriptedDirector({"reply": [{"reply": "It is green.", "rubric": [GATE, CORE]}]})
    result = _run(tmp_path, director)
    assert result.trace.status == "discarded"
    assert "misses criteria [2] of its own rubric" in result.trace.reason


def test_each_step_records_its_inputs_outputs_and_cost(tmp_path):
    result = _run(tmp_path, ScriptedDirector())
    by_module = {s.module: s for s in result.trace.steps}
    assert by_module["3"].inputs["plan"]["plan"] == "a cube on a desk" and "rules" in by_module["3"].inputs
    assert "config" not in by_module["3"].inputs  # constant per instance: once, at the top of the trace
    assert by_module["4"].inputs["script"] and by_module["4"].outputs == {"violations": []}
    assert by_module["8"].inputs["seed"] and by_module["8"].outputs["sha256"]
    assert by_module["9"].inputs["clip"] == by_module["8"].outputs["sha256"]
    assert by_module["11"].inputs["caption"]["text"] == "A cube on a desk."
    assert all(s.cost.calls == 1 for s in result.trace.steps if s.module in ("1", "2", "3", "8", "9", "11", "13"))


def test_a_moderation_refusal_rewrites_and_a_failed_render_reseeds(tmp_path):
    from omnivchat.studio.engine import RenderFailed, RenderRefused

    class Flaky(ScriptedRenderer):
        def __init__(self, error: Exception) -> None:
            super().__init__()
            self.error: Exception | None = error

        def render(self, request):
            if self.error is not None:
                error, self.error = self.error, None
                raise error
            clip = super().render(request)
            return clip.model_copy(update={"cost_usd": 0.5})

    director = ScriptedDirector()
    result = _run(tmp_path / "refused", director, renderer=Flaky(RenderRefused("InputTextSensitiveContentDetected")))
    assert result.trace.status == "accepted" and result.trace.repairs == {"rewrite": 1}
    second = [r for r in director.requests if r.module == "script"][1]
    assert "InputTextSensitiveContentDetected" in second.payload["feedback"]["render_refused"]

    director = ScriptedDirector()
    result = _run(tmp_path / "failed", director, renderer=Flaky(RenderFailed("task FAILED: InternalError")))
    assert result.trace.status == "accepted" and result.trace.repairs == {"render": 1}
    assert director.modules().count("script") == 1
    assert [d for m, d in _modules(result) if m == "8"] == ["fail", "pass"]
    assert result.trace.cost_usd() == 0.5
    assert result.trace.agent_calls() == {"director": 9, "renderer": 2, "reviewer": 1}


# ------------------------------------------------------------------------------------------- budgets and answers


def test_the_refinement_limit_is_per_reply_so_turn_one_leaves_the_final_turn_its_own(tmp_path):
    refine = {"action": "refine", "reason": "too formal"}
    accept = {"action": "accept", "reason": "fine"}
    director = ScriptedDirector({"reply_review": [refine, accept, refine, accept]})
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"))
    assert result.trace.status == "accepted", result.trace.reason
    assert [(s.turn, s.decision) for s in result.trace.steps if s.module == "l"] == [
        (1, "refine"),
        (1, "accept"),
        (2, "refine"),
        (2, "accept"),
    ]
    assert director.modules().count("reply") == 4
    assert result.trace.repairs == {"refine": 2}  # counted for the trace, limited per reply


def test_the_default_route_limits_let_the_global_budget_bind():
    budgets = Budgets()
    assert budgets.render + budgets.rewrite + budgets.plan > budgets.total == 10
    assert budgets.render + budgets.rewrite >= budgets.total  # single-turn: no plan route


def test_the_global_budget_of_ten_is_reached_with_the_default_limits(tmp_path):
    revise = {"action": "revise", "reason": "wrong link"}
    director = ScriptedDirector(
        {
            "plan_review": [revise, revise],
            "video_review": [{"action": "reseed", "reason": "bad hands"}] * 5,
            "prompt_review": [{"action": "accept", "reason": "ok"}] + [{"action": "rewrite", "reason": "again"}] * 9,
        }
    )
    result = _run(tmp_path, director, job=_job(MULTI, turns="2"))
    assert result.trace.status == "discarded"
    assert result.trace.reason.startswith("global repair budget (10) spent"), result.trace.reason
    assert result.trace.repairs == {"plan": 2, "render": 5, "rewrite": 3}


def test_budgets_are_set_by_the_subcategory_config_and_overridden_by_the_run():
    from omnivchat.studio.engine import effective_budgets

    cfg = SubcategoryConfig.model_validate({**SINGLE, "budgets": {"render": 1, "refine": 2}})
    assert effective_budgets(Budgets(), cfg) == Budgets(render=1, refine=2)
    assert effective_budgets(Budgets(), cfg, {"render": 4, "total": 6}) == Budgets(render=4, refine=2, total=6)
    assert effective_budgets(Budgets(), SubcategoryConfig.model_validate(SINGLE)) == Budgets()


def test_a_subcategory_budget_limits_its_runs(tmp_path):
    from omnivchat.studio.engine import effective_budgets

    job = _job({**SINGLE, "budgets": {"render": 1}})
    director = ScriptedDirector({"video_review": [{"action": "reseed", "reason": "bad hands"}] * 3})
    result = _run(tmp_path, director, job=job, budgets=effective_budgets(Budgets(), job.config))
    assert result.trace.status == "discarded" and result.trace.reason.startswith("render budget (1) spent")


def test_a_bad_budget_in_a_config_names_the_field(tmp_path):
    import pytest

    from omnivchat.studio.config import ConfigError, load_config

    path = tmp_path / "svmr.yaml"
    import yaml

    path.write_text(yaml.safe_dump({**SINGLE, "budgets": {"render": -1}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"budgets\.render"):
        load_config(path)
    path.write_text(yaml.safe_dump({**SINGLE, "budgets": {"renders": 2}}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"budgets\.renders"):
        load_config(path)


def test_discard_at_reply_review_is_its_unparseable_case_not_an_accept(tmp_path):
    director = ScriptedDirector({"reply_review": [{"action": "discard", "reason": "bad"}]})
    result = _run(tmp_path, director)
    assert result.trace.status == "accepted"
    reviews = [s for s in result.trace.steps if s.module == "14"]
    assert [s.decision for s in reviews] == ["refine", "accept"]
    assert "'discard'" in reviews[0].summary and "does not take" in reviews[0].summary
    assert director.modules().count("reply") == 2


def test_revise_or_update_plan_at_video_review_reseeds_as_unparseable(tmp_path):
    for action in ("revise", "update_plan", "dismiss", "refine"):
        director = ScriptedDirector({"video_review": [{"action": action, "reason": "x"}]})
        renderer = ScriptedRenderer()
        result = _run(tmp_path / action, director, renderer=renderer)
        assert result.trace.status == "accepted", (action, result.trace.reason)
        assert result.trace.repairs == {"render": 1} and len(renderer.requests) == 2
        first = next(s for s in result.trace.steps if s.module == "11")
        assert first.decision == "reseed" and f"{action!r}" in first.summary


def test_every_review_module_takes_only_its_own_actions(tmp_path):
    # script review: accept, rewrite, discard (else rewrite); plan review: accept, revise, discard (else revise);
    # prompt review: accept, rewrite, update_plan (else rewrite); validation review: dismiss, revise (else revise).
    director = ScriptedDirector({"script_review": [{"action": "reseed", "reason": "x"}]})
    result = _run(tmp_path / "s", director)
    assert [d for m, d in _modules(result) if m == "6"] == ["rewrite", "accept"]
    assert result.trace.repairs == {"rewrite": 1}

    director = ScriptedDirector({"plan_review": [{"action": "qa", "reason": "x"}]})
    result = _run(tmp_path / "p", director, job=_job(MULTI, turns="2"))
    assert [d for m, d in _modules(result) if m == "c"] == ["revise", "accept"]
    assert result.trace.repairs == {"plan": 1}

    director = ScriptedDirector({"prompt_review": [{"action": "discard", "reason": "x"}]})
    result = _run(tmp_path / "e", director, job=_job(MULTI, turns="2"))
    assert result.trace.status == "accepted"
    assert [d for m, d in _modules(result) if m == "e"][:2] == ["rewrite", "accept"]

    bad = lambda p: {**_script(p), "duration_s": 99.0}  # noqa: E731
    director = ScriptedDirector({"script": [bad], "validation_review": [{"action": "accept", "reason": "x"}]})
    result = _run(tmp_path / "v", director)
    assert next(d for m, d in _modules(result) if m == "5") == "revise"


def test_a_rubric_with_two_language_gates_is_discarded(tmp_path):
    second = {"tier": 0, "text": "The reply is short.", "check": {"language": "en"}}
    director = ScriptedDirector({"reply": [{"reply": "It is red.", "rubric": [GATE, second, CORE]}] * 3})
    result = _run(tmp_path, director)
    assert result.trace.status == "discarded"
    assert "2 tier-0 criteria" in result.trace.reason and "exactly one" in result.trace.reason
