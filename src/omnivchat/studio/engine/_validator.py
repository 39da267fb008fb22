"""The Validator (paper modules 4 and m; Appendix C.2.2): deterministic checks of a script, or of an assembled
multi-turn record, against its subcategory configuration. It returns a list of violations (empty: a pass);
Validation Review (module 5 / n) decides in context which of them are real, except the hard ones, which no review
can dismiss (``Violation.hard``): the sampled assignment drifted (an attribute value, the language, the number of
turns) or a later turn lacks a valid reference to earlier media. :func:`validate_caption` checks the rendered clip's
language, as the Reviewer heard it, against the sampled one (hard too).

The checks: speaking rate per language, duration, timeline continuity, forbidden phrases, required segment kinds,
the completion cue, the sampled attribute values, and for multi-turn dialogues the fields required or forbidden at
each turn position and the cross-turn media references. :func:`rules_text` states the same rules in words for the
script-generation prompt, built from the same configuration fields, so the prompt and the checks cannot drift.

Segment indices are 0-based positions in ``Script.segments`` (messages write them as ``segments[2]``); turns are
1-based, as in media ids (``turn1.clip``)."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from omnivchat.scoring import word_count
from omnivchat.studio.config import PhraseRule, SubcategoryConfig, matches
from omnivchat.studio.engine._types import Script, Segment, Violation

TOLERANCE_S = 0.05
"""Timing slack: a gap, or a duration that differs from the last segment's end, up to this is not reported."""

MEDIA_KINDS = ("clip", "audio", "final_frame")
"""What each completed turn leaves for later turns (Appendix C.2.2): its clip, extracted audio and final frame."""

_EPS = 1e-9
Position = Literal["first", "middle", "final", "any"]
_POSITIONS: tuple[Position, ...] = ("first", "middle", "final", "any")
_UNITS = {"en": "words", "zh": "characters"}
# CJK ideographs, kana and Hangul: a phrase holding any of them is matched as a substring (no word spaces).
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af\U00020000-\U0003134f]")


def validate_script(
    script: Script,
    config: SubcategoryConfig,
    assignment: Mapping[str, str],
    *,
    turn: int = 1,
    n_turns: int = 1,
    completed: Collection[str] = (),
) -> list[Violation]:
    """Every rule ``script`` breaks (empty: it passes). ``turn`` of ``n_turns`` gives the turn position for the
    multi-turn field rules; ``completed`` holds the media ids (``turnK.clip``...) a reference may use. Violations
    carry ``turn`` when the dialogue has more than one turn."""
    # (found, hard): the hard checks are the fixed assignment and the cross-turn reference (Appendix C.2.2).
    checks: list[tuple[Found, bool]] = [
        (_speaking_rate(script, config), False),
        (_duration(script, config), False),
        (_continuity(script), False),
        (_forbidden_phrases(script, config, assignment), False),
        (_required_segments(script, config), False),
        (_completion_cue(script, config), False),
        (_attributes(script, assignment), True),
        (_turn_fields(script, config, turn, n_turns), False),
        (_reference_links(script, turn, completed), True),
        (_reference_budget(script, config, turn), False),
    ]
    at = turn if n_turns > 1 else None
    return [
        Violation(rule=rule, message=message, turn=at, segment=segment, hard=hard)
        for found, hard in checks
        for rule, message, segment in found
    ]


def validate_caption(transcript: str, assignment: Mapping[str, str]) -> list[Violation]:
    """The rendered clip against the sampled language: the Reviewer's transcript (what it heard the user say) in
    another language than the sampled one is a hard violation. A transcript in no detectable language (no speech
    heard) reports nothing: the script the clip was rendered from has passed the same check."""
    from omnivchat.scoring.spoken import detect_language

    sampled = assignment.get("language")
    heard = detect_language(transcript)
    if sampled is None or heard is None or heard == sampled:
        return []
    return [
        Violation(
            rule="attribute",
            message=f"the Reviewer heard the clip's speech in {heard!r} but {sampled!r} was sampled: "
            f"{_clip_words(transcript)!r}",
            hard=True,
        )
    ]


def _clip_words(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_record(
    scripts: Sequence[Script], config: SubcategoryConfig, assignment: Mapping[str, str]
) -> list[Violation]:
    """Module m: the assembled multi-turn record. Each turn is checked at its position with the media of the
    earlier turns as completed; then one language across turns and, when the configuration samples ``turns``, as
    many turns as sampled."""
    n = len(scripts)
    out: list[Violation] = []
    for k, script in enumerate(scripts, start=1):
        done = {f"turn{j}.{kind}" for j in range(1, k) for kind in MEDIA_KINDS}
        out += [
            v if v.turn is not None else v.model_copy(update={"turn": k})
            for v in validate_script(script, config, assignment, turn=k, n_turns=n, completed=done)
        ]
    if scripts:
        first = scripts[0].language
        out += [
            Violation(
                rule="language",
                message=f"turn {k} is in {s.language!r} but turn 1 is in {first!r}: every turn uses one language",
                turn=k,
                hard=True,
            )
            for k, s in enumerate(scripts, start=1)
            if s.language != first
        ]
    wanted = assignment.get("turns")
    if wanted is not None and (not wanted.isdigit() or int(wanted) != n):
        out.append(Violation(rule="turns", message=f"the record has {n} turn(s) but {wanted} were sampled", hard=True))
    elif n == 0:
        out.append(Violation(rule="turns", message="the record has no turns", hard=True))
    return out


def rules_text(config: SubcategoryConfig, assignment: Mapping[str, str], language: str) -> str:
    """The configuration's rules for this assignment and language, in words, one line per rule (prefixed with the
    rule's name as violations report it), for the script-generation prompt."""
    rules = config.validator
    multi = config.turns == "multi"
    clip = "each turn's clip" if multi else "the clip"
    unit = _UNITS.get(language, "words")
    lines: list[str] = []

    low, high = rules.min_speaking_rate.get(language), rules.max_speaking_rate.get(language)
    if low is not None or high is not None:
        bounds = (
            f"between {low:g} and {high:g}"
            if low is not None and high is not None
            else (f"at least {low:g}" if low is not None else f"at most {high:g}")
        )
        lines.append(f"speaking_rate: every speech segment says {bounds} {unit} per second ({unit} / (end - start)).")
    lo, hi = rules.duration_s
    lines.append(
        f"duration: {clip} lasts {lo:g}-{hi:g} s and ends where its last segment ends (within {TOLERANCE_S:g} s)."
    )
    lines.append(
        f"continuity: segments are listed in start order, each ends after it starts, together they cover 0 s to the "
        f"end with no gap over {TOLERANCE_S:g} s, and one speaker's speech never overlaps itself."
    )
    for rule in _active_phrase_rules(config, assignment, language):
        why = f" ({rule.why.rstrip('.')})" if rule.why else ""
        lines.append(f"forbidden_phrase: no speech, on-screen text or question says {_quoted(rule.phrases)}{why}.")
    if rules.required_segments:
        lines.append(
            f"required_segment: include at least one segment of each kind: {', '.join(rules.required_segments)}."
        )
    if rules.final_silence_s is None:
        lines.append("completion_cue: none required; the clip may end while the user is still mid-sentence.")
    else:
        named = any("active_speaker" in f.required for f in rules.turn_fields.values())
        who = "the active speaker's (fields.active_speaker)" if named else "the user's"
        lines.append(
            f"completion_cue: {who} last words end at least {rules.final_silence_s:g} s before {clip} ends, "
            "and they then wait in silence."
        )
    attrs = json.dumps(dict(assignment), ensure_ascii=False)
    lines.append(
        f"attribute: fields.attributes is exactly {attrs}, unchanged in every revision; the script's language is "
        f"{assignment.get('language', language)!r}."
    )
    for position in _POSITIONS:
        fields = rules.turn_fields.get(position)
        if fields is None:
            continue
        where = "every turn" if position == "any" else f"the {position} turn"
        if fields.required:
            lines.append(f"turn_field: {where} has the field(s) {', '.join(fields.required)} in fields.")
        if fields.forbidden:
            lines.append(f"turn_field: {where} does not have the field(s) {', '.join(fields.forbidden)}.")
    if rules.max_references == 0 and not multi:
        lines.append("reference: use no earlier media.")
    else:
        kinds = ", ".join(f"turnK.{kind}" for kind in MEDIA_KINDS)
        lines.append(
            f"reference: every turn after the first uses 1 to {rules.max_references} earlier media by id ({kinds}, "
            "K an earlier, completed turn); the first turn uses none."
        )
    if multi:
        lines.append("language: every turn uses the same language.")
        if "turns" in assignment:
            lines.append(f"turns: the dialogue has exactly {assignment['turns']} turns.")
    return "\n".join(f"- {line}" for line in lines)


# ---------------------------------------------------------------------------------------------------- the checks

Found = list[tuple[str, str, int | None]]
"""(rule, message, segment index) as the checks report them; validate_script adds the turn."""


def _speaking_rate(script: Script, config: SubcategoryConfig) -> Found:
    low = config.validator.min_speaking_rate.get(script.language)
    high = config.validator.max_speaking_rate.get(script.language)
    unit = _UNITS.get(script.language, "words")
    out: Found = []
    for i, seg in enumerate(script.segments):
        span = seg.end - seg.start
        if seg.kind != "speech" or span <= 0:  # a non-positive span is a continuity violation
            continue
        units = word_count(seg.text)
        rate = units / span
        said = f"segments[{i}] (speech) says {units} {unit} in {span:.2f} s, {rate:.2f} {unit}/s"
        if high is not None and rate > high + _EPS:
            out.append(("speaking_rate", f"{said}: faster than the {script.language} maximum of {high:g}", i))
        elif low is not None and rate < low - _EPS:
            out.append(("speaking_rate", f"{said}: slower than the {script.language} minimum of {low:g}", i))
    return out


def _duration(script: Script, config: SubcategoryConfig) -> Found:
    lo, hi = config.validator.duration_s
    d = script.duration_s
    out: Found = []
    if not lo - _EPS <= d <= hi + _EPS:
        out.append(("duration", f"the duration {d:.2f} s is outside the configured {lo:g}-{hi:g} s", None))
    # A segment that runs past the declared duration is reported here, once (continuity does not repeat it).
    out += [
        ("duration", f"segments[{i}] ends at {seg.end:.2f} s, past the clip's duration of {d:.2f} s", i)
        for i, seg in enumerate(script.segments)
        if seg.end > d + TOLERANCE_S
    ]
    return out


def _continuity(script: Script) -> Found:
    segs = script.segments
    out: Found = []
    for i, seg in enumerate(segs):
        if i and seg.start < segs[i - 1].start - _EPS:
            out.append(
                (
                    "continuity",
                    f"segments[{i}] starts at {seg.start:.2f} s, before segments[{i - 1}] ({segs[i - 1].start:.2f} s):"
                    " segments must be listed in start order",
                    i,
                )
            )
        if seg.end <= seg.start:
            out.append(
                ("continuity", f"segments[{i}] ends at {seg.end:.2f} s, not after its start {seg.start:.2f} s", i)
            )
    # Coverage of [0, duration] by the union of all segments (any kind): a gap is a moment nobody scripted.
    cursor = 0.0
    for i, seg in sorted(((i, s) for i, s in enumerate(segs) if s.end > s.start), key=lambda p: p[1].start):
        if seg.start - cursor > TOLERANCE_S:
            out.append(("continuity", _gap(cursor, seg.start) + f", before segments[{i}]", i))
        cursor = max(cursor, seg.end)
    if script.duration_s - cursor > TOLERANCE_S:
        out.append(("continuity", _gap(cursor, script.duration_s) + ", at the end of the clip", None))
    # One speaker cannot say two things at once; different speakers may overlap (SPSD, MIST).
    by_speaker: dict[str, list[tuple[int, Segment]]] = {}
    for i, seg in enumerate(segs):
        if seg.kind == "speech" and seg.end > seg.start:
            by_speaker.setdefault(seg.speaker, []).append((i, seg))
    for speaker, said in by_speaker.items():
        said.sort(key=lambda p: p[1].start)
        i, a = said[0]  # the segment reaching furthest so far, so that a long one is compared with all it spans
        for j, b in said[1:]:
            if b.start < a.end - _EPS:
                out.append(
                    (
                        "continuity",
                        f"segments[{j}] ({b.start:.2f}-{b.end:.2f} s) overlaps segments[{i}] ({a.start:.2f}-"
                        f"{a.end:.2f} s): both are speech by {speaker!r}",
                        j,
                    )
                )
            if b.end > a.end:
                i, a = j, b
    return out


def _gap(start: float, end: float) -> str:
    return f"nothing is scripted from {start:.2f} s to {end:.2f} s (a {end - start:.2f} s gap)"


def _forbidden_phrases(script: Script, config: SubcategoryConfig, assignment: Mapping[str, str]) -> Found:
    texts = [(i, seg) for i, seg in enumerate(script.segments) if seg.kind in ("speech", "text")]
    out: Found = []
    for rule in _active_phrase_rules(config, assignment, script.language):
        why = f" ({rule.why.rstrip('.')})" if rule.why else ""
        for phrase in rule.phrases:
            hits = [i for i, seg in texts if _contains(seg.text, phrase)]
            out += [
                ("forbidden_phrase", f"segments[{i}] ({script.segments[i].kind}) says {phrase!r}{why}", i) for i in hits
            ]
            # The question usually repeats a speech segment: report it only when no segment already was.
            if not hits and _contains(script.question, phrase):
                out.append(("forbidden_phrase", f"the question says {phrase!r}{why}", None))
    return out


def _active_phrase_rules(
    config: SubcategoryConfig, assignment: Mapping[str, str], language: str
) -> Iterable[PhraseRule]:
    return (
        rule
        for rule in config.validator.forbidden_phrases
        if (rule.language is None or rule.language == language) and matches(rule.when, assignment)
    )


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _contains(text: str, phrase: str) -> bool:
    """Case-insensitive; a phrase with CJK characters matches as a substring, a Latin one only as whole words
    ("again" does not match "against"), with any run of spaces between its words."""
    text, phrase = _normalise(text), _normalise(phrase).strip()
    if not phrase:
        return False
    if _CJK.search(phrase):
        return phrase in text
    body = r"\s+".join(re.escape(word) for word in phrase.split())
    # Word edges only where the phrase itself starts or ends with a letter or digit ("right?" ends with "?").
    head = r"(?<!\w)" if phrase[0].isalnum() else ""
    tail = r"(?!\w)" if phrase[-1].isalnum() else ""
    return re.search(head + body + tail, text) is not None


def _required_segments(script: Script, config: SubcategoryConfig) -> Found:
    present = {seg.kind for seg in script.segments}
    return [
        ("required_segment", f"the script has no {kind!r} segment; this subcategory's scripts need one", None)
        for kind in config.validator.required_segments
        if kind not in present
    ]


def _completion_cue(script: Script, config: SubcategoryConfig) -> Found:
    wait = config.validator.final_silence_s
    speech = [(i, s) for i, s in enumerate(script.segments) if s.kind == "speech"]
    if wait is None or not speech:  # no speech at all is a required_segment violation
        return []
    # The speaker addressing the assistant: MIST names it per turn; otherwise the default speaker "user".
    active = script.fields.get("active_speaker")
    speaker = active if isinstance(active, str) and active else "user"
    own = [(i, s) for i, s in speech if s.speaker == speaker]
    if not own:
        return [
            ("completion_cue", f"no speech segment is by {speaker!r}, whose last words the silent wait follows", None)
        ]
    i, last = max(own, key=lambda p: p[1].end)
    left = script.duration_s - last.end
    if left < wait - _EPS:
        return [
            (
                "completion_cue",
                f"{speaker!r}'s last words (segments[{i}]) end at {last.end:.2f} s, {left:.2f} s before the clip "
                f"ends at {script.duration_s:.2f} s; a completed turn needs a silent wait of at least {wait:g} s",
                i,
            )
        ]
    return []


def _attributes(script: Script, assignment: Mapping[str, str]) -> Found:
    out: Found = []
    sampled = assignment.get("language")
    if sampled is not None and script.language != sampled:
        out.append(("attribute", f"the script's language is {script.language!r} but {sampled!r} was sampled", None))
    got = script.fields.get("attributes")
    if not isinstance(got, Mapping):
        what = "has no fields.attributes" if got is None else f"has fields.attributes of type {type(got).__name__}"
        out.append(("attribute", f"the script {what}; copy the sampled assignment there exactly", None))
        return out
    for name in sorted(set(assignment) | {str(k) for k in got}):
        want, have = assignment.get(name), got.get(name)
        if want is None:
            out.append(
                ("attribute", f"fields.attributes has {name!r} = {have!r}, which is not a sampled attribute", None)
            )
        elif have is None:
            out.append(("attribute", f"fields.attributes lacks {name!r} (sampled: {want!r})", None))
        elif _as_value(have) != want:
            out.append(
                (
                    "attribute",
                    f"attribute {name!r} is {have!r} in the script but {want!r} was sampled; the assignment stays "
                    "fixed during repair",
                    None,
                )
            )
    return out


def _as_value(value: Any) -> str | None:
    # JSON from a Director may write the sampled "3" as 3; anything else is no attribute value.
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _positions(turn: int, n_turns: int) -> list[Position]:
    """The turn positions whose field rules apply: a one-turn dialogue's turn is both first and final."""
    out: list[Position] = ["first"] if turn == 1 else []
    if 1 < turn < n_turns:
        out.append("middle")
    if turn == n_turns:
        out.append("final")
    return [*out, "any"]


def _turn_fields(script: Script, config: SubcategoryConfig, turn: int, n_turns: int) -> Found:
    out: Found = []
    seen: set[tuple[str, str]] = set()
    for position in _positions(turn, n_turns):
        rules = config.validator.turn_fields.get(position)
        if rules is None:
            continue
        where = "every turn" if position == "any" else f"the {position} turn"
        for name in rules.required:
            if not _present(script.fields.get(name)) and ("required", name) not in seen:
                seen.add(("required", name))
                out.append(
                    ("turn_field", f"turn {turn} of {n_turns} lacks the field {name!r}, required at {where}", None)
                )
        for name in rules.forbidden:
            if _present(script.fields.get(name)) and ("forbidden", name) not in seen:
                seen.add(("forbidden", name))
                out.append(
                    ("turn_field", f"turn {turn} of {n_turns} has the field {name!r}, forbidden at {where}", None)
                )
    return out


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _reference_links(script: Script, turn: int, completed: Collection[str]) -> Found:
    """Hard: a later turn without a reference to earlier media invalidates the instance, and a reference to media
    that are not an earlier, completed turn's is no valid reference (Appendix C.2.2)."""
    refs = script.references
    out: Found = []
    if turn > 1 and not refs:
        out.append(
            ("reference", f"turn {turn} uses no earlier media; every turn after the first needs a reference", None)
        )
    for k, ref in enumerate(refs):
        if ref.turn >= turn:
            out.append(("reference", f"references[{k}] ({ref.media_id}) is not from a turn before turn {turn}", None))
        elif ref.media_id not in completed:
            out.append(("reference", f"references[{k}] ({ref.media_id}) is not a completed turn's media", None))
    return out


def _reference_budget(script: Script, config: SubcategoryConfig, turn: int) -> Found:
    refs, budget = script.references, config.validator.max_references
    if len(refs) > budget:
        return [("reference", f"turn {turn} uses {len(refs)} earlier media, over the budget of {budget}", None)]
    return []


def _quoted(phrases: Sequence[str]) -> str:
    return ", ".join(json.dumps(p, ensure_ascii=False) for p in phrases)
