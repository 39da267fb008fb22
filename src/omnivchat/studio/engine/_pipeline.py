"""The single-turn (modules 0-14) and multi-turn (modules a-n) synthesis state machines (paper, Section 2 and
Appendix C).

The discipline the paper asks for, and where it lives here:

- The sampled assignment is fixed for the whole run: it is in every request, and the Validator rejects a script
  whose attributes or language differ (Appendix C.1).
- Hard rules are hard: a drifted assignment (in a script, or in the language the Reviewer hears in a clip) and a
  later turn without a reference to earlier media are hard violations. A review that dismisses or accepts one is
  refused (the trace records the refusal); the run repairs it (rewrite, update plan, re-seed) or is discarded.
- Observation apart from judgment: the Reviewer sees only the clip; the Director decides (``video_review``).
- Deterministic checks first: the Validator (module 4 / m) runs before any semantic review (5, 6 / n).
- Each repair returns to the stage that caused the defect: a re-seed keeps the script, a rewrite goes back to
  script generation (3) or prompt generation (d) with the Director's state restored to before drafting, Video Q-A
  collects evidence, an update of the plan restarts from the first affected turn.
- Separate budgets for rendering, rewriting and planning inside one global budget; a required repair that finds
  its budget spent discards the run; reply refinement has its own limit, and reaching it continues.
- A run that cannot be completed is discarded with its reason, never saved as a partial instance.

Every agent call goes through :class:`~omnivchat.studio.engine._calls.AgentCalls`, so a rerun replays the calls
already made and continues where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from omnivchat.bench import Criterion
from omnivchat.routes import AttemptCost
from omnivchat.studio.config import SubcategoryConfig
from omnivchat.studio.engine._agents import Agents, DirectorRequest, RenderFailed, RenderRefused, RenderRequest
from omnivchat.studio.engine._answers import (
    DescriptionAnswer,
    JointPlanAnswer,
    PlanAnswer,
    ReplyAnswer,
    ReplyPlanAnswer,
    VideoPlanAnswer,
)
from omnivchat.studio.engine._calls import AgentCallError, AgentCalls, Stopped, report_cost
from omnivchat.studio.engine._prompts import INSTRUCTIONS
from omnivchat.studio.engine._trace import Cost, Step, Trace, module_name
from omnivchat.studio.engine._types import (
    Action,
    Answer,
    Assignment,
    Caption,
    Clip,
    Decision,
    Passage,
    Question,
    Script,
    Violation,
)
from omnivchat.studio.engine._validator import rules_text, validate_caption, validate_record, validate_script

M = TypeVar("M", bound=BaseModel)


# ------------------------------------------------------------------------------------------- budgets


@dataclass(frozen=True)
class Budgets:
    """Repair limits (Appendix C.2.2): separate limits for rendering, rewriting and planning within one global
    budget; focused Q-A rounds per clip; refinements per reply (reaching that limit continues with the reply).
    The route limits sum to more than the total (single-turn, with no plan route, to the total), so the global
    budget is one that a run can reach."""

    render: int = 5
    rewrite: int = 5
    plan: int = 2
    qa: int = 1
    refine: int = 1
    total: int = 10


BUDGET_KINDS = ("render", "rewrite", "plan", "qa", "refine", "total")


def effective_budgets(base: Budgets, config: SubcategoryConfig, overrides: Mapping[str, int] | None = None) -> Budgets:
    """The limits a run of ``config`` takes: ``base``, then what the subcategory's ``budgets`` sets, then the run's
    own ``overrides`` (``studio run --repair-budget KIND=N``)."""
    from dataclasses import replace

    own = {k: v for k, v in config.budgets.model_dump().items() if v is not None}
    return replace(base, **{**own, **dict(overrides or {})})


class Discard(Exception):
    """The run cannot be completed: it is discarded with this reason."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


# ------------------------------------------------------------------------------------------- the job


@dataclass(frozen=True)
class Job:
    """One instance to synthesize: its id, configuration, fixed assignment, extra requirement, passages, seed."""

    id: str
    config: SubcategoryConfig
    assignment: Assignment
    extra: str | None
    passages: tuple[Passage, ...]
    seed: int


@dataclass
class TurnResult:
    script: Script
    clip: Clip
    caption: Caption
    answers: list[Answer]
    reply: ReplyAnswer


@dataclass
class Result:
    """An ended run: the trace, and for an accepted one the turns (script, clip, evidence, reply)."""

    trace: Trace
    turns: list[TurnResult] = field(default_factory=list)
    reference: str = ""
    rubric: list[Criterion] = field(default_factory=list)
    requires: list[str] = field(default_factory=list)


class _Rewrite(Exception):
    def __init__(self, feedback: dict[str, Any]) -> None:
        super().__init__(str(feedback))
        self.feedback = feedback


class _UpdatePlan(Exception):
    def __init__(self, turn: int, reason: str) -> None:
        super().__init__(reason)
        self.turn = turn
        self.reason = reason


# The same in every request of an instance (the trace holds them once, at its top): left out of each step's inputs.
_CONSTANT_INPUTS = frozenset({"instance", "subcategory", "assignment", "attribute_meanings", "config"})


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:4], "big")


# ------------------------------------------------------------------------------------------- one synthesis


class Synthesis:
    """One instance's run through the state machine of its subcategory (single- or multi-turn)."""

    def __init__(self, job: Job, agents: Agents, calls: AgentCalls, workdir: Path, budgets: Budgets) -> None:
        self.job = job
        self.agents = agents
        self.calls = calls
        self.workdir = workdir
        self.budgets = budgets
        self.config = job.config
        self.language = job.assignment.get("language", "en")
        self.history: list[dict[str, Any]] = []
        self.spent: dict[str, int] = {}
        self._inputs: dict[str, Any] = {}  # the last call's request, for the trace step that reports it
        self.trace = Trace(
            id=job.id,
            subcategory=job.config.code,
            turns=job.config.turns,
            assignment=dict(job.assignment),
            extra=job.extra,
            passages=[p.id for p in job.passages],
        )

    # ---------------------------------------------------------------- bookkeeping

    def run(self) -> Result:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._step(
            "0",
            "sampler",
            "pass",
            f"{_describe(self.job.assignment)}; extra: {self.job.extra or 'none'}; "
            f"passages: {', '.join(p.id for p in self.job.passages)}",
            outputs={"assignment": self.job.assignment, "extra": self.job.extra},
        )
        try:
            result = self._single() if self.config.turns == "single" else self._multi()
        except Discard as discard:
            self.trace.status = "discarded"
            self.trace.reason = discard.reason
            self.trace.discard_kind = discard.kind
            self.trace.repairs = dict(self.spent)
            return Result(self.trace)
        self.trace.status = "accepted"
        self.trace.repairs = dict(self.spent)
        return result

    def _step(
        self,
        module: str,
        agent: str,
        decision: str,
        summary: str,
        *,
        turn: int | None = None,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        cost: Cost | None = None,
    ) -> None:
        step = Step(
            module=module,
            name=module_name(self.config.turns, module),
            turn=turn,
            agent=agent,
            decision=decision,
            summary=summary,
            inputs=inputs if inputs is not None else self._take_inputs(),
            outputs=outputs or {},
            cost=cost or Cost(),
        )
        self.trace.steps.append(step)

    def _take_inputs(self) -> dict[str, Any]:
        inputs, self._inputs = self._inputs, {}
        return inputs

    def _spend(self, kind: str, why: str) -> None:
        """Use one repair of ``kind`` (render, rewrite, plan); a required repair past its own or the global budget
        discards the run."""
        limit = getattr(self.budgets, kind)
        used = self.spent.get(kind, 0)
        total = sum(v for k, v in self.spent.items() if k != "refine")
        if used >= limit:
            raise Discard(f"{kind} budget ({limit}) spent: {why}", f"{kind} budget spent")
        if total >= self.budgets.total:
            raise Discard(f"global repair budget ({self.budgets.total}) spent: {why}", "global budget spent")
        self.spent[kind] = used + 1

    def _rewind(
        self, checkpoint: int, errors: list[dict[str, Any]], feedback: dict[str, Any], why: str
    ) -> dict[str, Any]:
        """A rewrite (Appendix C.2.2): spend it, restore the Director's conversation to before drafting (the
        discarded script's reasoning goes), and tell it what went wrong, this time and before."""
        self._spend("rewrite", why)
        errors.append(feedback)
        del self.history[checkpoint:]
        self.history.append({"module": "feedback", "answer": {"errors": list(errors)}})
        return feedback

    def _timed_call(
        self, agent: str, op: str, request: dict[str, Any], fn: Callable[[], dict[str, Any]], **kw: Any
    ) -> tuple[dict[str, Any], Cost]:
        started = time.monotonic()
        payload = request.get("payload", request)
        self._inputs = {k: v for k, v in payload.items() if k not in _CONSTANT_INPUTS}
        answer, replayed = self.calls.call(agent, op, request, fn, item_id=self.job.id, **kw)
        return answer, Cost(calls=1, replayed=int(replayed), seconds=round(time.monotonic() - started, 3))

    def _ask(self, module: str, payload: dict[str, Any]) -> tuple[dict[str, Any], Cost]:
        """One Director call (JSON or text out; text comes back as {"text": ...}); the answer joins its history."""
        director = self.agents.director
        request = DirectorRequest(module, INSTRUCTIONS[module], payload, tuple(self.history))

        def ask() -> dict[str, Any]:
            answer = director.ask(request)
            return answer if isinstance(answer, dict) else {"text": answer}

        answer, cost = self._timed_call(director.name, f"director.{module}", request.as_dict(), ask)
        self.history.append({"module": module, "answer": answer})
        return answer, cost

    def _ask_as(self, module: str, payload: dict[str, Any], model: type[M]) -> tuple[M | None, dict[str, Any], Cost]:
        """A Director call parsed as ``model``; None when the answer does not parse."""
        answer, cost = self._ask(module, payload)
        try:
            return model.model_validate(answer), answer, cost
        except ValidationError:
            return None, answer, cost

    def _review(
        self, op: str, payload: dict[str, Any], takes: tuple[Action, ...], otherwise: Action, what: str
    ) -> tuple[Decision, dict[str, Any], Cost]:
        """A review module's decision: one of the actions it ``takes``; an answer that does not parse, or names an
        action this module does not take, is its unparseable case, ``otherwise`` (never a silent default)."""
        review, raw, cost = self._ask_as(op, payload, Decision)
        if review is None:
            return Decision(action=otherwise, reason=f"the {what} did not parse"), raw, cost
        if review.action not in takes:
            reason = (
                f"the {what} answered {review.action!r}, which it does not take ({', '.join(takes)}): "
                f"unparseable, so {otherwise}"
            )
            return Decision(action=otherwise, reason=reason), raw, cost
        return review, raw, cost

    def _base_payload(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "instance": {"id": self.job.id, "seed": self.job.seed},
            "subcategory": {"code": cfg.code, "name": cfg.name, "definition": cfg.definition},
            "assignment": self.job.assignment,
            "attribute_meanings": {
                name: cfg.attributes[name].values[value].description
                for name, value in self.job.assignment.items()
                if name in cfg.attributes and value in cfg.attributes[name].values
            },
            "extra_requirement": self.job.extra,
            "language": self.language,
            "config": cfg.model_dump(mode="json", exclude={"budgets"}),  # the engine's business, not the Director's
        }

    # ---------------------------------------------------------------- shared stages

    def _describe(self, module: str) -> DescriptionAnswer:
        payload = {**self._base_payload(), "passages": [p.model_dump() for p in self.job.passages]}
        answer, raw, cost = self._ask_as("description", payload, DescriptionAnswer)
        if answer is None:
            self._step(module, "director", "fail", "description did not parse", outputs=raw, cost=cost)
            raise Discard("description: the Director's answer did not parse", "unparseable description")
        self._step(module, "director", "pass", answer.description, outputs=raw, cost=cost)
        return answer

    def _script(self, module: str, op: str, payload: dict[str, Any], *, turn: int | None = None) -> Script:
        """Draft a script (module 3) or a turn's prompt (module d); an unparseable one costs a rewrite."""
        while True:
            answer, raw, cost = self._ask_as(op, payload, Script)
            if answer is not None:
                break
            self._step(module, "director", "fail", "the script did not parse", turn=turn, outputs=raw, cost=cost)
            self._spend("rewrite", "unparseable script")
            payload = {**payload, "feedback": {"unparseable": "the last answer was not a valid script"}}
        script = answer
        segs = ", ".join(f"{s.kind} {s.start:.1f}-{s.end:.1f}" for s in script.segments)
        self._step(
            module,
            "director",
            "pass",
            f"{script.duration_s:.1f} s script: {segs}; asks {script.question!r}",
            turn=turn,
            outputs=raw,
            cost=cost,
        )
        return script

    def _validate(
        self, script: Script, *, turn: int = 1, n_turns: int = 1, completed: Sequence[str] = ()
    ) -> list[Violation]:
        return validate_script(
            script, self.config, self.job.assignment, turn=turn, n_turns=n_turns, completed=set(completed)
        )

    def _render(self, script: Script, fragments: list[str], refs: dict[str, Path], seed: int, name: str) -> Clip:
        out = self.workdir / name
        renderer = self.agents.renderer
        request = RenderRequest(script, tuple(fragments), refs, seed, out)
        described = {
            "script": script.model_dump(mode="json"),
            "fragments": fragments,
            "references": {k: _sha256(p) for k, p in sorted(refs.items())},
            "seed": seed,
            "out": name,
        }

        def render() -> dict[str, Any]:
            clip = renderer.render(request)
            report_cost(AttemptCost(clip.cost_usd, "priced" if clip.cost_usd is not None else "no price"))
            return clip.model_dump(mode="json")

        def still_there(answer: dict[str, Any]) -> bool:
            path = self.workdir / answer["path"]
            return cast("bool", path.is_file() and _sha256(path) == answer["sha256"])

        answer, cost = self._timed_call(renderer.name, "render", described, render, still_valid=still_there)
        self._last_cost = cost
        return Clip.model_validate(answer)

    def _caption(self, clip: Clip) -> tuple[Caption, Cost]:
        reviewer = self.agents.reviewer
        path = self.workdir / clip.path

        def caption() -> dict[str, Any]:
            return reviewer.caption(path, language=self.language).model_dump(mode="json")

        answer, cost = self._timed_call(
            reviewer.name, "caption", {"clip": clip.sha256, "language": self.language}, caption
        )
        return Caption.model_validate(answer), cost

    def _qa(self, clip: Clip, questions: list[Question]) -> tuple[list[Answer], Cost]:
        reviewer = self.agents.reviewer
        path = self.workdir / clip.path

        def answer() -> dict[str, Any]:
            return {"answers": [a.model_dump(mode="json") for a in reviewer.answer(path, questions)]}

        request = {"clip": clip.sha256, "questions": [q.model_dump(mode="json") for q in questions]}
        got, cost = self._timed_call(reviewer.name, "answer", request, answer)
        return [Answer.model_validate(a) for a in got["answers"]], cost

    def _clip_loop(
        self,
        script: Script,
        fragments: list[str],
        refs: dict[str, Path],
        ids: dict[str, str],
        *,
        turn: int | None,
        context: dict[str, Any],
    ) -> tuple[Clip, Caption, list[Answer]]:
        """Render, caption, review (with focused Q-A on request); a re-seed renders again with the script fixed;
        a rewrite goes back to the script (raises _Rewrite); a discard ends the run."""
        tag = f"turn{turn or 1}"
        reviews: list[dict[str, Any]] = []
        render_no = 0
        while True:
            render_no += 1
            seed = _seed(self.job.seed, self.job.id, tag, _short(script), render_no)
            try:
                clip = self._render(script, fragments, refs, seed, f"{tag}-{_short(script)}-{render_no}.mp4")
            except AgentCallError as err:
                self._step(ids["render"], self.agents.renderer.name, "fail", str(err), turn=turn, cost=Cost(calls=1))
                if isinstance(err.cause, RenderRefused):  # the prompt must change (moderation, too long...)
                    raise _Rewrite({"render_refused": str(err.cause)}) from None
                if not isinstance(err.cause, RenderFailed):  # a key refused, a bad request: stop, resumable
                    raise
                reviews.append({"render": render_no, "action": "reseed", "reason": f"render failed: {err.cause}"})
                self._spend("render", f"render failed: {err.cause}")
                continue
            self._step(
                ids["render"],
                self.agents.renderer.name,
                "pass",
                f"{clip.duration_s:.1f} s clip, seed {clip.seed}",
                turn=turn,
                outputs=clip.model_dump(mode="json"),
                cost=self._last_cost.model_copy(update={"usd": clip.cost_usd}),
            )
            caption, cost = self._caption(clip)
            defects = caption.report.defects()
            self._step(
                ids["caption"],
                self.agents.reviewer.name,
                "pass" if not defects else "fail",
                caption.text + (f" Defects: {'; '.join(defects)}." if defects else " No clear defect."),
                turn=turn,
                outputs=caption.model_dump(mode="json"),
                cost=cost,
            )
            answers: list[Answer] = []
            qa_rounds = 0
            # What was rendered against the fixed assignment: the language the Reviewer heard (hard, never waived).
            hard = validate_caption(caption.transcript, self.job.assignment)
            while True:
                payload = {
                    **self._base_payload(),
                    **context,
                    "script": script.model_dump(mode="json"),
                    "caption": caption.model_dump(mode="json"),
                    "answers": [a.model_dump(mode="json") for a in answers],
                    "earlier_reviews": reviews,
                    "qa_left": self.budgets.qa - qa_rounds,
                    **({"violations": [v.model_dump(mode="json") for v in hard]} if hard else {}),
                }
                decision, raw, cost = self._review(
                    "video_review", payload, ("accept", "reseed", "rewrite", "qa", "discard"), "reseed", "video review"
                )
                if decision.action == "qa":
                    if qa_rounds >= self.budgets.qa or not decision.questions:
                        self._step(ids["review"], "director", "fail", "asked for Q-A past its budget", turn=turn)
                        raise Discard(f"{tag}: video Q-A budget ({self.budgets.qa}) spent", "qa budget spent")
                    self._step(ids["review"], "director", "qa", decision.reason, turn=turn, outputs=raw, cost=cost)
                    qa_rounds += 1
                    got, cost = self._qa(clip, decision.questions)
                    answers += got
                    self._step(
                        ids["qa"],
                        self.agents.reviewer.name,
                        "pass",
                        "; ".join(f"{a.question.text} {a.answer}" for a in got),
                        turn=turn,
                        outputs={"answers": [a.model_dump(mode="json") for a in got]},
                        cost=cost,
                    )
                    continue
                break
            if qa_rounds == 0:
                self._step(ids["qa"], self.agents.reviewer.name, "skip", "not requested", turn=turn, inputs={})
            if decision.action == "accept" and hard:
                # A random rendering defect is re-seeded; the same drift again rewrites the script (Appendix C.2.2).
                again = any(r.get("refused") for r in reviews)
                decision, raw = _refuse(decision, raw, hard, "rewrite" if again else "reseed")
            self._step(ids["review"], "director", decision.action, decision.reason, turn=turn, outputs=raw, cost=cost)
            reviews.append(
                {
                    "render": render_no,
                    "action": decision.action,
                    "reason": decision.reason,
                    **({"refused": raw["refused"]} if "refused" in raw else {}),
                }
            )
            if decision.action == "accept":
                return clip, caption, answers
            if decision.action == "reseed":
                self._spend("render", decision.reason)
                continue
            if decision.action == "rewrite":
                raise _Rewrite({"video_review": decision.reason})
            assert decision.action == "discard"
            raise Discard(f"{tag}: video review discarded the run: {decision.reason}", "video review discard")

    def _reply_loop(
        self,
        evidence: dict[str, Any],
        ids: dict[str, str],
        *,
        turn: int | None,
        final: bool,
        plan_module: str | None,
    ) -> ReplyAnswer:
        """Reply plan (12 / j, final turn only in multi-turn), reply generation (13 / k), reply review (14 / l):
        one refinement, then continue with the reply; a reply or rubric that is not usable discards the run."""
        payload = {**self._base_payload(), **evidence, "final": final}
        if plan_module is not None:
            module = "reply_plan" if self.config.turns == "single" else "final_reply_plan"
            rp, raw, cost = self._ask_as(module, payload, ReplyPlanAnswer)
            if rp is None:
                self._step(plan_module, "director", "fail", "the reply plan did not parse", turn=turn, outputs=raw)
                raise Discard("reply plan: the Director's answer did not parse", "unparseable reply plan")
            left = f"; leaves out {', '.join(rp.left_out)}" if rp.left_out else ""
            self._step(plan_module, "director", "pass", "; ".join(rp.facts) + left, turn=turn, outputs=raw, cost=cost)
            payload["reply_plan"] = rp.model_dump(mode="json")
        elif self.config.turns == "multi":
            self._step("j", "director", "skip", "not used in an intermediate turn", turn=turn)
        reply: ReplyAnswer | None = None
        refined = 0  # the refinement limit is per reply: an earlier turn's refinement leaves this one its own
        while True:
            got, raw, cost = self._ask_as("reply", payload, ReplyAnswer)
            if got is None:
                self._step(ids["reply"], "director", "fail", "the reply did not parse", turn=turn, outputs=raw)
                if reply is None:
                    raise Discard("reply generation: the Director's answer did not parse", "unparseable reply")
            else:
                reply = got
                rubric = f" Rubric: {len(got.rubric)} criteria." if final else ""
                self._step(
                    ids["reply"], "director", "pass", f"{got.reply!r}.{rubric}", turn=turn, outputs=raw, cost=cost
                )
            decision, raw, cost = self._review(
                "reply_review",
                {**payload, "reply": reply.model_dump(mode="json")},
                ("accept", "refine"),
                "refine",
                "reply review",
            )
            action, reason = decision.action, decision.reason
            if action != "refine" or refined >= self.budgets.refine:
                note = "" if action != "refine" else " (refinement limit reached: continuing with this reply)"
                self._step(
                    ids["review"],
                    "director",
                    "accept" if action != "refine" else "continue",
                    reason + note,
                    turn=turn,
                    outputs=raw,
                    cost=cost,
                )
                break
            self._step(ids["review"], "director", "refine", reason, turn=turn, outputs=raw, cost=cost)
            refined += 1
            self.spent["refine"] = self.spent.get("refine", 0) + 1  # for the trace; outside the global budget
            payload = {**payload, "feedback": {"reply_review": reason, "previous": reply.model_dump(mode="json")}}
        problems = _reply_problems(reply, final)
        if problems:
            raise Discard(f"{'final ' if final else ''}reply incomplete: {'; '.join(problems)}", "incomplete reply")
        return reply

    # ---------------------------------------------------------------- single turn: modules 0-14

    def _single(self) -> Result:
        description = self._describe("1")
        plan, raw, cost = self._ask_as(
            "plan", {**self._base_payload(), "description": description.description}, PlanAnswer
        )
        if plan is None:
            self._step("2", "director", "fail", "the plan did not parse", outputs=raw, cost=cost)
            raise Discard("plan & review: the Director's answer did not parse", "unparseable plan")
        self._step(
            "2",
            "director",
            "pass",
            plan.plan + (f" Review: {plan.review}" if plan.review else ""),
            outputs=raw,
            cost=cost,
        )
        checkpoint = len(self.history)  # a rewrite restores the Director to here (Appendix C.2.2)
        errors: list[dict[str, Any]] = []
        feedback: dict[str, Any] | None = None
        ids = {"render": "8", "caption": "9", "qa": "10", "review": "11"}
        while True:
            payload = {
                **self._base_payload(),
                "plan": plan.model_dump(mode="json"),
                "rules": rules_text(self.config, self.job.assignment, self.language),
                **({"feedback": feedback} if feedback else {}),
            }
            script = self._script("3", "script", payload)
            violations = self._validate(script)
            self._step(
                "4",
                "validator",
                "fail" if violations else "pass",
                "; ".join(v.message for v in violations) or "the script passes every configured check",
                inputs={"script": _short(script)},
                outputs={"violations": [v.model_dump(mode="json") for v in violations]},
            )
            if violations:
                if self._validation_review("5", {**payload, "script": script.model_dump(mode="json")}, violations):
                    feedback = self._rewind(
                        checkpoint,
                        errors,
                        {"violations": [v.model_dump(mode="json") for v in violations]},
                        f"validation: {violations[0].message}",
                    )
                    continue
            else:
                self._step("5", "director", "skip", "validation reports no violation")
            decision, raw, cost = self._review(
                "script_review",
                {**payload, "script": script.model_dump(mode="json")},
                ("accept", "rewrite", "discard"),
                "rewrite",
                "script review",
            )
            self._step("6", "director", decision.action, decision.reason, outputs=raw, cost=cost)
            if decision.action == "discard":
                raise Discard(f"script review discarded the run: {decision.reason}", "script review discard")
            if decision.action != "accept":
                feedback = self._rewind(
                    checkpoint, errors, {"script_review": decision.reason}, f"script review: {decision.reason}"
                )
                continue
            fragments = self._video_plan("7", script, payload)
            try:
                clip, caption, answers = self._clip_loop(script, fragments, {}, ids, turn=None, context={})
            except _Rewrite as rewrite:
                feedback = self._rewind(
                    checkpoint, errors, rewrite.feedback, json.dumps(rewrite.feedback, ensure_ascii=False)
                )
                continue
            break
        evidence = {
            "script": script.model_dump(mode="json"),
            "caption": caption.model_dump(mode="json"),
            "answers": [a.model_dump(mode="json") for a in answers],
        }
        reply = self._reply_loop(evidence, {"reply": "13", "review": "14"}, turn=None, final=True, plan_module="12")
        return Result(
            self.trace,
            [TurnResult(script, clip, caption, answers, reply)],
            reference=reply.reply,
            rubric=reply.rubric,
            requires=_requires(script),
        )

    def _validation_review(self, module: str, payload: dict[str, Any], violations: list[Violation]) -> bool:
        """Module 5 / n: whether the reported violations must be revised (True) or are dismissed as contextual
        false reports; an unparseable verdict revises (Appendix C.2.2)."""
        review, raw, cost = self._review(
            "validation_review",
            {**payload, "violations": [v.model_dump(mode="json") for v in violations]},
            ("dismiss", "revise"),
            "revise",
            "validation verdict",
        )
        hard = [v for v in violations if v.hard]
        if review.action == "dismiss" and hard:
            review, raw = _refuse(review, raw, hard, "revise")
        self._step(module, "director", review.action, review.reason, outputs=raw, cost=cost)
        return review.action == "revise"

    def _video_plan(self, module: str, script: Script, payload: dict[str, Any], turn: int | None = None) -> list[str]:
        """Module 7: the compatible fragments the Director selects; all of them when its selection does not parse
        (Appendix C.2.2)."""
        compatible = self.config.compatible_fragments(self.job.assignment)
        known = {f.id: f.text for f in compatible}
        answer, raw, cost = self._ask_as(
            "video_plan",
            {
                **payload,
                "script": script.model_dump(mode="json"),
                "fragments": [{"id": f.id, "text": f.text} for f in compatible],
            },
            VideoPlanAnswer,
        )
        chosen = [f for f in answer.fragments if f in known] if answer is not None else []
        if answer is None or not chosen:
            self._step(
                module,
                "director",
                "pass",
                "selection did not parse: every compatible fragment is used",
                turn=turn,
                outputs=raw,
                cost=cost,
            )
            return [known[k] for k in known]
        self._step(module, "director", "pass", f"fragments: {', '.join(chosen)}", turn=turn, outputs=raw, cost=cost)
        return [known[k] for k in chosen]

    # ---------------------------------------------------------------- multi turn: modules a-n

    def _multi(self) -> Result:
        description = self._describe("a")
        n_turns = int(self.job.assignment["turns"])
        plan = self._joint_plan(description, n_turns, feedback=None)
        done: list[TurnResult] = []
        media: dict[str, Path] = {}
        turn = 1
        while turn <= n_turns:
            try:
                done = done[: turn - 1]
                media = {k: v for k, v in media.items() if _turn_of(k) < turn}
                done.append(self._turn(turn, n_turns, plan, done, media))
                media.update(self._extract_media(turn, done[-1].clip))
                turn += 1
                if turn > n_turns:
                    self._record_validation(done, n_turns)
            except _UpdatePlan as update:
                self._spend("plan", update.reason)
                plan = self._joint_plan(
                    description, n_turns, feedback={"update_plan": update.reason, "from_turn": update.turn}
                )
                turn = max(1, min(update.turn, turn))
        final = done[-1]
        return Result(
            self.trace,
            done,
            reference=final.reply.reply,
            rubric=final.reply.rubric,
            requires=_requires(final.script),
        )

    def _joint_plan(
        self, description: DescriptionAnswer, n_turns: int, feedback: dict[str, Any] | None
    ) -> JointPlanAnswer:
        """Modules b (joint plan of every turn and its media links) and c (its review, a separate call)."""
        while True:
            payload = {
                **self._base_payload(),
                "description": description.description,
                "turns": n_turns,
                "reference_budget": self.config.validator.max_references,
                **({"feedback": feedback} if feedback else {}),
            }
            plan, raw, cost = self._ask_as("joint_plan", payload, JointPlanAnswer)
            if plan is None:
                self._step("b", "director", "fail", "the joint plan did not parse", outputs=raw, cost=cost)
                self._spend("plan", "unparseable joint plan")
                feedback = {"unparseable": "the last plan was not valid JSON of the asked shape"}
                continue
            links = "; ".join(
                f"turn {t.turn} uses {', '.join(r.media_id for r in t.references)}" for t in plan.turns if t.references
            )
            self._step(
                "b", "director", "pass", plan.plan + (f" Media: {links}." if links else ""), outputs=raw, cost=cost
            )
            decision, raw, cost = self._review(
                "plan_review",
                {**payload, "plan": plan.model_dump(mode="json")},
                ("accept", "revise", "discard"),
                "revise",
                "plan review",
            )
            self._step("c", "director", decision.action, decision.reason, outputs=raw, cost=cost)
            if decision.action == "accept":
                return plan
            if decision.action == "discard":
                raise Discard(f"plan review discarded the run: {decision.reason}", "plan review discard")
            self._spend("plan", decision.reason)
            feedback = {"plan_review": decision.reason}

    def _turn(
        self, turn: int, n_turns: int, plan: JointPlanAnswer, done: list[TurnResult], media: dict[str, Path]
    ) -> TurnResult:
        """Modules d-l for one turn."""
        final = turn == n_turns
        completed = [k for k in media if _turn_of(k) < turn]
        checkpoint = len(self.history)
        errors: list[dict[str, Any]] = []
        feedback: dict[str, Any] | None = None
        ids = {"render": "f", "caption": "g", "qa": "h", "review": "i"}
        history = [
            {"turn": i + 1, "question": t.script.question, "reply": t.reply.reply, "caption": t.caption.text}
            for i, t in enumerate(done)
        ]
        while True:
            payload = {
                **self._base_payload(),
                "plan": plan.model_dump(mode="json"),
                "turn": turn,
                "turns": n_turns,
                "available_media": completed,
                "dialogue_so_far": history,
                "rules": rules_text(self.config, self.job.assignment, self.language),
                "fragments": [f.text for f in self.config.compatible_fragments(self.job.assignment)],
                **({"feedback": feedback} if feedback else {}),
            }
            script = self._script("d", "prompt", payload, turn=turn)
            violations = self._validate(script, turn=turn, n_turns=n_turns, completed=completed)
            decision, raw, cost = self._review(
                "prompt_review",
                {
                    **payload,
                    "script": script.model_dump(mode="json"),
                    "violations": [v.model_dump(mode="json") for v in violations],
                },
                ("accept", "rewrite", "update_plan"),
                "rewrite",
                "prompt review",
            )
            hard = [v for v in violations if v.hard]
            if decision.action == "accept" and hard:  # a hard violation is never rendered: rewrite it locally
                decision, raw = _refuse(decision, raw, hard, "rewrite")
            self._step("e", "director", decision.action, decision.reason, turn=turn, outputs=raw, cost=cost)
            if decision.action == "update_plan":
                raise _UpdatePlan(decision.turn or turn, decision.reason)
            if decision.action != "accept":
                feedback = self._rewind(
                    checkpoint,
                    errors,
                    {"prompt_review": decision.reason, "violations": [v.model_dump(mode="json") for v in violations]},
                    f"turn {turn} prompt: {decision.reason}",
                )
                continue
            refs = {}
            for ref in script.references:
                if ref.media_id not in media:
                    raise _UpdatePlan(turn, f"turn {turn} references {ref.media_id}, which does not exist")
                refs[ref.media_id] = media[ref.media_id]
            fragments = [f.text for f in self.config.compatible_fragments(self.job.assignment)]
            context = {"turn": turn, "earlier_turns": history}
            try:
                clip, caption, answers = self._clip_loop(script, fragments, refs, ids, turn=turn, context=context)
            except _Rewrite as rewrite:
                feedback = self._rewind(
                    checkpoint, errors, rewrite.feedback, json.dumps(rewrite.feedback, ensure_ascii=False)
                )
                continue
            break
        evidence = {
            "turn": turn,
            "dialogue_so_far": history,
            "script": script.model_dump(mode="json"),
            "caption": caption.model_dump(mode="json"),
            "answers": [a.model_dump(mode="json") for a in answers],
        }
        reply = self._reply_loop(
            evidence, {"reply": "k", "review": "l"}, turn=turn, final=final, plan_module="j" if final else None
        )
        return TurnResult(script, clip, caption, answers, reply)

    def _extract_media(self, turn: int, clip: Clip) -> dict[str, Path]:
        """A completed turn's ids: its clip, its extracted audio and its final frame (Appendix C.2.2)."""
        from omnivchat.media import MediaKilled, ffmpeg_exe

        src = self.workdir / clip.path
        audio = self.workdir / f"turn{turn}.audio.wav"
        frame = self.workdir / f"turn{turn}.final_frame.png"
        jobs = (
            (audio, ["-i", str(src), "-vn", "-ac", "1", "-ar", "16000"]),
            (frame, ["-sseof", "-0.2", "-i", str(src), "-frames:v", "1", "-update", "1"]),
        )
        # Both extractions run at once (each is mostly ffmpeg's start-up); their outcomes are read in order.
        started: list[tuple[Path, Path, subprocess.Popen[str]]] = []
        try:
            for out, args in jobs:
                tmp = out.with_name(f".tmp-{out.name}")
                command = [ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-y", *args, str(tmp)]
                # start_new_session: a terminal's Ctrl-C is the engine's to act on, not ffmpeg's
                proc = subprocess.Popen(
                    command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
                )
                started.append((out, tmp, proc))
            for out, tmp, proc in started:
                _, stderr = proc.communicate()
                if proc.returncode < 0:  # killed by a signal: says nothing of the clip, never a discard
                    if self.calls.stopping.is_set():
                        raise Stopped(f"{self.job.id}: interrupted while extracting {out.name}")
                    raise MediaKilled(f"{src}: ffmpeg was killed by signal {-proc.returncode} extracting {out.name}")
                if proc.returncode != 0 or not tmp.is_file():
                    raise Discard(
                        f"turn {turn}: cannot extract {out.name} from {src.name}: {stderr.strip()}",
                        "media extraction failed",
                    )
                tmp.replace(out)
        finally:  # as subprocess.run does on an error: no ffmpeg left running, no temporary file left behind
            for _, tmp, proc in started:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                tmp.unlink(missing_ok=True)
        return {f"turn{turn}.clip": src, f"turn{turn}.audio": audio, f"turn{turn}.final_frame": frame}

    def _record_validation(self, done: list[TurnResult], n_turns: int) -> None:
        """Modules m (the Validator on the assembled record) and n (its review): a revision updates the plan from
        the first affected turn."""
        violations = validate_record([t.script for t in done], self.config, self.job.assignment)
        self._step(
            "m",
            "validator",
            "fail" if violations else "pass",
            "; ".join(v.message for v in violations) or f"the {n_turns}-turn record passes",
            inputs={"scripts": [_short(t.script) for t in done]},
            outputs={"violations": [v.model_dump(mode="json") for v in violations]},
        )
        if not violations:
            self._step("n", "director", "skip", "validation finds no violation")
            return
        record = {**self._base_payload(), "record": [t.script.model_dump(mode="json") for t in done]}
        if self._validation_review("n", record, violations):
            first = min((v.turn for v in violations if v.turn is not None), default=1)
            raise _UpdatePlan(first, f"record validation: {violations[0].message}")


# ------------------------------------------------------------------------------------------- helpers


def _refuse(
    decision: Decision, raw: dict[str, Any], hard: Sequence[Violation], instead: Action
) -> tuple[Decision, dict[str, Any]]:
    """A review that waives a hard violation (dismiss, accept) is refused: the run takes ``instead``, a repair, and
    the trace step records the review's own answer with ``refused`` beside it."""
    listed = "; ".join(f"{v.rule}: {v.message}" for v in hard)
    reason = (
        f"refused {decision.action!r}: no review can waive a hard violation ({listed}), so {instead}; "
        f"the review said: {decision.reason}"
    )
    return Decision(action=instead, reason=reason), {**raw, "refused": decision.action}


def _turn_of(media_id: str) -> int:
    return int(media_id.split(".")[0].removeprefix("turn"))


def _describe(assignment: Assignment) -> str:
    return ", ".join(f"{k}={v}" for k, v in assignment.items())


def _sha256(path: Path) -> str:
    from omnivchat._canonical import sha256_file

    return sha256_file(path)


def _short(script: Script) -> str:
    blob = json.dumps(script.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def _requires(script: Script) -> list[str]:
    requires = script.fields.get("requires")
    if isinstance(requires, list) and requires and all(r in ("video", "audio") for r in requires):
        return list(requires)
    return ["video", "audio"]


def _reply_problems(reply: ReplyAnswer, final: bool) -> list[str]:
    """The final completeness checks: a reply, and on the final turn a rubric with the language gate and a tier-1
    criterion that the reference itself meets wherever a criterion carries a machine check (a reference that misses
    its own rubric is not an answer key, whatever the review said)."""
    from omnivchat.judges import check_holds

    problems = []
    if not reply.reply.strip():
        problems.append("empty reply")
    if final:
        tiers = {c.tier for c in reply.rubric}
        gates = sum(c.tier == 0 for c in reply.rubric)
        if gates == 0:
            problems.append("no tier-0 language gate")
        elif gates > 1:
            problems.append(f"{gates} tier-0 criteria (a rubric has exactly one, the language gate)")
        if 1 not in tiers:
            problems.append("no tier-1 criterion")
        missed = [
            n
            for n, c in enumerate(reply.rubric, start=1)
            if c.check is not None and not check_holds(c.check, reply.reply)
        ]
        if missed:
            problems.append(f"the reference misses criteria {missed} of its own rubric")
    return problems


def copy_clip(src: Path, dst: Path) -> None:
    """Copy an accepted clip (and its renderer sidecars, when it has them) into the bench."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    for suffix in (".spec.json", ".timeline.json"):
        side = src.with_name(src.stem + suffix)
        if side.is_file():
            shutil.copyfile(side, dst.with_name(dst.stem + suffix))
