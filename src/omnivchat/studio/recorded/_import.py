"""The import of recorded dialogues: the Director asked for each recording's reference reply and rubric, up to
:data:`MAX_ROUNDS` rounds of validation and refinement, the clips copied and the bench written."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from omnivchat._files import check_output_dir, write_text_atomic
from omnivchat.bench import Check, Instance
from omnivchat.errors import OmnivchatError
from omnivchat.studio.config import SubcategoryConfig
from omnivchat.studio.engine import CALLS_FILE, AgentCallError, AgentCalls, Director, DirectorRequest, ReplyAnswer
from omnivchat.studio.recorded._manifest import RecordedError, RecordedTurn, Recording, _loc, load_recordings
from omnivchat.studio.recorded._traces import (
    RECORDED_DIR,
    SETTINGS_FILE,
    ImportSettings,
    ImportSummary,
    Outcome,
    RecordedTrace,
    Round,
    _accepted_path,
    _read_trace,
    _trace_path,
)
from omnivchat.studio.recorded._validation import DEFAULT_BRANDS, PLACEHOLDER, answer_problems, scrub_brands

RECORDED_MODULE = "recorded_reply"
"""The Director module that writes a recording's reference reply and rubric."""


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
    from omnivchat.studio.engine import keep_settings

    keep_settings(output / RECORDED_DIR / SETTINGS_FILE, settings, error=RecordedError, what="an import")
