"""Planted perturbations of a reference reply, each aimed at one criterion (or at style), for judge calibration:
made by rules from the reference and its machine checks, or proposed by a Director model and verified here.

Rules (pure; a result is kept only when the machine checks confirm it, see :func:`clean`):

- tier 0 (the language gate): a fixed sentence in the other language (en <-> zh). No offline translation exists,
  so the content criteria cannot survive it: a language perturbation counts for detection only.
- a criterion whose key fact is a number (a ``numbers`` check, or a required phrase that is a number: "two",
  "4", "四个"): the number changed to the next one, written the same way (digits, English words, Chinese
  numerals: "two" -> "three", "四个" -> "五个"); read back with the spoken-number reader to be sure.
- tier 1: swap the phrase the check requires for one it forbids (``on your left`` -> ``on your right``), else
  negate it ("not", 不是), else plant a forbidden phrase.
- tier 2 and later: remove the sentence(s) holding the criterion's phrase, else plant a forbidden phrase.
- style: the reference as a bulleted list (clause by clause when it is one sentence). It must lose the style
  criterion (requirement 4 of the style checklist: no lists) and keep every rubric criterion.

A Director's proposal (:func:`verify_proposal`) must be one JSON object ``{"reply": ...}`` whose reply is not
empty, differs from the reference, copies nothing of the request (an echo of the instructions or a criterion), is
not much longer and still shares much of the reference's text (one change, not a rewrite), keeps the user's
language (changes it, for the language gate), is a list exactly when style is the target, changes a number when a
number is the target, and, where the criteria carry machine checks, breaks the target's and keeps the others'.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from omnivchat.bench import Check, Instance
from omnivchat.judges._rule import check_holds, written_form

STYLE = "style"
RULE = "rule"
DIRECTOR = "director"

# Fixed sentences in the other language for the tier-0 perturbation (document: no offline translation).
OTHER_LANGUAGE = {
    "en": ("zh", "好的，我明白你的意思，我们一起来看看这个问题吧。"),
    "zh": ("en", "Sure, I understand what you mean, let us look at this together."),
}
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}
_NEGATED = {"can": "cannot", "I'm": "I'm not", "is": "is not", "are": "are not", "was": "was not"}
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_CLAUSE = re.compile(r"(?<=[,:;，：；])\s*")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Number words the number rule writes (0-99): the spoken-number reader checks every replacement.
_EN_SMALL = _words(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
)
_EN_TENS = _words("_ _ twenty thirty forty fifty sixty seventy eighty ninety")
_ZH_DIGITS = "零一二三四五六七八九"
_ZH_CLASSIFIERS = "个只张本位块条件台次天岁点"
_NUMBER_SPAN = re.compile(r"\d+(?:\.\d+)?|[A-Za-z]+(?:-[A-Za-z]+)?|[零〇一二两三四五六七八九十]+")

# A perturbation changes one thing: below this similarity to the reference (difflib's ratio over words and Chinese
# characters) a reply is a rewrite.
MIN_SIMILARITY = 0.2
_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+")
# What the Director is asked to do, per kind of target (the kinds are also the rule names of its results).
KINDS = ("language", "number", "fact", "detail", "list")


@dataclass(frozen=True)
class Perturbation:
    """One planted change of an instance's reference, aimed at ``target`` (criterion number, or "style").

    ``rule`` names the change (language, number, swap, negate, remove, plant, list; a Director's: the kind it was
    asked for); ``origin`` is "rule" or "director:<model>"."""

    id: str
    instance_id: str
    target: int | str
    tier: int | str
    rule: str
    text: str
    origin: str = RULE

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instance": self.instance_id,
            "target": self.target,
            "tier": self.tier,
            "rule": self.rule,
            "origin": self.origin,
            "text": self.text,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Perturbation:
        return cls(
            data["id"],
            data["instance"],
            data["target"],
            data["tier"],
            data["rule"],
            data["text"],
            data.get("origin", RULE),
        )


def _base(language: str) -> str:
    return language.split("-")[0].lower()


def _phrases(entries: Sequence[str | list[str]]) -> list[str]:
    return [o for e in entries for o in ([e] if isinstance(e, str) else e)]


def _find(text: str, phrase: str) -> int:
    return text.lower().find(phrase.lower())


def _replace(text: str, phrase: str, new: str) -> str | None:
    at = _find(text, phrase)
    return None if at < 0 else text[:at] + new + text[at + len(phrase) :]


def _chinese(language: str) -> bool:
    return _base(language) == "zh"


def _has_han(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


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
    joiner = "" if _has_han(reference) else " "
    return [joiner.join(kept)] if phrases and kept and len(kept) < len(sentences) else []


# --- numbers ---------------------------------------------------------------------------------------------------


def _english_number(n: int) -> str | None:
    if 0 <= n < 20:
        return _EN_SMALL[n]
    if 20 <= n < 100:
        return _EN_TENS[n // 10] + ("" if n % 10 == 0 else "-" + _EN_SMALL[n % 10])
    return None


def _chinese_number(n: int, before: str) -> str | None:
    """Chinese numeral for 0-99; 2 is 两 before a classifier (两个), as a speaker says it."""
    if n == 2 and before[:1] in _ZH_CLASSIFIERS:
        return "两"
    if 0 <= n < 10:
        return _ZH_DIGITS[n]
    if 10 <= n < 100:
        tens = "" if n < 20 else _ZH_DIGITS[n // 10]
        return tens + "十" + ("" if n % 10 == 0 else _ZH_DIGITS[n % 10])
    return None


def number_targets(check: Check) -> list[float]:
    """The numbers a criterion's key fact is about: its ``numbers`` check, and required phrases that are a number
    (optionally with a Chinese classifier: "two", "4", "四个")."""
    from omnivchat.scoring.spoken import numbers_in

    values = list(check.numbers)
    for phrase in _phrases([*check.any_of, *check.all_of]):
        said = numbers_in(phrase)
        rest = _NUMBER_SPAN.sub("", phrase, count=1).strip(" " + _ZH_CLASSIFIERS)
        if len(said) == 1 and not rest:
            values.append(said[0])
    return sorted(set(values))


def _next_number(span: str, value: float, after: str) -> str | None:
    """``span`` (which reads as ``value``) written as the next number in the same form, or None."""
    new = value + 1
    if span[0].isdigit():
        if "." in span:
            return f"{new:.{len(span.split('.')[1])}f}"
        return str(int(new))
    if not float(value).is_integer():
        return None
    if span[0].isascii():
        word = _english_number(int(new))
        if word is None:
            return None
        return word.capitalize() if span[0].isupper() else word
    return _chinese_number(int(new), after)


def change_numbers(reference: str, values: Sequence[float]) -> str | None:
    """The reference with every number in ``values`` it states changed to the next number, in the same form; None
    when it states none of them."""
    from omnivchat.scoring.spoken import numbers_in

    wanted = set(values)
    out = reference
    for m in reversed(list(_NUMBER_SPAN.finditer(reference))):
        said = numbers_in(m.group())
        if len(said) != 1 or said[0] not in wanted:
            continue
        new = _next_number(m.group(), said[0], reference[m.end() : m.end() + 1])
        candidate = None if new is None else out[: m.start()] + new + out[m.end() :]
        # read in context: exactly this number became the next one ("一" in 一共 is no number, and stays)
        before = Counter(numbers_in(out))
        after = before - Counter([said[0]]) + Counter([said[0] + 1])
        if candidate is not None and before[said[0]] and Counter(numbers_in(candidate)) == after:
            out = candidate
    return out if out != reference else None


# --- style -----------------------------------------------------------------------------------------------------


def as_lists(reference: str) -> list[str]:
    """The reference as a bulleted list: one bullet per sentence, or per clause when it is one sentence."""
    sentences = [s.strip() for s in _SENTENCE.split(reference) if s.strip()]
    out = []
    if len(sentences) == 1:
        clauses = [c.strip() for c in _CLAUSE.split(sentences[0]) if c.strip()]
        if len(clauses) > 1:
            out.append("\n".join(f"- {c}" for c in clauses))
    if sentences:
        out.append("\n".join(f"- {s}" for s in sentences))
    return out


# --- checks ----------------------------------------------------------------------------------------------------


def clean(instance: Instance, target: int | str, text: str) -> bool:
    """Whether ``text`` breaks criterion ``target``'s machine check and keeps every other check the reference meets
    (``target`` "style": keeps them all)."""
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
        if criterion.tier == 0:
            other = OTHER_LANGUAGE.get(_base(instance.language))
            if check.language is None or other is None:
                skip("tier-0 criterion without a language check in en/zh")
                continue
            text = other[1]
            if not check_holds(check, text):
                made.append(Perturbation(f"{instance.id}:c{n}:language", instance.id, n, 0, "language", text))
            else:
                skip("the other-language sentence still meets the check")
            continue
        candidates: list[tuple[str, str]] = []
        numbers = number_targets(check)
        if numbers and (changed := change_numbers(ref, numbers)):
            candidates.append(("number", changed))
        if criterion.tier == 1:
            candidates += [("swap", t) for t in _swaps(check, ref)]
            candidates += [("negate", t) for t in _negations(check, ref, instance.language)]
        else:
            candidates += [("remove", t) for t in _removals(check, ref)]
        candidates += [("plant", t) for t in _plants(check, ref, instance.language)]
        chosen = next(((rule, t) for rule, t in candidates if clean(instance, n, t)), None)
        if chosen is None:
            skip("no rule breaks this criterion alone" if candidates else "no rule applies")
            continue
        made.append(Perturbation(f"{instance.id}:c{n}:{chosen[0]}", instance.id, n, criterion.tier, *chosen))
    listed = next((t for t in as_lists(ref) if clean(instance, STYLE, t) and written_form(t)), None)
    if listed is not None:
        made.append(Perturbation(f"{instance.id}:style:list", instance.id, STYLE, STYLE, "list", listed))
    else:
        skipped.append({"instance": instance.id, "criterion": STYLE, "tier": STYLE, "reason": "list breaks a check"})
    return made, skipped


# --- Director proposals ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One thing a Director is asked to break in one instance's reference."""

    instance: Instance
    target: int | str  # criterion number, or "style"
    kind: str  # one of KINDS

    @property
    def tier(self) -> int | str:
        return STYLE if self.target == STYLE else self.instance.rubric[int(self.target) - 1].tier

    @property
    def item_id(self) -> str:
        where = STYLE if self.target == STYLE else f"c{self.target}"
        return f"{self.instance.id}:{where}:{DIRECTOR}"


def director_targets(instance: Instance) -> list[Target]:
    """Every criterion of the instance and its style, each with the kind of change the Director is asked for."""
    from omnivchat.scoring.spoken import numbers_in

    out = []
    for n, criterion in enumerate(instance.rubric, start=1):
        if criterion.tier == 0:
            kind = "language"
        elif (criterion.check is not None and number_targets(criterion.check)) or numbers_in(criterion.text):
            kind = "number"
        else:
            kind = "fact" if criterion.tier == 1 else "detail"
        out.append(Target(instance, n, kind))
    out.append(Target(instance, STYLE, "list"))
    return out


def other_language(language: str) -> str:
    return OTHER_LANGUAGE.get(_base(language), ("en", ""))[0]


def _json_reply(text: str) -> str | None:
    """The "reply" string of one JSON object (one surrounding code fence tolerated), else None."""
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", body, flags=re.S)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    reply = value.get("reply") if isinstance(value, dict) else None
    return reply if isinstance(reply, str) else None


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def _tokens(text: str) -> list[str]:
    """Words, and each Chinese character on its own: what the similarity of two replies is measured on."""
    return _TOKEN.findall(text.casefold())


def verify_proposal(target: Target, answer: str, asked: str = "") -> tuple[str | None, str]:
    """(the perturbed reply, "ok"), or (None, why it is rejected): see the module docstring for the checks.
    ``asked`` is the text of the request (instructions, rubric, target): a reply copied from it is an echo."""
    from omnivchat.scoring import is_empty_reply
    from omnivchat.scoring.spoken import detect_language, numbers_in

    instance = target.instance
    reference = instance.reference
    text = _json_reply(answer)
    if text is None:
        return None, 'not one JSON object with a "reply" string'
    text = text.strip()
    if is_empty_reply(text):
        return None, "the reply is empty"
    if _flat(text) == _flat(reference):
        return None, "the reply is the reference unchanged"
    if _flat(text) in _flat(asked.replace(reference, "\n")):
        return None, "the reply copies the request (its instructions, rubric or target), not a changed reference"
    if len(text) > max(3 * len(reference), len(reference) + 200):
        return None, f"the reply is {len(text)} characters, far longer than the reference ({len(reference)})"
    language, said = _base(instance.language), detect_language(text)
    if target.kind == "language":
        if said is None or said == language:
            return None, f"the language gate is the target, and the reply is still {LANGUAGE_NAMES.get(language)}"
    elif language in LANGUAGE_NAMES and said != language:
        return None, f"the reply is not in {LANGUAGE_NAMES[language]}, the user's language"
    similarity = SequenceMatcher(None, _tokens(text), _tokens(reference), autojunk=False).ratio()
    if target.kind != "language" and similarity < MIN_SIMILARITY:
        return None, f"the reply shares too little with the reference (similarity {similarity:.2f}): not one change"
    form = written_form(text)
    if target.kind == "list" and form != "a list":
        return None, "style is the target, and the reply is not a list"
    if target.kind != "list" and form is not None:
        return None, f"the reply holds {form}: it would test style too"
    if target.kind == "number" and sorted(numbers_in(text)) == sorted(numbers_in(reference)):
        return None, "a number is the target, and the reply states the same numbers"
    checked = any(c.check is not None for c in instance.rubric)
    if checked and target.kind != "language" and not clean(instance, target.target, text):
        return None, "the machine checks disagree: it must break the target criterion and keep the others"
    return text, "ok"
