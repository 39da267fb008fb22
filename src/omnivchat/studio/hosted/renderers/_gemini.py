"""Gemini Omni on the Gemini API (Interactions API), as google-genai 3.x calls it: ``POST /v1/interactions`` with
``background: true``, then ``GET /v1/interactions/{id}`` while ``status`` is ``in_progress`` or ``queued``; any other
status ends the task (``completed``; ``failed``, ``cancelled``, ``incomplete``, ``budget_exceeded``,
``requires_action``, ``requires_continuation``...). Key: ``x-goog-api-key``. A timed-out interaction is cancelled
(``POST /v1/interactions/{id}/cancel``).

Input with images goes as one user turn, ``[{type: "user_input", content: [text, image...]}]`` (the SDK wraps a bare
list of blocks so). The clip is read as the SDK's ``output_video``: the last video block of the ``model_output`` steps
after the last ``user_input`` step (an extension's answer may hold the earlier turn's steps too); a legacy
``outputs`` list counts as one ``model_output`` step. With no video there, the steps' ``error`` (google.rpc
``Status``), the interaction's ``errors[]`` or a top-level ``error`` say why.

Unconfirmed (shared/reference/video-generation.md): ``generation_config.seed`` on the Gemini API (documented on
Agent Platform; ``send_seed: false`` leaves it out), the shape of a moderation refusal (recognised here by words
such as "safety" or "blocked" in the error, after key and permission errors are set apart), and the price (relay
only)."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field

from omnivchat.studio.engine import Clip, RenderRequest
from omnivchat.studio.hosted.renderers._base import (
    HostedVideoRenderer,
    Job,
    Pending,
    Ready,
    VideoRendererConfig,
    b64_file,
    error_fields,
)
from omnivchat.studio.hosted.renderers._refs import Capabilities, latest_clip

GEMINI_API = "https://generativelanguage.googleapis.com"
_MODERATION = re.compile(r"safety|blocked|prohibited|responsible ai|usage (?:guidelines|policies)|sensitive", re.I)
_PENDING = ("in_progress", "queued")
API = "/v1/interactions"


class GeminiOmniConfig(VideoRendererConfig):
    kind: Literal["gemini-omni"] = "gemini-omni"
    model: str = "gemini-omni-1.2-flash"
    api_key_env: str | None = "GEMINI_API_KEY"
    delivery: Literal["inline", "uri"] = Field("inline", description="response_format.delivery")
    send_task: bool = Field(True, description="Send generation_config.video_config.task (optional in the API).")


class GeminiOmniRenderer(HostedVideoRenderer):
    """Gemini Omni Flash (``gemini-omni-1.2-flash``, ``gemini-omni-1.1-flash``): 24 fps with native speech.
    Continuity: a first frame (``image_to_video``), reference images (``reference_to_video``, at most 6), or the
    extension of a clip this renderer made in this process (``previous_interaction_id``; ``extend: true``)."""

    kind = "gemini-omni"
    config_type = GeminiOmniConfig
    seed_range = 2**31
    config: GeminiOmniConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._interactions: dict[str, str] = {}  # clip sha256 -> the interaction that made it

    def default_base_url(self) -> str:
        return GEMINI_API

    def auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._key.reveal()} if self._key is not None else {}

    @property
    def _v12(self) -> bool:
        return not self.config.model.startswith("gemini-omni-1.1")

    def duration_limits(self) -> tuple[int, int, tuple[int, ...]]:
        return (3, 15 if self._v12 else 10, ())

    def _interaction_of(self, request: RenderRequest) -> str | None:
        from omnivchat._canonical import sha256_file

        latest = latest_clip(request.references)
        return self._interactions.get(sha256_file(request.references[latest])) if latest else None

    def capabilities(self, request: RenderRequest, clip_s: int) -> Capabilities:
        # 1.2 renders up to 15 s, but at most 10 s when it starts from a frame.
        return Capabilities(
            first_frame=clip_s <= 10,
            reference_images=6 if self._v12 else 3,
            extend=self._interaction_of(request) is not None,
        )

    def adjust(self, job: Job) -> None:
        if job.media.extend is not None:
            job.notes["previous_interaction_id"] = self._interaction_of(job.request)

    def encode(self, job: Job) -> None:
        images = ([job.media.first_frame] if job.media.first_frame else []) + job.media.reference_images
        blocks: list[dict[str, Any]] = [{"type": "text", "text": job.prompt}]
        for _, path in images:
            from omnivchat.media import mime_type

            blocks.append({"type": "image", "data": b64_file(path), "mime_type": mime_type(path)})
        c = self.config
        body: dict[str, Any] = {
            "model": c.model,
            "input": job.prompt if len(blocks) == 1 else [{"type": "user_input", "content": blocks}],
            "response_modalities": ["video"],
            "background": True,
            "response_format": {
                "type": "video",
                "aspect_ratio": c.aspect_ratio,
                "resolution": c.resolution,
                "duration": f"{job.clip_s}s",
                "delivery": c.delivery,
            },
        }
        generation: dict[str, Any] = {}
        if job.seed is not None:
            generation["seed"] = job.seed
        task = "text_to_video"
        if job.media.extend is not None:
            task = "extend"
            body["previous_interaction_id"] = job.notes["previous_interaction_id"]
        elif job.media.first_frame:
            task = "image_to_video"
        elif job.media.reference_images:
            task = "reference_to_video"
        if c.send_task:
            generation["video_config"] = {"task": task}
        if generation:
            body["generation_config"] = generation
        body.update(c.extra)
        job.payload = body

    def refusal(self, code: str, message: str) -> bool:
        return bool(_MODERATION.search(f"{code} {message}"))

    def key_rejection(self, status: int, code: str) -> bool:
        # google.rpc codes in a step's Status: 7 PERMISSION_DENIED, 16 UNAUTHENTICATED
        return super().key_rejection(status, code) or code in ("7", "16")

    async def submit(self, session: Any, job: Job) -> str:
        answer = await self.request_json(session, "POST", self.url(API), what="submit", body=job.payload)
        ident = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(ident, str) or not ident:
            raise self.failed("the interaction was created without an id")
        return ident

    async def check(self, session: Any, job: Job, handle: str) -> Pending | Ready:
        answer = await self.request_json(session, "GET", self.url(f"{API}/{quote(handle, safe='')}"), what="poll")
        if not isinstance(answer, dict):
            raise self.failed(f"interaction {handle}: the answer is not a JSON object")
        status = str(answer.get("status") or "")
        if answer.get("error") and status not in ("completed",):
            code, message = error_fields(answer)  # an error answered with HTTP 200
            raise self.task_error(f"interaction {handle}", code, message)
        if status in _PENDING or (not status and not answer.get("steps") and not answer.get("outputs")):
            return Pending(status or "in_progress")
        if status == "completed":
            return self._video(handle, answer)
        code, message = _interaction_error(answer)
        raise self.task_error(f"interaction {handle} ended {status or 'without a status'}", code, message)

    async def cancel(self, session: Any, job: Job, handle: str) -> None:
        url = self.url(f"{API}/{quote(handle, safe='')}/cancel")
        await self.request_json(session, "POST", url, what="cancel", empty_ok=True)

    def _video(self, handle: str, answer: dict[str, Any]) -> Ready:
        block = _output_video(_steps(answer))
        if block is not None:
            if isinstance(block.get("data"), str):
                try:
                    return Ready(data=base64.b64decode(block["data"], validate=True))
                except (binascii.Error, ValueError):
                    raise self.failed("the video's inline data is not base64") from None
            if isinstance(block.get("uri"), str):
                return Ready(url=block["uri"], auth=True)
        code, message = _interaction_error(answer)
        if code or message:
            raise self.task_error(f"interaction {handle} completed without a video", code, message)
        raise self.failed(f"interaction {handle} completed without a video")

    def finished(self, job: Job, clip: Clip) -> None:
        self._interactions[clip.sha256] = str(job.notes.get("task", ""))


def _steps(answer: dict[str, Any]) -> list[dict[str, Any]]:
    steps = answer.get("steps")
    if not isinstance(steps, list) and isinstance(answer.get("outputs"), list):
        steps = [{"type": "model_output", "content": answer["outputs"]}]  # the legacy shape
    return [step for step in steps or () if isinstance(step, dict)]


def _current(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps after the last ``user_input`` step: this request's answer."""
    for i in range(len(steps) - 1, -1, -1):
        if steps[i].get("type") == "user_input":
            return steps[i + 1 :]
    return steps


def _output_video(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last video block of the current ``model_output`` steps (the SDK's ``output_video``)."""
    for step in reversed(_current(steps)):
        if step.get("type") != "model_output" or not isinstance(step.get("content"), list):
            continue
        for block in reversed(step["content"]):
            if isinstance(block, dict) and block.get("type") == "video":
                return block
    return None


def _interaction_error(answer: dict[str, Any]) -> tuple[str, str]:
    """Why an interaction has no clip: the last current step's ``error``, else the first of ``errors[]``, else a
    top-level ``error``."""
    for step in reversed(_current(_steps(answer))):
        if isinstance(step.get("error"), dict):
            return error_fields({"error": step["error"]})
    errors = answer.get("errors")
    if isinstance(errors, list) and errors:
        first = errors[0]
        return error_fields({"error": first}) if isinstance(first, dict) else ("", str(first))
    return error_fields(answer)
