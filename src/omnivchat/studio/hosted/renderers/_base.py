"""The shared base of the hosted video renderers: submit a generation task, poll it with an interval under an overall
timeout, download the clip, write it to ``out_path`` atomically, probe it, and return a :class:`Clip` with its cost.

Failures are sorted for the engine (docs/studio.md, "The engine"):

- a moderation refusal of the prompt (at submit or in the task) -> ``RenderRefused``: the script must change, the
  engine rewrites it;
- the key or its permissions rejected (HTTP 401/403, google.rpc ``UNAUTHENTICATED`` / ``PERMISSION_DENIED``) ->
  ``RenderKeyRejected``, and a refusal of an input medium that no rewrite can change (Seedance: a real face in a
  reference image) -> ``RenderInputRefused``: neither is a render failure or a refusal of the script, so the
  engine stops the instance (a rerun resumes it). A rejected key is remembered per model: later renders with it
  fail at once, with no request;
- a task that fails, times out (``timeout_s``; the task is cancelled where the API can), or ends without a usable
  clip -> ``RenderFailed``: re-seed;
- a transient HTTP failure at submit (429, 5xx, a dropped connection, no answer within ``request_timeout_s``) ->
  ``RouteError`` with a retryable kind, which the engine's call layer retries. Nothing has been paid for then.
  While polling, the same failures are tolerated until the overall timeout: retrying the whole call would pay for
  a second clip.

Whatever a server sends is redacted of the key (``routes.Redactor``) before it is put in an exception or the
clip's notes, and the key travels only in a header, never in a URL; a download from another host (a signed
storage URL) is made without it.

The engine calls ``render`` from its worker threads. The HTTP work runs on one event loop thread: the hosted
agents' shared ``LoopThread`` when one is given, else a private one started on first use. (``asyncio.run`` per
call would also work, but would fail when called from a thread that already runs a loop.) Each render opens
its own aiohttp session: a render takes minutes, so a session's set-up cost is nothing, and no session outlives
the loop it was made on. Media work (planning, frame extraction, probing) runs on the calling thread.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat.errors import OmnivchatError
from omnivchat.routes import CredentialError, Redactor, RouteError, Secret, resolve_api_key, retry_after_s, status_kind
from omnivchat.studio.engine import Clip, RenderFailed, RenderRefused, RenderRequest
from omnivchat.studio.hosted._bridge import LoopThread
from omnivchat.studio.hosted.renderers._prices import cost_usd, price_for
from omnivchat.studio.hosted.renderers._prompt import build_prompt
from omnivchat.studio.hosted.renderers._refs import Capabilities, MediaPlan, plan_media

RENDERER_VERSION = "2"
"""Part of every renderer's name, hence of the engine's call cache key: bump it when a request changes."""

MAX_JSON_BYTES = 64 * 1024 * 1024
"""An API answer larger than this is refused (an inline base64 clip of about 48 MB fits)."""

Uploader = Callable[[Path], str]
"""A user-supplied hook: a local file -> a URL the provider can fetch (e.g. a signed object-storage URL)."""


class RendererConfigError(OmnivchatError, ValueError):
    """A video renderer's configuration is invalid; the message names the field."""


class RenderKeyRejected(OmnivchatError):
    """The provider rejected the key or its permissions (a blocked or wrong key, a model the account may not use):
    no rewrite or re-seed can help, so the engine stops the instance instead of looping."""


class RenderInputRefused(OmnivchatError):
    """The provider refused an input medium (a reference image, a first frame), not the prompt: a rewritten script
    sends the same media, so the engine stops the instance instead of rewriting."""


_KEY_STATUSES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})


class VideoRendererConfig(BaseModel):
    """What every hosted video backend takes. ``base_url`` and the key's variable are how to reach it; the other
    fields shape the clip (and so are part of the renderer's name, see ``HostedVideoRenderer.name``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    model: str = Field(min_length=1)
    base_url: str | None = Field(None, description="The API root (scheme and host); None: the provider's default.")
    api_key_env: str | None = Field(None, description="Environment variable holding the key; never stored.")
    resolution: str = "720p"
    aspect_ratio: str = "16:9"
    send_seed: bool = Field(True, description="Send the engine's seed where the API takes one.")
    extend: bool = Field(False, description="Extend an earlier clip (where supported) instead of its final frame.")
    negative_prompt: str | None = None
    poll_interval_s: float = Field(10.0, gt=0)
    timeout_s: float = Field(1200.0, gt=0, description="Overall wait for the task, from submission.")
    request_timeout_s: float = Field(120.0, gt=0, description="One HTTP request (submit, poll or download).")
    price_per_s: float | None = Field(None, ge=0, description="Overrides the default price table.")
    max_download_bytes: int = Field(2 * 1024**3, gt=0)
    trust_env: bool = Field(True, description="Go through HTTP(S)_PROXY from the environment (NO_PROXY honoured).")
    extra: dict[str, Any] = Field(default_factory=dict, description="Provider fields merged into the request.")


OPERATIONAL_FIELDS = frozenset(
    {
        "base_url",
        "api_key_env",
        "poll_interval_s",
        "timeout_s",
        "request_timeout_s",
        "price_per_s",
        "max_download_bytes",
        "trust_env",
    }
)
"""Fields that change how a clip is fetched or priced, not the clip: left out of the renderer's name."""


@dataclass
class Job:
    """One render on its way: the request, what is sent, and notes for the trace."""

    request: RenderRequest
    clip_s: int
    media: MediaPlan
    prompt: str
    seed: int | None
    model: str
    started: float = 0.0
    payload: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pending:
    status: str


@dataclass(frozen=True)
class Ready:
    """A finished task: the clip inline (``data``) or at ``url``; ``auth``: the URL is the API's own and needs the
    key (sent only when the URL is on the API's host)."""

    data: bytes | None = None
    url: str | None = None
    auth: bool = False
    notes: dict[str, Any] = field(default_factory=dict)


def error_fields(payload: Any) -> tuple[str, str]:
    """(code, message) of an error answer in any of the shapes these APIs use: google.rpc ``{error: {code,
    message, status}}``, ModelArk and OpenAI ``{error: {code, message}}``, DashScope ``{code, message}``, FastAPI
    ``{detail}``."""
    if not isinstance(payload, dict):
        return "", ""
    err = payload.get("error")
    if isinstance(err, dict):
        code, message = err.get("status") or err.get("code") or err.get("type"), err.get("message")
    elif err:
        code, message = payload.get("code"), err
    else:
        code, message = payload.get("code"), payload.get("message") or payload.get("detail")
    shown = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False) if message else ""
    return ("" if code is None else str(code)), shown


def reason(code: str, message: str) -> str:
    """The end of a failure's message: ': CODE message', or '' when the server gave neither."""
    shown = " ".join(part for part in (code, message) if part)
    return f": {shown}" if shown else ""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def check_base_url(url: str, what: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RendererConfigError(f"{what}: base_url must be http(s)://host[:port]; got scheme {parts.scheme!r}")
    if parts.username or parts.password:
        raise RendererConfigError(f"{what}: base_url must not hold credentials; set api_key_env instead")
    return url.rstrip("/")


def b64_file(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


class HostedVideoRenderer(ABC):
    """The Renderer protocol over a provider's asynchronous task API; one subclass per provider implements
    ``submit`` and ``check`` and says what it supports (``capabilities``, ``duration_limits``)."""

    kind: ClassVar[str] = ""
    config_type: ClassVar[type[VideoRendererConfig]] = VideoRendererConfig
    key_required: ClassVar[bool] = True
    seed_range: ClassVar[int | None] = 2**31
    """Seeds are sent modulo this (None: the API exposes no seed)."""

    def __init__(
        self,
        config: VideoRendererConfig | Mapping[str, Any] | None = None,
        *,
        api_key: Secret | None = None,
        loop: LoopThread | None = None,
        upload: Uploader | None = None,
        **fields: Any,
    ) -> None:
        """``config`` (or keyword fields, which win): see the backend's config class. ``api_key``: the key, else
        read from ``api_key_env`` here, before any request. ``loop``: the hosted agents' event loop thread.
        ``upload``: turns a local file into a URL, for media a provider only takes by URL (videos, audio)."""
        data = config.model_dump() if isinstance(config, BaseModel) else dict(config or {})
        data.update(fields)
        data.setdefault("kind", self.kind)
        try:
            self.config = self.config_type.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(map(str, first["loc"])) or "config"
            raise RendererConfigError(f"{self.kind} renderer: {where}: {first['msg']}") from None
        what = f"{self.kind} renderer ({self.config.model})"
        self.base_url = check_base_url(self.config.base_url or self.default_base_url(), what)
        key = api_key if api_key is not None else resolve_api_key(self.config.api_key_env)
        if key is None and self.key_required:
            if not self.config.api_key_env:
                raise CredentialError(f"{what} needs a key: set api_key_env to the variable that holds it")
            raise CredentialError(f"{what} needs its key in the environment variable {self.config.api_key_env}")
        self._key = key
        self._redactor = Redactor(key)
        self._shared_loop = loop
        self._own_loop: LoopThread | None = None
        self._loop_lock = threading.Lock()
        self.upload = upload
        self._rejected: dict[str, str] = {}  # model -> the message of the key rejection it got
        from omnivchat._canonical import sha256_json

        shaping = self.config.model_dump(mode="json", exclude=set(OPERATIONAL_FIELDS))
        self.name = f"{self.kind}:{self.config.model}/r{RENDERER_VERSION}-{sha256_json(shaping)[:8]}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, base_url={self.base_url!r})"

    @property
    def priced(self) -> bool:
        """Whether a render's cost is known (its model and resolution have a price, or ``price_per_s`` is set)."""
        return price_for(self.config.model, self.config.resolution, self.config.price_per_s) is not None

    # -------------------------------------------------------------------------------------- provider hooks

    @abstractmethod
    def default_base_url(self) -> str:
        """Each provider says."""

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key.reveal()}"} if self._key is not None else {}

    @abstractmethod
    def duration_limits(self) -> tuple[int, int, tuple[int, ...]]:
        """(shortest, longest, the only durations allowed or ()) in whole seconds."""

    @abstractmethod
    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        """Each provider says."""

    def adjust(self, job: Job) -> None:
        """Last changes once the media are planned (a model for the mode, a duration a mode requires)."""
        return None  # optional hook: most providers need nothing here

    @abstractmethod
    async def submit(self, session: Any, job: Job) -> str:
        """Each provider says."""

    @abstractmethod
    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        """Each provider says."""

    def refusal(self, code: str, message: str) -> bool:
        """Whether an error (HTTP 4xx at submit, or a failed task) is a moderation refusal of the prompt."""
        return False

    def input_refusal(self, code: str, message: str) -> bool:
        """Whether an error is the provider's refusal of an input medium (checked before ``refusal``)."""
        return False

    def key_rejection(self, status: int, code: str) -> bool:
        """Whether an error rejects the key or its permissions: HTTP 401/403 or a google.rpc status saying so
        (checked before ``refusal``: a blocked key's message may say "blocked")."""
        return status in (401, 403) or code in _KEY_STATUSES

    async def cancel(self, session: Any, job: Job, handle: str) -> None:
        """Cancel a task that ran past ``timeout_s``, where the API can (best effort: the render fails anyway)."""
        return None  # optional hook: not every API cancels

    def task_error(self, what: str, code: str, message: str, *, status: int = 0) -> Exception:
        """The exception for a failed task or an error answer: key rejected, input refused, prompt refused, or a
        failed render."""
        if self.key_rejection(status, code):
            return self.key_rejected(what, status, code, message)
        if self.input_refusal(code, message):
            return RenderInputRefused(
                self.text(f"{self.name}: {what}: the provider refused an input medium{reason(code, message)}", 600)
            )
        if self.refusal(code, message):
            return self.refused(what, code, message)
        return self.failed(f"{what}{reason(code, message)}")

    def error_kind(self, status: int, code: str) -> str:
        return status_kind(status)

    def finished(self, job: Job, clip: Clip) -> None:
        """Called with each clip delivered (Gemini Omni remembers its interaction, to extend it later)."""
        return None  # optional hook: most providers need nothing here

    # ------------------------------------------------------------------------------------------- helpers

    def text(self, text: str, limit: int = 300) -> str:
        """Server-derived ``text``, redacted of the key and then cut."""
        return self._redactor.cut(text, limit)

    def refused(self, what: str, code: str, message: str) -> RenderRefused:
        detail = f"{code}: {message}" if code and message else code or message or "no reason given"
        return RenderRefused(self.text(f"{self.name}: {what}: the provider refused the prompt ({detail})", 600))

    def failed(self, message: str) -> RenderFailed:
        return RenderFailed(self.text(f"{self.name}: {message}", 600))

    def key_rejected(self, what: str, status: int, code: str, message: str) -> RenderKeyRejected:
        where = f"the key in {self.config.api_key_env}" if self.config.api_key_env else "the key"
        http = f"HTTP {status} " if status else ""
        return RenderKeyRejected(
            self.text(
                f"{self.name}: {what}: {http}the provider rejected {where} or its permissions"
                f"{reason(code, message)}; fix the key or the account: every render with it fails the same way",
                600,
            )
        )

    def url(self, path: str) -> str:
        return self.base_url + path

    def media_url(self, path: Path, kind: str) -> str | None:
        """A URL for ``path``: the upload hook's, else a base64 data URL for an image; None for a video or audio
        without the hook (the provider fetches those by URL only)."""
        if self.upload is not None:
            return self.upload(path)
        if kind == "image":
            from omnivchat.media import to_data_url

            return to_data_url(path)
        return None

    def choose_seconds(self, script_s: float) -> int:
        shortest, longest, allowed = self.duration_limits()
        need = max(shortest, math.ceil(round(script_s, 3)))
        fits = [d for d in allowed if d >= need] if allowed else [need] if need <= longest else []
        if not fits:
            raise RenderRefused(
                f"{self.name}: the script lasts {script_s:g} s and {self.config.model} renders at most {longest} s: "
                "shorten the script"
            )
        return min(fits)

    async def request_json(
        self,
        session: Any,
        method: str,
        url: str,
        *,
        what: str,
        body: Any = None,
        form: Any = None,
        headers: Mapping[str, str] | None = None,
        empty_ok: bool = False,
    ) -> Any:
        """One API call; its JSON answer (``empty_ok``: an empty 2xx body is ``{}``, as a DELETE may answer).
        Non-2xx answers become RenderKeyRejected (401/403), RenderInputRefused or RenderRefused (moderation, 4xx
        only) or RouteError with the status's kind; the provider's code and message are kept, redacted and cut."""
        import aiohttp

        sent = {"Accept": "application/json", **self.auth_headers(), **(headers or {})}
        data: Any = form
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            sent["Content-Type"] = "application/json"
        failure: Exception | None = None
        status, size, retry_after = 0, 0, None
        chunks: list[bytes] = []
        try:
            async with session.request(method, url, data=data, headers=sent) as response:
                status = response.status
                retry_after = response.headers.get("Retry-After")
                async for chunk in response.content.iter_chunked(1 << 20):
                    size += len(chunk)
                    if size > MAX_JSON_BYTES:
                        break
                    chunks.append(chunk)
        except TimeoutError:
            failure = RouteError(
                "timeout", f"{self.name}: {what}: no answer within {self.config.request_timeout_s:g} s"
            )
        except (aiohttp.ClientError, OSError) as err:
            failure = RouteError("connection", self.text(f"{self.name}: {what}: {type(err).__name__}: {err}"))
        if failure is not None:
            raise failure  # outside the handler: the unredacted original is not chained to it
        if size > MAX_JSON_BYTES:
            # Not retryable: the same task answers the same way (Gemini Omni: use delivery "uri" for large clips).
            raise self.failed(f"{what}: the answer is larger than {MAX_JSON_BYTES} bytes")
        raw = b"".join(chunks)
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        if not 200 <= status < 300:
            raise self._http_failure(status, payload, raw, retry_after, what)
        if payload is None and empty_ok and not raw.strip():
            return {}
        if payload is None:
            raise RouteError(
                "malformed", f"{self.name}: {what}: HTTP {status} but the answer is not JSON", http_status=status
            )
        return payload

    def _http_failure(self, status: int, payload: Any, raw: bytes, retry_after: str | None, what: str) -> Exception:
        code, message = error_fields(payload)
        if payload is None and raw:
            message = " ".join(raw[:2000].decode("utf-8", "replace").split())  # a proxy's page, say
        if 400 <= status < 500 and status not in (408, 429):
            error = self.task_error(what, code, message, status=status)
            if not isinstance(error, RenderFailed):
                return error
        detail = (
            f"{self.name}: {what}: HTTP {status}" + (f" {code}" if code else "") + (f": {message}" if message else "")
        )
        return RouteError(
            self.error_kind(status, code),  # type: ignore[arg-type]  # error_kind returns one of RouteError's kinds
            self.text(detail),
            http_status=status,
            retry_after=retry_after_s(retry_after),
        )

    # -------------------------------------------------------------------------------------------- render

    def render(self, request: RenderRequest) -> Clip:
        """Render ``request`` (blocking): the Renderer protocol."""
        job = self.prepare(request)
        try:
            return self._loop().run(self._execute(job))
        finally:
            job.media.cleanup()

    async def arender(self, request: RenderRequest) -> Clip:
        """The same, from async code (media work on a worker thread)."""
        job = await asyncio.to_thread(self.prepare, request)
        try:
            return await self._execute(job)
        finally:
            job.media.cleanup()

    def close(self) -> None:
        """Stop the private event loop thread, if one was started (a shared one is its owner's to close)."""
        with self._loop_lock:
            own, self._own_loop = self._own_loop, None
        if own is not None:
            own.close()

    def _loop(self) -> LoopThread:
        if self._shared_loop is not None:
            return self._shared_loop
        with self._loop_lock:
            if self._own_loop is None:
                self._own_loop = LoopThread()
            return self._own_loop

    def prepare(self, request: RenderRequest) -> Job:
        """Everything before the first request: the duration (a script too long is refused, so that it is
        rewritten), the media roles, the prompt, the seed. Raises before any request is made."""
        clip_s = self.choose_seconds(request.script.duration_s)
        media = plan_media(request, self.capabilities(request, clip_s), extend=self.config.extend)
        try:
            seed = request.seed % self.seed_range if self.config.send_seed and self.seed_range else None
            job = Job(request, clip_s, media, "", seed, self.config.model)
            self.adjust(job)
            job.prompt = build_prompt(
                request.script, request.fragments, clip_s=job.clip_s, placeholders=media.placeholders()
            )
            self.encode(job)
        except BaseException:
            media.cleanup()
            raise
        return job

    def encode(self, job: Job) -> None:
        """Turn the planned media into what the request carries (base64, data URLs, uploads): blocking work."""
        return None  # optional hook: most providers need nothing here

    async def _execute(self, job: Job) -> Clip:
        failure: Exception
        try:
            return await self._run(job)
        except RouteError as err:
            failure = self._redactor.error(err)
        except RenderRefused as err:
            failure = RenderRefused(self._redactor.text(str(err)))
        except RenderFailed as err:
            failure = RenderFailed(self._redactor.text(str(err)))
        except RenderKeyRejected as err:
            failure = RenderKeyRejected(self._redactor.text(str(err)))
            self._rejected[job.model] = str(failure)
        except RenderInputRefused as err:
            failure = RenderInputRefused(self._redactor.text(str(err)))
        raise failure  # outside the handlers: nothing unredacted rides along as __context__

    async def _run(self, job: Job) -> Clip:
        import aiohttp

        if job.model in self._rejected:  # a blocked key stays blocked: no request, the same clear error
            raise RenderKeyRejected(self._rejected[job.model])

        out = job.request.out_path
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.part")
        timeout = aiohttp.ClientTimeout(total=self.config.request_timeout_s)
        try:
            async with aiohttp.ClientSession(timeout=timeout, trust_env=self.config.trust_env) as session:
                job.started = time.monotonic()
                handle = await self.submit(session, job)
                job.notes["task"] = handle
                ready = await self._wait(session, job, handle)
                job.notes.update(ready.notes)
                await self._save(session, ready, tmp)
            clip = await asyncio.to_thread(self._finish, job, tmp)
        finally:
            tmp.unlink(missing_ok=True)
        self.finished(job, clip)
        return clip

    async def _wait(self, session: Any, job: Job, handle: str) -> Ready:
        interval = self.config.poll_interval_s
        deadline = job.started + self.config.timeout_s
        status, polls, transient = "submitted", 0, ""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = f"; last poll failure: {transient}" if transient else ""
                cancelled = await self._cancel(session, job, handle)
                raise self.failed(
                    f"task {handle} not finished after {self.config.timeout_s:g} s (last status {status}){why}"
                    f"{cancelled}"
                )
            await asyncio.sleep(min(interval, left))
            polls += 1
            try:
                state = await self.check(session, job, handle)
            except RouteError as err:
                if not err.retryable:
                    raise
                transient = err.message  # polling again is free; submitting again would pay twice
                continue
            job.notes["polls"] = polls
            if isinstance(state, Ready):
                return state
            status = self.text(state.status, 80)

    async def _cancel(self, session: Any, job: Job, handle: str) -> str:
        """Cancel the timed-out task (one request, its failure only noted): '; cancelled', '' or why not."""
        if type(self).cancel is HostedVideoRenderer.cancel:
            return ""
        try:
            await self.cancel(session, job, handle)
        except (RouteError, OmnivchatError) as err:
            job.notes["cancel_failed"] = self.text(str(err), 200)
            return "; cancelling it failed"
        job.notes["cancelled"] = True
        return "; the task was cancelled"

    async def _save(self, session: Any, ready: Ready, tmp: Path) -> None:
        if ready.data is not None:
            if len(ready.data) > self.config.max_download_bytes:
                raise self.failed(f"the clip is larger than max_download_bytes ({self.config.max_download_bytes})")
            await asyncio.to_thread(tmp.write_bytes, ready.data)
            return
        if not ready.url:
            raise self.failed("the finished task holds no clip")
        await self.download(session, ready.url, tmp, auth=ready.auth)

    async def download(self, session: Any, url: str, dest: Path, *, auth: bool) -> None:
        """Stream ``url`` to ``dest``; transient failures are tried three times, then the render fails."""
        import aiohttp

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise self.failed(f"the clip is at {parts.scheme}://..., which this renderer cannot download")
        port = f":{parts.port}" if parts.port else ""
        shown = self.text(f"{parts.scheme}://{parts.hostname}{port}{parts.path}", 200)  # no query: signed URLs
        headers = self.auth_headers() if auth and _origin(url) == _origin(self.base_url) else {}
        last = ""
        for attempt in range(3):
            if attempt:
                await asyncio.sleep(min(self.config.poll_interval_s, 5.0) * attempt)
            status, size = 0, 0
            error: str | None = None
            try:
                async with session.get(url, headers=headers) as response:
                    status = response.status
                    if status == 200:
                        with dest.open("wb") as sink:
                            async for chunk in response.content.iter_chunked(1 << 20):
                                size += len(chunk)
                                if size > self.config.max_download_bytes:
                                    break
                                sink.write(chunk)
            except TimeoutError:
                error = f"no complete answer within {self.config.request_timeout_s:g} s"
            except (aiohttp.ClientError, OSError) as err:
                error = self.text(f"{type(err).__name__}: {err}")
            if size > self.config.max_download_bytes:
                raise self.failed(f"the clip at {shown} exceeds max_download_bytes ({self.config.max_download_bytes})")
            if error is None and status == 200:
                return
            last = error or f"HTTP {status}"
            if error is None and status_kind(status) == "http_error":
                break  # gone (404, an expired signed URL): asking again will not bring it back
        raise self.failed(f"downloading the clip from {shown} failed: {last}")

    def _finish(self, job: Job, tmp: Path) -> Clip:
        from omnivchat._canonical import sha256_file
        from omnivchat.media import MediaError, probe

        try:
            info = probe(tmp, energy=False, verify=True)
        except MediaError as err:
            raise self.failed(f"the provider's file is not a readable video ({str(err)[-200:]})") from None
        if not info.has_video:
            raise self.failed("the provider's file has no video stream")
        notes = job.notes
        if job.media.extend is not None:
            info = self._cut_extension_head(job, tmp, info)
        if not info.has_audio:
            notes["no_audio_track"] = True  # the Reviewer judges it; the clip is still delivered
        out = job.request.out_path
        os.replace(tmp, out)
        duration = round(info.duration, 3)
        price = price_for(job.model, self.config.resolution, self.config.price_per_s)
        notes.update(
            {
                "backend": self.kind,
                "model": job.model,
                "requested_s": job.clip_s,
                "resolution": self.config.resolution,
                "seed_sent": job.seed,
                "references": dict(job.media.roles()),
                "price_usd_per_s": None if price is None else price.usd_per_s,
                "price_source": None if price is None else price.source,
                "prompt": job.prompt,
            }
        )
        if job.media.dropped:
            notes["references_not_sent"] = dict(job.media.dropped)
        return Clip(
            path=out.name,
            sha256=sha256_file(out),
            duration_s=duration,
            seed=job.request.seed,
            cost_usd=cost_usd(duration, price),
            notes=self._redactor.data(notes),
        )

    def _cut_extension_head(self, job: Job, tmp: Path, info: Any) -> Any:
        """An extension may come back as the earlier clip followed by the new part: keep the new part only (a turn's
        clip is that turn alone). Whether each provider returns the whole is unconfirmed, hence the check."""
        from omnivchat.media import probe, trim

        assert job.media.extend is not None
        earlier = probe(job.media.extend[1], energy=False).duration
        if info.duration < earlier + 1.0 or info.duration <= job.clip_s + 0.5:
            return info
        cut = tmp.with_name(tmp.name + ".cut.mp4")
        try:
            trim(tmp, info.duration + 1.0, start_s=earlier, out=cut)
            os.replace(cut, tmp)
        finally:
            cut.unlink(missing_ok=True)
        job.notes["extension_head_cut_s"] = round(earlier, 3)
        return probe(tmp, energy=False)
