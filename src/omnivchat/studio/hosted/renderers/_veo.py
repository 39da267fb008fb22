"""Veo 3.1 on Vertex AI:
``POST {base}/v1/projects/{P}/locations/{LOC}/publishers/google/models/{M}:predictLongRunning``, then
``POST ...:fetchPredictOperation`` with ``{"operationName": name}`` until ``done``. The clip comes back as
``response.videos[].bytesBase64Encoded``, or as ``gcsUri`` when ``storage_uri`` is set: a ``gs://`` object needs
a storage download hook (``gcs_download``), else the render fails saying so. An OAuth access token is read from
the environment (``VERTEX_ACCESS_TOKEN`` by default, e.g. ``$(gcloud auth print-access-token)``; it expires
after about an hour).

A prompt blocked by Responsible-AI filtering (``raiMediaFilteredCount`` with no video) is a refusal; a rejected
token or permission (401/403, ``UNAUTHENTICATED``, ``PERMISSION_DENIED``) stops the instance whatever its message
says. Durations: 4, 6 or 8 s at 720p; 8 s at 1080p and 4k and with reference images; an extension adds a fixed 7 s
(``durationSeconds: 7``), so a script longer than 7 s is refused before any request. Unconfirmed: the price, and
whether an extended clip comes back with the earlier clip in front (the base cuts it off when it does)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from omnivchat.studio.engine import RenderRefused, RenderRequest
from omnivchat.studio.hosted.renderers._base import (
    HostedVideoRenderer,
    Job,
    Pending,
    Ready,
    VideoRendererConfig,
    b64_file,
    error_fields,
)
from omnivchat.studio.hosted.renderers._refs import Capabilities

EXTEND_S = 7
"""The length of what a Veo extension adds, whatever is asked."""
_MODERATION = re.compile(r"usage guidelines|responsible ai|\brai\b|safety|sensitive|prohibited|blocked", re.I)

GcsDownload = Callable[[str], bytes]
"""A user-supplied hook: a ``gs://bucket/object`` URI -> the object's bytes."""


class VeoConfig(VideoRendererConfig):
    kind: Literal["veo"] = "veo"
    model: str = "veo-3.1-generate-001"
    api_key_env: str | None = "VERTEX_ACCESS_TOKEN"
    project: str = Field(min_length=1, description="The Google Cloud project id.")
    location: str = "us-central1"
    generate_audio: bool = True
    person_generation: Literal["allow_adult", "dont_allow", "allow_all"] = "allow_adult"
    storage_uri: str | None = Field(None, description="parameters.storageUri: gs:// output instead of inline bytes.")


class VeoRenderer(HostedVideoRenderer):
    """Veo 3.1 (``veo-3.1-generate-001``, ``-fast-``, ``-lite-``): 4, 6 or 8 s (8 s at 1080p and 4k), seed
    (uint32), first frame (``image``), up to 3 reference images (``referenceImages``, 8-second clips only: the
    duration becomes 8), and extension of an earlier clip by 7 s (``video``; ``extend: true``)."""

    kind = "veo"
    config_type = VeoConfig
    seed_range = 2**32
    config: VeoConfig

    def __init__(self, *args: Any, gcs_download: GcsDownload | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gcs_download = gcs_download

    def default_base_url(self) -> str:
        return f"https://{self.config.location}-aiplatform.googleapis.com"

    def _model_url(self, method: str) -> str:
        c = self.config
        path = f"/v1/projects/{c.project}/locations/{c.location}/publishers/google/models/{c.model}:{method}"
        return self.url(path)

    def duration_limits(self) -> tuple[int, int, tuple[int, ...]]:
        return (4, 8, (4, 6, 8))

    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        return Capabilities(first_frame=True, reference_images=3, extend=True)

    def adjust(self, job: Job) -> None:
        if job.media.extend is not None:
            if job.request.script.duration_s > EXTEND_S + 1e-3:
                raise RenderRefused(
                    f"{self.name}: the script lasts {job.request.script.duration_s:g} s and a Veo extension adds "
                    f"{EXTEND_S} s: shorten the script"
                )
            job.clip_s = EXTEND_S  # an extension is always 7 s long
        elif job.media.reference_images or self.config.resolution.lower() in ("1080p", "4k"):
            job.clip_s = 8  # reference images, 1080p and 4k are taken for 8-second clips only

    def encode(self, job: Job) -> None:
        from omnivchat.media import mime_type

        def blob(path: Any) -> dict[str, str]:
            return {"bytesBase64Encoded": b64_file(path), "mimeType": mime_type(path)}

        c = self.config
        instance: dict[str, Any] = {"prompt": job.prompt}
        if job.media.first_frame:
            instance["image"] = blob(job.media.first_frame[1])
        if job.media.reference_images:
            instance["referenceImages"] = [
                {"image": blob(path), "referenceType": "asset"} for _, path in job.media.reference_images
            ]
        if job.media.extend:
            instance["video"] = blob(job.media.extend[1])
        parameters: dict[str, Any] = {
            "aspectRatio": c.aspect_ratio,
            "durationSeconds": job.clip_s,
            "resolution": c.resolution,
            "generateAudio": c.generate_audio,
            "personGeneration": c.person_generation,
            "sampleCount": 1,
        }
        if job.seed is not None:
            parameters["seed"] = job.seed
        if c.negative_prompt:
            parameters["negativePrompt"] = c.negative_prompt
        if c.storage_uri:
            parameters["storageUri"] = c.storage_uri
        parameters.update(c.extra)
        job.payload = {"instances": [instance], "parameters": parameters}

    def refusal(self, code: str, message: str) -> bool:
        return bool(_MODERATION.search(message))

    def key_rejection(self, status: int, code: str) -> bool:
        # an operation's google.rpc Status: 7 PERMISSION_DENIED, 16 UNAUTHENTICATED
        return super().key_rejection(status, code) or code in ("7", "16")

    async def submit(self, session: Any, job: Job) -> str:
        answer = await self.request_json(
            session, "POST", self._model_url("predictLongRunning"), what="submit", body=job.payload
        )
        name = answer.get("name") if isinstance(answer, dict) else None
        if not isinstance(name, str) or not name:
            raise self.failed("the operation was started without a name")
        return name

    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        answer = await self.request_json(
            session, "POST", self._model_url("fetchPredictOperation"), what="poll", body={"operationName": handle}
        )
        if not answer.get("done"):
            return Pending("running")
        if answer.get("error"):
            code, message = error_fields(answer)
            raise self.task_error("operation failed", code, message)
        response = answer.get("response") or {}
        for video in response.get("videos") or ():
            if isinstance(video, dict) and isinstance(video.get("bytesBase64Encoded"), str):
                try:
                    return Ready(data=base64.b64decode(video["bytesBase64Encoded"], validate=True))
                except (binascii.Error, ValueError):
                    raise self.failed("the video's bytesBase64Encoded is not base64") from None
            if isinstance(video, dict) and isinstance(video.get("gcsUri"), str):
                return await self._from_gcs(video["gcsUri"])
        filtered = response.get("raiMediaFilteredCount") or 0
        if filtered:
            reasons = response.get("raiMediaFilteredReasons") or []
            shown = "; ".join(str(r) for r in reasons) if isinstance(reasons, list) else str(reasons)
            raise self.refused("task", "raiMediaFilteredCount", f"{filtered} video(s) filtered: {shown}")
        raise self.failed("the operation finished without a video")

    async def _from_gcs(self, uri: str) -> Ready:
        if self.gcs_download is None:
            raise self.failed(
                f"the clip was written to {uri} (storage_uri is set) and this renderer cannot read gs:// objects "
                "without a gcs_download hook: unset storage_uri to receive the bytes inline"
            )
        return Ready(data=await asyncio.to_thread(self.gcs_download, uri), notes={"gcs_uri": uri})
