"""Seedance on BytePlus ModelArk (or Volcengine Ark, same API): ``POST {base}/api/v3/contents/generations/tasks``
returns ``{id: "cgt-..."}``; ``GET .../tasks/{id}`` until ``status`` is succeeded (``content.video_url``, valid
24 h), failed, cancelled or expired. Bearer ARK key.

``content[]`` holds the prompt (``{type: "text"}``) and media with roles: ``image_url`` as ``first_frame`` or
``reference_image``, ``audio_url`` as ``reference_audio``. Top-level fields: ``ratio``, ``duration``,
``resolution``, ``seed``, ``generate_audio``, ``return_last_frame``. The modes (text, first frame, references)
are mutually exclusive; reference audio is never sent alone. ``InputTextSensitiveContentDetected`` and
``OutputVideoSensitiveContentDetected[.PolicyViolation]`` are refusals of the script (rewritten). A refused input
medium (``InputImageSensitiveContentDetected``, e.g. ``.PrivacyInformation`` for a real face in a reference image;
the same for video and audio inputs) is not: a rewritten script sends the same media, so it stops the instance
(``RenderInputRefused``). A timed-out task is cancelled (``DELETE .../tasks/{id}``; ModelArk cancels queued
tasks).

Images go as base64 data URLs unless an ``upload`` hook gives URLs; audio needs the hook. Unconfirmed: the
duration range of seedance-1-5-pro (4-12 s is assumed), the shortest 2.5 clip (4 s is assumed), and the price
(a relay's measurement of 2.0 at 720p; ModelArk bills tokens ~ w x h x fps x s / 1024)."""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field

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

BYTEPLUS_ARK = "https://ark.ap-southeast.bytepluses.com"
_MODERATION = re.compile(r"^(?:Input\w*|Output\w*)SensitiveContentDetected(?:\.\w+)?$")
_INPUT_MEDIA = re.compile(r"^Input(?:Image|Video|Audio)SensitiveContentDetected(?:\.\w+)?$")
_PENDING = ("queued", "running")


class SeedanceConfig(VideoRendererConfig):
    kind: Literal["seedance"] = "seedance"
    model: str = "dreamina-seedance-2-0-260128"
    api_key_env: str | None = "ARK_API_KEY"
    generate_audio: bool = True
    return_last_frame: bool = Field(False, description="Ask for content.last_frame_url too (kept in the notes).")


class SeedanceRenderer(HostedVideoRenderer):
    """Seedance 2.0 (``dreamina-seedance-2-0-260128`` and ``-fast-``), 2.5 and 1.5 pro on ModelArk."""

    kind = "seedance"
    config_type = SeedanceConfig
    seed_range = 2**31
    config: SeedanceConfig

    def default_base_url(self) -> str:
        return BYTEPLUS_ARK

    @property
    def _v25(self) -> bool:
        return "seedance-2-5" in self.config.model

    @property
    def _v15(self) -> bool:
        return "seedance-1-5" in self.config.model

    def duration_limits(self) -> tuple[int, int, tuple[int, ...]]:
        if self._v25:
            return (4, 30, ())
        return (4, 12, ()) if self._v15 else (4, 15, ())

    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        if self._v15:
            return Capabilities()  # first (and last) frame; references unconfirmed
        return Capabilities(
            reference_images=30 if self._v25 else 9, reference_audio=3 if self.upload is not None else 0
        )

    def adjust(self, job: Job) -> None:
        if job.media.reference_audio and not job.media.reference_images:
            for media_id, _ in job.media.reference_audio:
                job.media.dropped[media_id] = "Seedance takes reference audio only alongside reference images"
            job.media.reference_audio = []

    def encode(self, job: Job) -> None:
        c, m = self.config, job.media
        content: list[dict[str, Any]] = [{"type": "text", "text": job.prompt}]
        if m.first_frame:
            url = self.media_url(m.first_frame[1], "image")
            content.append({"type": "image_url", "image_url": {"url": url}, "role": "first_frame"})
        for _, path in m.reference_images:
            url = self.media_url(path, "image")
            content.append({"type": "image_url", "image_url": {"url": url}, "role": "reference_image"})
        for _, path in m.reference_audio:
            url = self.media_url(path, "audio")
            content.append({"type": "audio_url", "audio_url": {"url": url}, "role": "reference_audio"})
        # 2.5 requires "adaptive" whenever a frame is given.
        ratio = "adaptive" if self._v25 and m.first_frame else c.aspect_ratio
        body: dict[str, Any] = {
            "model": c.model,
            "content": content,
            "ratio": ratio,
            "duration": job.clip_s,
            "resolution": c.resolution.lower(),
            "generate_audio": c.generate_audio,
        }
        if job.seed is not None:
            body["seed"] = job.seed
        if c.return_last_frame:
            body["return_last_frame"] = True
        body.update(c.extra)
        job.payload = body

    def refusal(self, code: str, message: str) -> bool:
        return bool(_MODERATION.match(code))

    def input_refusal(self, code: str, message: str) -> bool:
        return bool(_INPUT_MEDIA.match(code))

    async def cancel(self, session: Any, job: Job, handle: str) -> None:
        path = f"/api/v3/contents/generations/tasks/{quote(handle, safe='')}"
        await self.request_json(session, "DELETE", self.url(path), what="cancel", empty_ok=True)

    async def submit(self, session: Any, job: Job) -> str:
        answer = await self.request_json(
            session, "POST", self.url("/api/v3/contents/generations/tasks"), what="submit", body=job.payload
        )
        ident = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(ident, str) or not ident:
            raise self.failed("the task was created without an id")
        return ident

    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        answer = await self.request_json(
            session, "GET", self.url(f"/api/v3/contents/generations/tasks/{quote(handle, safe='')}"), what="poll"
        )
        status = str(answer.get("status") or "")
        if status in _PENDING or not status:
            return Pending(status or "queued")
        if status == "succeeded":
            content = answer.get("content") or {}
            url = content.get("video_url") if isinstance(content, dict) else None
            if not isinstance(url, str) or not url:
                raise self.failed(f"task {handle} succeeded without a video_url")
            notes: dict[str, Any] = {"provider_seed": answer.get("seed")}
            if isinstance(content, dict) and content.get("last_frame_url"):
                notes["last_frame_url"] = str(content["last_frame_url"]).split("?")[0]
            usage = answer.get("usage")
            if isinstance(usage, dict) and "completion_tokens" in usage:
                notes["completion_tokens"] = usage["completion_tokens"]
            return Ready(url=url, notes={k: v for k, v in notes.items() if v is not None})
        code, message = error_fields(answer)
        raise self.task_error(f"task {handle} ended {status}", code, message)
