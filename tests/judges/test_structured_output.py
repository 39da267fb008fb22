"""Structured verdicts: the judge engine sends each verdict's JSON schema (criteria 1..K of that instance) in the
form the judge's route takes, as the judges file chooses."""

from __future__ import annotations

import json

import pytest

from omnivchat.benchmarks.native import judge_run, run_eval
from omnivchat.judges import JudgeSpec, hits_schema, load_judges, response_format
from omnivchat.routes import Secret, get_route
from omnivchat.testing import Behaviour, LoopbackServer


def spec(**fields: object) -> JudgeSpec:
    return JudgeSpec.model_validate({"name": "j", "model": "judge-model", **fields})


def test_forms_of_the_schema():
    schema = hits_schema(3)
    assert schema["properties"]["hits"]["items"]["enum"] == [1, 2, 3]
    assert response_format(spec(), "openai", schema) is None  # auto: not certain on an OpenAI-compatible route
    assert response_format(spec(), "gemini", schema)["json_schema"]["schema"] == schema
    assert response_format(spec(structured_output="json_schema"), "openai", schema) == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": schema, "strict": True},
    }
    assert response_format(spec(structured_output="json_object"), "openai", schema) == {
        "type": "json_object",
        "schema": schema,
    }
    assert response_format(spec(structured_output="off"), "gemini", schema) is None
    fixed = {"type": "json_object"}
    assert response_format(spec(response_format=fixed, structured_output="json_schema"), "openai", schema) == fixed
    assert response_format(spec(structured_output="json_schema"), "openai", None) is None  # a task without schema


def test_a_judge_that_asks_for_structured_verdicts_sends_each_items_schema(small_bench, tmp_path):
    run_dir = tmp_path / "run"
    assert run_eval(small_bench, get_route("sim:healthy"), run_dir, system_prompt="x", progress=False).done == 4
    with LoopbackServer(default=Behaviour(text='{"hits": [1], "reasoning": "gate"}')) as server:
        path = tmp_path / "judges.json"
        judge = {"name": "s", "model": "m", "base_url": server.base_url, "structured_output": "json_schema"}
        path.write_text(json.dumps({"judges": [judge]}))
        report = judge_run(run_dir, small_bench, load_judges(path), ["s"], style_judge="s", progress=False)
        assert report.summaries["rubric:s"].done == 4 and report.summaries["style:s"].done == 4
        sent = [r.json["response_format"] for r in server.chat_requests]
    rubric = [f for f in sent if f["json_schema"]["schema"]["properties"]["hits"]["items"]["enum"] == [1, 2, 3]]
    style = [f for f in sent if f["json_schema"]["schema"]["properties"]["hits"]["items"]["enum"] == list(range(1, 8))]
    assert len(rubric) == 4 and len(style) == 4 and all(f["type"] == "json_schema" for f in sent)


def test_the_gemini_route_turns_the_schema_into_a_response_json_schema(tmp_path):
    pytest.importorskip("google.genai")
    from omnivchat.routes import ChatRequest

    with LoopbackServer(default=Behaviour(text='{"hits": [1, 2], "reasoning": "ok"}')) as server:
        route = get_route("gemini:judge", api_key=Secret("g-key"), base_url=server.url)
        form = response_format(spec(), route.settings.route, hits_schema(2))
        request = ChatRequest(item_id="x", text="grade this", response_format=form)

        async def go():
            try:
                return await route.send(route.prepare(request))
            finally:
                await route.aclose()

        import asyncio

        response = asyncio.run(go())
        config = server.requests[-1].json["generationConfig"]
    assert response.text.startswith("{")
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["hits"]["items"]["enum"] == [1, 2]
