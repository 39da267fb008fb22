"""The cascade model (``--model cascade:FILE``): speech recognition, optional frame captions and a text model, the
baseline omni papers set beside native models.

FILE (TOML) names the stages, each an entry like a judges-file judge (``model``, ``base_url``, ``api_key_env``,
options): ``[asr]`` (``model = "whisper-tiny.en"``: the local faster-whisper of the ``asr`` extra; any other: an
OpenAI-compatible ``/audio/transcriptions``), optional ``[captioner]`` (a vision chat route, sent the clip's frames
at ``frames_per_second``) and ``[llm]`` (a text chat route). The clip's audio is transcribed, its frames captioned,
and the text model answers from the transcript, the captions and the benchmark's prompt.

Each stage is a Route of its own. Its requests go through a :class:`StageSender`: the run loop binds one that
stores, caches, prices and redacts every stage request in the run store (``runs._stages``); without one (a route
check) they are sent with the same retries and kept nowhere. A clip without audio, or a silent one, gives an empty
transcript without asking the ASR; a clip whose frames are all black (a blanked video) gives no captions.
"""

from __future__ import annotations

import asyncio
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat._canonical import sha256_json
from omnivchat.errors import OmnivchatError
from omnivchat.routes._base import Prepared, Route, StageSender
from omnivchat.routes._credentials import CredentialError, Secret, resolve_api_key
from omnivchat.routes._defaults import RouteSettings, SettingsError, resolve_settings
from omnivchat.routes._sender import AdaptiveLimiter, RetryPolicy, send_with_retries
from omnivchat.routes._spec import ModelSpec
from omnivchat.routes._transcribe import LOCAL_WHISPER, ZERO_USAGE, LocalWhisperRoute, TranscriptionRoute
from omnivchat.routes._types import ChatRequest, ChatResponse, Delivered, RouteError, Sampling, media_failure

PREFIX = "cascade:"
STAGES = ("asr", "captioner", "llm")
CAPTION_PROMPT = (
    "These are frames sampled in order from a short video. Describe what is visible: the people, objects, colours, "
    "positions, any text and what changes between frames. Be factual and brief."
)
BLACK_LEVEL = 24
"""A frame whose brightest pixel is at most this is black (a blanked video), as the simulated models see it."""


class CascadeError(SettingsError):
    """A cascade FILE that cannot be used; the message names the file and the key."""


class AsrStage(ModelSpec):
    """``[asr]``: the speech recogniser. ``language`` is sent with every clip (Whisper tiny.en knows English only)."""

    language: str = Field(default="en", min_length=2)
    vad: bool = Field(
        default=True,
        description="The local whisper-tiny.en only: drop the silence around speech first (faster-whisper's Silero "
        "filter). Without it tiny.en heard the route check's 'copper meadow' as 'copper metal'.",
    )


class CaptionerStage(ModelSpec):
    """``[captioner]``: a vision chat route, sent the clip's frames (no audio) and ``prompt``."""

    frames_per_second: float = Field(default=1.0, gt=0)
    max_frames: int = Field(default=8, gt=0)
    prompt: str = Field(default=CAPTION_PROMPT, min_length=1)


class LlmStage(ModelSpec):
    """``[llm]``: the text model that answers. The benchmark's sampling wins over ``temperature``/``max_tokens``."""


class CascadeFile(BaseModel):
    """The stages of a cascade FILE."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    asr: AsrStage
    captioner: CaptionerStage | None = None
    llm: LlmStage


def load_cascade(path: str | Path) -> CascadeFile:
    """Read and check a cascade FILE: one error line naming the file and the key when it is not usable."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise CascadeError(f"{path}: cannot read the cascade file ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise CascadeError(f"{path}: not a UTF-8 text file (a cascade file is TOML)") from None
    except tomllib.TOMLDecodeError as err:
        raise CascadeError(f"{path}: not valid TOML ({err})") from None
    try:
        return CascadeFile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise CascadeError(f"{path}: {where}: {first['msg']}{more}") from None


def _stage_key(stage: str, spec: ModelSpec, path: Path) -> Secret | None:
    """A stage's key, as a judge's: none for ``no_key`` or a server of one's own without ``api_key_env``; a
    variable named but not set is refused before anything is sent."""
    if spec.sends_no_key:
        return None
    variable = spec.api_key_env or resolve_settings(spec.model).api_key_env
    key = resolve_api_key(variable)
    if variable and key is None:
        raise CredentialError(f"{path}: [{stage}] needs its key in {variable}, and that variable is not set")
    return key


SERVES = {"asr": "/audio/transcriptions", "captioner": "/chat/completions", "llm": "/chat/completions"}


def _check_stage_url(stage: str, spec: ModelSpec, path: Path) -> None:
    """A stage sent to an OpenAI-compatible server needs its ``base_url``: refused naming the file and the key (the
    route's own message would advise --base-url, which a cascade refuses)."""
    settings = resolve_settings(spec.model, overrides=spec.settings_overrides())
    if stage != "asr" and settings.route != "openai":
        return  # a Gemini or simulated route knows its own server
    where = f"{path}: {stage}.base_url"
    if not settings.base_url:
        raise CascadeError(f"{where}: {spec.model} needs a base_url (an OpenAI-compatible {SERVES[stage]} server)")
    parts = urlsplit(settings.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CascadeError(f"{where}: must be http(s)://host/... (got scheme {parts.scheme!r})")
    if parts.username or parts.password:
        raise CascadeError(f"{where}: must not embed credentials (name the key's variable in api_key_env)")


MakeRoute = Callable[..., Route]
"""``routes.get_route``: handed in by the registry, which imports this module."""


def _chat_route(make_route: MakeRoute, spec: ModelSpec, key: Secret | None, **settings: Any) -> Route:
    # thinking goes as the model's route sends it (None: the provider's default)
    overrides = {"timeout_s": spec.timeout_s, "thinking": spec.thinking, **settings, **spec.settings_overrides()}
    return make_route(spec.model, api_key=key, no_key=key is None, **overrides)


class StageFailed(RouteError):
    """A stage that failed for good: the cascade's item fails with the stage's kind, and is not retried whole
    (the stage already spent its retries)."""

    @property
    def retryable(self) -> bool:
        return False


def stage_failed(stage: str, err: RouteError) -> StageFailed:
    # usage: the cascade's own attempt bills nothing, failed or not (the stage's attempts carry their cost)
    failed = StageFailed(
        err.kind, f"cascade {stage}: {err.message}", http_status=err.http_status, usage=dict(ZERO_USAGE)
    )
    failed.replica = err.replica
    return failed


class _DirectSender:
    """Without a run store: each stage through the one sender, with its retries and its own limiter."""

    def __init__(self, retry: RetryPolicy) -> None:
        self.retry = retry
        self.limiters: dict[str, AdaptiveLimiter] = {}

    async def __call__(self, stage: str, route: Route, request: ChatRequest) -> ChatResponse:
        prepared = await asyncio.to_thread(route.prepare, request) if request.clip else route.prepare(request)
        limiter = self.limiters.setdefault(stage, AdaptiveLimiter(route.settings.max_concurrency))
        sent = await send_with_retries(route, prepared, self.retry, limiter=limiter)
        if sent.response is None:
            raise sent.error or RouteError("input", f"cascade {stage}: not sent")
        return sent.response


class CascadeRoute:
    """A cascade of stage routes behind the Route protocol; its endpoint is ``cascade://NAME``."""

    def __init__(self, model_id: str, settings: RouteSettings, make_route: MakeRoute) -> None:
        """``make_route``: ``routes.get_route``, which makes the captioner's and the text model's routes."""
        self.model_id = model_id
        self.settings = settings
        given = model_id.removeprefix(PREFIX)
        if not given.strip():  # Path("") is ".", a directory: say what is missing instead
            raise CascadeError("cascade: needs a FILE: --model cascade:FILE, the path of a cascade file (TOML)")
        self.path = Path(given)
        self.spec = load_cascade(self.path)
        self.stages: dict[str, Route] = {}
        try:
            self._build(make_route)
        except OmnivchatError as err:  # a stage's route refused its settings: one line naming the file
            if str(err).startswith(f"{self.path}: "):
                raise
            raise CascadeError(f"{self.path}: {err}") from None
        self.sender: StageSender = _DirectSender(RetryPolicy())

    def _build(self, make_route: MakeRoute) -> None:
        """Every stage's route, each checked first for a usable base_url."""
        for stage in STAGES:
            spec = getattr(self.spec, stage)
            if spec is not None and resolve_settings(spec.model).route == "cascade":
                # a stage is one model: a cascade inside a cascade (its own file included) would build forever
                raise CascadeError(f"{self.path}: {stage}.model: {spec.model} is a cascade; a stage names one model")
            if spec is not None and not (stage == "asr" and spec.model == LOCAL_WHISPER):
                _check_stage_url(stage, spec, self.path)
        asr = self.spec.asr
        if asr.thinking is not None:  # accepted by the file's common fields, and never sent: refused instead
            raise CascadeError(f"{self.path}: asr.thinking: a speech recogniser has no thinking switch; remove it")
        if asr.model == LOCAL_WHISPER:
            self.stages["asr"] = LocalWhisperRoute(LOCAL_WHISPER, _local_settings(), asr.language, vad=asr.vad)
        else:
            asr_settings = resolve_settings(
                asr.model, overrides={"timeout_s": asr.timeout_s, **asr.settings_overrides()}
            )
            key = _stage_key("asr", asr, self.path)
            self.stages["asr"] = TranscriptionRoute(asr.model, asr_settings, key, asr.language)
        captioner = self.spec.captioner
        if captioner is not None:
            self.stages["captioner"] = _chat_route(
                make_route,
                captioner,
                _stage_key("captioner", captioner, self.path),
                media_input="frames",
                audio_delivery="none",
                frames_fps=captioner.frames_per_second,
                max_frames=captioner.max_frames,
                include_modalities=False,
            )
        llm = self.spec.llm
        self.stages["llm"] = _chat_route(
            make_route, llm, _stage_key("llm", llm, self.path), media_input="none", include_modalities=False
        )

    @property
    def endpoint(self) -> str:
        return f"cascade://{self.path.name}"

    @property
    def capacity(self) -> int:
        """Items in flight: the cascade's own concurrency (each stage has its own bound)."""
        return self.settings.max_concurrency

    def bind_stages(self, sender: StageSender) -> None:
        """Send every stage request through ``sender`` (the run loop's: stored, cached, priced)."""
        self.sender = sender

    def stage_identity(self) -> dict[str, Any]:
        """Every stage as a run's manifest records it: model, kind, endpoint (no port, query or key), the settings
        but the base URL, and its options. Never a key."""
        out: dict[str, Any] = {}
        for stage, route in self.stages.items():
            spec: ModelSpec = getattr(self.spec, stage)
            options = spec.model_dump(
                mode="json", exclude={"model", "base_url", "api_key_env", "no_key", "extra", "price"}
            )
            entry: dict[str, Any] = {"model": route.model_id, "endpoint": route.endpoint, "options": options}
            if isinstance(route, LocalWhisperRoute):
                entry["kind"] = "local-faster-whisper"
                entry["asr"] = route.identity()
            else:
                entry["kind"] = route.settings.route if stage != "asr" else "openai-transcriptions"
                entry["settings"] = route.settings.model_dump(mode="json", exclude={"base_url"})
            out[stage] = entry
        return out

    # ------------------------------------------------------------------------------------------ building

    def _perceive(self, clip: Path, item_id: str) -> dict[str, Any]:
        """What a clip holds for the stages: its hash, whether it has audible audio, and visible frames."""
        from omnivchat import media

        try:
            info = media.probe(clip)
            visible = False
            if info.has_video and "captioner" in self.stages:
                frames = media.sample_frames(clip, fps=1.0, max_frames=4)
                visible = any(int(f.array.max()) > BLACK_LEVEL for f in frames)
            return {
                "sha256": media.content_hash(clip),
                "audio": info.has_audio and not info.is_silent,
                "video": info.has_video,
                "visible": visible,
            }
        except media.MediaError as err:
            raise media_failure(err, f"item {item_id}: ") from None

    def prepare(self, request: ChatRequest) -> Prepared:
        if request.reply_audio is not None:
            raise RouteError("unsupported", f"item {request.item_id}: a cascade answers in text only, not aloud")
        clips = [turn.clip for turn in request.history] + [request.clip]
        seen = [None if clip is None else self._perceive(clip, request.item_id) for clip in clips]
        if request.clip is None and not request.text:
            raise RouteError("unsupported", f"item {request.item_id}: a request needs a clip or a text part")
        description = {
            "stages": {s: {"model": r.model_id, "endpoint": r.endpoint} for s, r in self.stages.items()},
            "stages_sha256": sha256_json(self.stage_identity()),
            "system": request.system_prompt,
            "history": [
                {"clip": s, "text": t.text, "reply": t.reply} for s, t in zip(seen[:-1], request.history, strict=True)
            ],
            "clip": seen[-1],
            "text": request.text,
            "sampling": request.sampling.model_dump(mode="json"),
            "response_format": request.response_format,
        }
        key = sha256_json({"endpoint": self.endpoint, "payload": description})
        final = seen[-1] or {}
        # Without a captioner the video never reaches the text model: say so, as a route that drops a stream does.
        dropped = ("video",) if final.get("video") and "captioner" not in self.stages else ()
        delivered = Delivered(video=bool(final.get("visible")), audio=bool(final.get("audio")), dropped=dropped)
        return Prepared(key=key, request=request, description=description, delivered=delivered)

    # ------------------------------------------------------------------------------------------- sending

    async def _stage(self, stage: str, request: ChatRequest) -> ChatResponse:
        try:
            return await self.sender(stage, self.stages[stage], request)
        except RouteError as err:
            raise stage_failed(stage, err) from None

    async def _hear_and_see(self, clip: Path, seen: dict[str, Any], item_id: str) -> tuple[str, str]:
        """(transcript, captions) of one clip: each empty when there is nothing to hear or see."""

        async def hear() -> str:
            if not seen["audio"]:
                return ""
            return (await self._stage("asr", ChatRequest(item_id=item_id, clip=clip))).text.strip()

        async def see() -> str:
            if "captioner" not in self.stages or not seen["visible"]:
                return ""
            captioner = self.spec.captioner
            assert captioner is not None
            request = ChatRequest(
                item_id=item_id, clip=clip, text=captioner.prompt, sampling=captioner.sampling(), require_text=True
            )
            return (await self._stage("captioner", request)).text.strip()

        transcript, captions = await asyncio.gather(hear(), see())
        return transcript, captions

    async def send(self, prepared: Prepared) -> ChatResponse:
        """One attempt: every stage in order (ASR and captioner of a clip side by side), then the text model."""
        started = time.perf_counter()
        request = prepared.request
        seen = [prepared.description["clip"]] + [h["clip"] for h in prepared.description["history"]]
        clips = [request.clip] + [turn.clip for turn in request.history]
        ids = [request.item_id] + [f"{request.item_id}#turn{n}" for n in range(1, len(request.history) + 1)]
        heard = await asyncio.gather(
            *(
                self._hear_and_see(clip, s, i) if clip is not None and s is not None else _nothing()
                for clip, s, i in zip(clips, seen, ids, strict=True)
            )
        )
        text = llm_prompt(request, heard[0], heard[1:])
        llm = self.spec.llm
        sampling = Sampling(
            temperature=request.sampling.temperature if request.sampling.temperature is not None else llm.temperature,
            top_p=request.sampling.top_p,
            max_tokens=request.sampling.max_tokens or llm.max_tokens,
            seed=request.sampling.seed,
        )
        ask = ChatRequest(
            item_id=request.item_id,
            system_prompt=request.system_prompt,
            text=text,
            sampling=sampling,
            require_text=request.require_text,
            response_format=request.response_format,
        )
        answer = await self._stage("llm", ask)
        return ChatResponse(
            text=answer.text,
            reasoning=answer.reasoning,
            usage=dict(ZERO_USAGE),  # each stage's attempts carry their own cost; this one adds none
            latency_s=time.perf_counter() - started,
            model=answer.model,
            http_status=answer.http_status,
            delivered=prepared.delivered,
            redacted=answer.redacted,
        )

    async def aclose(self) -> None:
        for route in self.stages.values():
            await route.aclose()


async def _nothing() -> tuple[str, str]:
    return "", ""


def llm_prompt(request: ChatRequest, final: tuple[str, str], history: list[tuple[str, str]]) -> str:
    """The text model's prompt: what the stages heard and saw (earlier turns with their replies, then the clip),
    then the benchmark's own text part."""
    lines: list[str] = []
    if request.clip is not None or request.history:
        lines.append(
            "You cannot see or hear the video yourself. A speech recogniser transcribed its speech"
            + (" and a captioner described its frames." if any(seen for _, seen in [final, *history]) else ".")
        )
    for n, (turn, (heard, seen)) in enumerate(zip(request.history, history, strict=True), start=1):
        lines.append(f"Earlier turn {n}, the user's speech: {heard or '(no speech)'}")
        if seen:
            lines.append(f"Earlier turn {n}, the video: {seen}")
        if turn.text:
            lines.append(f"Earlier turn {n}, the user's text: {turn.text}")
        lines.append(f"Earlier turn {n}, your reply: {turn.reply}")
    transcript, captions = final
    if request.clip is not None:
        lines.append(f"Speech in the video: {transcript or '(no speech)'}")
        if captions:
            lines.append(f"The video shows: {captions}")
    if request.text:
        lines.append("")
        lines.append(request.text)
    return "\n".join(lines).strip()


def _local_settings() -> RouteSettings:
    """A local model's settings: no server, no key, no price (it costs nothing)."""
    return RouteSettings(
        route="openai", media_input="none", max_concurrency=1, price={"input_per_mtok": 0.0, "output_per_mtok": 0.0}
    )
