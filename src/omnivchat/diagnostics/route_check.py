"""The audio-track route check: does a route really deliver the audio of a clip?

A clip shows a red square and speaks a password and a number; its twin is the same clip with the audio muted.
Each is sent once, asking for the visible scene and the spoken password and number. The route passes when the
audible answer recovers both and the silent answer recovers neither (seed 003 counts only these real values). An
answer that names some other password for the silent clip invented speech: it does not fail the route, whose audio
arrived, but it is kept as a warning in the record (the model guesses rather than saying it cannot hear).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

from omnivchat._canonical import sha256_json
from omnivchat.diagnostics._files import ROUTE_CHECK_SCHEMA, ROUTE_CHECKS_FILE, RouteCheck
from omnivchat.routes import (
    ChatRequest,
    HistoryTurn,
    Route,
    RouteError,
    Sampling,
    SimOracle,
    describe_delivery,
    describe_items,
    limit_flag,
    media_items,
)

PASSWORD = "copper meadow"
NUMBER = 53
SPOKEN = "The spoken password is copper meadow. The spoken number is fifty three."
PROMPT = (
    "Report two things about this clip. First, what you can see in the video. Second, the password and the number "
    "that are spoken aloud in it. If you cannot hear any speech, say that the audio is unavailable: do not guess "
    "the password or the number from the picture."
)
SCENE = {
    "size": [320, 180],
    "background": "navy",
    "objects": [{"shape": "square", "color": "red", "position": "center", "size": 0.4}],
    "speech": [{"text": SPOKEN, "language": "en", "start": 0.5}],
}
# What the simulated models are told a perfect answer is (they answer it only when they hear the audio).
SIM_REFERENCE = "I see a red square on a dark blue background. The password is copper meadow and the number is 53."
_INVENTED = re.compile(r"\b(password|passphrase|pass code|code word)\b\s*(is|was|:|sounds like|might be)", re.I)


def check_clips(cache_dir: Path | None = None) -> tuple[Path, Path]:
    """The audible clip and its silent twin (rendered once, then cached)."""
    from omnivchat import media
    from omnivchat.synth import render_clip

    root = Path(cache_dir) if cache_dir else media.cache_dir() / "route-check"
    audible = render_clip(SCENE, root / "audible.mp4").path
    silent = media.mute_audio(audible, out=root / "silent.mp4")
    return audible, silent


def judge_answer(answer: str) -> dict[str, bool]:
    """What an answer recovered: the password, the number, and whether it claims some password at all."""
    from omnivchat.scoring.spoken import contains_phrase, numbers_in

    recovered_password = contains_phrase(answer, PASSWORD)
    recovered_number = any(abs(n - NUMBER) < 1e-9 for n in numbers_in(answer))
    claims = bool(_INVENTED.search(answer)) and not recovered_password
    return {"password": recovered_password, "number": recovered_number, "claims_speech": claims}


# Deterministic and short unless the user's sampling flags say otherwise.
CHECK_SAMPLING = {"temperature": 0.0, "max_tokens": 512}
_NO_AUDIO = re.compile(
    r"\b(audio (is |was )?(unavailable|missing|not available)|no (audio|sound|speech)|can(no|')t hear|"
    r"(do|did) not hear|(is|was) silent)\b",
    re.I,
)


def _request(clip: Path, control: str, sampling: Sampling, turns: int = 1) -> ChatRequest:
    """The check's request for ``clip``; with ``turns`` > 1 the clip is sent that many times, in earlier turns of
    one dialogue and the last (as the largest item of a multi-turn bench sends its clips)."""
    # The password and the number need the audio only: a simulated model that cannot see still answers them.
    oracle = SimOracle(reference=SIM_REFERENCE, language="en", requires=("audio",))
    history = [HistoryTurn(clip=clip, text=EARLIER_TURN, reply=EARLIER_REPLY) for _ in range(turns - 1)]
    return ChatRequest(
        item_id=f"route-check-{control}", clip=clip, text=PROMPT, sampling=sampling, oracle=oracle, history=history
    )


EARLIER_TURN = "Here is a clip. Only acknowledge it for now."
EARLIER_REPLY = "Noted."


async def _ask(route: Route, request: ChatRequest, control: str) -> dict[str, Any]:
    from omnivchat import media

    assert request.clip is not None
    record: dict[str, Any] = {"control": control, "media_sha256": media.content_hash(request.clip)}
    try:
        prepared = await asyncio.to_thread(route.prepare, request)
        record["request_sha256"] = prepared.key
        if isinstance(prepared.description, dict) and route.settings.route == "openai":
            record["media_items"] = media_items(prepared.description)
        response = await route.send(prepared)
    except RouteError as err:
        failed = {"http_status": err.http_status, "error_kind": err.kind, "error": err.message, "answer": None}
        return {**record, **failed, "replica": err.replica}
    return {
        **record,
        "http_status": response.http_status,
        "response_model": response.model,
        "system_fingerprint": response.system_fingerprint,
        "replica": response.replica,
        "delivered": response.delivered.model_dump(mode="json"),
        "answer": response.text,
        "recovered": judge_answer(response.text),
    }


def _audible_failure(record: dict[str, Any]) -> str:
    """What went wrong with the audible clip: the audio missing (dropped by the route, or not heard by the model),
    or an answer that is wrong although the audio was there."""
    delivered = record.get("delivered") or {}
    if delivered.get("audio") is False:
        return "audio missing: the route did not deliver the clip's audio track (see --audio-delivery)"
    if _NO_AUDIO.search(record["answer"] or ""):
        return (
            "audio missing: the model says it heard no speech in the audible clip (the route may drop the track: "
            "with --audio-delivery in-video, try --audio-delivery separate)"
        )
    missing = [name for name in ("password", "number") if not record["recovered"][name]]
    return (
        f"answer wrong: the audible answer does not give the spoken {' and '.join(missing)}, and does not say the "
        "audio is missing (the model may not follow the prompt or not understand the speech)"
    )


def turns_for(needed: dict[str, int], per_clip: dict[str, int]) -> int:
    """How many times the check's clip must be sent in one request to hold at least ``needed`` items of every
    modality, when one clip makes ``per_clip`` (0: a modality the clip cannot make is not asked of it)."""
    return max([1, *(math.ceil(n / per_clip[m]) for m, n in needed.items() if n and per_clip.get(m))])


def _capacity_failure(record: dict[str, Any], needed: dict[str, int]) -> str:
    sent = record.get("media_items") or {}
    return (
        f"the largest request of the bench was refused: {describe_items(sent)} in one request failed with "
        f"{record['error_kind']} ({record['error']}); the bench's largest request holds {describe_items(needed)}: "
        f"start vLLM with {limit_flag(needed)} (or more)"
    )


def evaluate(records: list[dict[str, Any]], needed: dict[str, int] | None = None) -> tuple[bool, list[str], list[str]]:
    """Pass/fail, the reasons and the warnings, from the audible and silent records (and the ``capacity`` record
    when a bench's largest request, of ``needed`` items, was checked too).

    As seed 003 counts it: the route passes when the audible answer recovers the spoken password and number and
    the silent answer recovers neither. A silent answer that invents another password is a warning, not a failure.
    The capacity request must be answered: its content is not judged.
    """
    by = {r["control"]: r for r in records}
    reasons = []
    for control in ("audible", "silent"):
        if by[control]["answer"] is None:
            reasons.append(f"{control} request failed: {by[control]['error_kind']} ({by[control]['error']})")
    if "capacity" in by and by["capacity"]["answer"] is None:
        reasons.append(_capacity_failure(by["capacity"], needed or {}))
    if reasons:
        return False, reasons, []
    heard, silent = by["audible"]["recovered"], by["silent"]["recovered"]
    if not (heard["password"] and heard["number"]):
        reasons.append(_audible_failure(by["audible"]))
    warnings = []
    if silent["password"] or silent["number"]:
        reasons.append("the silent answer recovered the spoken values: the check cannot tell audio from guessing")
    elif silent["claims_speech"]:
        warnings.append("the silent answer invented speech (a password that was never spoken)")
    return not reasons, reasons, warnings


def run_route_check(
    route: Route, sampling: Sampling | None = None, *, needed: dict[str, int] | None = None
) -> RouteCheck:
    """Send the audible and the silent clip once each through ``route``; return the result record.

    ``sampling`` flags that are set replace the check's own (temperature 0, 512 tokens). ``needed``: the most media
    items of each modality one request of a bench holds (``DryRun.most_media``); when the audible request holds
    fewer, one more request (``capacity``) sends the audible clip in as many turns as it takes, and the server must
    answer it (vLLM refuses a request over its ``--limit-mm-per-prompt`` with HTTP 400)."""
    audible, silent = check_clips()
    given = sampling.model_dump(exclude_none=True) if sampling is not None else {}
    used = Sampling(**{**CHECK_SAMPLING, **given})

    async def go() -> list[dict[str, Any]]:
        try:
            records = [
                await _ask(route, _request(audible, "audible", used), "audible"),
                await _ask(route, _request(silent, "silent", used), "silent"),
            ]
            per_clip = records[0].get("media_items")
            if needed and per_clip is not None:
                turns = turns_for(needed, per_clip)
                if turns > 1:
                    records.append(await _ask(route, _request(audible, "capacity", used, turns), "capacity"))
            return records
        finally:
            await route.aclose()

    records = asyncio.run(go())
    passed, reasons, warnings = evaluate(records, needed)
    settings = route.settings.model_dump(mode="json", exclude={"base_url"})
    return RouteCheck.model_validate(
        {
            "schema": ROUTE_CHECK_SCHEMA,
            "time": time.time(),
            "model": route.model_id,
            "route": route.settings.route,
            "endpoint": route.endpoint,
            "settings_sha256": sha256_json(settings),
            "settings": settings,
            "audio_delivery": describe_delivery(route.settings),
            "expected_audio": {"password": PASSWORD, "number": NUMBER, "spoken": SPOKEN},
            "prompt": PROMPT,
            "sampling": used.model_dump(),
            "records": records,
            "server": server.model_dump(mode="json") if (server := getattr(route, "server", None)) else None,
            "bench_media_items": needed,
            "passed": passed,
            "reasons": reasons,
            "warnings": warnings,
        }
    )


def registry_path() -> Path:
    """Where route-check results are kept (one JSON line each): $OMNIVCHAT_HOME or ~/.local/share/omnivchat."""
    home = os.environ.get("OMNIVCHAT_HOME") or str(Path.home() / ".local" / "share" / "omnivchat")
    return Path(home) / ROUTE_CHECKS_FILE


def record_check(result: RouteCheck) -> Path:
    """Add ``result`` to the registry of route checks (one JSON line)."""
    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(result.dump(), ensure_ascii=False) + "\n")
    return path


def checks_on_record() -> list[RouteCheck]:
    """Every route check in the registry, oldest first; a line that is not a route check (a damaged or foreign
    line) is skipped, never fatal."""
    path = registry_path()
    if not path.is_file():
        return []
    checks = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            checks.append(RouteCheck.model_validate_json(line))
        except ValueError:  # ValidationError too
            continue
    return checks


def passing_check_on_record(route: Route) -> bool:
    """Whether this model, endpoint and settings have passed a route check before."""
    wanted = sha256_json(route.settings.model_dump(mode="json", exclude={"base_url"}))
    return any(
        (check.model, check.endpoint, check.settings_sha256) == (route.model_id, route.endpoint, wanted)
        and check.passed
        for check in checks_on_record()
    )
