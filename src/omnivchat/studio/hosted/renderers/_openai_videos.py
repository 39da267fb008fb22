"""A self-hosted server speaking the OpenAI Videos routes, as SGLang's diffusion server (``sglang serve``) does for
open-weight models such as MOVA: ``POST /v1/videos`` creates a job, ``GET /v1/videos/{id}`` reports ``status``
(queued, in_progress, completed, failed with ``error.message``), ``GET /v1/videos/{id}/content`` is the MP4.
For users without a hosted account; the key is optional (``api_key_env``: none by default).

Without a first frame the job is created with JSON (``prompt``, ``model``, ``seconds``, ``size`` "WxH",
``seed``); with one, as multipart form data with the image as the ``input_reference`` file (the server may run
elsewhere, so a path would not do). MOVA is image + text to video: give ``first_frame`` (a still used when the
script references no earlier frame) or the render is refused before any request. Unconfirmed: whether every
SGLang version reads ``seed`` from the multipart form (it is also sent in ``extra_body``); no reference images,
audio or extension (the API has none); no moderation; the price is GPU time (``price_per_s`` sets one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field

from omnivchat.studio.engine import RenderRequest
from omnivchat.studio.hosted.renderers._base import (
    HostedVideoRenderer,
    Job,
    Pending,
    Ready,
    RendererConfigError,
    VideoRendererConfig,
    error_fields,
    reason,
)
from omnivchat.studio.hosted.renderers._refs import Capabilities

SGLANG_DEFAULT = "http://127.0.0.1:30000"
_PENDING = ("queued", "in_progress", "processing", "running")


class OpenAIVideosConfig(VideoRendererConfig):
    kind: Literal["openai-videos"] = "openai-videos"
    model: str = Field(min_length=1, description="The model the server serves (sent as `model`, part of the name).")
    api_key_env: str | None = None
    size: str = Field("1280x720", pattern=r"^\d+x\d+$")
    max_seconds: int = Field(8, gt=0, description="The longest clip the served model makes (MOVA: 8 s).")
    first_frame: Path | None = Field(None, description="A still to start from when no earlier frame is referenced.")
    requires_image: bool = Field(False, description="The served model is image-to-video only (MOVA).")


class OpenAIVideosRenderer(HostedVideoRenderer):
    """An OpenAI-style ``/v1/videos`` server (SGLang diffusion: MOVA, Wan...); first frame only."""

    kind = "openai-videos"
    config_type = OpenAIVideosConfig
    key_required = False
    config: OpenAIVideosConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.config.api_key_env and self._key is None:
            from omnivchat.routes import CredentialError

            raise CredentialError(f"{self.name}: api_key_env names {self.config.api_key_env}, which is not set")
        if self.config.first_frame is not None and not self.config.first_frame.is_file():
            raise RendererConfigError(f"{self.name}: first_frame {self.config.first_frame} does not exist")
        self.base_url = self.base_url.removesuffix("/v1")  # the OpenAI SDK's base URL ends in /v1

    def default_base_url(self) -> str:
        return SGLANG_DEFAULT

    def duration_limits(self) -> tuple[int, int, tuple[int, ...]]:
        return (1, self.config.max_seconds, ())

    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        return Capabilities()

    def adjust(self, job: Job) -> None:
        if job.media.first_frame is None and self.config.first_frame is not None:
            job.media.first_frame = ("config.first_frame", self.config.first_frame)
        if job.media.first_frame is None and self.config.requires_image:
            raise RendererConfigError(
                f"{self.name}: the served model needs an image and the script references no earlier frame: "
                "set first_frame in the renderer configuration"
            )

    def encode(self, job: Job) -> None:
        c = self.config
        fields: dict[str, Any] = {"prompt": job.prompt, "model": c.model, "seconds": job.clip_s, "size": c.size}
        if job.seed is not None:
            fields["seed"] = job.seed
        if c.negative_prompt:
            fields["negative_prompt"] = c.negative_prompt
        fields.update(c.extra)
        job.payload = fields

    async def submit(self, session: Any, job: Job) -> str:
        import aiohttp

        body: Any = job.payload
        form = None
        if job.media.first_frame is not None:
            from omnivchat.media import mime_type

            path = job.media.first_frame[1]
            form = aiohttp.FormData()
            for name, value in job.payload.items():
                form.add_field(name, value if isinstance(value, str) else json.dumps(value))
            form.add_field("extra_body", json.dumps({"seed": job.seed} if job.seed is not None else {}))
            form.add_field("input_reference", path.read_bytes(), filename=path.name, content_type=mime_type(path))
            body = None
        answer = await self.request_json(session, "POST", self.url("/v1/videos"), what="submit", body=body, form=form)
        ident = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(ident, str) or not ident:
            raise self.failed("the video job was created without an id")
        return ident

    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        answer = await self.request_json(session, "GET", self.url(f"/v1/videos/{quote(handle, safe='')}"), what="poll")
        status = str(answer.get("status") or "")
        if status in _PENDING or not status:
            return Pending(status or "queued")
        if status == "completed":
            return Ready(url=self.url(f"/v1/videos/{quote(handle, safe='')}/content"), auth=True)
        code, message = error_fields(answer)
        raise self.failed(f"video job {handle} ended {status}" + reason(code, message))
