"""Judge calibration: does a judge give the reference reply every criterion, and does it take away exactly the
criterion a planted perturbation of the reference breaks?

Perturbations are made by rules from the reference and its machine checks, and stored (``perturbations.json``),
so every judge, now or on a rerun, sees the same set:

- tier 0 (the language gate): a fixed sentence in the other language (en <-> zh). No offline translation exists,
  so the content criteria cannot survive it: a language perturbation counts for detection only, never for
  false misses.
- tier 1: swap the phrase the criterion's check requires for one it forbids (``on your left`` -> ``on your
  right``), else negate it ("not", 不), else plant a forbidden phrase.
- tier 2 and later: remove the sentence(s) holding the criterion's phrase, else plant a forbidden phrase.
- style: the reference as a markdown bullet list. Every rubric criterion should survive it (false misses);
  whether a judge notices the list is the style judge's business, which this study does not measure yet.

A rule's result is kept only when the criterion's machine check fails on it and every other check that held on
the reference still holds: a perturbation is never a guess. A criterion without a machine check, or one no rule
can break cleanly, is reported as "not perturbed" with the reason.

Judges are asked through the one judge engine, with a run store beside the output, so a rerun sends nothing new.
Rates carry 95% Wilson intervals.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omnivchat._canonical import sha256_text
from omnivchat.bench import Bench, Check, Instance
from omnivchat.errors import OmnivchatError
from omnivchat.judges._config import RULE_JUDGE, JudgesConfig, JudgeSpec
from omnivchat.judges._engine import Job, VerdictTask, ask, hits_schema, stored_verdict
from omnivchat.judges._requests import JudgePrompts, rubric_request
from omnivchat.judges._rule import check_holds, rule_verdict
from omnivchat.judges._verdict import parse_verdict
from omnivchat.routes import ChatRequest
from omnivchat.runs import RetryPolicy, RunStore

PERTURBATIONS_FILE = "perturbations.json"
CALIBRATION_STORE = "store.sqlite"
CALIBRATION_MODEL = "the assistant"  # the model name the rubric prompt is given: the reference has no model
STYLE = "style"
Z95 = 1.959963984540054

# Fixed sentences in the other language for the tier-0 perturbation (document: no offline translation).
OTHER_LANGUAGE = {
    "en": ("zh", "好的，我明白你的意思，我们一起来看看这个问题吧。"),
    "zh": ("en", "Sure, I understand what you mean, let us look at this together."),
}
_NEGATED = {"can": "cannot", "I'm": "I'm not", "is": "is not", "are": "are not", "was": "was not"}
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


class CalibrationError(OmnivchatError, ValueError):
    """The calibration cannot run (no references, a perturbations file for another bench...); one line."""


@dataclass(frozen=True)
class Perturbation:
    """One planted change of an instance's reference, aimed at ``target`` (criterion number, or "style")."""

    id: str
    instance_id: str
    target: int | str
    tier: int | str
    rule: str
    text: str

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instance": self.instance_id,
            "target": self.target,
            "tier": self.tier,
            "rule": self.rule,
            "text": self.text,
        }


def wilson(k: int, n: int, z: float = Z95) -> dict[str, Any]:
    """``{"rate", "k", "n", "low", "high"}``: k of n with its Wilson score interval (all None when n is 0)."""
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


def _phrases(entries: Sequence[str | list[str]]) -> list[str]:
    return [o for e in entries for o in ([e] if isinstance(e, str) else e)]


def _find(text: str, phrase: str) -> int:
    return text.lower().find(phrase.lower())


def _replace(text: str, phrase: str, new: str) -> str | None:
    at = _find(text, phrase)
    return None if at < 0 else text[:at] + new + text[at + len(phrase) :]


def _chinese(language: str) -> bool:
    return language.split("-")[0].lower() == "zh"


def _required(check: Check, reference: str) -> list[str]:
    """The required phrases (any_of / all_of options) that literally occur in the reference."""
    return [p for p in _phrases([*check.any_of, *check.all_of]) if _find(reference, p) >= 0]


def _swaps(check: Check, reference: str) -> list[str]:
    return [r for p in _required(check, reference) for f in check.none_of if (r := _replace(reference, p, f))]


def _negations(check: Check, reference: str, language: str) -> list[str]:
    out = []
    for p in _required(check, reference):
        at = _find(reference, p)
        if _chinese(language):
            if at > 0 and reference[at - 1] == "是":
                out.append(reference[: at - 1] + "不是" + reference[at:])
            out.append(reference[:at] + "不是" + reference[at:])
        else:
            phrase = reference[at : at + len(p)]
            inner = re.sub(r"\b(can|I'm|is|are|was)\b", lambda m: _NEGATED[m.group(1)], phrase, count=1)
            if inner != phrase:
                out.append(reference[:at] + inner + reference[at + len(p) :])
            article = re.search(r"\b(a|an|the)\s+$", reference[:at], flags=re.IGNORECASE)
            cut = article.start() if article else at
            out.append(reference[:cut] + "not " + reference[cut:])
    return out


def _plants(check: Check, reference: str, language: str) -> list[str]:
    joiner = "" if _chinese(language) else " "
    end = "。" if _chinese(language) else "."
    return [f"{reference}{joiner}{f}{end}" for f in check.none_of]


def _removals(check: Check, reference: str) -> list[str]:
    sentences = [s for s in _SENTENCE.split(reference) if s.strip()]
    phrases = _required(check, reference)
    kept = [s for s in sentences if not any(_find(s, p) >= 0 for p in phrases)]
    joiner = "" if any("\u4e00" <= ch <= "\u9fff" for ch in reference) else " "
    return [joiner.join(kept)] if phrases and kept and len(kept) < len(sentences) else []


def _bullets(reference: str) -> str:
    sentences = [s.strip() for s in _SENTENCE.split(reference) if s.strip()]
    return "\n".join(f"- {s}" for s in sentences)


def _clean(instance: Instance, target: int, text: str) -> bool:
    """Whether ``text`` breaks criterion ``target``'s check and keeps every other check the reference meets."""
    from omnivchat.scoring import is_empty_reply

    if is_empty_reply(text) or text == instance.reference:
        return False
    for n, c in enumerate(instance.rubric, start=1):
        if c.check is None or not check_holds(c.check, instance.reference):
            continue
        if check_holds(c.check, text) != (n != target):
            return False
    return True


def perturb(instance: Instance) -> tuple[list[Perturbation], list[dict[str, Any]]]:
    """The rule perturbations of one instance, and the criteria left unperturbed with the reason."""
    made: list[Perturbation] = []
    skipped: list[dict[str, Any]] = []
    ref = instance.reference
    for n, criterion in enumerate(instance.rubric, start=1):
        check = criterion.check

        def skip(reason: str, n: int = n, tier: int = criterion.tier) -> None:
            skipped.append({"instance": instance.id, "criterion": n, "tier": tier, "reason": reason})

        if check is None:
            skip("no machine check: no safe rule applies")
            continue
        if not check_holds(check, ref):
            skip("the reference does not meet its machine check")
            continue
        candidates: list[tuple[str, str]] = []
        if criterion.tier == 0:
            other = OTHER_LANGUAGE.get(instance.language.split("-")[0].lower())
            if check.language is None or other is None:
                skip("tier-0 criterion without a language check in en/zh")
                continue
            text = other[1]
            if not check_holds(check, text):
                made.append(Perturbation(f"{instance.id}:c{n}:language", instance.id, n, 0, "language", text))
            else:
                skip("the other-language sentence still meets the check")
            continue
        if criterion.tier == 1:
            candidates += [("swap", t) for t in _swaps(check, ref)]
            candidates += [("negate", t) for t in _negations(check, ref, instance.language)]
        else:
            candidates += [("remove", t) for t in _removals(check, ref)]
        candidates += [("plant", t) for t in _plants(check, ref, instance.language)]
        chosen = next(((rule, t) for rule, t in candidates if _clean(instance, n, t)), None)
        if chosen is None:
            skip("no rule breaks this criterion alone" if candidates else "no rule applies")
            continue
        made.append(Perturbation(f"{instance.id}:c{n}:{chosen[0]}", instance.id, n, criterion.tier, *chosen))
    listed = _bullets(ref)
    if listed and all(c.check is None or check_holds(c.check, listed) for c in instance.rubric):
        made.append(Perturbation(f"{instance.id}:style:list", instance.id, STYLE, STYLE, "list", listed))
    else:
        skipped.append({"instance": instance.id, "criterion": STYLE, "tier": STYLE, "reason": "list breaks a check"})
    return made, skipped


def bench_fingerprint(bench: Bench) -> str:
    data = [[i.id, i.reference, [c.model_dump() for c in i.rubric]] for i in bench.instances]
    return sha256_text(json.dumps(data, sort_keys=True, ensure_ascii=False))


def load_or_make_perturbations(bench: Bench, folder: Path) -> tuple[list[Perturbation], list[dict[str, Any]]]:
    """The stored perturbations of this bench in ``folder``, or new ones written there."""
    if not bench.instances:
        raise CalibrationError(f"{bench.root}: no instances with a reference reply to calibrate on")
    path = folder / PERTURBATIONS_FILE
    fingerprint = bench_fingerprint(bench)
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data["bench_sha256"] != fingerprint:
                raise CalibrationError(f"{path} was made for another bench (instances differ); use another -o")
            made = [
                Perturbation(p["id"], p["instance"], p["target"], p["tier"], p["rule"], p["text"])
                for p in data["perturbations"]
            ]
            return made, list(data["not_perturbed"])
        except (ValueError, KeyError, TypeError) as err:
            if isinstance(err, CalibrationError):
                raise
            raise CalibrationError(f"{path}: not a perturbations file ({err})") from None
    made, skipped = [], []
    for instance in bench.instances:
        m, s = perturb(instance)
        made += m
        skipped += s
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "bench_sha256": fingerprint,
        "perturbations": [p.as_json() for p in made],
        "not_perturbed": skipped,
    }
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return made, skipped


def _items(bench: Bench, perturbations: Sequence[Perturbation]) -> dict[str, tuple[Instance, str]]:
    """Store item id -> (instance, text judged): every reference, then every perturbation."""
    by_id = {i.id: i for i in bench.instances}
    items = {f"reference:{i.id}": (i, i.reference) for i in bench.instances}
    items.update({f"perturbation:{p.id}": (by_id[p.instance_id], p.text) for p in perturbations})
    return items


def _hits(
    judge: str, store: RunStore | None, task: VerdictTask[list[int]], item: str, instance: Instance, text: str
) -> list[int] | None:
    if judge == RULE_JUDGE:
        return rule_verdict(instance, text)[0]
    assert store is not None
    return stored_verdict(store, task, judge, item)[0]


def _report(
    judge: str,
    bench: Bench,
    perturbations: Sequence[Perturbation],
    store: RunStore | None,
    task: VerdictTask[list[int]],
) -> dict[str, Any]:
    items = _items(bench, perturbations)
    full = [0, 0]
    detected: dict[str, list[int]] = {}
    missed = [0, 0]
    unscored = 0
    for instance in bench.instances:
        hits = _hits(judge, store, task, f"reference:{instance.id}", instance, instance.reference)
        if hits is None:
            unscored += 1
            continue
        full[1] += 1
        full[0] += len(set(hits)) == len(instance.rubric)
    for p in perturbations:
        item = f"perturbation:{p.id}"
        instance, text = items[item]
        hits = _hits(judge, store, task, item, instance, text)
        if hits is None:
            unscored += 1
            continue
        if isinstance(p.target, int):
            tally = detected.setdefault(str(p.tier), [0, 0])
            tally[1] += 1
            tally[0] += p.target not in hits
        if p.tier == 0:
            continue  # another language cannot keep the content criteria
        for n in range(1, len(instance.rubric) + 1):
            if n != p.target:
                missed[1] += 1
                missed[0] += n not in hits
    return {
        "judge": judge,
        "reference_full_score_rate": wilson(*full),
        "detection_rate": {tier: wilson(*kn) for tier, kn in sorted(detected.items())},
        "false_miss_rate": wilson(*missed),
        "unscored": unscored,
    }


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


async def calibrate_async(
    bench: Bench,
    config: JudgesConfig,
    judges: Sequence[str],
    folder: str | Path,
    *,
    prompts: JudgePrompts | None = None,
    max_attempts: int = RetryPolicy.max_attempts,
    progress: bool = True,
) -> dict[str, Any]:
    """Calibrate ``judges`` on ``bench``: perturbations and verdicts kept in ``folder`` (reused on a rerun).
    Returns the calibration report (what calibration.json holds)."""
    folder = Path(folder)
    unknown = [j for j in judges if j != RULE_JUDGE and j not in config.judges]
    if unknown:
        raise CalibrationError(f"judges not in the judges file: {', '.join(unknown)}")
    perturbations, skipped = load_or_make_perturbations(bench, folder)
    prompts = prompts or JudgePrompts()
    items = _items(bench, perturbations)
    task = calibration_task(items, prompts)
    specs = [config.judges[j] for j in judges if j != RULE_JUDGE]
    summaries: dict[str, Any] = {}
    store: RunStore | None = None
    if specs:
        store = RunStore(folder / CALIBRATION_STORE)
    try:
        if store is not None:
            jobs = [Job(spec, task, list(items)) for spec in specs]
            done = await ask(store, jobs, run_dir=folder, max_attempts=max_attempts, progress=progress)
            summaries = {
                k: {"done": s.done, "total": s.total, "reused": s.reused, "failed": s.failed} for k, s in done.items()
            }
        reports = [_report(j, bench, perturbations, store, task) for j in judges]
    finally:
        if store is not None:
            store.close()
    return {
        "bench": str(bench.root),
        "bench_sha256": bench_fingerprint(bench),
        "judges": list(judges),
        "instances": len(bench.instances),
        "reports": reports,
        "requests": summaries,
        "perturbations": [p.as_json() for p in perturbations],
        "not_perturbed": skipped,
        "notes": [
            "tier-0 perturbations are a fixed sentence in the other language: counted for detection only",
            "style perturbations (markdown list) count for false misses only; style detection is not measured",
            "rates carry 95% Wilson intervals",
        ],
    }


def calibrate(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """Synchronous :func:`calibrate_async`."""
    return asyncio.run(calibrate_async(*args, **kwargs))
