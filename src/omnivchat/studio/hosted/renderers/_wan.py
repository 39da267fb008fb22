"""Wan 2.6 / 2.7 / 3.0 on Alibaba Model Studio (DashScope): an asynchronous task, ``POST {base}/api/v1/services/aigc/
video-generation/video-synthesis`` with ``X-DashScope-Async: enable``, then ``GET {base}/api/v1/tasks/{task_id}``
until ``output.task_status`` is SUCCEEDED (``output.video_url``, valid 24 h) or FAILED, CANCELED or UNKNOWN.
Moderation codes (``DataInspectionFailed``, ``IPInfringementSuspect``), at submit or in the task, are refusals.

Two request shapes:

- wan2.5 / wan2.6: ``input.prompt`` (+ ``img_url`` for image-to-video); ``parameters.size`` ("1280*720", text to
  video) or ``resolution`` ("720P", image to video), ``duration``, ``audio`` (the model makes the sound),
  ``shot_type``, ``prompt_extend``, ``watermark``, ``seed``. Reference images are not taken (``wan2.6-r2v`` takes
  reference *videos*), so an earlier final frame goes as the first frame (the fallback).
- wan2.7 / wan3.0: ``input.media: [{type, url}]`` with ``first_frame``, ``first_clip`` (2.7, continue a video),
  ``reference_image``, ``reference_audio`` (3.0); ``parameters.resolution``, ``ratio``, ``duration``, ``seed``,
  ``watermark``. Frames and references are never mixed.

``prompt_extend`` is sent to every generation (off by default: the provider's prompt rewriting would change the timed
script). Local media (frames, reference images, a clip to continue, reference audio) are uploaded to DashScope's
temporary storage as the dashscope SDK does: ``GET {base}/api/v1/uploads?action=getPolicy&model=M`` gives a signed
OSS form policy, the file is posted to its ``upload_host`` (without the key), and the request names it
``oss://{upload_dir}/{file}`` with ``X-DashScope-OssResourceResolve: enable``. An ``upload`` hook, when given,
replaces this with its own URLs.

An HTTP 200 answer that carries a top-level ``code`` (``DataInspectionFailed``...) is an error answer, sorted as
one. A timed-out task is cancelled (``POST {base}/api/v1/tasks/{task_id}/cancel``; DashScope cancels only PENDING
tasks). Durations: wan2.6 image to video takes any whole second from 2 to 15; wan2.6 text to video and wan2.5
5, 10 or 15 s. Unconfirmed: the ``wan2.7-t2v`` id, how many reference images wan2.7-r2v takes (5 are sent at
most), and every default price (relay-derived)."""

from __future__ import annotations

import asyncio
import mimetypes
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from pydantic import Field

from omnivchat.routes import RouteError
from omnivchat.studio.engine import RenderRequest
from omnivchat.studio.hosted.renderers._base import (
    HostedVideoRenderer,
    Job,
    Pending,
    Ready,
    VideoRendererConfig,
    error_fields,
)
from omnivchat.studio.hosted.renderers._refs import Capabilities

DASHSCOPE_INTL = "https://dashscope-intl.aliyuncs.com"
MODERATION_CODES = frozenset({"DataInspectionFailed", "IPInfringementSuspect"})
_PENDING = ("PENDING", "RUNNING", "SUSPENDED")
_FIXED_DURATIONS = (5, 10, 15)
"""wan2.6 text to video and wan2.5: the only durations taken."""
_LOCAL = "local-file:"
"""Marks a local file in a request until it is uploaded (never sent)."""

# text-to-video size per (resolution, aspect ratio), as "W*H"
_SIZES = {
    ("480p", "16:9"): "832*480",
    ("480p", "9:16"): "480*832",
    ("720p", "16:9"): "1280*720",
    ("720p", "9:16"): "720*1280",
    ("720p", "1:1"): "960*960",
    ("1080p", "16:9"): "1920*1080",
    ("1080p", "9:16"): "1080*1920",
    ("1080p", "1:1"): "1440*1440",
}


class WanConfig(VideoRendererConfig):
    kind: Literal["wan"] = "wan"
    model: str = Field("wan2.6-t2v", description="The model for text-only renders (wan3.0-video: every mode).")
    i2v_model: str | None = Field(None, description="For a first frame (default: wan2.6-i2v, wan2.7-i2v).")
    r2v_model: str | None = Field(None, description="For reference images (default: wan2.7-r2v).")
    api_key_env: str | None = "DASHSCOPE_API_KEY"
    size: str | None = Field(None, description="wan2.6 text to video: 'W*H' (default from resolution and ratio).")
    audio: bool = Field(True, description="wan2.5/2.6 parameters.audio: the model makes the sound.")
    shot_type: Literal["single", "multi"] = "single"
    prompt_extend: bool = Field(False, description="Off, or the provider rewrites the timed script.")
    watermark: bool = False


class WanRenderer(HostedVideoRenderer):
    """Wan on DashScope; ``model`` decides the generation (``wan2.6-*``, ``wan2.7-*``, ``wan3.0-*``)."""

    kind = "wan"
    config_type = WanConfig
    seed_range = 2**31  # 0..2147483647
    config: WanConfig

    def default_base_url(self) -> str:
        return DASHSCOPE_INTL

    @property
    def generation(self) -> str:
        model = self.config.model
        for gen in ("wan3.0", "wan2.7"):
            if model.startswith(gen):
                return gen
        return "wan2.6"  # wan2.5 takes the same shape

    def _mode_model(self, mode: str) -> str:
        c, gen = self.config, self.generation
        if gen == "wan3.0" or mode == "t2v":
            return c.model
        if mode == "i2v":
            return c.i2v_model or ("wan2.7-i2v" if gen == "wan2.7" else c.model.replace("t2v", "i2v"))
        return c.r2v_model or "wan2.7-r2v"

    def duration_limits(self) -> tuple[int, int, tuple[int, ...]]:
        # wan2.6 image to video takes 2-15 s; its text to video (and wan2.5) 5, 10 or 15 s: see ``adjust``
        return {"wan3.0": (2, 30, ())}.get(self.generation, (2, 15, ()))

    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        if self.generation == "wan3.0":
            return Capabilities(reference_images=10, reference_audio=5)
        if self.generation == "wan2.7":
            return Capabilities(reference_images=5, extend=True)
        return Capabilities()

    def adjust(self, job: Job) -> None:
        m = job.media
        mode = "i2v" if m.first_frame or m.extend else "r2v" if m.reference_images or m.reference_audio else "t2v"
        job.model = self._mode_model(mode)
        job.notes["mode"] = mode
        if self.generation == "wan2.6" and (mode == "t2v" or job.model.startswith("wan2.5")):
            job.clip_s = next((d for d in _FIXED_DURATIONS if d >= job.clip_s), _FIXED_DURATIONS[-1])

    def encode(self, job: Job) -> None:
        c, m = self.config, job.media
        resolution = c.resolution.upper()
        body_input: dict[str, Any] = {"prompt": job.prompt}
        if c.negative_prompt:
            body_input["negative_prompt"] = c.negative_prompt
        parameters: dict[str, Any]
        if self.generation == "wan2.6":
            parameters = {"duration": job.clip_s, "audio": c.audio, "shot_type": c.shot_type}
            if m.first_frame:
                body_input["img_url"] = self._media(m.first_frame[1])
                parameters["resolution"] = resolution
            else:
                parameters["size"] = c.size or _SIZES.get((c.resolution.lower(), c.aspect_ratio), "1280*720")
            parameters.update(prompt_extend=c.prompt_extend, watermark=c.watermark)
        else:
            media: list[dict[str, Any]] = []
            if m.extend:
                media.append({"type": "first_clip", "url": self._media(m.extend[1])})
            if m.first_frame:
                media.append({"type": "first_frame", "url": self._media(m.first_frame[1])})
            media += [{"type": "reference_image", "url": self._media(p)} for _, p in m.reference_images]
            media += [{"type": "reference_audio", "url": self._media(p)} for _, p in m.reference_audio]
            if media:
                body_input["media"] = media
            parameters = {"resolution": resolution, "ratio": c.aspect_ratio, "duration": job.clip_s}
            parameters.update(prompt_extend=c.prompt_extend, watermark=c.watermark)
        if job.seed is not None:
            parameters["seed"] = job.seed
        parameters.update(c.extra)
        job.payload = {"model": job.model, "input": body_input, "parameters": parameters}

    def refusal(self, code: str, message: str) -> bool:
        return code in MODERATION_CODES

    def error_kind(self, status: int, code: str) -> str:
        if code.startswith("Throttling"):
            return "rate_limited"
        return super().error_kind(status, code)

    def _media(self, path: Path) -> str:
        """The upload hook's URL, else a marker that ``submit`` replaces by the file's ``oss://`` upload."""
        if self.upload is not None:
            return self.upload(path)
        return _LOCAL + str(path)

    async def _upload_all(self, session: Any, job: Job) -> bool:
        """Upload the marked local files to DashScope's temporary storage (one policy for the request) and put
        their ``oss://`` names in the payload; whether any was uploaded."""
        slots: list[tuple[dict[str, Any], str]] = []
        body_input = job.payload["input"]
        if isinstance(body_input.get("img_url"), str) and body_input["img_url"].startswith(_LOCAL):
            slots.append((body_input, "img_url"))
        for item in body_input.get("media") or ():
            if isinstance(item.get("url"), str) and item["url"].startswith(_LOCAL):
                slots.append((item, "url"))
        if not slots:
            return False
        answer = await self.request_json(
            session,
            "GET",
            self.url(f"/api/v1/uploads?action=getPolicy&model={quote(job.model, safe='')}"),
            what="upload policy",
        )
        policy = answer.get("output") if isinstance(answer, dict) else None
        if not isinstance(policy, dict):
            code, message = error_fields(answer)
            raise self.task_error("upload policy", code, message or "the answer holds no output")
        names: set[str] = set()
        for holder, field in slots:
            path = Path(holder[field].removeprefix(_LOCAL))
            name = path.name
            n = 1
            while name in names:  # one upload directory: two files may not share a name
                n += 1
                name = f"{path.stem}-{n}{path.suffix}"
            names.add(name)
            holder[field] = await self._upload(session, policy, path, name)
        job.notes["uploaded"] = len(slots)
        return True

    async def _upload(self, session: Any, policy: dict[str, Any], path: Path, name: str) -> str:
        """POST one file to the policy's OSS host (a form upload, no key); its ``oss://`` name."""
        import aiohttp

        try:
            key = f"{policy['upload_dir']}/{name}"
            fields = {
                "OSSAccessKeyId": policy["oss_access_key_id"],
                "Signature": policy["signature"],
                "policy": policy["policy"],
                "key": key,
                "x-oss-object-acl": policy["x_oss_object_acl"],
                "x-oss-forbid-overwrite": policy["x_oss_forbid_overwrite"],
                "success_action_status": "200",
                "x-oss-content-type": mimetypes.guess_type(path.name)[0] or "application/octet-stream",
            }
            host = str(policy["upload_host"])
        except KeyError as err:
            raise self.failed(f"the upload policy lacks {err.args[0]}") from None
        if urlsplit(host).scheme not in ("http", "https"):
            raise self.failed("the upload policy's upload_host is not an http(s) URL")
        form = aiohttp.FormData()
        for field_name, value in fields.items():
            form.add_field(field_name, str(value))
        data = await asyncio.to_thread(path.read_bytes)
        form.add_field("file", data, filename=name, content_type=fields["x-oss-content-type"])
        status, text = 0, ""
        try:
            async with session.post(host, data=form, headers={"Accept": "application/json"}) as response:
                status = response.status
                text = (await response.content.read(2000)).decode("utf-8", "replace")
        except TimeoutError:
            timeout_s = self.config.request_timeout_s
            raise RouteError("timeout", f"{self.name}: upload: no answer within {timeout_s:g} s") from None
        except (aiohttp.ClientError, OSError) as err:
            raise RouteError("connection", self.text(f"{self.name}: upload: {type(err).__name__}: {err}")) from None
        if status != 200:
            shown = " ".join(text.split())
            raise RouteError(
                "server_error" if status >= 500 or status == 429 else "http_error",
                self.text(f"{self.name}: uploading {path.name} to DashScope's storage: HTTP {status}: {shown}"),
                http_status=status,
            )
        return f"oss://{key}"

    async def submit(self, session: Any, job: Job) -> str:
        uploaded = await self._upload_all(session, job)
        headers = {"X-DashScope-Async": "enable"}
        if uploaded:
            headers["X-DashScope-OssResourceResolve"] = "enable"
        answer = await self.request_json(
            session,
            "POST",
            self.url("/api/v1/services/aigc/video-generation/video-synthesis"),
            what="submit",
            body=job.payload,
            headers=headers,
        )
        self._error_answer(answer, "submit")
        output = answer.get("output") if isinstance(answer, dict) else None
        task = output.get("task_id") if isinstance(output, dict) else None
        if not isinstance(task, str) or not task:
            raise self.failed("the task was created without a task_id")
        return task

    def _error_answer(self, answer: Any, what: str) -> None:
        """An HTTP 200 answer with a top-level ``code`` is an error (a moderation code, a bad parameter)."""
        if isinstance(answer, dict) and answer.get("code"):
            code, message = error_fields(answer)
            raise self.task_error(what, code, message)

    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        answer = await self.request_json(
            session, "GET", self.url(f"/api/v1/tasks/{quote(handle, safe='')}"), what="poll"
        )
        self._error_answer(answer, f"task {handle}")
        output = answer.get("output") or {}
        status = str(output.get("task_status") or "")
        if status in _PENDING or not status:
            return Pending(status or "PENDING")
        if status == "SUCCEEDED":
            url = output.get("video_url")
            if not isinstance(url, str) or not url:
                raise self.failed(f"task {handle} SUCCEEDED without a video_url")
            usage = answer.get("usage") or {}
            notes = {"provider_duration_s": usage.get("video_duration")} if isinstance(usage, dict) else {}
            return Ready(url=url, notes={k: v for k, v in notes.items() if v is not None})
        code, message = str(output.get("code") or ""), str(output.get("message") or "")
        raise self.task_error(f"task {handle} ended {status}", code, message)

    async def cancel(self, session: Any, job: Job, handle: str) -> None:
        await self.request_json(
            session, "POST", self.url(f"/api/v1/tasks/{quote(handle, safe='')}/cancel"), what="cancel", empty_ok=True
        )
