"""Recorded dialogues (OmniVChat-Bench-Human, paper Appendix D.2): clips people recorded, with a corrected caption
(and the user's speech) in place of a synthesis script, turned into bench instances marked ``source: human``.

For each recording the Director reads the caption, never the clip, and writes a spoken reference reply and a
tiered rubric. The answer is validated deterministically (:func:`answer_problems`); a failed validation goes back
to the Director with its problems, for up to three rounds. A recording still failing after the third round is
reported as not imported, with its problems, and nothing of it enters the bench.

Input: a manifest JSONL file, one recording a line (docs/studio.md, "Recorded dialogues")::

    {"id": "rec-001", "video": "clips/rec-001.mp4", "subcategory": "ICC", "language": "zh",
     "caption": "A woman in a red T-shirt sits at a desk ...", "transcript": "喂？能听到吗？"}

or, for a multi-turn recording, ``"turns": [{"video", "caption", "transcript"?, "reply"?}, ...]`` where every turn
but the last carries the reply the user heard. Every line, field and clip is checked before anything is written.

Layout of the output directory::

    bench.yaml, instances.jsonl, media/<id>/turnN.mp4     the bench (clips copied byte for byte)
    recorded/settings.json                                 the validation settings (a rerun must use the same)
    recorded/calls.sqlite                                  every Director call (the run store: replayed on resume)
    recorded/traces/<id>.json                              each recording: rounds, problems, decisions, status
    recorded/accepted/<id>.json                            the bench record of each imported recording

Resumable: a recording whose trace matches its manifest entry and clips is done; any other is run again, its
Director calls answered from the store where they were made before. Repeating a finished import adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat._files import check_output_dir, write_text_atomic
from omnivchat.bench import Check, Criterion, Instance
from omnivchat.errors import OmnivchatError
from omnivchat.studio.config import SubcategoryConfig
from omnivchat.studio.engine._agents import Director, DirectorRequest
from omnivchat.studio.engine._answers import ReplyAnswer
from omnivchat.studio.engine._calls import CALLS_FILE, AgentCallError, AgentCalls

RECORDED_MODULE = "recorded_reply"
"""The Director module that writes a recording's reference reply and rubric."""

MAX_ROUNDS = 3
"""Rounds of generation, validation and refinement before a recording is given up (Appendix D.2)."""

MIN_CRITERIA, MAX_CRITERIA = 3, 5
PLACEHOLDER = "<brand>"
RECORDED_DIR = "recorded"
SETTINGS_FILE = "settings.json"
LANGUAGES = ("en", "zh")

RECORDED_REPLY_INSTRUCTIONS = (
    "A person recorded a short video call with an assistant. You cannot see the clip: the payload gives its "
    "checked caption (what the clip shows and what is said in it), the user's words when a transcript exists, "
    "the subcategory the recording tests with what a good reply does, and the user's language. "
    "Write the reference reply: what a good assistant would say aloud to this user at the end of the clip, in "
    "the user's language, short and natural as speech, using only what the caption says the clip shows and what "
    "the user says (never invent details the caption does not give). "
    "Then write a tiered rubric that a grader can apply while seeing only a candidate reply and the rubric: "
    "3 to 5 binary criteria in tier order; exactly one tier-0 criterion, first, saying the reply is in the "
    "user's language (name the language); at least one tier-1 criterion for the core of a correct answer; "
    "tiers 2 and 3 for what makes it better, with no tier left out in between. "
    "Each criterion states the fact it needs in its own words: never point to the caption, the transcript, a "
    "script or a description, which the grader does not have. "
    f"Write no brand, product or company name, in the reply or the rubric: put the placeholder {PLACEHOLDER} "
    "in its place. "
    "When the payload holds your previous answer and the problems found in it, fix every problem and keep what "
    "was right. "
    'Answer JSON {"reply": str, "rubric": [{"tier": int, "text": str}]}.'
)
"""What the Director is asked for each recording (the payload carries the facts)."""

DEFAULT_BRANDS: tuple[str, ...] = (
    # assistants and model vendors (the reason placeholders exist: no vendor is favoured)
    "OpenAI",
    "ChatGPT",
    "GPT",
    "Gemini",
    "Google",
    "Qwen",
    "Tongyi",
    "通义",
    "千问",
    "Alibaba",
    "阿里巴巴",
    "Anthropic",
    "Claude",
    "DeepSeek",
    "Doubao",
    "ByteDance",
    "字节跳动",
    "Baidu",
    "百度",
    "ERNIE",
    "文心一言",
    "Tencent",
    "腾讯",
    "Microsoft",
    "微软",
    "Copilot",
    "Siri",
    "小爱同学",
    "天猫精灵",
    # everyday brands a recording may show
    "iPhone",
    "iPad",
    "MacBook",
    "AirPods",
    "Samsung",
    "三星",
    "Huawei",
    "华为",
    "Xiaomi",
    "Starbucks",
    "星巴克",
    "Coca-Cola",
    "可口可乐",
    "Pepsi",
    "百事",
    "McDonald's",
    "麦当劳",
    "KFC",
    "肯德基",
    "Nike",
    "耐克",
    "Adidas",
    "阿迪达斯",
    "IKEA",
    "宜家",
    "Tesla",
    "特斯拉",
    "LEGO",
    "乐高",
)
"""Brand names a reference reply or rubric must not write (PLACEHOLDER instead). Words that are also ordinary
words are left out on purpose: Apple (the fruit), Amazon, Meta, 小米 (millet), 豆包 (a bun), 苹果."""

TRADEMARK_SIGNS = ("™", "®", "℠")
"""Marks that only follow a brand name, whatever the name: their presence is a brand however unlisted."""

HIDDEN_SOURCE_PATTERNS: tuple[str, ...] = (
    r"\bcaptions?\b",
    r"\bcaptioned\b",
    r"\btranscripts?\b",
    r"\btranscription\b",
    r"\bscripts?\b",
    r"\bas described\b",
    r"\bdescribed (?:above|below|earlier|in the)\b",
    r"\b(?:given|provided|hidden|clip|video|scene) descriptions?\b",
    r"\bannotat(?:ion|ions|or|ors|ed)\b",
    r"\bmetadata\b",
    "标注",
    "字幕",
    "转录",
    "转写",
    "文字稿",
    "脚本",
    "剧本",
    "视频描述",
    "画面描述",
    "场景描述",
    "根据描述",
    "如描述",
    "描述中",
    "描述所",
)
"""Words that point at the material only the annotation had (the caption, transcript, script or description):
the grader sees the reply and the rubric alone, so a criterion must state the fact, not where it was written.
Case-insensitive; English entries are whole words, Chinese ones substrings. Bare "description" / 描述 is allowed:
"describes the cup" is a fair criterion."""

LANGUAGE_NAMES: dict[str, tuple[str, ...]] = {
    "en": ("english", "英语", "英文"),
    "zh": ("chinese", "mandarin", "中文", "汉语", "普通话", "华语", "国语"),
}
"""How a tier-0 criterion names the reply's language, which makes it the language criterion."""

_LANGUAGE_LABEL = {"en": "English", "zh": "Chinese"}
_SILENCE = frozenset({"silence", "no reply", "no response", "nothing", "沉默", "无回复", "无应答", "不回复", "无"})
_BRACKETED = re.compile(r"\[[^\]]*\]|\([^)]*\)|（[^）]*）|【[^】]*】|<[^>]*>")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_HIDDEN = [re.compile(p, re.IGNORECASE) for p in HIDDEN_SOURCE_PATTERNS]


class RecordedError(OmnivchatError, ValueError):
    """A manifest that cannot be imported, or an output this import cannot use; ``problems`` lists every problem
    found (each naming the file, the line and the field)."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems) or [message]


# ------------------------------------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class RecordedTurn:
    """One recorded turn: the clip (as given and as found), its checked caption, the user's speech, and for a
    turn before the last the reply the user heard."""

    video: str
    path: Path
    caption: str
    transcript: str | None
    reply: str | None
    sha256: str
    duration_s: float


@dataclass(frozen=True)
class Recording:
    """One line of the manifest, checked: its clips exist and hold video and sound."""

    id: str
    subcategory: str
    language: str
    turns: tuple[RecordedTurn, ...]
    line: int

    @property
    def final(self) -> RecordedTurn:
        return self.turns[-1]

    def input_hash(self) -> str:
        """What the import of this recording depends on: its texts and the bytes of its clips (not where the clips
        lie, so moving the originals redoes nothing)."""
        blob = {
            "id": self.id,
            "subcategory": self.subcategory,
            "language": self.language,
            "turns": [
                {"clip": t.sha256, "caption": t.caption, "transcript": t.transcript, "reply": t.reply}
                for t in self.turns
            ],
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class _TurnEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    video: str
    caption: str
    transcript: str | None = None
    reply: str | None = None


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    subcategory: str
    language: str
    video: str | None = None
    caption: str | None = None
    transcript: str | None = None
    turns: list[_TurnEntry] | None = None


def load_recordings(manifest: Path) -> list[Recording]:
    """The recordings of a manifest JSONL file, every clip probed. RecordedError listing every problem (each as
    ``file:line: field: what``) when any line, field or clip is wrong: nothing is imported from a bad manifest."""
    from omnivchat._files import read_json_lines

    try:
        data = manifest.read_bytes()
    except IsADirectoryError:
        raise RecordedError(f"{manifest}: a directory, not a manifest file") from None
    except OSError as err:
        raise RecordedError(f"{manifest}: cannot read the manifest: {err.strerror or err}") from None
    problems: list[str] = []
    recordings: list[Recording] = []
    seen: dict[str, int] = {}
    for number, raw in read_json_lines(
        data, str(manifest), problems, not_json="not JSON", not_object="a recording is a JSON object"
    ):
        where = f"{manifest}:{number}"
        try:
            entry = _Entry.model_validate(raw)
        except ValidationError as err:
            problems.extend(f"{where}: {_loc(e['loc'])}: {_message(e)}" for e in err.errors())
            continue
        if entry.id in seen:
            problems.append(f"{where}: id: {entry.id!r} repeats line {seen[entry.id]}")
            continue
        seen[entry.id] = number
        found = _check_entry(entry, manifest, where)
        if isinstance(found, list):
            problems.extend(found)
            continue
        recordings.append(Recording(entry.id, found[0], entry.language, found[1], number))
    if len(problems) == 1:
        raise RecordedError(problems[0], problems)
    if problems:
        head = f"{manifest}: {len(problems)} problems; nothing imported"
        raise RecordedError("\n".join([head, *problems]), problems)
    if not recordings:
        raise RecordedError(f"{manifest}: no recordings (one JSON object a line)")
    return recordings


def _check_entry(entry: _Entry, manifest: Path, where: str) -> tuple[str, tuple[RecordedTurn, ...]] | list[str]:
    """(subcategory code, turns) of a parsed line, or its problems."""
    from omnivchat.bench import resolve_subcategory

    problems: list[str] = []
    if not _ID.match(entry.id):
        problems.append(f"{where}: id: {entry.id!r} must be letters, digits, '_', '-' or '.', starting alphanumeric")
    code, kind = "", ""
    try:
        subcategory = resolve_subcategory(entry.subcategory)
        code, kind = subcategory.code, subcategory.kind
    except KeyError as err:
        problems.append(f"{where}: subcategory: {err.args[0]}")
    if entry.language not in LANGUAGES:
        problems.append(f"{where}: language: {entry.language!r} is not one of {', '.join(LANGUAGES)}")
    single = [name for name in ("video", "caption", "transcript") if getattr(entry, name) is not None]
    if entry.turns is not None:
        if single:
            problems.append(f"{where}: {single[0]}: give it inside each turn when the recording has turns")
        given = entry.turns
        prefix = "turns[{}]."
    elif entry.video is None or entry.caption is None:
        missing = "video" if entry.video is None else "caption"
        problems.append(f"{where}: {missing}: missing (or give turns: [{{video, caption, ...}}])")
        given = []
        prefix = ""
    else:
        given = [_TurnEntry(video=entry.video, caption=entry.caption, transcript=entry.transcript)]
        prefix = ""
    if entry.turns is not None and not given:
        problems.append(f"{where}: turns: empty; a recording has at least one turn")
    if code and given:
        if kind == "single" and len(given) != 1:
            problems.append(f"{where}: turns: {code} is single-turn but {len(given)} turns are given")
        if kind == "multi" and len(given) < 2:
            problems.append(f"{where}: turns: {code} is multi-turn but only one turn is given")
    turns: list[RecordedTurn] = []
    for index, turn in enumerate(given):
        name = prefix.format(index)
        last = index == len(given) - 1
        if not turn.caption.strip():
            problems.append(f"{where}: {name}caption: empty; give the corrected caption of the clip")
        if turn.transcript is not None and not turn.transcript.strip():
            problems.append(f"{where}: {name}transcript: empty; leave it out when there is none")
        if not last and not (turn.reply or "").strip():
            problems.append(f"{where}: {name}reply: missing; a turn before the last needs the reply the user heard")
        if last and turn.reply is not None:
            problems.append(f"{where}: {name}reply: the last turn's reply is what the import writes; leave it out")
        clip = _clip(manifest, turn.video)
        duration, wrong = _probe_clip(clip)
        if duration is None:
            problems.append(f"{where}: {name}video: {wrong}")
            continue
        from omnivchat._canonical import sha256_file

        turns.append(
            RecordedTurn(
                video=turn.video,
                path=clip,
                caption=turn.caption.strip(),
                transcript=turn.transcript.strip() if turn.transcript is not None else None,
                reply=turn.reply.strip() if turn.reply is not None else None,
                sha256=sha256_file(clip),
                duration_s=round(duration, 3),
            )
        )
    return problems if problems else (code, tuple(turns))


def _clip(manifest: Path, video: str) -> Path:
    path = Path(video)
    return (path if path.is_absolute() else manifest.parent / path).absolute()


def _probe_clip(path: Path) -> tuple[float | None, str]:
    """(duration, "") for a clip with video and sound, else (None, what is wrong with it)."""
    from omnivchat.media import MediaError, probe

    if not path.is_file():
        return None, f"{path}: no such file" if not path.exists() else f"{path}: not a file"
    try:
        info = probe(path, energy=True, verify=True)
    except MediaError as err:
        return None, f"cannot read the clip: {err}"
    if not info.has_video:
        return None, f"{path}: no video stream; a recording is a video clip"
    if not info.has_audio:
        return None, f"{path}: no audio track; a recording's question is spoken"
    if info.is_silent:
        return None, f"{path}: the audio track is silent (below -60 dBFS); a recording's question is spoken"
    return info.duration, ""


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the line)"


def _message(error: Any) -> str:
    if error["type"] == "missing":
        return "missing"
    if error["type"] == "extra_forbidden":
        return "not a field of a recording (id, video, subcategory, language, caption, transcript, turns)"
    return str(error["msg"])


# ------------------------------------------------------------------------------------------- validation


def answer_problems(answer: ReplyAnswer, language: str, *, brands: Sequence[str] = DEFAULT_BRANDS) -> list[str]:
    """Every way ``answer`` breaks the form of a recorded record (Appendix D.2); empty when it is fit to deliver.

    - The reference reply holds spoken words (not a silence marker) in the recording's language.
    - 3 to 5 criteria, in tier order, tiers contiguous from 0.
    - Exactly one tier-0 criterion, and it is the language criterion: its text names the recording's language
      (LANGUAGE_NAMES) and its check, if it has one, asks for that language.
    - At least one tier-1 criterion.
    - No criterion refers to the hidden caption, transcript, script or description (HIDDEN_SOURCE_PATTERNS).
    - No brand name (``brands``) and no trademark sign in the reply or any criterion (PLACEHOLDER instead).
    - The reference meets each criterion of its own rubric that carries a machine check.
    """
    from omnivchat.judges import check_holds
    from omnivchat.scoring.spoken import detect_language

    problems: list[str] = []
    label = _LANGUAGE_LABEL.get(language, language)
    reply = answer.reply.strip()
    spoken = _BRACKETED.sub(" ", reply).strip()
    if not reply:
        problems.append("the reference reply is empty")
    elif detect_language(spoken) is None or spoken.strip(" .。!！?？,，…-").lower() in _SILENCE:
        problems.append("the reference reply holds no spoken words (a silence marker?); write what is said aloud")
    elif (said := detect_language(spoken)) != language:
        problems.append(f"the reference reply is in {_LANGUAGE_LABEL.get(said or '', said)}, not {label}")
    rubric = answer.rubric
    if not MIN_CRITERIA <= len(rubric) <= MAX_CRITERIA:
        problems.append(f"the rubric has {len(rubric)} criteria; it needs {MIN_CRITERIA} to {MAX_CRITERIA}")
    for number in range(2, len(rubric) + 1):
        before, after = rubric[number - 2].tier, rubric[number - 1].tier
        if after < before:
            problems.append(f"criteria are not in tier order: criterion {number} is tier {after} after tier {before}")
    tiers = sorted({c.tier for c in rubric})
    gaps = [t for t in range(1, tiers[-1] + 1) if t not in tiers] if tiers else []
    if gaps:  # a missing tier 0 is the gate's problem, reported below
        problems.append(f"tiers are not contiguous from 0: tier {gaps[0]} is missing below tier {tiers[-1]}")
    gates = [n for n, c in enumerate(rubric, start=1) if c.tier == 0]
    if len(gates) != 1:
        problems.append(
            f"the rubric has {len(gates)} tier-0 criteria; it needs exactly one, saying the reply is in {label}"
        )
    for number in gates[:1]:
        gate = rubric[number - 1]
        if not names_language(gate.text, language):
            problems.append(
                f"criterion {number} (tier 0) is not the language criterion: its text must say the reply is in {label}"
            )
        asked = gate.check.language if gate.check is not None else language
        if asked != language:
            problems.append(f"criterion {number} (tier 0): its check asks for language {asked!r}, not {language!r}")
    if 1 not in tiers:
        problems.append("the rubric has no tier-1 criterion")
    for number, criterion in enumerate(rubric, start=1):
        word = hidden_source(criterion.text)
        if word is not None:
            problems.append(
                f"criterion {number} refers to the hidden caption ({word!r}); the grader sees only the reply and "
                "the rubric, so state the fact itself"
            )
    texts = [("the reference reply", answer.reply)]
    texts += [(f"criterion {n}", _criterion_words(c)) for n, c in enumerate(rubric, start=1)]
    for where, text in texts:
        name = brand_in(text, brands)
        if name is not None:
            problems.append(f"{where} names the brand {name!r}; write {PLACEHOLDER} instead")
    missed = [
        n for n, c in enumerate(rubric, start=1) if c.check is not None and reply and not check_holds(c.check, reply)
    ]
    if missed:
        problems.append(f"the reference misses criteria {missed} of its own rubric (their machine checks)")
    return problems


def names_language(text: str, language: str) -> bool:
    """Whether ``text`` names ``language`` (LANGUAGE_NAMES: English words whole, Chinese ones anywhere)."""
    lowered = text.lower()
    for name in LANGUAGE_NAMES.get(language, (language,)):
        if name.isascii():
            if re.search(rf"\b{re.escape(name)}\b", lowered):
                return True
        elif name in text:
            return True
    return False


def hidden_source(text: str) -> str | None:
    """The first word of ``text`` that points at the hidden caption (HIDDEN_SOURCE_PATTERNS), or None."""
    for pattern in _HIDDEN:
        found = pattern.search(text)
        if found is not None:
            return found.group(0)
    return None


def brand_in(text: str, brands: Sequence[str] = DEFAULT_BRANDS) -> str | None:
    """The first brand name (or trademark sign) in ``text``, or None. Case-insensitive; a Latin-script name counts
    only as a whole word (GPT in "GPT-4o", not in "GPTQ"), a Chinese one anywhere."""
    for sign in TRADEMARK_SIGNS:
        if sign in text:
            return sign
    for name in brands:
        if _brand_pattern(name).search(text):
            return name
    return None


def scrub_brands(text: str, brands: Sequence[str] = DEFAULT_BRANDS) -> str:
    """``text`` with every brand name replaced by PLACEHOLDER and trademark signs dropped: what the Director reads,
    so that it is never handed a name to repeat (the paper replaces brands before generation)."""
    for sign in TRADEMARK_SIGNS:
        text = text.replace(sign, "")
    for name in sorted(brands, key=len, reverse=True):  # "Coca-Cola" before a shorter name inside it
        text = _brand_pattern(name).sub(PLACEHOLDER, text)
    return text


def _brand_pattern(name: str) -> re.Pattern[str]:
    if name.isascii():
        return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", re.IGNORECASE)
    return re.compile(re.escape(name))


def _criterion_words(criterion: Criterion) -> str:
    words = [criterion.text]
    if criterion.check is not None:
        for entry in [*criterion.check.any_of, *criterion.check.all_of, *criterion.check.none_of]:
            words.extend([entry] if isinstance(entry, str) else entry)
    return "\n".join(words)


# ------------------------------------------------------------------------------------------- traces and results


class Round(BaseModel):
    """One round: the Director's answer, the problems validation found in it, and what was decided."""

    round: int
    decision: Literal["accept", "refine", "not imported"]
    problems: list[str] = Field(default_factory=list)
    answer: dict[str, Any] = Field(default_factory=dict)
    replayed: bool = False


class RecordedTrace(BaseModel):
    """How one recording was imported (``recorded/traces/<id>.json``)."""

    id: str
    subcategory: str
    language: str
    status: Literal["imported", "not imported"]
    input: str = Field(description="Recording.input_hash(): a changed entry or clip is imported again.")
    director: str
    rounds: list[Round] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="The last round's, when not imported.")
    delivered: dict[str, str] = Field(default_factory=dict, description="Bench clip -> the recording it copies.")


class ImportSettings(BaseModel):
    """What decides validation: a rerun in the same directory must use the same."""

    version: int = 1
    rounds: int = MAX_ROUNDS
    brands: list[str]
    placeholder: str = PLACEHOLDER


@dataclass(frozen=True)
class Outcome:
    """How one recording ended: imported, not imported (its last round's problems), or failed (the Director
    could not be reached; a rerun resumes it). ``already``: done by an earlier invocation."""

    id: str
    status: Literal["imported", "not imported", "failed"]
    rounds: int = 0
    problems: tuple[str, ...] = ()
    already: bool = False


@dataclass
class ImportSummary:
    outcomes: list[Outcome] = field(default_factory=list)
    bench: Path | None = None
    calls_made: int = 0
    calls_replayed: int = 0
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def complete(self) -> bool:
        return not self.count("failed")


# ------------------------------------------------------------------------------------------- the import


def import_recorded(
    manifest: Path,
    output: Path,
    director: Director,
    *,
    brands: Sequence[str] | None = None,
    concurrency: int = 2,
    on_done: Callable[[Outcome], None] | None = None,
) -> ImportSummary:
    """Import the recordings of ``manifest`` into the bench directory ``output`` (see the module docstring):
    the whole manifest is checked first, then each recording goes through up to MAX_ROUNDS rounds of generation
    (``director``, module RECORDED_MODULE), validation (:func:`answer_problems`) and refinement."""
    from omnivchat.runs import lock_holder, run_lock

    recordings = load_recordings(manifest)
    settings = ImportSettings(brands=sorted(set(DEFAULT_BRANDS if brands is None else brands)))
    check_output_dir(
        output,
        ours=lambda d: (d / RECORDED_DIR / SETTINGS_FILE).is_file() or lock_holder(d) is not None,
        kind="an import of recorded dialogues",
    )
    output.mkdir(parents=True, exist_ok=True)
    with run_lock(output, "studio import-recorded"):
        _check_settings(output, settings)
        return _import(recordings, manifest, output, director, settings, concurrency, on_done)


def _import(
    recordings: list[Recording],
    manifest: Path,
    output: Path,
    director: Director,
    settings: ImportSettings,
    concurrency: int,
    on_done: Callable[[Outcome], None] | None,
) -> ImportSummary:
    from omnivchat.studio.config import load_config

    started = time.monotonic()
    configs = {code: load_config(code) for code in sorted({r.subcategory for r in recordings})}
    outcomes: dict[str, Outcome] = {}
    todo: list[Recording] = []
    for recording in recordings:
        trace = _read_trace(output, recording.id)
        done = trace is not None and trace.input == recording.input_hash()
        # A recording given up is tried again by another Director; one imported stays imported.
        if trace is not None and done and (trace.status == "imported" or trace.director == director.name):
            if trace.status == "imported":
                _restore_clips(output, recording, trace)
            outcomes[recording.id] = Outcome(
                recording.id, trace.status, len(trace.rounds), tuple(trace.problems), already=True
            )
            if on_done is not None:
                on_done(outcomes[recording.id])
        else:
            todo.append(recording)
    calls = AgentCalls(output / RECORDED_DIR / CALLS_FILE)
    try:

        def one(recording: Recording) -> Outcome:
            try:
                outcome = _import_one(recording, configs[recording.subcategory], output, director, calls, settings)
            except (AgentCallError, OmnivchatError, OSError) as err:
                outcome = Outcome(recording.id, "failed", problems=(str(err),))
            if on_done is not None:
                on_done(outcome)
            return outcome

        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            for outcome in pool.map(one, todo):
                outcomes[outcome.id] = outcome
    finally:
        made, replayed = calls.made, calls.replayed
        calls.close()
    summary = ImportSummary(outcomes=[outcomes[r.id] for r in recordings], calls_made=made, calls_replayed=replayed)
    summary.bench = _write_bench(output, manifest, recordings)
    summary.seconds = time.monotonic() - started
    return summary


def _import_one(
    recording: Recording,
    config: SubcategoryConfig,
    output: Path,
    director: Director,
    calls: AgentCalls,
    settings: ImportSettings,
) -> Outcome:
    """Up to ``settings.rounds`` rounds for one recording; writes its clips and record when imported, and its
    trace last (the trace marks it done)."""
    trace = RecordedTrace(
        id=recording.id,
        subcategory=recording.subcategory,
        language=recording.language,
        status="not imported",
        input=recording.input_hash(),
        director=director.name,
    )
    previous: dict[str, Any] | None = None
    problems: list[str] = []
    instance: Instance | None = None
    for number in range(1, settings.rounds + 1):
        payload = _payload(recording, config, settings.brands, number, previous, problems)
        request = DirectorRequest(RECORDED_MODULE, RECORDED_REPLY_INSTRUCTIONS, payload)

        def ask(request: DirectorRequest = request) -> dict[str, Any]:
            answer = director.ask(request)
            return answer if isinstance(answer, dict) else {"text": answer}

        raw, replayed = calls.call(
            director.name, f"director.{RECORDED_MODULE}", request.as_dict(), ask, item_id=recording.id
        )
        parsed, problems = _parse(raw)
        if parsed is not None:
            problems = answer_problems(parsed, recording.language, brands=settings.brands)
            if not problems:
                instance, problems = _instance(recording, parsed, number)
        last = number == settings.rounds
        decision: Literal["accept", "refine", "not imported"] = (
            "accept" if not problems else "not imported" if last else "refine"
        )
        trace.rounds.append(Round(round=number, decision=decision, problems=problems, answer=raw, replayed=replayed))
        if not problems:
            break
        previous = raw
    _forget(output, recording.id)  # an earlier import of this id (another caption, a crash) must not survive half
    if instance is not None:
        trace.status = "imported"
        for number, turn in enumerate(recording.turns, start=1):
            video = f"media/{recording.id}/turn{number}.mp4"
            _copy_clip(turn, output / video)
            trace.delivered[video] = str(turn.path)
        write_text_atomic(_accepted_path(output, recording.id), instance.model_dump_json(exclude_none=True))
    else:
        trace.problems = problems
    write_text_atomic(_trace_path(output, recording.id), trace.model_dump_json(indent=1))
    return Outcome(recording.id, trace.status, len(trace.rounds), tuple(trace.problems))


def _payload(
    recording: Recording,
    config: SubcategoryConfig,
    brands: Sequence[str],
    number: int,
    previous: dict[str, Any] | None,
    problems: list[str],
) -> dict[str, Any]:
    """What the Director reads: brand names already replaced by PLACEHOLDER; on a later round, its previous answer
    and what was wrong with it. The round number keeps two rounds with the same feedback two calls."""

    def clean(text: str | None) -> str | None:
        return None if text is None else scrub_brands(text, brands)

    payload: dict[str, Any] = {
        "recording": recording.id,
        "subcategory": {"code": config.code, "name": config.name, "definition": config.definition},
        "reply_requirements": list(config.reply_requirements),
        "language": recording.language,
        "caption": clean(recording.final.caption),
        "transcript": clean(recording.final.transcript),
        "round": number,
    }
    if len(recording.turns) > 1:
        payload["earlier_turns"] = [
            {"caption": clean(t.caption), "transcript": clean(t.transcript), "reply": clean(t.reply)}
            for t in recording.turns[:-1]
        ]
    if previous is not None:
        payload["previous"] = previous
        payload["problems"] = list(problems)
    return payload


def _parse(raw: dict[str, Any]) -> tuple[ReplyAnswer | None, list[str]]:
    """The answer as a ReplyAnswer (a JSON text answer is read too), or the problem that stops it."""
    from omnivchat._files import loads_json

    data: Any = raw
    if set(raw) == {"text"} and isinstance(raw["text"], str):
        try:
            data = loads_json(raw["text"].strip())
        except ValueError:
            return None, ['the answer is not JSON {"reply": str, "rubric": [{"tier": int, "text": str}]}']
    try:
        return ReplyAnswer.model_validate(data), []
    except ValidationError as err:
        first = err.errors()[0]
        return None, [
            'the answer does not fit {"reply": str, "rubric": [{"tier": int, "text": str}]}: '
            f"{_loc(first['loc'])}: {first['msg']}"
        ]


def _instance(recording: Recording, answer: ReplyAnswer, rounds: int) -> tuple[Instance | None, list[str]]:
    """The bench record of an accepted answer. The gate gets the machine check of its language when it has none,
    so the rule judge can apply it as well."""
    rubric = [
        c.model_copy(update={"check": Check(language=recording.language)}) if c.tier == 0 and c.check is None else c
        for c in answer.rubric
    ]
    turns: list[dict[str, Any]] = []
    for number, turn in enumerate(recording.turns, start=1):
        video = f"media/{recording.id}/turn{number}.mp4"
        turns.append({"video": video, **({"reply": turn.reply} if number < len(recording.turns) else {})})
    record = {
        "id": recording.id,
        "subcategory": recording.subcategory,
        "language": recording.language,
        "source": "human",
        "turns": turns,
        "reference": answer.reply.strip(),
        "rubric": [c.model_dump(mode="json", exclude_none=True) for c in rubric],
        "meta": {
            "caption": recording.final.caption,
            "transcript": recording.final.transcript,
            "turns": [
                {"caption": t.caption, "transcript": t.transcript, "duration_s": t.duration_s} for t in recording.turns
            ],
            "rounds": rounds,
            "generator": {"name": "omnivchat.studio.recorded", "trace": f"{RECORDED_DIR}/traces/{recording.id}.json"},
        },
    }
    try:
        instance = Instance.model_validate(record)
    except ValidationError as err:
        first = err.errors()[0]
        return None, [f"not a bench instance: {_loc(first['loc'])}: {first['msg']}"]
    return instance, []


def _copy_clip(turn: RecordedTurn, target: Path) -> None:
    """Copy a recording into the bench, byte for byte, through a temporary file; the original is only read."""
    from omnivchat._canonical import sha256_file

    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and target.resolve() == turn.path.resolve():
        return
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        shutil.copyfile(turn.path, tmp)
        if sha256_file(tmp) != turn.sha256:
            raise RecordedError(f"{turn.path} changed while it was being imported; run the import again")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _restore_clips(output: Path, recording: Recording, trace: RecordedTrace) -> None:
    """A done recording whose bench clip went missing gets it again from the recording."""
    for number, turn in enumerate(recording.turns, start=1):
        target = output / f"media/{recording.id}/turn{number}.mp4"
        if not target.is_file():
            _copy_clip(turn, target)


def _forget(output: Path, recording_id: str) -> None:
    _accepted_path(output, recording_id).unlink(missing_ok=True)
    media = output / "media" / recording_id
    if media.is_dir():
        shutil.rmtree(media)


def _write_bench(output: Path, manifest: Path, recordings: Sequence[Recording]) -> Path | None:
    """bench.yaml and instances.jsonl from the imported recordings of the manifest, in manifest order; None when
    none is imported (and a bench left by an earlier manifest is removed: the bench is always this one's)."""
    from omnivchat.bench import Bench, BenchInfo, load_bench, save_bench

    instances: list[Instance] = []
    for recording in recordings:
        trace = _read_trace(output, recording.id)
        if trace is None or trace.status != "imported" or trace.input != recording.input_hash():
            continue
        record = _accepted_path(output, recording.id)
        redo = f"delete {_trace_path(output, recording.id)} to import {recording.id} again (its calls are replayed)"
        try:
            instances.append(Instance.model_validate_json(record.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise RecordedError(f"{record} is missing although {recording.id} was imported: {redo}") from None
        except (OSError, UnicodeDecodeError, ValidationError) as err:
            raise RecordedError(f"{record}: not a bench record ({str(err).splitlines()[0]}): {redo}") from None
    if not instances:
        for name in ("bench.yaml", "instances.jsonl"):
            (output / name).unlink(missing_ok=True)
        return None
    info = BenchInfo(
        name="omnivchat-recorded",
        version="1",
        description=(
            f"Recorded dialogues imported by omnivchat studio import-recorded from {manifest.name}; "
            f"traces under {RECORDED_DIR}/traces."
        ),
    )
    save_bench(Bench(root=output, info=info, instances=instances))
    load_bench(output)
    return output


def _check_settings(output: Path, settings: ImportSettings) -> None:
    from omnivchat.studio.engine._run import keep_settings

    keep_settings(output / RECORDED_DIR / SETTINGS_FILE, settings, error=RecordedError, what="an import")


def read_recorded_trace(path: Path) -> RecordedTrace:
    try:
        return RecordedTrace.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, UnicodeDecodeError) as err:
        raise RecordedError(f"{path}: not a recorded-dialogue trace ({str(err).splitlines()[0]})") from None


def _read_trace(output: Path, recording_id: str) -> RecordedTrace | None:
    path = _trace_path(output, recording_id)
    return read_recorded_trace(path) if path.is_file() else None


def _trace_path(output: Path, recording_id: str) -> Path:
    return output / RECORDED_DIR / "traces" / f"{recording_id}.json"


def _accepted_path(output: Path, recording_id: str) -> Path:
    return output / RECORDED_DIR / "accepted" / f"{recording_id}.json"
