"""A hosted Director (any text route: OpenAI-compatible or Gemini native) and a hosted Reviewer (any omni route:
Qwen-Omni on DashScope or vLLM, Gemini native), behind the engine's protocols.

Each answer is parsed strictly: one JSON object (a single surrounding code fence is tolerated, nothing else). A
Director answer that does not parse is handed to the engine as text, which takes the module's repair route; a
Reviewer answer that does not parse is a retryable failure of the call (the engine has no caption to judge)."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat.errors import OmnivchatError
from omnivchat.routes import (
    ChatRequest,
    ChatResponse,
    ModelSpec,
    Route,
    RouteError,
    get_route,
    route_cost,
    schema_format,
)
from omnivchat.studio.engine import (
    DIRECTOR_ANSWERS,
    MULTI_TURN_MODULES,
    SINGLE_TURN_MODULES,
    Answer,
    Caption,
    DirectorRequest,
    Question,
    report_cost,
)
from omnivchat.studio.hosted._bridge import LoopThread
from omnivchat.studio.hosted._prompts import (
    CAPTION_TASK,
    PROMPTS_VERSION,
    REVIEWER_ROLE,
    director_system,
    director_user,
    qa_user,
)

_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)
_TITLES = {
    "plan": SINGLE_TURN_MODULES["2"],
    "script": SINGLE_TURN_MODULES["3"],
    "joint_plan": MULTI_TURN_MODULES["b"],
    "prompt": MULTI_TURN_MODULES["d"],
}


class AgentsFileError(OmnivchatError, ValueError):
    """The agents file cannot be read; the message names the file and the field."""


class AgentSpec(ModelSpec):
    """One hosted agent: ``routes.ModelSpec`` with how its clip goes (the Reviewer's) and how long one call may
    take (``timeout_s``, the call's: its route keeps the model's own)."""

    media_input: Literal["video_url", "file", "frames"] | None = None
    timeout_s: float = Field(600.0, gt=0)


class AgentsFile(BaseModel):
    """``--agents FILE`` (TOML or JSON): ``[director]``, ``[reviewer]`` and ``[renderer]`` tables."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    director: AgentSpec
    reviewer: AgentSpec | None = Field(None, description="Needed by studio run, not by import-recorded.")
    renderer: dict[str, Any] = Field(default_factory=dict, description="The video backend: kind, model, ...")


def load_agents_file(path: Path) -> AgentsFile:
    from omnivchat._files import InputError, loads_json, loads_toml, read_text

    try:
        text = read_text(path, "agents file")
        data = loads_toml(text) if path.suffix == ".toml" else loads_json(text)
    except InputError as err:
        raise AgentsFileError(str(err)) from None
    except (ValueError, tomllib.TOMLDecodeError) as err:
        raise AgentsFileError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'} ({err})") from None
    try:
        return AgentsFile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(map(str, first["loc"])) or "file"
        raise AgentsFileError(f"{path}: {where}: {first['msg']}") from None


def parse_json_object(text: str) -> dict[str, Any] | None:
    """``text`` as one JSON object (inside one code fence at most), else None."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _route(spec: AgentSpec, *, media: bool) -> Route:
    """The agent's route; its key is checked before anything is sent (``routes.ModelSpec.key``, the judges'
    rule): from ``api_key_env``; none with ``no_key`` or for an agent on its own ``base_url`` that names no
    variable (a hosted key never goes to a server of your own); else from the model's defaults."""
    key = spec.key(f"agent {spec.model!r}", "agents file")
    media_input = spec.media_input if media else "none"
    overrides = {**spec.settings_overrides(), "thinking": spec.thinking, "media_input": media_input}
    return get_route(spec.model, api_key=key, no_key=spec.sends_no_key, trust_env=True, **overrides)


def _send(loop: LoopThread, route: Route, chat: ChatRequest, timeout_s: float) -> ChatResponse:
    """One request of an agent call (the call retries), its cost reported to the call (``routes.route_cost``)."""
    try:
        response = loop.run(route.send(route.prepare(chat)), timeout=timeout_s)
    except RouteError as err:
        report_cost(route_cost(route, err))
        raise
    report_cost(route_cost(route, response))
    return response


def _response_format(spec: AgentSpec, route: Route, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema in the form the route takes (as for judges: ``routes.schema_format``)."""
    return schema_format(route.settings.route, schema, spec.structured_output, name="answer", strict=False)


class RouteDirector:
    """The Director as a text model behind a route."""

    def __init__(self, spec: AgentSpec, loop: LoopThread | None = None) -> None:
        self.spec = spec
        self._own_loop = loop is None  # a Director on its own (import-recorded) closes its loop too
        self.loop = loop or LoopThread()
        self.route = _route(spec, media=False)
        self.name = f"director:{spec.model}/prompts-{PROMPTS_VERSION}"

    def ask(self, request: DirectorRequest) -> dict[str, Any] | str:
        model = DIRECTOR_ANSWERS[request.module]
        schema = model.model_json_schema()
        title = _TITLES.get(request.module, request.module.replace("_", " "))
        chat = ChatRequest(
            item_id=str(request.payload.get("instance", {}).get("id", "")),
            system_prompt=director_system(title, request.instructions, schema),
            text=director_user(request.module, request.payload, list(request.history)),
            sampling=self.spec.sampling(),
            require_text=True,
            response_format=_response_format(self.spec, self.route, schema),
        )
        response = _send(self.loop, self.route, chat, self.spec.timeout_s)
        parsed = parse_json_object(response.text)
        return parsed if parsed is not None else response.text  # text: the engine's repair route decides

    def close(self) -> None:
        self.loop.cleanup(self.route.aclose())
        if self._own_loop:
            self.loop.close()


class _ReportAnswer(BaseModel):
    caption: str = Field(min_length=1)
    transcript: str = ""
    report: dict[str, dict[str, Any]]
    observed: dict[str, Any] = Field(default_factory=dict)


class RouteReviewer:
    """The Reviewer as an omni model behind a route: the clip goes with its audio."""

    def __init__(self, spec: AgentSpec, loop: LoopThread) -> None:
        self.spec = spec
        self.loop = loop
        self.route = _route(spec, media=True)
        self.name = f"reviewer:{spec.model}/prompts-{PROMPTS_VERSION}"

    def _ask(self, clip: Path, task: str, schema: dict[str, Any]) -> dict[str, Any]:
        chat = ChatRequest(
            item_id=clip.stem,
            system_prompt=REVIEWER_ROLE,
            clip=clip,
            text=task,
            sampling=self.spec.sampling(),
            require_text=True,
            response_format=_response_format(self.spec, self.route, schema),
        )
        response = _send(self.loop, self.route, chat, self.spec.timeout_s)
        if not response.delivered.audio:
            raise RouteError("unsupported", f"{clip.name}: the route did not deliver the clip's audio to the Reviewer")
        parsed = parse_json_object(response.text)
        if parsed is None:
            raise RouteError("unparseable", f"{clip.name}: the Reviewer's answer is not one JSON object")
        return parsed

    def caption(self, clip: Path, *, language: str = "en") -> Caption:
        task = f"{CAPTION_TASK}\nThe user speaks {language}."
        answer = self._ask(clip, task, _ReportAnswer.model_json_schema())
        try:
            got = _ReportAnswer.model_validate(answer)
            return Caption(text=got.caption, transcript=got.transcript, report=got.report, observed=got.observed)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise RouteError("unparseable", f"{clip.name}: the Reviewer's report: {where}: {first['msg']}") from None

    def answer(self, clip: Path, questions: Sequence[Question]) -> list[Answer]:
        schema = {
            "type": "object",
            "properties": {
                "answers": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"index": {"type": "integer"}, "answer": {"type": "string"}},
                        "required": ["index", "answer"],
                    },
                }
            },
            "required": ["answers"],
        }
        got = self._ask(clip, qa_user([q.text for q in questions]), schema)
        by_index = {a.get("index"): str(a.get("answer", "")) for a in got.get("answers", []) if isinstance(a, dict)}
        return [
            Answer(question=q, answer=by_index.get(i, "cannot tell from the clip")) for i, q in enumerate(questions, 1)
        ]

    def close(self) -> None:
        self.loop.cleanup(self.route.aclose())
