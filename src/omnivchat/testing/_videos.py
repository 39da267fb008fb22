"""A loopback mock of five video-generation APIs, for the hosted renderers' tests: real HTTP on 127.0.0.1, one
aiohttp app, the providers' own paths and field names (shared/reference/video-generation.md).

- Gemini Omni: ``POST /v1/interactions``, ``GET /v1/interactions/{id}``, ``POST /v1/interactions/{id}/cancel`` (and
  the same under ``/v1beta``);
- Veo on Vertex AI: ``POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:predictLongRunning`` and
  ``...:fetchPredictOperation``;
- DashScope (Wan): ``POST /api/v1/services/aigc/video-generation/video-synthesis``, ``GET /api/v1/tasks/{id}``,
  ``POST /api/v1/tasks/{id}/cancel``, and its temporary storage: ``GET /api/v1/uploads?action=getPolicy`` gives a
  form policy whose ``upload_host`` is ``POST /oss`` here (the uploaded objects are kept, see ``uploads``); an
  ``oss://`` URL in a task must name an uploaded object and come with ``X-DashScope-OssResourceResolve: enable``;
- ModelArk (Seedance): ``POST /api/v3/contents/generations/tasks``, ``GET`` and ``DELETE``
  ``/api/v3/contents/generations/tasks/{id}``;
- OpenAI-style videos (SGLang diffusion): ``POST /v1/videos``, ``GET /v1/videos/{id}``, ``GET /v1/videos/{id}/content``;

and ``GET /files/{name}``, where the URL-delivered clips live. Each submitted task follows a :class:`VideoTask`
(the next one scripted, else the default): finished after K polls, failed, refused (at submit or in the task),
never finished, an HTTP error at submit (a blocked key's 403 among them), ended in another state (Gemini's
``budget_exceeded``...), an error in an HTTP 200 answer, a step's error, a refused input image, a download that
404s, or a hostile server echoing the caller's key into its task ids, error messages and URLs. Every request is
recorded, multipart forms included, and every cancelled task (``cancelled``).

The mock serves whatever clip bytes it is given: rendering them is the test's job (this package imports nothing
of the tool).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from aiohttp import web
from multidict import CIMultiDictProxy

from omnivchat.testing._loopback import HOST

Api = Literal["gemini", "veo", "dashscope", "ark", "openai"]
Outcome = Literal["succeed", "fail", "refuse", "never"]

_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
_GOOGLE_STATUS |= {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


@dataclass(frozen=True)
class VideoTask:
    """How the mock answers one submitted task."""

    pending_polls: int = 1
    """Polls answered "still running" before the outcome."""
    outcome: Outcome = "succeed"
    """``never``: every poll says running."""
    submit_status: int = 200
    """Another status answers the submission with the provider's error body (429 and 5xx: retryable)."""
    submit_refusal: bool = False
    """The submission is refused with the provider's moderation error (HTTP 400)."""
    retry_after: float | None = None
    download_status: int = 200
    """The status of the clip's URL (``/files/...`` or ``/v1/videos/{id}/content``)."""
    delivery: Literal["default", "inline", "url"] = "default"
    """Gemini and Veo: the clip inline (default) or by URL (Gemini ``uri``; Veo ``gcsUri``)."""
    echo_key: bool = False
    """Hostile: the key the request carried goes into task ids, error messages and URLs."""
    key_blocked: bool = False
    """The submission is answered 403 in the provider's shape for a blocked key (Google: ``PERMISSION_DENIED``,
    "Requests from this API key are blocked.")."""
    end_status: str | None = None
    """Gemini: the interaction ends in this status with no clip (``budget_exceeded``, ``requires_action``...)."""
    error_body: bool = False
    """An error answered with HTTP 200: Gemini's poll ``{"error": {...}}``; DashScope's submission a top-level
    ``{"code": "DataInspectionFailed", ...}``."""
    step_error: bool = False
    """Gemini: the interaction completes with a ``model_output`` step holding a safety ``error`` and no video."""
    refusal_code: str | None = None
    """The code of a refusal (``submit_refusal`` or ``outcome="refuse"``) instead of the provider's usual one
    (ModelArk: ``InputImageSensitiveContentDetected.PrivacyInformation``)."""


@dataclass(frozen=True)
class VideoRequest:
    method: str
    path: str
    headers: CIMultiDictProxy[str]
    json: Any
    """The JSON body (None when not JSON)."""
    form: dict[str, str] = field(default_factory=dict)
    """Multipart text fields."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Multipart files, by field name."""
    time: float = 0.0
    query: dict[str, str] = field(default_factory=dict)
    """The URL's query parameters."""


@dataclass
class _Task:
    api: Api
    plan: VideoTask
    key: str
    polls: int = 0
    body: Any = None


def _key_of(request: web.Request) -> str:
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        return auth.removeprefix("Bearer ").strip()
    return request.headers.get("x-goog-api-key", "")


def _json(status: int, obj: Any, retry_after: float | None = None) -> web.Response:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else None
    return web.json_response(obj, status=status, headers=headers)


class VideoMockServer:
    """The five APIs on one port of 127.0.0.1, on a thread of its own. ``video``: the MP4 bytes every successful
    task delivers. ``api_key``: when set, a request without it (in the provider's header) gets 401."""

    def __init__(self, video: bytes, *, default: VideoTask | None = None, api_key: str | None = None) -> None:
        self.video = video
        self.default = default or VideoTask()
        self.api_key = api_key
        self._queue: collections.deque[VideoTask] = collections.deque()
        self._tasks: dict[str, _Task] = {}
        self._requests: list[VideoRequest] = []
        self.uploads: dict[str, bytes] = {}
        """DashScope's temporary storage: object key -> bytes."""
        self.cancelled: list[str] = []
        """The ids of the tasks a client cancelled."""
        self.earlier_video = b"the earlier turn's clip (mock)"
        """Gemini: the video of the earlier turn an extension's answer repeats in its steps."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self.port = 0

    # -- programming and observing ---------------------------------------------------------------------

    def script(self, *tasks: VideoTask) -> Self:
        """The plans of the next submissions, in arrival order."""
        with self._lock:
            self._queue.extend(tasks)
        return self

    @property
    def requests(self) -> list[VideoRequest]:
        with self._lock:
            return list(self._requests)

    def submissions(self) -> list[VideoRequest]:
        """The task-creating requests only (not polls, cancels or storage uploads)."""
        other = (":fetchPredictOperation", "/cancel", "/oss")
        return [r for r in self.requests if r.method == "POST" and not r.path.endswith(other)]

    @property
    def url(self) -> str:
        if not self.port:
            raise RuntimeError("VideoMockServer is not started")
        return f"http://{HOST}:{self.port}"

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> Self:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), name="video-mock", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if not self.port:
            raise RuntimeError("VideoMockServer did not start")
        return self

    def close(self) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = web.Application(client_max_size=256 * 1024 * 1024)
        for version in ("v1", "v1beta"):
            app.router.add_post(f"/{version}/interactions", self._gemini_create)
            app.router.add_get(f"/{version}/interactions/{{id}}", self._gemini_get)
            app.router.add_post(f"/{version}/interactions/{{id}}/cancel", self._gemini_cancel)
        app.router.add_post("/v1/projects/{p}/locations/{l}/publishers/google/models/{call}", self._veo)
        app.router.add_post("/api/v1/services/aigc/video-generation/video-synthesis", self._dashscope_create)
        app.router.add_get("/api/v1/tasks/{id}", self._dashscope_get)
        app.router.add_post("/api/v1/tasks/{id}/cancel", self._dashscope_cancel)
        app.router.add_get("/api/v1/uploads", self._dashscope_policy)
        app.router.add_post("/oss", self._oss_upload)
        app.router.add_post("/api/v3/contents/generations/tasks", self._ark_create)
        app.router.add_get("/api/v3/contents/generations/tasks/{id}", self._ark_get)
        app.router.add_delete("/api/v3/contents/generations/tasks/{id}", self._ark_delete)
        app.router.add_post("/v1/videos", self._openai_create)
        app.router.add_get("/v1/videos/{id}", self._openai_get)
        app.router.add_get("/v1/videos/{id}/content", self._openai_content)
        app.router.add_get("/files/{name}", self._file)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, HOST, 0)
        await site.start()
        self.port = int(runner.addresses[0][1])
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    # -- shared --------------------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> VideoRequest:
        body: Any = None
        form: dict[str, str] = {}
        files: dict[str, bytes] = {}
        if request.content_type.startswith("multipart/"):
            data = await request.post()
            for name, value in data.items():
                if isinstance(value, str):
                    form[name] = value
                elif isinstance(value, bytes | bytearray):
                    files[name] = bytes(value)
                else:
                    files[name] = value.file.read()
        else:
            raw = await request.read()
            with contextlib.suppress(ValueError):
                body = json.loads(raw) if raw else None
        query = dict(request.query)
        record = VideoRequest(request.method, request.path, request.headers, body, form, files, time.monotonic(), query)
        with self._lock:
            self._requests.append(record)
        return record

    def _authorized(self, request: web.Request) -> bool:
        return self.api_key is None or _key_of(request) == self.api_key

    def _new_task(self, api: Api, request: web.Request, body: Any) -> tuple[str, _Task]:
        with self._lock:
            plan = self._queue.popleft() if self._queue else self.default
            key = _key_of(request)
            number = next(self._ids)
            tid = f"task-{number}" + (f"-{key}" if plan.echo_key else "")
            task = _Task(api, plan, key, body=body)
            self._tasks[tid] = task
        return tid, task

    def _peek_plan(self) -> VideoTask:
        with self._lock:
            return self._queue[0] if self._queue else self.default

    def _drop_plan(self) -> None:
        with self._lock:
            if self._queue:
                self._queue.popleft()

    def _poll(self, tid: str) -> _Task | None:
        """The task after one more poll; None when unknown."""
        with self._lock:
            task = self._tasks.get(tid)
            if task is not None:
                task.polls += 1
            return task

    @staticmethod
    def _running(task: _Task) -> bool:
        return task.plan.outcome == "never" or task.polls <= task.plan.pending_polls

    def _file_url(self, tid: str, task: _Task) -> str:
        token = f"&token={task.key}" if task.plan.echo_key else ""
        return f"{self.url}/files/{tid}.mp4?Expires=1700000000&Signature=mock{token}"

    def _echo(self, task_or_plan: _Task | VideoTask, key: str, text: str) -> str:
        plan = task_or_plan.plan if isinstance(task_or_plan, _Task) else task_or_plan
        return f"{text} (request signed with {key})" if plan.echo_key and key else text

    def _submit_error(self, request: web.Request, shape: Api) -> web.Response | None:
        """The scripted submission failure, in the provider's error shape (the plan is consumed)."""
        plan = self._peek_plan()
        key = _key_of(request)
        if not self._authorized(request):
            return self._error(shape, 401, "Unauthorized", "invalid api key")
        if plan.key_blocked:
            self._drop_plan()
            code, message = {
                "dashscope": ("AccessDenied", "Access denied: the API key is blocked."),
                "ark": ("AccessDenied", "The API key is blocked."),
                "openai": ("account_deactivated", "This key is blocked."),
            }.get(shape, ("PERMISSION_DENIED", "Requests from this API key are blocked."))
            return self._error(shape, 403, code, self._echo(plan, key, message))
        if plan.submit_refusal:
            self._drop_plan()
            code, message = {
                "gemini": ("INVALID_ARGUMENT", "The request was blocked by safety filters."),
                "veo": ("INVALID_ARGUMENT", "The prompt violates Vertex AI's usage guidelines (Responsible AI)."),
                "dashscope": ("DataInspectionFailed", "Input data may contain inappropriate content."),
                "ark": ("InputTextSensitiveContentDetected", "The input text may contain sensitive information."),
                "openai": ("moderation_blocked", "blocked"),
            }[shape]
            return self._error(shape, 400, plan.refusal_code or code, self._echo(plan, key, message))
        if plan.submit_status != 200:
            self._drop_plan()
            code = {
                429: {"dashscope": "Throttling.RateQuota", "ark": "RateLimitExceeded"}.get(shape, "rate_limited"),
            }.get(plan.submit_status, "InternalError")
            message = self._echo(plan, key, f"mock submission failure {plan.submit_status}")
            return self._error(shape, plan.submit_status, code, message, plan.retry_after)
        return None

    def _error(
        self, shape: Api, status: int, code: str, message: str, retry_after: float | None = None
    ) -> web.Response:
        if shape in ("gemini", "veo"):
            body: Any = {"error": {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, code)}}
        elif shape == "dashscope":
            body = {"code": code, "message": message, "request_id": "req-mock"}
        elif shape == "ark":
            body = {"error": {"code": code, "message": message}}
        else:
            body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
        return _json(status, body, retry_after)

    # -- Gemini Omni ---------------------------------------------------------------------------------

    async def _gemini_create(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        if (failure := self._submit_error(request, "gemini")) is not None:
            return failure
        tid, _ = self._new_task("gemini", request, record.json)
        return _json(200, {"id": tid, "status": "in_progress", "model": (record.json or {}).get("model")})

    def _cancel(self, tid: str, shown: str) -> bool:
        """Record a cancel of task ``tid`` (as the client named it: ``shown``); False for an unknown task."""
        with self._lock:
            if tid not in self._tasks:
                return False
            self.cancelled.append(shown)
            return True

    async def _gemini_cancel(self, request: web.Request) -> web.Response:
        await self._record(request)
        tid = request.match_info["id"]
        if not self._cancel(tid, tid):
            return self._error("gemini", 404, "NOT_FOUND", f"no interaction {tid}")
        return _json(200, {"id": tid, "status": "cancelled"})

    async def _gemini_get(self, request: web.Request) -> web.Response:
        await self._record(request)
        tid = request.match_info["id"]
        task = self._poll(tid)
        if task is None or not self._authorized(request):
            return self._error("gemini", 404 if task is None else 401, "NOT_FOUND", f"no interaction {tid}")
        if self._running(task):
            return _json(200, {"id": tid, "status": "in_progress"})
        plan = task.plan
        if plan.error_body:
            error = {
                "code": 500,
                "message": self._echo(task, task.key, "Internal error encountered."),
                "status": "INTERNAL",
            }
            return _json(200, {"error": error})
        if plan.end_status:
            return _json(200, {"id": tid, "status": plan.end_status})
        if plan.outcome == "fail":
            error = {"code": 13, "message": self._echo(task, task.key, "internal error while generating")}
            return _json(200, {"id": tid, "status": "failed", "errors": [error]})
        if plan.outcome == "refuse":
            error = {"code": 400, "message": self._echo(task, task.key, "Output blocked by safety filters")}
            return _json(200, {"id": tid, "status": "failed", "errors": [error]})
        steps: list[dict[str, Any]] = []
        body = task.body if isinstance(task.body, dict) else {}
        if body.get("previous_interaction_id"):  # an extension's answer repeats the earlier turn first
            earlier = {"type": "video", "mime_type": "video/mp4", "data": base64.b64encode(self.earlier_video).decode()}
            steps += [
                {"type": "user_input", "content": [{"type": "text", "text": "the earlier turn"}]},
                {"type": "model_output", "content": [earlier]},
            ]
        steps.append({"type": "user_input", "content": _gemini_input(body.get("input"))})
        if plan.step_error:
            error = {"code": 3, "message": self._echo(task, task.key, "The output was blocked by safety filters.")}
            steps.append({"type": "model_output", "content": [], "error": error})
            return _json(200, {"id": tid, "status": "completed", "steps": steps})
        video: dict[str, Any] = {"type": "video", "mime_type": "video/mp4"}
        if plan.delivery == "url":
            video["uri"] = self._file_url(tid, task)
        else:
            video["data"] = base64.b64encode(self.video).decode()
        steps += [{"type": "thought", "summary": []}, {"type": "model_output", "content": [video]}]
        return _json(200, {"id": tid, "status": "completed", "steps": steps})

    # -- Veo on Vertex AI ----------------------------------------------------------------------------

    async def _veo(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        model, _, method = request.match_info["call"].partition(":")
        p, loc = request.match_info["p"], request.match_info["l"]
        if method == "predictLongRunning":
            if (failure := self._submit_error(request, "veo")) is not None:
                return failure
            tid, _ = self._new_task("veo", request, record.json)
            return _json(
                200, {"name": f"projects/{p}/locations/{loc}/publishers/google/models/{model}/operations/{tid}"}
            )
        if method != "fetchPredictOperation":
            return self._error("veo", 404, "NOT_FOUND", f"no method {method}")
        name = str((record.json or {}).get("operationName", ""))
        task = self._poll(name.rsplit("/", 1)[-1])
        if task is None or not self._authorized(request):
            return self._error("veo", 404 if task is None else 401, "NOT_FOUND", "no such operation")
        if self._running(task):
            return _json(200, {"name": name, "done": False})
        if task.plan.outcome == "fail":
            error = {"code": 13, "message": self._echo(task, task.key, "Video generation failed internally")}
            return _json(200, {"name": name, "done": True, "error": error})
        kind = "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse"
        if task.plan.outcome == "refuse":
            reasons = [self._echo(task, task.key, "Unable to generate videos: support code 58061214 (child safety)")]
            response = {"@type": kind, "raiMediaFilteredCount": 1, "raiMediaFilteredReasons": reasons}
            return _json(200, {"name": name, "done": True, "response": response})
        if task.plan.delivery == "url":
            video = {"gcsUri": f"gs://mock-bucket/{name.rsplit('/', 1)[-1]}/sample_0.mp4", "mimeType": "video/mp4"}
        else:
            video = {"bytesBase64Encoded": base64.b64encode(self.video).decode(), "mimeType": "video/mp4"}
        return _json(200, {"name": name, "done": True, "response": {"@type": kind, "videos": [video]}})

    # -- DashScope (Wan) -----------------------------------------------------------------------------

    async def _dashscope_create(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        if request.headers.get("X-DashScope-Async") != "enable":
            msg = "current user api does not support synchronous calls"
            return self._error("dashscope", 403, "AccessDenied", msg)
        if (failure := self._submit_error(request, "dashscope")) is not None:
            return failure
        if (bad := self._oss_refs(request, record.json)) is not None:
            return self._error("dashscope", 400, "InvalidParameter", bad)
        plan = self._peek_plan()
        if plan.error_body:
            self._drop_plan()
            message = self._echo(plan, _key_of(request), "Input data may contain inappropriate content.")
            return _json(200, {"code": "DataInspectionFailed", "message": message, "request_id": "req-mock"})
        tid, _ = self._new_task("dashscope", request, record.json)
        return _json(200, {"output": {"task_id": tid, "task_status": "PENDING"}, "request_id": "req-mock"})

    def _oss_refs(self, request: web.Request, body: Any) -> str | None:
        """Why the ``oss://`` URLs of a task cannot be resolved (None: they can)."""
        body_input = body.get("input") if isinstance(body, dict) else None
        if not isinstance(body_input, dict):
            return None
        urls = [body_input.get("img_url")] + [
            m.get("url") for m in body_input.get("media") or () if isinstance(m, dict)
        ]
        for url in urls:
            if not isinstance(url, str) or not url.startswith("oss://"):
                continue
            if request.headers.get("X-DashScope-OssResourceResolve") != "enable":
                return f"url error, please check url! ({url}: oss:// needs X-DashScope-OssResourceResolve)"
            with self._lock:
                if url.removeprefix("oss://") not in self.uploads:
                    return f"url error, please check url! (no object {url})"
        return None

    async def _dashscope_policy(self, request: web.Request) -> web.Response:
        await self._record(request)
        if not self._authorized(request) or request.query.get("action") != "getPolicy":
            return self._error("dashscope", 401 if not self._authorized(request) else 400, "InvalidParameter", "bad")
        number = next(self._ids)
        model = request.query.get("model", "")
        output = {
            "policy": base64.b64encode(b'{"conditions": []}').decode(),
            "signature": "mock-signature",
            "upload_dir": f"dashscope-instant/mock{number}/{model}",
            "upload_host": f"{self.url}/oss",
            "expire_in_seconds": 300,
            "max_file_size_mb": 100,
            "capacity_limit_mb": 999999999,
            "oss_access_key_id": "MOCK-OSS-ACCESS-ID",
            "x_oss_object_acl": "private",
            "x_oss_forbid_overwrite": "true",
        }
        return _json(200, {"request_id": "req-mock", "data": output, "output": output})

    async def _oss_upload(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        need = ("OSSAccessKeyId", "Signature", "policy", "key", "success_action_status")
        if any(name not in record.form for name in need) or "file" not in record.files:
            return web.Response(status=400, text="<Error><Code>InvalidArgument</Code></Error>")
        if "Authorization" in request.headers:
            return web.Response(status=400, text="<Error><Code>InvalidArgument</Code>two auths</Error>")
        with self._lock:
            if record.form["key"] in self.uploads and record.form.get("x-oss-forbid-overwrite") == "true":
                return web.Response(status=409, text="<Error><Code>FileAlreadyExists</Code></Error>")
            self.uploads[record.form["key"]] = record.files["file"]
        return web.Response(status=200)

    async def _dashscope_cancel(self, request: web.Request) -> web.Response:
        await self._record(request)
        tid = request.match_info["id"]
        if not self._cancel(tid, tid):
            return self._error("dashscope", 404, "NotFound", f"no task {tid}")
        return _json(200, {"request_id": "req-mock"})

    async def _dashscope_get(self, request: web.Request) -> web.Response:
        await self._record(request)
        tid = request.match_info["id"]
        task = self._poll(tid)
        if task is None or not self._authorized(request):
            return self._error("dashscope", 404 if task is None else 401, "NotFound", f"no task {tid}")
        output: dict[str, Any] = {"task_id": tid}
        if self._running(task):
            output["task_status"] = "RUNNING"
            return _json(200, {"output": output, "request_id": "req-mock"})
        if task.plan.outcome in ("fail", "refuse"):
            code = "InternalError" if task.plan.outcome == "fail" else task.plan.refusal_code or "DataInspectionFailed"
            message = self._echo(task, task.key, "mock task failure")
            output |= {"task_status": "FAILED", "code": code, "message": message}
            return _json(200, {"output": output, "request_id": "req-mock"})
        output |= {"task_status": "SUCCEEDED", "video_url": self._file_url(tid, task)}
        parameters = (task.body or {}).get("parameters") or {}
        usage = {"video_duration": parameters.get("duration"), "video_count": 1}
        return _json(200, {"output": output, "usage": usage, "request_id": "req-mock"})

    # -- ModelArk (Seedance) -------------------------------------------------------------------------

    async def _ark_create(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        if (failure := self._submit_error(request, "ark")) is not None:
            return failure
        tid, _ = self._new_task("ark", request, record.json)
        return _json(200, {"id": f"cgt-{tid}"})

    async def _ark_get(self, request: web.Request) -> web.Response:
        await self._record(request)
        ident = request.match_info["id"]
        task = self._poll(ident.removeprefix("cgt-"))
        if task is None or not self._authorized(request):
            return self._error("ark", 404 if task is None else 401, "NotFound", f"no task {ident}")
        model = (task.body or {}).get("model")
        if self._running(task):
            return _json(200, {"id": ident, "model": model, "status": "running"})
        if task.plan.outcome in ("fail", "refuse"):
            refused = task.plan.refusal_code or "OutputVideoSensitiveContentDetected"
            code = "InternalServiceError" if task.plan.outcome == "fail" else refused
            error = {"code": code, "message": self._echo(task, task.key, "mock task failure")}
            return _json(200, {"id": ident, "model": model, "status": "failed", "error": error})
        content = {"video_url": self._file_url(ident.removeprefix("cgt-"), task)}
        body = {"id": ident, "model": model, "status": "succeeded", "content": content}
        body |= {"seed": (task.body or {}).get("seed"), "usage": {"completion_tokens": 108900}}
        return _json(200, body)

    async def _ark_delete(self, request: web.Request) -> web.Response:
        await self._record(request)
        ident = request.match_info["id"]
        if not self._cancel(ident.removeprefix("cgt-"), ident):
            return self._error("ark", 404, "NotFound", f"no task {ident}")
        return _json(200, {})

    # -- OpenAI-style videos (SGLang diffusion) ------------------------------------------------------

    async def _openai_create(self, request: web.Request) -> web.Response:
        record = await self._record(request)
        if (failure := self._submit_error(request, "openai")) is not None:
            return failure
        fields = record.json if isinstance(record.json, dict) else dict(record.form)
        tid, _ = self._new_task("openai", request, fields)
        return _json(200, {"id": tid, "object": "video", "status": "queued", "seconds": str(fields.get("seconds"))})

    async def _openai_get(self, request: web.Request) -> web.Response:
        await self._record(request)
        tid = request.match_info["id"]
        task = self._poll(tid)
        if task is None or not self._authorized(request):
            return self._error("openai", 404 if task is None else 401, "not_found", f"no video {tid}")
        if self._running(task):
            return _json(200, {"id": tid, "object": "video", "status": "in_progress", "progress": 50})
        if task.plan.outcome in ("fail", "refuse"):
            error = {"message": self._echo(task, task.key, "CUDA out of memory (mock)")}
            return _json(200, {"id": tid, "object": "video", "status": "failed", "error": error})
        return _json(200, {"id": tid, "object": "video", "status": "completed", "progress": 100})

    async def _openai_content(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        with self._lock:
            task = self._tasks.get(request.match_info["id"])
        if task is None or not self._authorized(request):
            return self._error("openai", 404 if task is None else 401, "not_found", "no such video")
        return self._clip(task)

    async def _file(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        with self._lock:
            task = self._tasks.get(request.match_info["name"].removesuffix(".mp4"))
        if task is None:
            return web.Response(status=404, text="NoSuchKey")
        return self._clip(task)

    def _clip(self, task: _Task) -> web.StreamResponse:
        if task.plan.download_status != 200:
            message = self._echo(task, task.key, "NoSuchKey: the object expired")
            return web.Response(status=task.plan.download_status, text=message)
        return web.Response(body=self.video, content_type="video/mp4")


def _gemini_input(value: Any) -> list[Any]:
    """The content of the user turn a request's ``input`` makes (a text, a list of blocks, or user_input steps)."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, list) and value and all(isinstance(v, dict) and v.get("type") == "user_input" for v in value):
        return [block for step in value for block in step.get("content") or ()]
    return list(value) if isinstance(value, list) else []
