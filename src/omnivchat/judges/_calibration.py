"""Judge calibration: does a judge give the reference reply every criterion, and does it take away exactly the
criterion a planted perturbation of the reference breaks?

Perturbations (:mod:`omnivchat.judges._perturb`) are made by rules, and optionally also written by a Director
model and verified, then stored (``perturbations.json``, each with its origin) so that every judge, now or on a
rerun, sees the same set. Every judge grades the references and the perturbations with the rubric prompt, and the
references and the list perturbations with the style checklist (Section 4.2: s(y) = 1 only when all seven
requirements hold; a list breaks requirement 4). The offline rule judge grades by the machine checks, and for
style it can only prove a failure (a list, a table, code, an emoji), never a pass.

Per judge the report gives, each with a 95% Wilson interval:

- ``reference_full_score_rate``: references given every rubric criterion;
- ``reference_style_rate``: references given s(y) = 1;
- ``detection_rate`` per tier and for ``style``: perturbations that lose their target (s(y) = 0 for style);
- ``false_miss_rate``: untouched criteria taken away from perturbations (tier-0 perturbations excluded: a fixed
  other-language sentence keeps no content);
- ``unscored`` (rubric) and ``style_unscored``, with their reasons: a failed request, a verdict that does not
  parse, or what the rule judge cannot decide. They are counted apart and never enter a rate's denominator.

Judges and the Director are asked through the run store beside the output, so a rerun sends nothing new; one
calibration at a time writes a folder (its writer lock).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat._blocking import blocking
from omnivchat._canonical import sha256_text
from omnivchat.bench import Bench, Instance
from omnivchat.errors import OmnivchatError
from omnivchat.judges._config import RULE_JUDGE, JudgesConfig, JudgeSpec
from omnivchat.judges._engine import Job, VerdictTask, ask, hits_schema, stored_verdict
from omnivchat.judges._perturb import (
    DIRECTOR,
    LANGUAGE_NAMES,
    RULE,
    STYLE,
    Perturbation,
    Target,
    director_targets,
    other_language,
    perturb,
    verify_proposal,
)
from omnivchat.judges._requests import STYLE_REQUIREMENTS, JudgePrompts, rubric_request, style_request
from omnivchat.judges._rule import rule_style_verdict, rule_verdict
from omnivchat.judges._verdict import parse_verdict
from omnivchat.prompts import load_prompt
from omnivchat.routes import ChatRequest, ChatResponse, RetryPolicy, Route, Sampling, StructuredOutput, schema_format
from omnivchat.runs import Runner, RunStore, RunSummary, run_lock

PERTURBATIONS_FILE = "perturbations.json"
CALIBRATION_STORE = "store.sqlite"
CALIBRATION_MODEL = "the assistant"  # the model name the rubric prompt is given: the reference has no model
LOCK_COMMAND = "judges calibrate"
Z95 = 1.959963984540054
PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reply": {"type": "string"}},
    "required": ["reply"],
    "additionalProperties": False,
}


class CalibrationError(OmnivchatError, ValueError):
    """The calibration cannot run (no references, a perturbations file for another bench...); one line."""


def wilson(k: int, n: int, z: float = Z95) -> dict[str, Any]:
    """``{"rate", "k", "n", "low", "high"}``: k of n with its Wilson score interval (all None when n is 0).

    centre = (p + z²/2n) / (1 + z²/n), half-width = z √(p(1-p)/n + z²/4n²) / (1 + z²/n), with p = k/n (Wilson,
    1927); unlike p ± z√(p(1-p)/n) it stays inside [0, 1] and is not empty at k = 0 or k = n."""
    if not 0 <= k <= n:
        raise ValueError(f"wilson: k={k} successes of n={n} is not a proportion")
    if n == 0:
        return {"rate": None, "k": 0, "n": 0, "low": None, "high": None}
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return {
        "rate": p,
        "k": k,
        "n": n,
        "low": round(max(0.0, centre - half), 6),
        "high": round(min(1.0, centre + half), 6),
    }


def bench_fingerprint(bench: Bench) -> str:
    data = [[i.id, i.language, i.reference, [c.model_dump() for c in i.rubric]] for i in bench.instances]
    return sha256_text(json.dumps(data, sort_keys=True, ensure_ascii=False))


# --- the Director ----------------------------------------------------------------------------------------------


@dataclass
class Director:
    """A text model that writes perturbations (``--director MODEL``): its route, sampling and concurrency. The route
    is closed when the calibration is done with it."""

    route: Route
    sampling: Sampling = field(default_factory=lambda: Sampling(temperature=0.0, max_tokens=1024))
    concurrency: int = 4
    structured_output: StructuredOutput = "auto"
    """How the answer's JSON schema is sent, as for judges: json_schema (OpenAI, vLLM, SGLang), json_object
    (llama.cpp), off; auto: only where the form is certain (the Gemini native route)."""

    @property
    def origin(self) -> str:
        return f"{DIRECTOR}:{self.route.model_id}"

    def response_format(self) -> dict[str, Any] | None:
        return schema_format(
            self.route.settings.route, PROPOSAL_SCHEMA, self.structured_output, name="perturbation", strict=True
        )

    def identity(self) -> dict[str, Any]:
        """What decides its perturbations (the endpoint and key excluded)."""
        system, user = _director_prompts()
        return {
            "model": self.route.model_id,
            "route": self.route.settings.route,
            "sampling": self.sampling.model_dump(exclude_none=True),
            "structured_output": self.structured_output,
            "prompt_sha256": sha256_text(system + user),
        }


def _director_prompts() -> tuple[str, str]:
    return load_prompt(None, "calibration_director.txt")[0], load_prompt(None, "calibration_director_user.txt")[0]


def director_request(target: Target, sampling: Sampling, response_format: dict[str, Any] | None = None) -> ChatRequest:
    """The Director's request for one target: the reference, the numbered rubric and what to break."""
    system, user = _director_prompts()
    instance = target.instance
    criteria = "\n".join(f"{n}. [tier {c.tier}] {c.text}" for n, c in enumerate(instance.rubric, start=1))
    if target.target == STYLE:
        what = "list: the reply's format (style: no lists)"
    else:
        criterion = instance.rubric[int(target.target) - 1]
        what = f"{target.kind}: criterion {target.target} [tier {criterion.tier}] {criterion.text}"
        if target.kind == "language":
            what += f" (translate into {LANGUAGE_NAMES.get(other_language(instance.language), 'another language')})"
    language = LANGUAGE_NAMES.get(instance.language.split("-")[0].lower(), instance.language)
    text = user.format(language=language, reference=instance.reference, criteria=criteria, target=what)
    return ChatRequest(
        item_id=target.item_id,
        system_prompt=system,
        text=text,
        sampling=sampling,
        require_text=True,
        response_format=response_format,
    )


async def _director_perturbations(
    bench: Bench, director: Director, store: RunStore, folder: Path, *, max_attempts: int, progress: bool
) -> tuple[list[Perturbation], list[dict[str, Any]], dict[str, int]]:
    """Ask the Director for every target; keep what passes :func:`verify_proposal`. A rejected answer is refused
    before it is stored (and asked again, up to ``max_attempts``); a target with no accepted answer is listed."""
    targets = {t.item_id: t for i in bench.instances for t in director_targets(i)}
    rejected_answers = 0

    def accept(request: ChatRequest, response: ChatResponse) -> str | None:
        nonlocal rejected_answers
        text, why = verify_proposal(targets[request.item_id], response.text, f"{request.system_prompt}\n{request.text}")
        if text is None:
            rejected_answers += 1
            return f"perturbation rejected: {why}"
        return None

    kind = f"perturb:{director.route.model_id}"
    runner = Runner(
        director.route,
        store,
        concurrency=director.concurrency,
        retry=RetryPolicy(max_attempts=max_attempts),
        kind=kind,
        accept=accept,
    )
    summary = RunSummary(run_dir=folder, total=len(targets))
    work: list[tuple[ChatRequest, dict[str, Any]]] = [
        (director_request(t, director.sampling, director.response_format()), {}) for t in targets.values()
    ]
    await runner.run_all(work, summary, progress=progress, label=f"director {director.route.model_id}")
    made: list[Perturbation] = []
    rejected: list[dict[str, Any]] = []
    for item_id, target in targets.items():
        row = store.item(item_id, kind)
        result = store.result(row["key"]) if row and row["status"] == "done" and row["key"] else None
        asked = director_request(target, director.sampling)
        text, why = (
            verify_proposal(target, result.text, f"{asked.system_prompt}\n{asked.text}") if result else (None, "")
        )
        if text is None:
            why = why or (f"{row['error_kind']}: {row['error']}" if row else "not asked")
            rejected.append(
                {"instance": target.instance.id, "target": target.target, "tier": target.tier, "reason": why}
            )
            continue
        made.append(
            Perturbation(item_id, target.instance.id, target.target, target.tier, target.kind, text, director.origin)
        )
    counts = {
        "targets": len(targets),
        "accepted": len(made),
        "rejected_targets": len(rejected),
        "rejected_answers": rejected_answers,
        "requests": summary.attempts,
    }
    return made, rejected, counts


# --- the stored set --------------------------------------------------------------------------------------------


@dataclass
class PerturbationSet:
    """What ``perturbations.json`` holds."""

    perturbations: list[Perturbation]
    not_perturbed: list[dict[str, Any]]
    director: dict[str, Any] | None = None  # the Director's identity, when one wrote perturbations
    director_rejected: list[dict[str, Any]] = field(default_factory=list)
    director_counts: dict[str, int] = field(default_factory=dict)

    def as_json(self, fingerprint: str) -> dict[str, Any]:
        return {
            "bench_sha256": fingerprint,
            "director": self.director,
            "director_counts": self.director_counts,
            "perturbations": [p.as_json() for p in self.perturbations],
            "not_perturbed": self.not_perturbed,
            "director_rejected": self.director_rejected,
        }


def _read_set(path: Path, fingerprint: str, director: Director | None) -> PerturbationSet:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["bench_sha256"] != fingerprint:
            raise CalibrationError(f"{path} was made for another bench (instances differ); use another -o")
        stored = data.get("director")
        if director is not None and stored != director.identity():
            made_by = f"with the Director {stored['model']}" if stored else "by rules only"
            raise CalibrationError(
                f"{path} holds perturbations made {made_by}, not by {director.route.model_id} with these settings; "
                "every judge must see the same set: use another -o for a new one"
            )
        return PerturbationSet(
            [Perturbation.from_json(p) for p in data["perturbations"]],
            list(data["not_perturbed"]),
            stored,
            list(data.get("director_rejected", [])),
            dict(data.get("director_counts", {})),
        )
    except CalibrationError:
        raise
    except (ValueError, KeyError, TypeError, OSError) as err:
        raise CalibrationError(f"{path}: not a perturbations file ({err})") from None


async def load_or_make_perturbations(
    bench: Bench,
    folder: Path,
    *,
    director: Director | None = None,
    store: RunStore | None = None,
    max_attempts: int = RetryPolicy.max_attempts,
    progress: bool = False,
) -> PerturbationSet:
    """The stored perturbations of this bench in ``folder``, or new ones (rules, then the Director's) written
    there."""
    if not bench.instances:
        raise CalibrationError(f"{bench.root}: no instances with a reference reply to calibrate on")
    path = folder / PERTURBATIONS_FILE
    fingerprint = bench_fingerprint(bench)
    if path.is_file():
        return _read_set(path, fingerprint, director)
    made: list[Perturbation] = []
    skipped: list[dict[str, Any]] = []
    for instance in bench.instances:
        m, s = perturb(instance)
        made += m
        skipped += s
    found = PerturbationSet(made, skipped)
    if director is not None:
        assert store is not None
        extra, rejected, counts = await _director_perturbations(
            bench, director, store, folder, max_attempts=max_attempts, progress=progress
        )
        found.perturbations += extra
        found.director, found.director_rejected, found.director_counts = director.identity(), rejected, counts
    folder.mkdir(parents=True, exist_ok=True)
    from omnivchat._files import write_text_atomic

    write_text_atomic(path, json.dumps(found.as_json(fingerprint), indent=2, ensure_ascii=False) + "\n")
    return found


# --- verdicts --------------------------------------------------------------------------------------------------


def _items(bench: Bench, perturbations: Sequence[Perturbation]) -> dict[str, tuple[Instance, str]]:
    """Store item id -> (instance, text judged): every reference, then every perturbation."""
    by_id = {i.id: i for i in bench.instances}
    items = {f"reference:{i.id}": (i, i.reference) for i in bench.instances}
    items.update({f"perturbation:{p.id}": (by_id[p.instance_id], p.text) for p in perturbations})
    return items


def _style_items(bench: Bench, perturbations: Sequence[Perturbation]) -> list[str]:
    """The items the style checklist grades: every reference and every style perturbation."""
    refs = [f"reference:{i.id}" for i in bench.instances]
    return refs + [f"perturbation:{p.id}" for p in perturbations if p.target == STYLE]


def calibration_task(items: dict[str, tuple[Instance, str]], prompts: JudgePrompts) -> VerdictTask[list[int]]:
    """Rubric verdicts on the references and perturbations (store kind ``calibration:<judge>``)."""

    def request(item_id: str, spec: JudgeSpec) -> ChatRequest:
        instance, text = items[item_id]
        request = rubric_request(instance, text, model_id=CALIBRATION_MODEL, aliases=[], prompts=prompts, spec=spec)
        return request.model_copy(update={"item_id": item_id})

    return VerdictTask(
        kind="calibration",
        request=request,
        parse=lambda item_id, text: parse_verdict(text, len(items[item_id][0].rubric)),
        schema=lambda item_id: hits_schema(len(items[item_id][0].rubric)),
        unparseable="rubric verdict does not parse",
    )


def calibration_style_task(items: dict[str, tuple[Instance, str]], prompts: JudgePrompts) -> VerdictTask[list[int]]:
    """Style checklist verdicts on the references and list perturbations (store kind
    ``calibration-style:<judge>``)."""

    def request(item_id: str, spec: JudgeSpec) -> ChatRequest:
        instance, text = items[item_id]
        return style_request(instance, text, prompts=prompts, spec=spec).model_copy(update={"item_id": item_id})

    return VerdictTask(
        kind="calibration-style",
        request=request,
        parse=lambda _item_id, text: parse_verdict(text, STYLE_REQUIREMENTS),
        schema=lambda _item_id: hits_schema(STYLE_REQUIREMENTS),
        unparseable="style verdict does not parse",
    )


RubricReader = Callable[[str, Instance, str], tuple[list[int] | None, str]]
StyleReader = Callable[[str, Instance, str], tuple[bool | None, str]]


def _readers(
    judge: str, store: RunStore | None, rubric: VerdictTask[list[int]], style: VerdictTask[list[int]]
) -> tuple[RubricReader, StyleReader]:
    """How a judge's verdicts are read: (hits or None, why) and (s(y) = 1 or None, why)."""
    if judge == RULE_JUDGE:

        def rule_rubric(_item: str, instance: Instance, text: str) -> tuple[list[int] | None, str]:
            hits, why = rule_verdict(instance, text)
            return hits, why if hits is not None else "undecided: a criterion has no machine check"

        return rule_rubric, lambda _item, _instance, text: rule_style_verdict(text)
    assert store is not None

    def read_rubric(item: str, _instance: Instance, _text: str) -> tuple[list[int] | None, str]:
        return stored_verdict(store, rubric, judge, item)

    def read_style(item: str, _instance: Instance, _text: str) -> tuple[bool | None, str]:
        hits, why = stored_verdict(store, style, judge, item)
        return (None, why) if hits is None else (set(range(1, STYLE_REQUIREMENTS + 1)) <= set(hits), why)

    return read_rubric, read_style


def _why(reason: str) -> str:
    """A reason's kind, for counting: 'server_error: HTTP 500 ...' -> 'server_error'."""
    return reason.split(":", 1)[0].strip() if ":" in reason else reason


def _report(
    judge: str,
    bench: Bench,
    perturbations: Sequence[Perturbation],
    readers: tuple[RubricReader, StyleReader],
    *,
    style: bool,
) -> dict[str, Any]:
    read_rubric, read_style = readers
    items = _items(bench, perturbations)
    full = [0, 0]
    style_pass = [0, 0]
    detected: dict[str, list[int]] = {}
    by_rule: dict[str, list[int]] = {}
    missed = [0, 0]
    unscored = style_unscored = 0
    reasons: Counter[str] = Counter()

    def tally(table: dict[str, list[int]], key: str, hit: bool) -> None:
        kn = table.setdefault(key, [0, 0])
        kn[0] += hit
        kn[1] += 1

    for instance in bench.instances:
        hits, why = read_rubric(f"reference:{instance.id}", instance, instance.reference)
        if hits is None:
            unscored += 1
            reasons[f"rubric: {_why(why)}"] += 1
        else:
            full[1] += 1
            full[0] += len(set(hits)) == len(instance.rubric)
        if style:
            passed, why = read_style(f"reference:{instance.id}", instance, instance.reference)
            if passed is None:
                style_unscored += 1
                reasons[f"style: {_why(why)}"] += 1
            else:
                style_pass[1] += 1
                style_pass[0] += passed
    for p in perturbations:
        item = f"perturbation:{p.id}"
        instance, text = items[item]
        rule = p.rule if p.origin == RULE else f"{p.rule} ({p.origin})"
        hits, why = read_rubric(item, instance, text)
        if hits is None:
            unscored += 1
            reasons[f"rubric: {_why(why)}"] += 1
        else:
            if isinstance(p.target, int):
                tally(detected, str(p.tier), p.target not in hits)
                tally(by_rule, rule, p.target not in hits)
            if p.tier != 0:  # another language keeps no content: no false misses to count
                for n in range(1, len(instance.rubric) + 1):
                    if n != p.target:
                        missed[1] += 1
                        missed[0] += n not in hits
        if style and p.target == STYLE:
            passed, why = read_style(item, instance, text)
            if passed is None:
                style_unscored += 1
                reasons[f"style: {_why(why)}"] += 1
            else:
                tally(detected, STYLE, not passed)
                tally(by_rule, rule, not passed)
    tiers = sorted((t for t in detected if t != STYLE), key=int) + ([STYLE] if STYLE in detected else [])
    return {
        "judge": judge,
        "reference_full_score_rate": wilson(*full),
        "reference_style_rate": wilson(*style_pass),
        "detection_rate": {t: wilson(*detected[t]) for t in tiers},
        "detection_by_rule": {r: wilson(*kn) for r, kn in sorted(by_rule.items())},
        "false_miss_rate": wilson(*missed),
        "unscored": unscored,
        "style_unscored": style_unscored,
        "unscored_reasons": dict(sorted(reasons.items())),
    }


# --- the study -------------------------------------------------------------------------------------------------


async def calibrate_async(
    bench: Bench,
    config: JudgesConfig,
    judges: Sequence[str],
    folder: str | Path,
    *,
    prompts: JudgePrompts | None = None,
    director: Director | None = None,
    style: bool = True,
    max_attempts: int = RetryPolicy.max_attempts,
    progress: bool = True,
) -> dict[str, Any]:
    """Calibrate ``judges`` on ``bench``: perturbations and verdicts kept in ``folder`` (reused on a rerun), under
    its writer lock (a second calibration of the same folder is refused with :class:`omnivchat.runs.RunLocked`).
    ``director`` also has a model write a perturbation per target (verified; its route is closed at the end);
    ``style`` grades the style checklist too. Returns the calibration report (what calibration.json holds)."""
    folder = Path(folder)
    unknown = [j for j in judges if j != RULE_JUDGE and j not in config.judges]
    if unknown:
        raise CalibrationError(f"judges not in the judges file: {', '.join(unknown)}")
    try:
        with run_lock(folder, LOCK_COMMAND):
            return await _calibrate_locked(
                bench, config, judges, folder, prompts, director, style, max_attempts, progress
            )
    finally:
        if director is not None:
            await director.route.aclose()


async def _calibrate_locked(
    bench: Bench,
    config: JudgesConfig,
    judges: Sequence[str],
    folder: Path,
    prompts: JudgePrompts | None,
    director: Director | None,
    style: bool,
    max_attempts: int,
    progress: bool,
) -> dict[str, Any]:
    prompts = prompts or JudgePrompts()
    specs = [config.judges[j] for j in judges if j != RULE_JUDGE]
    summaries: dict[str, Any] = {}
    store: RunStore | None = None
    if specs or (director is not None and not (folder / PERTURBATIONS_FILE).is_file()):
        store = RunStore(folder / CALIBRATION_STORE)
    try:
        found = await load_or_make_perturbations(
            bench, folder, director=director, store=store, max_attempts=max_attempts, progress=progress
        )
        items = _items(bench, found.perturbations)
        rubric, style_task = calibration_task(items, prompts), calibration_style_task(items, prompts)
        if specs:
            assert store is not None
            jobs = [Job(spec, rubric, list(items)) for spec in specs]
            if style:
                jobs += [Job(spec, style_task, _style_items(bench, found.perturbations)) for spec in specs]
            done = await ask(store, jobs, run_dir=folder, max_attempts=max_attempts, progress=progress)
            summaries = {
                k: {"done": s.done, "total": s.total, "reused": s.reused, "failed": s.failed} for k, s in done.items()
            }
        reports = [
            _report(j, bench, found.perturbations, _readers(j, store, rubric, style_task), style=style) for j in judges
        ]
    finally:
        if store is not None:
            store.close()
    origins = Counter(p.origin for p in found.perturbations)
    return {
        "bench": str(bench.root),
        "bench_sha256": bench_fingerprint(bench),
        "judges": list(judges),
        "instances": len(bench.instances),
        "style_graded": style,
        "reports": reports,
        "requests": summaries,
        "perturbation_origins": dict(sorted(origins.items())),
        "director": found.director,
        "director_counts": found.director_counts,
        "director_rejected": found.director_rejected,
        "perturbations": [p.as_json() for p in found.perturbations],
        "not_perturbed": found.not_perturbed,
        "notes": [
            "tier-0 perturbations change the language (rules: a fixed other-language sentence): detection only, "
            "no false misses counted on them",
            "style: s(y) = 1 only when all seven checklist requirements hold; a list perturbation is detected when "
            "s(y) = 0, and its rubric criteria count for false misses",
            "the rule judge can only prove a style failure (lists, tables, code, emoji): its style verdict on a "
            "reply without them is unscored, never a pass",
            "unscored verdicts (failed requests, unparseable verdicts, undecidable rule verdicts) are counted apart "
            "and never enter a rate",
            "rates carry 95% Wilson intervals",
        ],
    }


calibrate = blocking(calibrate_async, "Synchronous :func:`calibrate_async` (its parameters).")
