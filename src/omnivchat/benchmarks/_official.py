"""Each public benchmark's own published counting rule, beside our strict headline (docs/benchmarks.md).

Our headline reads a reply strictly and keeps every answered item in the denominator. The benchmarks' own scorers
count differently, so a leaderboard figure is not our figure: they read letters their own way ("Based on the
video, C" is B for several of them, "Answer: C" is A for Video-MME's script and lmms-eval), and some leave
unparsed or failed items out of the denominator. To set a run beside a published number, the figure under the
benchmark's rule is reported apart, labelled as such, never as the headline.

Each rule here is our own code, written from what the benchmark's scorer does (its repository, file and commit
are named in ``source``); none of their code is used. Each ``read_*`` function is pure: the letter the official
extractor reads from a reply, or None where it reads none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

ABCD = "ABCD"

# --- the extractors -------------------------------------------------------------------------------------------

# Video-MME's eval_your_results.py removes these phrases wherever they occur, then takes the first capital A-D
# anywhere (so "Based on..." is B, and "Answer: C" is A). Its list lacks two commas, so Python joins two pairs of
# phrases into one string each: those two are removed only where both halves occur together, as here.
_VIDEOMME_PHRASES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option isThe correct option is",
    "Best answer:Best option:",
)
# VLMEvalKit's WorldSense scorer removes the same phrases, and "Answer:" and "Option:" too.
_VLMEVALKIT_PHRASES = (*_VIDEOMME_PHRASES, "Answer:", "Option:")


def _first_capital(reply: str, phrases: Sequence[str]) -> str | None:
    text = reply.strip()
    for phrase in phrases:
        text = text.replace(phrase, "")
    found = re.search("[ABCD]", text)
    return found.group() if found else None


def read_videomme(reply: str, options: Sequence[str] = ()) -> str | None:
    """Video-MME's official script: the phrases above removed, then the first capital A-D anywhere."""
    return _first_capital(reply, _VIDEOMME_PHRASES)


def read_worldsense(reply: str, options: Sequence[str] = ()) -> str | None:
    """VLMEvalKit's WorldSense scorer: as Video-MME's, with "Answer:" and "Option:" removed too."""
    return _first_capital(reply, _VLMEVALKIT_PHRASES)


_LV_LETTERS = "ABCDEF"  # LVOmniBench's extractor reads A-F whatever the number of options
_LV_ANSWER = re.compile(r"(?:THE\s+)?ANSWER\s*(?:IS|:)\s*([A-F])")


def read_lvomnibench(reply: str, options: Sequence[str] = ()) -> str | None:
    """LVOmniBench's OmniEval kit, on the upper-cased reply: a leading letter followed by nothing or by one of
    ``.):`` space comma; else "ANSWER IS X" / "ANSWER: X"; else the first of A..F (in that order) standing alone
    anywhere; else the first character A-F anywhere (so "I cannot determine" is C)."""
    text = reply.upper().strip()
    if not text:
        return None
    if text[0] in _LV_LETTERS and (len(text) == 1 or text[1] in ".): ,"):
        return text[0]
    if said := _LV_ANSWER.search(text):
        return said.group(1)
    for letter in _LV_LETTERS:
        if re.search(rf"\b{letter}\b", text):
            return letter
    return next((c for c in text if c in _LV_LETTERS), None)


_DO_TAG = re.compile(r"<answer>\s*([A-D])\s*</answer>", re.IGNORECASE | re.DOTALL)
_DO_PHRASE = re.compile(
    r"(?:^|[\n\r])\s*(?:final answer|answer|the answer is|答案)\s*[:：]?\s*([A-D])\b", re.IGNORECASE
)
_DO_LEADING = re.compile(r"^\s*([A-D])(?:[\s.):：]|$)", re.IGNORECASE)
_DO_THINK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)


def read_dailyomni(reply: str, options: Sequence[str] = ()) -> str | None:
    """Daily-Omni's newest official script (Qwen3-Omni): tried on the text after the last ``</think>``, then with
    think blocks removed, then as sent: an ``<answer>X</answer>`` tag; an answer phrase opening a line; a leading
    letter (either case); the last A-D standing alone in the upper-cased text."""
    raw = reply.strip()
    ends = list(re.finditer("</think>", raw, re.IGNORECASE))
    after = raw[ends[-1].end() :].strip() if ends else raw
    for text in dict.fromkeys(t for t in (after, _DO_THINK.sub(" ", raw).strip(), raw) if t):
        for pattern in (_DO_TAG, _DO_PHRASE):
            if found := pattern.search(text):
                return found.group(1).upper()
        if found := _DO_LEADING.match(text):
            return found.group(1).upper()
        alone = re.findall(r"\b([A-D])\b", text.upper())
        if alone:
            return cast("str | None", alone[-1])
    return None


def _last_mark(padded: str, candidates: list[str], mark: Callable[[str], str], lower: bool = False) -> str:
    """Of several candidates, the one whose mark occurs last (ties and absent marks: the first candidate)."""
    hay = padded.lower() if lower else padded
    positions = [hay.rfind(mark(c)) for c in candidates]
    return candidates[positions.index(max(positions))]


def read_omnibench(reply: str, options: Sequence[str] = ()) -> str | None:
    """OmniBench's answer_parsing.py (MMMU's parser, no default): "(X)" anywhere; else "X " anywhere; else "X."
    anywhere; else, in a reply of more than five words, the options whose text it contains. Several found: the
    one written last. Used for the gold letter too: the official script parses the answer's own text."""
    letters = ABCD[: len(options)] if options else ABCD
    padded = f" {reply} "
    bracketed = [c for c in letters if f"({c})" in padded]
    if bracketed:
        return _last_mark(padded, bracketed, lambda c: f"({c})")
    spaced = [c for c in letters if f"{c} " in padded] or [c for c in letters if f"{c}." in padded]
    if spaced:
        return _last_mark(padded, spaced, lambda c: f" {c} ")
    if len(padded.split()) > 5:
        texts = dict(zip(letters, options, strict=False))
        named = [c for c, t in texts.items() if t.lower() in padded.lower()]
        if named:
            return _last_mark(padded, named, lambda c: texts[c].lower(), lower=True)
    return None


def read_avodyssey(reply: str, options: Sequence[str] = ()) -> str | None:
    """AV-Odyssey's parser (its evaluation.py; lmms-eval's av_odyssey task has the same): any of ``,.!?;:'`` cut
    from both ends, one after the other; then every capital A-D anywhere is a candidate ("Based on..." has B,
    "Answer: C" has A and C); several: the last written as "(X)", else the first in A-D order; none, in a reply of
    more than five words: the options whose text it contains. None here where the scorer defaults to A."""
    text = reply
    for ch in ",.!?;:'":
        text = text.strip(ch)
    padded = f" {text} "
    found = [c for c in ABCD if c in padded]
    if found:
        return _last_mark(padded, found, lambda c: f"({c})")
    if len(padded.split()) > 5:
        texts = dict(zip(ABCD, options, strict=False))
        named = [c for c, t in texts.items() if t.lower() in padded.lower()]
        if named:
            return _last_mark(padded, named, lambda c: texts[c].lower(), lower=True)
    return None


# --- the rules ------------------------------------------------------------------------------------------------

Counted = Literal["left out", "wrong"]


@dataclass(frozen=True)
class OfficialRule:
    """How a benchmark's own scorer counts: who reads the letter, what an unread reply and a failed request
    become, and where the gold letter comes from."""

    counting: str
    """The label printed beside the figure, e.g. "as the official Video-MME script counts"."""
    source: str
    """The scorer the rule was written from: repository, file, commit."""
    read: Callable[[str, Sequence[str]], str | None]
    unparsed: Counted
    """A reply the scorer reads no letter from: left out of the denominator, or counted wrong."""
    failed: Counted
    """A failed request (no reply): left out, or counted wrong (never credited, whatever the scorer would do)."""
    default: str | None = None
    """The letter the scorer gives a reply it reads none from (lmms-eval and AV-Odyssey: "A")."""
    gold_from_text: bool = False
    """The scorer finds the gold letter by reading the right option's own text (OmniBench)."""


OFFICIAL: dict[str, OfficialRule] = {
    "videomme": OfficialRule(
        counting="as the official Video-MME script counts",
        source="BradyFU/Video-MME evaluation/eval_your_results.py @4e7566d",
        read=read_videomme,
        unparsed="left out",
        failed="left out",  # its skip_missing; without it the script stops on a missing reply
    ),
    "lvomnibench": OfficialRule(
        counting="as the official LVOmniBench kit counts",
        source="KD-TAO/LVOmniBench OmniEval/framework/prompt_utils.py and metrics.py @41b843c",
        read=read_lvomnibench,
        unparsed="left out",
        failed="left out",
    ),
    "dailyomni": OfficialRule(
        counting="as the official Daily-Omni script counts",
        source="Lliar-liar/Daily-Omni test_model/Qwen3-Omni/testmodel.py @d6ffaf1",
        read=read_dailyomni,
        unparsed="wrong",
        failed="left out",
    ),
    "omnibench": OfficialRule(
        counting="as the official OmniBench script counts",
        source="multimodal-art-projection/OmniBench inference/calculate_metrics.py @335f0ba, answer_parsing.py "
        "@21a7f75",
        read=read_omnibench,
        unparsed="wrong",
        failed="wrong",  # its denominator is every question of the file
        gold_from_text=True,
    ),
    "avodyssey": OfficialRule(
        counting="as lmms-eval's av_odyssey task counts (AV-Odyssey's own parser)",
        source="EvolvingLMMs-Lab/lmms-eval lmms_eval/tasks/av_odyssey/utils.py @2bb5e98; AV-Odyssey/AV-Odyssey "
        "evaluation.py @4cb06f9",
        read=read_avodyssey,
        unparsed="wrong",  # never unread: the scorer defaults to A
        failed="wrong",
        default="A",
    ),
    "worldsense": OfficialRule(
        counting="as VLMEvalKit's WorldSense scorer counts (its exact-matching fallback not applied)",
        source="open-compass/VLMEvalKit vlmeval/dataset/utils/worldsense.py @23757c4, dataset/worldsense.py @00fff54",
        read=read_worldsense,
        unparsed="wrong",  # VLMEvalKit would ask an LLM judge, or match option texts; here: wrong, counted
        failed="wrong",
    ),
}
"""The published counting rule of each public benchmark, by benchmark name."""


@dataclass(frozen=True)
class Answered:
    """One answered item, as the official figure needs it."""

    reply: str
    gold: str
    options: tuple[str, ...]
    strict: str | None  # our strict reading, to count where the two differ


def official_letter(rule: OfficialRule, reply: str, options: Sequence[str]) -> str | None:
    """The letter ``rule``'s scorer takes from ``reply`` (its default where it reads none), or None."""
    return rule.read(reply, tuple(options)) or rule.default


def official_gold(rule: OfficialRule, gold: str, options: Sequence[str]) -> str:
    """The gold letter as ``rule``'s scorer finds it: ours, or (OmniBench) what its parser reads from the right
    option's own text ("A man is answering..." is A wherever it sits). Where it reads none (an answer of five
    words or fewer with no letter mark: 6 of the 14 real rows in shared/realdata), the official script stops on
    an assertion; ours is kept."""
    if not rule.gold_from_text or not options:
        return gold
    return rule.read(options[ord(gold) - ord("A")], tuple(options)) or gold


def official_figure(rule: OfficialRule, answered: Iterable[Answered], failed: int) -> dict[str, Any]:
    """Accuracy as ``rule``'s scorer counts it over the answered items and the ``failed`` ones (items never run
    are in no figure), with what it left out or counted wrong and how many replies it reads otherwise than our
    strict parse. Keys are words: this dict is printed and shown in the report as it is."""
    rows = list(answered)
    correct = counted = unread = defaulted = differs = 0
    for row in rows:
        read = rule.read(row.reply, row.options)
        if read is None and rule.default is not None:
            read, defaulted = rule.default, defaulted + 1
        differs += read != row.strict
        if read is None:
            unread += 1
            if rule.unparsed == "left out":
                continue
        gold = official_gold(rule, row.gold, row.options)
        counted += 1
        correct += read == gold
    counted += failed if rule.failed == "wrong" else 0
    figure: dict[str, Any] = {
        "counting": rule.counting,
        "source": rule.source,
        "accuracy": correct / counted if counted else None,
        "correct": correct,
        "counted": counted,
        "of": len(rows) + failed,
        "unparsed replies are": rule.unparsed,
        "failed requests are": rule.failed,
        "unparsed left out": unread if rule.unparsed == "left out" else 0,
        "unparsed counted wrong": unread if rule.unparsed == "wrong" else 0,
        "failed left out": failed if rule.failed == "left out" else 0,
        "failed counted wrong": failed if rule.failed == "wrong" else 0,
        "read otherwise than the strict parse": differs,
    }
    if rule.default is not None:
        figure[f"read as {rule.default} for want of a letter"] = defaulted
    return figure
