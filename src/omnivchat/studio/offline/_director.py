"""The offline template Director: every Director module answered from the sampled attributes and the mini-bench
builders (``omnivchat.studio.minibench``), with machine checks instead of an LLM's judgment.

What it stages from the assignment: the language, the audio interference (background noise), the visual
interference (lighting), the extra requirement (a sound segment in the script) and, for multi-turn subcategories,
the number of turns (turns beyond the builder's are small-talk turns before the final question). The scenario
domain, the camera setup and the question type are written into the description and the script's fields but the
procedural scene is the builder's (its camera comes from the subcategory's own logic).

With ``defect_rate`` > 0 it injects defects into its own drafts at that rate (a speaking rate too fast, a
forbidden phrase, a timeline gap, a drifted attribute; a missing language gate or a reference that misses its
rubric; a broken media link in a joint plan) so that every repair path runs. Each draw is seeded by the instance,
the module and the feedback it was given, so a rerun draws the same defects and a rewrite draws afresh.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
from functools import lru_cache
from typing import Any

from omnivchat.bench import Criterion
from omnivchat.studio.engine import DirectorRequest, MediaReference, Script, Segment
from omnivchat.studio.minibench import article

#: Sampled attributes this Director records (in the description and the script's fields) but does not stage: the
#: procedural scene is the builder's, so its clip may show another camera than the one sampled.
NOT_STAGED = ("domain", "camera", "question_type")

_NOISE_DB = {"none": None, "low": -48.0, "medium": -40.0, "high": -33.0}
_LIGHTING = {"none": None, "low": "warm", "medium": "dim", "high": {"level": "dim", "vignette": 0.5}}
_FILLER = {
    "en": ("Okay, thanks. Give me a second.", "Sure, take your time."),
    "zh": ("好的，谢谢。稍等我一下。", "好的，不着急。"),
}
_MARKDOWN = re.compile(r"(^|\n)\s*([-*#>]|\d+\.)\s|\*\*|__|`")
_SPOKEN_MAX_WORDS = 120


class OfflineDirector:
    """A template Director that needs no key (see the module docstring)."""

    name = "offline-director/1"

    def __init__(self, *, defect_rate: float = 0.0) -> None:
        if not 0.0 <= defect_rate <= 1.0:
            raise ValueError(f"defect_rate must be within [0, 1], got {defect_rate}")
        self.defect_rate = defect_rate
        self.name = f"offline-director/1 defects={defect_rate:g}"

    def ask(self, request: DirectorRequest) -> dict[str, Any]:
        handler = getattr(self, f"_{request.module}", None)
        if handler is None:
            raise ValueError(f"the offline Director has no template for module {request.module!r}")
        result: dict[str, Any] = handler(request.payload)
        return result

    # ---------------------------------------------------------------- helpers

    def _defect(self, payload: dict[str, Any], module: str) -> random.Random | None:
        """A seeded RNG when this draft gets a defect, else None."""
        key = json.dumps([payload["instance"], module, payload.get("turn"), payload.get("feedback")], sort_keys=True)
        rng = random.Random(hashlib.sha256(key.encode()).hexdigest())
        return rng if rng.random() < self.defect_rate else None

    def _draft(self, payload: dict[str, Any]) -> Any:
        return _draft(payload["subcategory"]["code"], payload["language"], payload["instance"]["seed"])

    def _turn_scenes(self, payload: dict[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
        """The builder's turns, with small-talk turns added before the final one up to the sampled count."""
        turns = list(self._draft(payload).turns)
        wanted = int(payload["assignment"].get("turns", len(turns)))
        lang = payload["language"]
        while len(turns) < wanted:
            scene = copy.deepcopy(turns[-2][0] if len(turns) > 1 else turns[-1][0])
            line, reply = _FILLER[lang]
            scene["speech"] = [{"text": line, "language": lang, "start": 0.4}]
            turns.insert(len(turns) - 1, (scene, reply))
        return turns[-wanted:] if len(turns) > wanted else turns

    # ---------------------------------------------------------------- modules 1 / a, 2 / b-c

    def _description(self, payload: dict[str, Any]) -> dict[str, Any]:
        lang = payload["language"]
        passages = payload["passages"]
        passage = next((p for p in passages if p["language"] == lang), passages[0] if passages else None)
        meanings = payload["attribute_meanings"]
        staging = self._draft(payload).staging
        # The meanings are sentences of their own ("Front camera held ..."): quoted as clauses, without their stop.
        parts = [f"{payload['subcategory']['name']}: {meanings.get('domain', 'an everyday scene').rstrip('.')}"]
        if "camera" in meanings:
            parts.append(f"camera: {meanings['camera'].rstrip('.')}")
        if passage is not None:
            parts.append(f"the user's small talk draws on the passage about {passage.get('topic') or passage['id']}")
        parts.append(f"the answer: {staging.get('answer', 'see the plan')}")
        return {"description": "; ".join(parts) + ".", "passage": passage["id"] if passage else None}

    def _plan(self, payload: dict[str, Any]) -> dict[str, Any]:
        draft = self._draft(payload)
        scene = draft.turns[-1][0]
        objects = [o.get("name") or f"{o.get('color')} {o.get('shape')}" for o in scene.get("objects", [])]
        plan = f"Scene: {', '.join(objects) or 'the user alone'}; camera {scene['camera']['mode']}."
        review = (
            f"Every object the question needs is present ({', '.join(objects) or 'none needed'}); "
            "the speech states nothing the picture contradicts; the user yields the turn at the end."
        )
        return {"plan": plan, "review": review}

    def _joint_plan(self, payload: dict[str, Any]) -> dict[str, Any]:
        scenes = self._turn_scenes(payload)
        turns = []
        for number, (scene, _) in enumerate(scenes, start=1):
            refs = [] if number == 1 else [{"turn": number - 1, "kind": "clip", "purpose": "same user and room"}]
            said = " ".join(line["text"] for line in scene.get("speech", []))
            turns.append({"turn": number, "summary": said, "references": refs})
        if (rng := self._defect(payload, "joint_plan")) is not None and len(turns) > 1:
            turns[-1]["references"] = [{"turn": len(turns), "kind": "clip", "purpose": "defect: links to itself"}]
            del rng
        return {"plan": f"{len(turns)} turns in one room; each turn continues from the previous clip.", "turns": turns}

    def _plan_review(self, payload: dict[str, Any]) -> dict[str, Any]:
        plan = payload["plan"]
        problems = []
        if len(plan["turns"]) != payload["turns"]:
            problems.append(f"{len(plan['turns'])} turns planned, {payload['turns']} sampled")
        for t in plan["turns"]:
            refs = t.get("references", [])
            if t["turn"] > 1 and not refs:
                problems.append(f"turn {t['turn']} uses no earlier media")
            if any(r["turn"] >= t["turn"] for r in refs):
                problems.append(f"turn {t['turn']} links to media not yet made")
            if len(refs) > payload["reference_budget"]:
                problems.append(f"turn {t['turn']} uses {len(refs)} references, over the budget")
        if problems:
            return {"action": "revise", "reason": "; ".join(problems)}
        return {"action": "accept", "reason": "every turn is planned and every media link points back"}

    # ---------------------------------------------------------------- modules 3 / d: scripts

    def _script(self, payload: dict[str, Any]) -> dict[str, Any]:
        draft = self._draft(payload)
        return self._write(payload, draft.turns[0][0], references=[], turn=None)

    def _prompt(self, payload: dict[str, Any]) -> dict[str, Any]:
        turn = payload["turn"]
        scene = self._turn_scenes(payload)[turn - 1][0]
        planned: dict[str, Any] = next((t for t in payload["plan"]["turns"] if t["turn"] == turn), {"references": []})
        return self._write(payload, scene, references=planned.get("references", []), turn=turn)

    def _write(
        self, payload: dict[str, Any], scene: dict[str, Any], *, references: list[dict[str, Any]], turn: int | None
    ) -> dict[str, Any]:

        assignment = payload["assignment"]
        config = payload["config"]
        rules = config["validator"]
        lang = payload["language"]
        draft = self._draft(payload)
        scene = copy.deepcopy(scene)
        noise = _NOISE_DB.get(assignment.get("audio_interference", "none"))
        if noise is not None:
            scene["noise"] = {"kind": "pink", "level_db": noise}
        lighting = _LIGHTING.get(assignment.get("visual_interference", "none"))
        if lighting is not None:
            scene["lighting"] = lighting
        lines = _timed(scene, rules.get("max_speaking_rate", {}).get(lang))
        last_end = max((ln["end"] for ln in lines), default=0.5)
        wait = rules.get("final_silence_s")
        low, high = rules.get("duration_s", (3.0, 20.0))
        duration = round(max(low, last_end + (wait if wait is not None else 0.2) + 0.3), 2)
        scene["duration"] = duration
        segments = _segments(lines, duration, payload.get("extra_requirement"))
        question = " ".join(ln["text"] for ln in lines if ln["speaker"] == "user")
        fields: dict[str, Any] = {"attributes": dict(assignment), "requires": draft.requires, "staging": draft.staging}
        position = "first" if turn == 1 else "final" if turn == payload.get("turns") else "middle"
        for name in _required_fields(config, position if turn is not None else None):
            fields[name] = _field_value(name, draft.staging, scene, lines)
        if high and duration > high:
            fields["note"] = f"the speech needs {duration:.1f} s"
        script = Script(
            language=lang,
            duration_s=duration,
            question=question,
            segments=segments,
            scene=scene,
            fields=fields,
            references=[MediaReference.model_validate(r) for r in references],
        )
        if (rng := self._defect(payload, "script" if turn is None else f"prompt{turn}")) is not None:
            script = _inject_script_defect(script, rng, config)
        return script.model_dump(mode="json")

    # ---------------------------------------------------------------- modules 5, 6, 7, e, n: reviews

    def _validation_review(self, payload: dict[str, Any]) -> dict[str, Any]:
        # A template cannot tell a contextual false report from a real one: it never dismisses.
        rules = sorted({v["rule"] for v in payload["violations"]})
        return {"action": "revise", "reason": f"revise for {', '.join(rules)}"}

    def _script_review(self, payload: dict[str, Any]) -> dict[str, Any]:
        script = payload["script"]
        scene = script["scene"]
        if not script["question"].strip():
            return {"action": "rewrite", "reason": "the user asks nothing"}
        if "video" in script["fields"].get("requires", []) and not (scene.get("objects") or scene.get("person")):
            return {"action": "rewrite", "reason": "a visual question with nothing to see"}
        return {"action": "accept", "reason": f"tests {payload['subcategory']['code']}: the answer needs the clip"}

    def _video_plan(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"fragments": [f["id"] for f in payload["fragments"]]}

    def _prompt_review(self, payload: dict[str, Any]) -> dict[str, Any]:
        violations = payload["violations"]
        if not violations:
            return {"action": "accept", "reason": "the prompt and its media links pass"}
        if any(v["rule"] == "reference" for v in violations):
            first = min((v.get("turn") or payload["turn"] for v in violations), default=payload["turn"])
            return {"action": "update_plan", "reason": violations[0]["message"], "turn": first}
        return {"action": "rewrite", "reason": "; ".join(v["message"] for v in violations)}

    # ---------------------------------------------------------------- module 11 / i: video review

    def _video_review(self, payload: dict[str, Any]) -> dict[str, Any]:
        problems = _clip_problems(payload["script"], payload["caption"])
        earlier = [r["reason"] for r in payload["earlier_reviews"] if r["action"] in ("reseed", "rewrite")]
        if problems:
            kinds = {p.split(":")[0] for p in problems}
            repeated = any(any(k in e for k in kinds) for e in earlier)
            return {"action": "rewrite" if repeated else "reseed", "reason": "; ".join(problems)}
        staging = payload["script"]["fields"].get("staging", {})
        target = staging.get("target")
        if isinstance(target, str) and "user_side" in staging and not payload["answers"] and payload["qa_left"] > 0:
            question = {"text": f"Which side is the {target} on?", "about": {"object": target, "ask": "side"}}
            return {"action": "qa", "reason": f"confirm the side of the {target}", "questions": [question]}
        for answer in payload["answers"]:
            side = answer.get("observed", {}).get("user_side")
            if side is not None and side != staging.get("user_side"):
                return {"action": "reseed", "reason": f"side: the {target} is on the user's {side}"}
        return {"action": "accept", "reason": "the clip shows the script: objects, speech and timing as planned"}

    # ---------------------------------------------------------------- modules 12-14 / j-l: the reply

    def _reply_plan(self, payload: dict[str, Any]) -> dict[str, Any]:
        staging = payload["script"]["fields"].get("staging", {})
        seen = {o.get("name") for o in payload["caption"].get("observed", {}).get("objects", [])}
        scripted = [o.get("name") for o in payload["script"]["scene"].get("objects", []) if o.get("name")]
        facts = [f"answer: {staging.get('answer', '')}"] + [f"{name} is visible" for name in scripted if name in seen]
        return {"facts": facts, "left_out": [name for name in scripted if name not in seen]}

    _final_reply_plan = _reply_plan

    def _reply(self, payload: dict[str, Any]) -> dict[str, Any]:
        draft = self._draft(payload)
        if not payload["final"]:
            return {"reply": self._turn_scenes(payload)[payload["turn"] - 1][1] or "", "rubric": []}
        rubric = [c.model_dump(mode="json", exclude_none=True) for c in draft.rubric]
        reply = draft.reference
        if (rng := self._defect(payload, "reply")) is not None:
            if rng.random() < 0.5:
                rubric = [c for c in rubric if c["tier"] != 0]
            else:
                reply = {"en": "Let me think about that.", "zh": "让我想一想。"}[payload["language"]]
        return {"reply": reply, "rubric": rubric}

    def _reply_review(self, payload: dict[str, Any]) -> dict[str, Any]:
        from omnivchat.judges import check_holds

        reply = payload["reply"]
        if not payload["final"]:
            ok = bool(reply["reply"].strip()) and not _MARKDOWN.search(reply["reply"])
            return {"action": "accept" if ok else "refine", "reason": "a short spoken reply" if ok else "not spoken"}
        rubric = [Criterion.model_validate(c) for c in reply["rubric"]]
        problems = []
        if not any(c.tier == 0 and c.check is not None and c.check.language == payload["language"] for c in rubric):
            problems.append("no tier-0 gate on the user's language")
        tiers = sorted({c.tier for c in rubric})
        if tiers != list(range(len(tiers))):
            problems.append(f"tiers {tiers} skip a level")
        unchecked = [n for n, c in enumerate(rubric, start=1) if c.check is None]
        if unchecked:
            problems.append(f"criteria {unchecked} are not binary machine checks")
        missed = [
            n for n, c in enumerate(rubric, start=1) if c.check is not None and not check_holds(c.check, reply["reply"])
        ]
        if missed:
            problems.append(f"the reference misses criteria {missed}")
        if _MARKDOWN.search(reply["reply"]) or len(reply["reply"].split()) > _SPOKEN_MAX_WORDS:
            problems.append("the reference does not read as natural speech")
        if problems:
            return {"action": "refine", "reason": "; ".join(problems)}
        return {"action": "accept", "reason": "grounded, binary criteria in tier order; the reference meets each"}


# ------------------------------------------------------------------------------------------- pure helpers


@lru_cache(maxsize=512)
def _draft(code: str, language: str, seed: int) -> Any:
    from omnivchat.studio.minibench import BUILDERS

    builder = BUILDERS.get(code)
    if builder is None:
        raise ValueError(f"the offline Director has no template for subcategory {code}")
    return builder(random.Random(f"omnivchat-studio:{seed}:{code}"), language)


def _timed(scene: dict[str, Any], max_rate: float | None) -> list[dict[str, Any]]:
    """The speech lines of ``scene`` as they will be heard; a line faster than the language's maximum speaking rate
    is slowed down (espeak's words per minute) until it fits, the way a script writer would ask for calmer speech."""
    from omnivchat.scoring import word_count
    from omnivchat.synth import speech_timing

    for _ in range(4):
        lines = speech_timing(scene)
        fast = [
            ln["index"]
            for ln in lines
            if max_rate
            and ln["end"] > ln["start"]
            and word_count(ln["text"]) / (ln["end"] - ln["start"]) > 0.95 * max_rate
        ]
        if not fast:
            break
        for i in fast:
            line = scene["speech"][i]
            line["rate"] = max(80, int((line.get("rate") or 160) * 0.85))
    return lines


def _segments(lines: list[dict[str, Any]], duration: float, extra: str | None) -> list[Segment]:
    """Contiguous timed segments: an opening action, each speech line, silences between, the final wait."""
    segments: list[Segment] = []
    t = 0.0
    for ln in sorted(lines, key=lambda x: x["start"]):
        start, end = ln["start"], ln["end"]
        if start > t + 1e-6:
            kind = "action" if not segments else "silence"
            text = "the user looks into the camera" if kind == "action" else ""
            segments.append(Segment(start=round(t, 3), end=round(start, 3), kind=kind, text=text))
        segments.append(
            Segment(start=round(start, 3), end=round(end, 3), kind="speech", text=ln["text"], speaker=ln["speaker"])
        )
        t = max(t, end)
    if duration > t + 1e-6:
        segments.append(Segment(start=round(t, 3), end=round(duration, 3), kind="silence", text="the user waits"))
    if extra:
        segments.append(Segment(start=0.0, end=min(0.4, duration), kind="sound", text=extra))
    return sorted(segments, key=lambda s: s.start)


def _required_fields(config: dict[str, Any], position: str | None) -> list[str]:
    if position is None:
        return []
    fields = config["validator"].get("turn_fields", {})
    return [*fields.get(position, {}).get("required", []), *fields.get("any", {}).get("required", [])]


def _field_value(name: str, staging: dict[str, Any], scene: dict[str, Any], lines: list[dict[str, Any]]) -> Any:
    """A script field the Validator requires at this turn position, read off the staged scene."""
    if name == "active_speaker":
        return lines[-1]["speaker"] if lines else "user"
    if name == "camera_mode":
        return scene["camera"]["mode"]
    if name == "target_user_side":
        sides = staging.get("user_sides")
        return sides[-1] if isinstance(sides, list) and sides else staging.get("user_side", "")
    if name in staging:
        return staging[name]
    return staging.get("target") or staging.get("answer") or " ".join(ln["text"] for ln in lines)


def _inject_script_defect(script: Script, rng: random.Random, config: dict[str, Any]) -> Script:
    """One defect the Validator must catch."""
    kinds = ["fast", "gap", "attribute"]
    phrases = [
        rule["phrases"][0]
        for rule in config["validator"].get("forbidden_phrases", [])
        if rule.get("language") in (None, script.language) and not rule.get("when")
    ]
    if phrases:
        kinds.append("phrase")
    kind = rng.choice(kinds)
    segments = list(script.segments)
    fields = dict(script.fields)
    question = script.question
    speech = [i for i, s in enumerate(segments) if s.kind == "speech"]
    if kind == "fast" and speech:
        i = speech[0]
        s = segments[i]
        segments[i] = s.model_copy(update={"end": round(s.start + 0.25, 3)})
        segments.insert(i + 1, Segment(start=round(s.start + 0.25, 3), end=s.end, kind="silence"))
    elif kind == "gap" and len(segments) > 1:
        segments.pop(0 if segments[0].kind != "speech" else -1)
    elif kind == "phrase" and speech:
        i = speech[-1]
        segments[i] = segments[i].model_copy(update={"text": f"{segments[i].text} {phrases[0]}"})
        question = f"{question} {phrases[0]}"
    else:
        attributes = dict(fields.get("attributes", {}))
        name = "language" if "language" in attributes else next(iter(attributes), "language")
        attributes[name] = f"{attributes.get(name, '')}-drifted"
        fields["attributes"] = attributes
    return script.model_copy(update={"segments": segments, "fields": fields, "question": question})


def _colour_word(css: Any) -> str | None:
    from omnivchat.studio.minibench import COLOURS

    return next((c.en for c in COLOURS if c.css == css), None)


def _clip_problems(script: dict[str, Any], caption: dict[str, Any]) -> list[str]:
    """What the Reviewer saw that the script does not hold (each "kind: detail")."""
    observed = caption.get("observed", {})
    problems = []
    if observed.get("has_audio") is False:
        problems.append("audio: the clip has no audio track")
    duration = observed.get("duration_s")
    if isinstance(duration, (int, float)) and duration < script["duration_s"] - 0.3:
        problems.append(f"duration: {duration:.1f} s of {article(format(script['duration_s'], '.1f'))} s script")
    seen = {o.get("name"): o for o in observed.get("objects", [])}
    for obj in script["scene"].get("objects", []):
        word = _colour_word(obj.get("color"))
        got = seen.get(obj.get("name"), {}).get("colour_seen")
        if word is not None and got is not None and got != word:
            problems.append(f"colour: the {obj.get('name')} looks {got}")
    has_text = bool(script["scene"].get("placards")) or any(o.get("label") for o in script["scene"].get("objects", []))
    # Tail clicks and abrupt endings are repaired after synthesis (Appendix D.1.2): no reason to render again.
    tail_only = all(kind.startswith("tail_") for kind in observed.get("artifacts", ["unknown"]))
    report = caption.get("report", {})
    for aspect, value in report.items():
        skip = (aspect == "on_screen_text" and has_text) or (aspect == "artifacts" and tail_only)
        if value.get("ok", True) or skip or aspect == "delivery_speed":
            continue
        problems.append(f"{aspect}: {value.get('note', '')}")
    return problems
