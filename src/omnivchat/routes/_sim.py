"""Simulated omni models, for checking the harness (never a result about a real model).

A simulated model looks at the media it actually receives (is the audio audible? is the video more than black
frames?) and at the instance's ``requires``; it answers with the reference reply when its skills let it, and
with a generic non-answer otherwise. Skills are probabilities, drawn deterministically per item and seed.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat._canonical import sha256_json
from omnivchat.errors import OmnivchatError
from omnivchat.routes._audio import checked_wav
from omnivchat.routes._base import Prepared
from omnivchat.routes._defaults import RouteSettings, SettingsError
from omnivchat.routes._media_parts import file_identity
from omnivchat.routes._types import ChatRequest, ChatResponse, Delivered, RouteError, SpokenReply, media_failure

Speaker = Callable[[str, str, str], bytes]
"""``speaker(text, voice, language)`` -> a WAV file of ``text`` spoken: how a simulated model answers aloud. The
caller hands it in (omnivchat.studio's espeak-ng TTS: ``omnivchat.diagnostics.speak_wav``), since routes sit below
studio; it raises an OmnivchatError for a voice it does not have."""


class SimSkills(BaseModel):
    """Per-stream competence in [0, 1]: video, audio, fusion (both needed at once), text (reads a typed text
    part), prior (answers with no evidence at all); plus a seed and a fixed latency in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    video: float = Field(1.0, ge=0, le=1)
    audio: float = Field(1.0, ge=0, le=1)
    fusion: float = Field(1.0, ge=0, le=1)
    text: float = Field(0.0, ge=0, le=1)
    prior: float = Field(0.0, ge=0, le=1)
    seed: int = 0
    latency: float = Field(0.0, ge=0)


PROFILES: dict[str, dict[str, float]] = {
    "healthy": {},
    "video-blind": {"video": 0.0},
    "audio-blind": {"audio": 0.0},
    "no-fusion": {"fusion": 0.0},
    "prior-only": {"video": 0.0, "audio": 0.0, "fusion": 0.0, "text": 1.0},
    "custom": {},
}

GENERIC_REPLIES = {
    "en": "Sorry, I can't quite make that out from here. Could you tell me a bit more?",
    "zh": "抱歉，我这边不太确定你说的是什么，能再说一下吗？",
}


class UnknownSimModel(SettingsError):
    """A ``sim:`` model id that names no simulated model, or gives a skill that is not a number in [0, 1]."""


def parse_sim_id(model_id: str) -> tuple[str, SimSkills]:
    """``sim:NAME`` or ``sim:NAME?video=0.5&seed=3`` -> (profile name, skills)."""
    spec = model_id.removeprefix("sim:")
    name, _, query = spec.partition("?")
    if name not in PROFILES:
        raise UnknownSimModel(f"unknown simulated model {name!r}; choose from {', '.join(PROFILES)}")
    params: dict[str, float] = dict(PROFILES[name])
    try:
        pairs = parse_qsl(query, strict_parsing=bool(query))
    except ValueError:
        raise UnknownSimModel(f"{model_id}: settings go as ?name=value&name=value after the model name") from None
    for key, value in pairs:
        try:
            params[key] = float(value)
        except ValueError:
            raise UnknownSimModel(f"{model_id}: {key}={value!r} is not a number") from None
    try:
        return name, SimSkills(**params)
    except ValidationError as err:
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise UnknownSimModel(f"{model_id}: {details}") from None


def _roll(seed: int, item_id: str, channel: str) -> float:
    digest = hashlib.sha256(f"{seed}:{item_id}:{channel}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def perceive(clip: Path | None) -> tuple[bool, bool, str | None]:
    """(visible video, audible audio, clip sha256) as received: black frames and silence count as absent."""
    if clip is None:
        return False, False, None
    try:
        identity = file_identity(clip)
    except OSError:
        return _perceive(clip)  # the probe says what is wrong with it
    return _perceive_file(*identity)


# Remembered per file as it is now (a rewritten file has another size or time): the ablation grid, the self-check
# and the demo's two models ask about the same clips again and again, and decoding them was most of their time.
@functools.lru_cache(maxsize=4096)
def _perceive_file(path: str, inode: int, size: int, mtime_ns: int) -> tuple[bool, bool, str]:
    return _perceive(Path(path))


def _perceive(clip: Path) -> tuple[bool, bool, str]:
    from omnivchat import media

    try:
        info = media.probe(clip)
        visible = False
        if info.has_video:
            frames = media.sample_frames(clip, fps=1.0, max_frames=4)
            visible = any(int(f.array.max()) > 24 for f in frames)
        return visible, info.has_audio and not info.is_silent, media.content_hash(clip)
    except media.MediaError as err:
        raise media_failure(err) from None


class SimRoute:
    """A simulated model; its endpoint is ``sim://NAME`` and it never touches the network."""

    def __init__(self, model_id: str, settings: RouteSettings, speaker: Speaker | None = None) -> None:
        """``speaker`` lets the model answer aloud when a request asks for a spoken reply (``reply_audio``)."""
        self.model_id = model_id
        self.settings = settings
        self.profile, self.skills = parse_sim_id(model_id)
        self.speaker = speaker

    @property
    def endpoint(self) -> str:
        return f"sim://{self.profile}"

    def prepare(self, request: ChatRequest) -> Prepared:
        visible, audible, clip_hash = perceive(request.clip)
        history = [perceive(turn.clip)[2] for turn in request.history]
        description = {
            "model": self.model_id,
            "skills": self.skills.model_dump(),
            "system": request.system_prompt,
            "history": history,
            "clip": clip_hash,
            "text": request.text,
            "oracle": request.oracle.model_dump() if request.oracle else None,
        }
        if request.reply_audio is not None:  # only then: the keys of text-only requests stay as they were
            description["reply_audio"] = request.reply_audio.model_dump()
        key = sha256_json({"endpoint": self.endpoint, "payload": description})
        delivered = Delivered(video=visible, audio=audible)
        return Prepared(key=key, request=request, description=description, delivered=delivered)

    def decide(self, prepared: Prepared) -> bool:
        """Whether this model answers the item correctly, given what it received."""
        request, skills = prepared.request, self.skills
        oracle = request.oracle
        needs = set(oracle.requires or ()) if oracle else set()
        needs = needs or {"video", "audio"}  # unknown: both, on purpose (it keeps the fusion gain honest)
        item = request.item_id
        sees = prepared.delivered.video and _roll(skills.seed, item, "video") < skills.video
        hears = prepared.delivered.audio and _roll(skills.seed, item, "audio") < skills.audio
        if needs >= {"video", "audio"}:
            correct = sees and hears and _roll(skills.seed, item, "fusion") < skills.fusion
        else:
            correct = sees if "video" in needs else hears
        reads = bool(request.text) and _roll(skills.seed, item, "text") < skills.text
        return correct or reads or _roll(skills.seed, item, "prior") < skills.prior

    async def send(self, prepared: Prepared) -> ChatResponse:
        started = time.perf_counter()
        if self.skills.latency:
            await asyncio.sleep(self.skills.latency)
        oracle = prepared.request.oracle
        if oracle is None:
            raise RouteError("unsupported", "a simulated model needs the instance (oracle) to answer")
        if self.decide(prepared):
            text = oracle.reference
        else:
            text = oracle.wrong_reply or GENERIC_REPLIES.get(oracle.language[:2], GENERIC_REPLIES["en"])
        audio = await self._speak(prepared.request, text, oracle.language)
        return ChatResponse(
            text=text,
            finish_reason="stop",
            usage={"prompt_tokens": 0, "completion_tokens": len(text.split()), "total_tokens": len(text.split())},
            latency_s=time.perf_counter() - started,
            model=self.model_id,
            delivered=prepared.delivered,
            audio=audio,
        )

    async def _speak(self, request: ChatRequest, text: str, language: str) -> SpokenReply | None:
        """The reply spoken (a WAV, whatever format was asked), with its text as the server's own transcript."""
        if request.reply_audio is None:
            return None
        if self.speaker is None:
            raise RouteError(
                "unsupported", f"item {request.item_id}: this simulated model was given no speaker to answer aloud"
            )
        try:
            wav = await asyncio.to_thread(self.speaker, text, request.reply_audio.voice, language)
        except OmnivchatError as err:
            raise RouteError("media", f"item {request.item_id}: the simulated model cannot speak: {err}") from None
        return SpokenReply(data=checked_wav(wav, request.item_id), format="wav", transcript=text)

    async def aclose(self) -> None:
        return None
