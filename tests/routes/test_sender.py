"""The one sender (routes.send_with_retries), the one model spec and the structured-output capability of routes."""

from __future__ import annotations

import asyncio

import pytest

from omnivchat.routes import (
    AdaptiveLimiter,
    AttemptCost,
    AttemptHooks,
    ChatRequest,
    ChatResponse,
    ModelSpec,
    Prepared,
    RetryPolicy,
    RouteError,
    RouteSettings,
    retry_after_s,
    schema_format,
    send_with_retries,
    status_kind,
)

FAST = RetryPolicy(max_attempts=3, backoff_base=0.001, backoff_cap=0.005)


class Scripted:
    """A route answering from a script: a RouteError is raised, a string is the reply."""

    model_id = "scripted"
    endpoint = "scripted"

    def __init__(self, *answers: RouteError | str) -> None:
        self.answers = list(answers)
        self.settings = RouteSettings(price={"input_per_mtok": 1.0, "output_per_mtok": 1.0})

    def prepare(self, request: ChatRequest) -> Prepared:
        return Prepared(key=request.item_id, request=request, description={})

    async def send(self, prepared: Prepared) -> ChatResponse:
        answer = self.answers.pop(0)
        if isinstance(answer, RouteError):
            raise answer
        return ChatResponse(text=answer, usage={"prompt_tokens": 1_000_000, "completion_tokens": 0})

    async def aclose(self) -> None:
        return None


class Recorder(AttemptHooks):
    def __init__(self, sendable: int = 99) -> None:
        self.sendable, self.ended_with, self.waits = sendable, [], []

    async def start(self, attempt: int) -> bool:
        return attempt <= self.sendable

    def ended(self, outcome: ChatResponse | RouteError, cost: AttemptCost) -> None:
        self.ended_with.append((outcome.kind if isinstance(outcome, RouteError) else "ok", cost.usd))

    async def wait(self, error: RouteError, delay: float) -> None:
        self.waits.append(delay)


def send(route: Scripted, hooks: Recorder, **kw):
    prepared = route.prepare(ChatRequest(item_id="a"))
    return asyncio.run(send_with_retries(route, prepared, FAST, hooks=hooks, **kw))


def test_retries_a_transient_failure_and_honours_retry_after():
    route, hooks = (
        Scripted(RouteError("rate_limited", "slow down", http_status=429, retry_after=0.01), "hi"),
        Recorder(),
    )
    sent = send(route, hooks)
    assert sent.response is not None and sent.response.text == "hi" and sent.attempts == 2
    assert hooks.ended_with == [("rate_limited", 0.0), ("ok", 1.0)]  # a refused request costs 0
    assert hooks.waits[0] >= 0.01  # never sooner than Retry-After, although the policy's cap is lower


def test_a_refused_answer_is_unparseable_and_retried_until_attempts_run_out():
    route, hooks = Scripted("x", "y", "z"), Recorder()
    sent = send(route, hooks, accept=lambda response: "not JSON")
    assert sent.response is None and sent.error is not None and sent.error.kind == "unparseable"
    assert sent.attempts == 3 and len(hooks.waits) == 2  # no wait after the last attempt
    assert [cost for _, cost in hooks.ended_with] == [1.0, 1.0, 1.0]  # generated, so billed


def test_a_final_failure_is_not_retried_and_a_hook_may_keep_a_request_unsent():
    sent = send(Scripted(RouteError("http_error", "bad request", http_status=400)), Recorder())
    assert sent.error is not None and sent.error.kind == "http_error" and sent.attempts == 1
    unsent = send(Scripted("hi"), Recorder(sendable=0))
    assert unsent.response is None and unsent.error is None and unsent.attempts == 0


def test_the_limiter_is_fed_back_each_outcome():
    async def run() -> int:
        limiter = AdaptiveLimiter(8)
        route = Scripted(RouteError("rate_limited", "", http_status=429), "hi")
        await send_with_retries(route, route.prepare(ChatRequest(item_id="a")), FAST, limiter=limiter)
        return limiter.limit

    assert asyncio.run(run()) == 4


def test_http_status_kinds_and_retry_after():
    assert [status_kind(s) for s in (429, 408, 503, 404)] == [
        "rate_limited",
        "request_timeout",
        "server_error",
        "http_error",
    ]
    assert retry_after_s("2.5") == 2.5 and retry_after_s("soon") is None and retry_after_s(None) is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: now


def test_structured_output_is_asked_of_the_route_kind():
    schema = {"type": "object"}
    assert schema_format("openai", schema, "auto", name="v", strict=True) is None
    assert schema_format("gemini", schema, "auto", name="v", strict=True) == {
        "type": "json_schema",
        "json_schema": {"name": "v", "schema": schema, "strict": True},
    }
    assert schema_format("openai", schema, "json_object", name="v", strict=True) == {
        "type": "json_object",
        "schema": schema,
    }
    assert schema_format("gemini", schema, "off", name="v", strict=True) is None


@pytest.mark.parametrize(
    ("entry", "no_key"),
    [
        ({"model": "m"}, False),
        ({"model": "m", "no_key": True}, True),
        ({"model": "m", "base_url": "http://127.0.0.1:8000/v1"}, True),  # a server of your own
        ({"model": "m", "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "K"}, False),
    ],
)
def test_model_spec_key_rule_and_overrides(entry, no_key):
    spec = ModelSpec.model_validate(entry)
    assert spec.sends_no_key is no_key
    assert spec.settings_overrides()["base_url"] == entry.get("base_url")
    with pytest.raises(ValueError):
        ModelSpec.model_validate({**entry, "unknown": 1})


def test_every_file_naming_models_words_a_missing_key_alike(monkeypatch):
    """Judges and Studio agents resolve their key through ModelSpec.key: one rule, one wording naming the entry,
    the variable and the file; the default variable of a hosted model is checked the same way."""
    from omnivchat.judges import JudgeSpec, judge_key
    from omnivchat.routes import CredentialError
    from omnivchat.studio.hosted import AgentSpec, RouteDirector

    monkeypatch.delenv("LAB_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = JudgeSpec(name="lab", model="gpt-4o-mini", api_key_env="LAB_KEY")
    with pytest.raises(CredentialError, match=r"^judge 'lab' needs its key in LAB_KEY \(api_key_env in the judges "):
        judge_key(judge)
    agent = AgentSpec(model="gpt-4o-mini", api_key_env="LAB_KEY")
    with pytest.raises(
        CredentialError, match=r"^agent 'gpt-4o-mini' needs its key in LAB_KEY \(api_key_env in the agents "
    ):
        RouteDirector(agent)
    default = AgentSpec(model="gpt-4o-mini")
    with pytest.raises(CredentialError, match=r"needs its key in OPENAI_API_KEY \(the default for gpt-4o-mini"):
        RouteDirector(default)
    monkeypatch.setenv("LAB_KEY", "k-" + "x" * 20)
    director = RouteDirector(agent)
    assert judge_key(judge) is not None and director.route.model_id == "gpt-4o-mini"
    director.close()
    assert JudgeSpec(name="own", model="m", base_url="http://127.0.0.1:9/v1").key("judge 'own'", "judges file") is None
