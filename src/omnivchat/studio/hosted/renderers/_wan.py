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

Images go as base64 data URLs unless an ``upload`` hook gives URLs (accepted for ``img_url`` per the Model Studio
docs; for ``media[].url`` unconfirmed). Videos and audio need the hook. Unconfirmed: the durations wan2.6 accepts
(5, 10 and 15 s are sent, the values every Wan release has taken), the ``wan2.7-t2v`` id, how many reference
images wan2.7-r2v takes (5 are sent at most), and every default price (relay-derived)."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field

from omnivchat.studio.engine._agents import RenderRequest
from omnivchat.studio.hosted.renderers._base import (
    HostedVideoRenderer,
    Job,
    Pending,
    Ready,
    VideoRendererConfig,
    reason,
)
from omnivchat.studio.hosted.renderers._refs import Capabilities

DASHSCOPE_INTL = "https://dashscope-intl.aliyuncs.com"
MODERATION_CODES = frozenset({"DataInspectionFailed", "IPInfringementSuspect"})
_PENDING = ("PENDING", "RUNNING", "SUSPENDED")

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
    prompt_extend: bool = Field(False, description="wan2.5/2.6: off, or the provider rewrites the timed script.")
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
        return {"wan3.0": (2, 30, ()), "wan2.7": (2, 15, ())}.get(self.generation, (5, 15, (5, 10, 15)))

    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        hook = self.upload is not None
        if self.generation == "wan3.0":
            return Capabilities(reference_images=10, reference_audio=5 if hook else 0)
        if self.generation == "wan2.7":
            return Capabilities(reference_images=5, extend=hook)
        return Capabilities()

    def adjust(self, job: Job) -> None:
        m = job.media
        mode = "i2v" if m.first_frame or m.extend else "r2v" if m.reference_images or m.reference_audio else "t2v"
        job.model = self._mode_model(mode)
        job.notes["mode"] = mode

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
                body_input["img_url"] = self.media_url(m.first_frame[1], "image")
                parameters["resolution"] = resolution
            else:
                parameters["size"] = c.size or _SIZES.get((c.resolution.lower(), c.aspect_ratio), "1280*720")
            parameters.update(prompt_extend=c.prompt_extend, watermark=c.watermark)
        else:
            media: list[dict[str, Any]] = []
            if m.extend:
                media.append({"type": "first_clip", "url": self.media_url(m.extend[1], "video")})
            if m.first_frame:
                media.append({"type": "first_frame", "url": self.media_url(m.first_frame[1], "image")})
            media += [{"type": "reference_image", "url": self.media_url(p, "image")} for _, p in m.reference_images]
            media += [{"type": "reference_audio", "url": self.media_url(p, "audio")} for _, p in m.reference_audio]
            if media:
                body_input["media"] = media
            parameters = {"resolution": resolution, "ratio": c.aspect_ratio, "duration": job.clip_s}
            parameters["watermark"] = c.watermark
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

    async def submit(self, session: Any, job: Job) -> str:
        answer = await self.request_json(
            session,
            "POST",
            self.url("/api/v1/services/aigc/video-generation/video-synthesis"),
            what="submit",
            body=job.payload,
            headers={"X-DashScope-Async": "enable"},
        )
        output = answer.get("output") if isinstance(answer, dict) else None
        task = output.get("task_id") if isinstance(output, dict) else None
        if not isinstance(task, str) or not task:
            raise self.failed("the task was created without a task_id")
        return task

    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        answer = await self.request_json(
            session, "GET", self.url(f"/api/v1/tasks/{quote(handle, safe='')}"), what="poll"
        )
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
        if self.refusal(code, message):
            raise self.refused("task", code, message)
        raise self.failed(f"task {handle} ended {status}" + reason(code, message))
