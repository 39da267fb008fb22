"""The hosted Director and Reviewer over real HTTP (a loopback OpenAI-compatible server answering as scripted):
what they send, how their answers parse, and a whole single- and multi-turn synthesis through them."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from omnivchat.routes import RouteError
from omnivchat.studio.engine import AgentCalls, Agents, Budgets, DirectorRequest, Question, Synthesis
from omnivchat.studio.engine._prompts import INSTRUCTIONS
from omnivchat.studio.hosted._agents import AgentSpec, RouteDirector, RouteReviewer, parse_json_object
from omnivchat.studio.hosted._bridge import LoopThread
from omnivchat.studio.offline import OfflineRenderer
from omnivchat.testing import Behaviour, LoopbackServer

from .test_engine import CORE, GATE, MULTI, SINGLE, _job, _script

STEP = re.compile(r"## This step: (.+)")
MODULE_OF_TITLE = {
    "plan & review": "plan",
    "script generation": "script",
    "plan": "joint_plan",
    "prompt generation": "prompt",
}
CAPTION = {
    "caption": "A red cube on a desk; the user asks what colour it is.",
    "transcript": "What colour is the cube?",
    "report": {
        a: {"ok": True, "note": ""}
        for a in ("cuts", "realism", "delivery_speed", "body_structure", "appearance", "artifacts", "on_screen_text")
    },
    "observed": {"objects": [{"name": "cube", "colour_seen": "red"}], "has_audio": True},
}


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")


def _module(system: str) -> str:
    title = STEP.search(system).group(1).strip()
    return MODULE_OF_TITLE.get(title, title.replace(" ", "_"))


def _payload_input(user: str) -> dict[str, Any]:
    return json.loads(user.split("## Input\n", 1)[1])


ATTRIBUTE = re.compile(r"^- (\w+) = ([^:\n]+)", re.M)


def director_answer(module: str, user: str) -> dict[str, Any]:
    """What a good Director answers at each module, for the attributes the request shows."""
    attributes = user.split("## Sampled attributes", 1)[1].split("\n## ", 1)[0]
    fake = {"assignment": {k: v.strip() for k, v in ATTRIBUTE.findall(attributes)}}
    turns = int(fake["assignment"].get("turns", 1))
    colour = fake["assignment"].get("colour", "red")
    given = _payload_input(user)
    match module:
        case "description":
            return {"description": "a desk scene", "passage": "p0"}
        case "plan":
            return {"plan": "a cube on a desk", "review": "the cube is visible"}
        case "joint_plan":
            refs = lambda t: [] if t == 1 else [{"turn": t - 1, "kind": "clip"}]  # noqa: E731
            return {"plan": "one room", "turns": [{"turn": t, "references": refs(t)} for t in range(1, turns + 1)]}
        case "script" | "prompt":
            return _script(fake, turn=given.get("turn"))
        case "video_plan":
            return {"fragments": [f["id"] for f in given["fragments"]]}
        case "reply_plan" | "final_reply_plan":
            return {"facts": [f"the cube is {colour}"]}
        case "reply":
            return {"reply": f"It is {colour}.", "rubric": [GATE, CORE] if given["final"] else []}
    return {"action": "accept", "reason": "fine"}


class Scripted:
    """The loopback server's rules: the Director's answer by module, the Reviewer's caption or Q-A."""

    def __init__(self, first: dict[str, list[str]] | None = None) -> None:
        self.first = first or {}
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, body: dict[str, Any]) -> Behaviour:
        system = _text(body["messages"][0])
        user = _text(body["messages"][-1])
        if system.startswith("You are the Reviewer"):
            self.seen.append(("reviewer", system, json.dumps(body)))
            if "Answer each question" in user:
                return Behaviour(text=json.dumps({"answers": [{"index": 1, "answer": "red"}]}))
            return Behaviour(text="```json\n" + json.dumps(CAPTION) + "\n```")
        module = _module(system)
        self.seen.append((module, system, user))
        queue = self.first.get(module)
        if queue:
            return Behaviour(text=queue.pop(0))
        return Behaviour(text=json.dumps(director_answer(module, user)))


@pytest.fixture
def loop():
    thread = LoopThread()
    thread.agents = []  # type: ignore[attr-defined]
    yield thread
    for agent in thread.agents:  # type: ignore[attr-defined]
        agent.close()
    thread.close()


def _agents(server: LoopbackServer, loop: LoopThread, **director: Any) -> tuple[RouteDirector, RouteReviewer]:
    spec = {"base_url": server.base_url, "no_key": True}
    made = (
        RouteDirector(AgentSpec(model="director-llm", **spec, **director), loop),
        RouteReviewer(AgentSpec(model="reviewer-omni", media_input="video_url", **spec), loop),
    )
    loop.agents.extend(made)  # closed by the fixture
    return made


def test_parse_json_object_is_strict():
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('```json\n{"a": 1}\n```') == {"a": 1}
    for text in ('Sure! {"a": 1}', "[1, 2]", '{"a": 1} and more', "", "```\nnot json\n```"):
        assert parse_json_object(text) is None, text


def test_a_hosted_single_turn_synthesis_runs_every_module_through_the_routes(tmp_path, loop):
    rules = Scripted()
    with LoopbackServer(rules=rules) as server:
        director, reviewer = _agents(server, loop)
        calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
        agents = Agents(director, OfflineRenderer(), reviewer)
        result = Synthesis(_job(SINGLE), agents, calls, tmp_path / "work", Budgets()).run()
        calls.close()
        requests = server.requests
    assert result.trace.status == "accepted", result.trace.reason
    assert result.reference == "It is red." and [c.tier for c in result.rubric] == [0, 1]
    modules = [m for m, _, _ in rules.seen]
    assert modules == [
        "description",
        "plan",
        "script",
        "script_review",
        "video_plan",
        "reviewer",
        "video_review",
        "reply_plan",
        "reply",
        "reply_review",
    ]
    # the fixed part: the role, the module's task and its answer's schema; the flexible part: the subcategory
    _, system, user = rules.seen[2]
    assert "You are the Director" in system and INSTRUCTIONS["script"] in system and '"segments"' in system
    assert "The user's left and right under the current camera." in user
    assert "- colour = red: a red cube" in user and "## Rules the script must obey" in user
    assert "## Your work so far on this instance\n- description:" in user
    # the Reviewer got the clip itself, with its audio, as a video
    review = next(json.loads(r) for m, _, r in rules.seen if m == "reviewer")
    parts = review["messages"][-1]["content"]
    assert any(p.get("type") == "video_url" for p in parts if isinstance(p, dict))
    assert all(r.json.get("response_format") is None for r in requests)  # auto: no schema on an OpenAI route


def test_structured_output_sends_each_module_its_schema(tmp_path, loop):
    with LoopbackServer(rules=Scripted()) as server:
        director, _ = _agents(server, loop, structured_output="json_schema")
        payload = {"assignment": {"language": "en"}, "passages": [{"id": "p0"}], "config": {}}
        director.ask(DirectorRequest("description", INSTRUCTIONS["description"], payload))
        sent = server.requests[-1].json["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"]["required"] == ["description"]


def test_an_unparseable_director_answer_takes_the_engines_repair_route(tmp_path, loop):
    rules = Scripted(first={"script": ["Here is the script you asked for: {...}"]})
    with LoopbackServer(rules=rules) as server:
        director, reviewer = _agents(server, loop)
        calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
        result = Synthesis(
            _job(SINGLE), Agents(director, OfflineRenderer(), reviewer), calls, tmp_path / "w", Budgets()
        ).run()
        calls.close()
    assert result.trace.status == "accepted"
    assert [(s.module, s.decision) for s in result.trace.steps if s.module == "3"] == [("3", "fail"), ("3", "pass")]
    assert result.trace.repairs == {"rewrite": 1}


def test_the_reviewer_must_answer_json_and_hear_the_audio(tmp_path, loop):
    from omnivchat.synth import render_clip

    clip = tmp_path / "clip.mp4"
    render_clip({"duration": 1.5, "size": [64, 36], "speech": [{"text": "Hello", "language": "en"}]}, clip)
    with LoopbackServer(default=Behaviour(text="A red cube, I think.")) as server:
        _, reviewer = _agents(server, loop)
        with pytest.raises(RouteError) as err:
            reviewer.caption(clip)
    assert err.value.kind == "unparseable" and err.value.retryable
    with LoopbackServer(rules=Scripted()) as server:
        _, reviewer = _agents(server, loop)
        caption = reviewer.caption(clip)
        answers = reviewer.answer(clip, [Question(text="What colour is the cube?"), Question(text="Who speaks?")])
    assert caption.text.startswith("A red cube") and caption.report.cuts.ok and caption.observed["has_audio"]
    assert [a.answer for a in answers] == ["red", "cannot tell from the clip"]


def test_a_missing_key_is_refused_before_anything_is_sent(monkeypatch, loop):
    from omnivchat.routes import CredentialError

    monkeypatch.delenv("STUDIO_TEST_KEY", raising=False)
    with pytest.raises(CredentialError, match="STUDIO_TEST_KEY"):
        RouteDirector(
            AgentSpec(model="director-llm", base_url="http://127.0.0.1:9/v1", api_key_env="STUDIO_TEST_KEY"), loop
        )


def test_a_hosted_multi_turn_synthesis(tmp_path, loop):
    rules = Scripted()
    with LoopbackServer(rules=rules) as server:
        director, reviewer = _agents(server, loop)
        calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0)
        job = _job(MULTI, turns="2")
        result = Synthesis(job, Agents(director, OfflineRenderer(), reviewer), calls, tmp_path / "w", Budgets()).run()
        calls.close()
    assert result.trace.status == "accepted", result.trace.reason
    assert len(result.turns) == 2
    modules = [m for m, _, _ in rules.seen if m != "reviewer"]
    assert modules[:3] == ["description", "joint_plan", "plan_review"]
    assert modules.count("prompt") == 2 and modules.count("final_reply_plan") == 1
    second_prompt = [u for m, _, u in rules.seen if m == "prompt"][1]
    assert '"available_media"' in second_prompt and "turn1.final_frame" in second_prompt


def test_the_director_can_be_a_gemini_native_route(monkeypatch, loop):
    monkeypatch.setenv("STUDIO_GEMINI_KEY", "g-test-key-not-real")
    answer = {"description": "a desk scene", "passage": "p0"}
    with LoopbackServer(default=Behaviour(text=json.dumps(answer))) as server:
        spec = AgentSpec(model="gemini:gemini-test", base_url=server.url, api_key_env="STUDIO_GEMINI_KEY")
        director = RouteDirector(spec, loop)
        loop.agents.append(director)  # type: ignore[attr-defined]
        payload = {"assignment": {"language": "en"}, "passages": [{"id": "p0"}], "config": {}}
        got = director.ask(DirectorRequest("description", INSTRUCTIONS["description"], payload))
        sent = server.requests[-1]
    assert got == answer
    assert sent.path.endswith("/models/gemini-test:generateContent")
    config = sent.json["generationConfig"]
    schema = config.get("responseJsonSchema") or config.get("response_json_schema")
    assert schema["required"] == ["description"]  # auto: the Gemini route takes the schema natively
    assert "You are the Director" in sent.json["systemInstruction"]["parts"][0]["text"]


def test_the_documented_agents_file_loads(tmp_path):
    from omnivchat.studio.hosted import load_agents_file
    from omnivchat.studio.hosted.renderers import RENDERERS

    docs = (Path(__file__).parents[2] / "docs" / "studio.md").read_text(encoding="utf-8")
    block = re.search(r"### Hosted agents.*?```toml\n(.*?)```", docs, re.S)
    assert block is not None
    path = tmp_path / "agents.toml"
    path.write_text(block.group(1), encoding="utf-8")
    spec = load_agents_file(path)
    assert spec.director.model == "qwen3-max" and spec.reviewer is not None
    assert spec.renderer["kind"] in RENDERERS


def test_the_reviewer_can_be_a_gemini_native_route(tmp_path, monkeypatch, loop):
    from omnivchat.synth import render_clip

    clip = tmp_path / "clip.mp4"
    render_clip({"duration": 1.5, "size": [64, 36], "speech": [{"text": "Hello", "language": "en"}]}, clip)
    monkeypatch.setenv("STUDIO_GEMINI_KEY", "g-test-key-not-real")
    with LoopbackServer(default=Behaviour(text=json.dumps(CAPTION))) as server:
        spec = AgentSpec(model="gemini:gemini-omni-test", base_url=server.url, api_key_env="STUDIO_GEMINI_KEY")
        reviewer = RouteReviewer(spec, loop)
        loop.agents.append(reviewer)  # type: ignore[attr-defined]
        caption = reviewer.caption(clip)
        sent = server.requests[-1].json
    assert caption.transcript == "What colour is the cube?"
    parts = sent["contents"][-1]["parts"]
    assert any("inlineData" in p or "inline_data" in p for p in parts)  # the clip itself, audio included
    assert "You are the Reviewer" in sent["systemInstruction"]["parts"][0]["text"]


def test_an_agent_on_its_own_server_never_gets_a_hosted_key(monkeypatch, loop):
    # qwen3-max and gpt-* default to DASHSCOPE_API_KEY / OPENAI_API_KEY; an agent on a base_url of its own that names
    # no variable sends no key, as a judge does (the hosted key must not reach a server of the user's own)
    for variable in ("DASHSCOPE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.setenv(variable, "sk-" + secrets.token_hex(12))  # made at run time: no key is committed
    answer = {"description": "a desk scene", "passage": "p0"}
    with LoopbackServer(default=Behaviour(text=json.dumps(answer))) as server:
        for model in ("qwen3-max", "gpt-5-mini"):
            director = RouteDirector(AgentSpec(model=model, base_url=server.base_url), loop)
            loop.agents.append(director)  # type: ignore[attr-defined]
            payload = {"assignment": {"language": "en"}, "passages": [{"id": "p0"}], "config": {}}
            assert director.ask(DirectorRequest("description", INSTRUCTIONS["description"], payload)) == answer
        sent = list(server.requests)
    assert len(sent) == 2
    assert all("Authorization" not in r.headers for r in sent)
