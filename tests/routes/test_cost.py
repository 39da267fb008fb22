"""Prices, per-attempt costs from usage, and request estimates (omnivchat.routes._cost; docs/costs.md)."""

from __future__ import annotations

import asyncio

import pytest

from omnivchat.routes import (
    ChatRequest,
    Price,
    RouteError,
    Sampling,
    Secret,
    TokenRates,
    attempt_cost,
    estimate_prepared,
    get_route,
    resolve_settings,
    usage_tokens,
)
from omnivchat.testing import Behaviour, LoopbackServer

PRICE = Price(input_per_mtok=1.0, output_per_mtok=4.0)


def test_reasoning_counts_as_output_once():
    # OpenAI style: completion_tokens already holds the reasoning tokens (total = prompt + completion)
    openai = {
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "total_tokens": 150,
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    assert usage_tokens(openai).output == 50
    # Gemini style: reasoning reported beside the completion, and the total covers both
    gemini = {**openai, "total_tokens": 180}
    assert usage_tokens(gemini).output == 80
    assert attempt_cost(gemini, PRICE).usd == pytest.approx((100 * 1 + 80 * 4) / 1e6)


@pytest.mark.parametrize(
    "usage", [None, {}, {"prompt_tokens": 5}, {"prompt_tokens": "5", "completion_tokens": 1}, {"prompt_tokens": -1}]
)
def test_usage_without_token_counts_is_unknown(usage):
    cost = attempt_cost(usage, PRICE)
    assert cost.usd is None and cost.note == "no usage"


def test_no_price_is_unknown_and_a_refusal_costs_nothing():
    usage = {"prompt_tokens": 10, "completion_tokens": 10}
    assert attempt_cost(usage, None).usd is None and attempt_cost(usage, None).note == "no price"
    refused = attempt_cost(None, None, http_status=429)
    assert refused.usd == 0.0 and refused.note == "refused (HTTP 429)"
    assert attempt_cost(usage, PRICE, http_status=200).usd == pytest.approx(50 / 1e6)


def test_separate_audio_price_needs_the_breakdown():
    price = Price(input_per_mtok=1.0, output_per_mtok=1.0, audio_input_per_mtok=10.0)
    usage = {"prompt_tokens": 100, "completion_tokens": 0}
    unknown = attempt_cost(usage, price)
    assert unknown.usd is None and "no audio token count" in unknown.note
    split = {**usage, "prompt_tokens_details": {"audio_tokens": 40}}
    assert attempt_cost(split, price).usd == pytest.approx((60 * 1 + 40 * 10) / 1e6)


def test_token_rates_need_one_frame_rule():
    with pytest.raises(ValueError, match="exactly one"):
        TokenRates(frames_per_s=1, audio_per_s=1)
    with pytest.raises(ValueError, match="exactly one"):
        TokenRates(frames_per_s=1, audio_per_s=1, tokens_per_frame=2, pixels_per_token=3)


def test_shipped_defaults_carry_rates_but_no_hosted_price():
    for model in ("qwen3-omni-flash", "qwen-omni-turbo", "gemini-3.8-flash", "gemini:gemini-3.8-flash", "gpt-5-mini"):
        assert resolve_settings(model).price is None  # the reference states no price: cost unknown, never made up
    assert resolve_settings("qwen3-omni-flash").token_rates.audio_per_s == 12.5
    assert resolve_settings("qwen-omni-turbo").token_rates.audio_per_s == 25.0
    assert resolve_settings("gemini-3.8-flash").token_rates.tokens_per_frame == 258
    assert resolve_settings("sim:healthy").price == Price(input_per_mtok=0, output_per_mtok=0)


def test_estimate_from_clip_durations(small_bench, tmp_path):
    clip = small_bench.media_path(small_bench.get("s1").turns[0])
    rates = {"frames_per_s": 1.0, "tokens_per_frame": 100, "audio_per_s": 10.0, "source": "test"}
    route = get_route("omni-test", base_url="http://127.0.0.1:9/v1", token_rates=rates, price=PRICE.model_dump())
    request = ChatRequest(item_id="s1", clip=clip, text="question?", sampling=Sampling(max_tokens=20))
    prepared = route.prepare(request)
    from omnivchat import media

    info = media.probe(clip, energy=False)
    estimate = estimate_prepared(prepared, route.settings)
    assert estimate.media_bytes == info.size_bytes
    assert estimate.video_tokens == pytest.approx(100 * -(-info.duration // 1), abs=100)
    assert estimate.audio_tokens == pytest.approx(10 * info.duration, abs=1)
    assert estimate.output_tokens == 20
    expected = (estimate.prompt_tokens * 1.0 + 20 * 4.0) / 1e6
    assert estimate.usd == pytest.approx(expected)
    silent = route.settings.model_copy(update={"audio_delivery": "none"})
    assert estimate_prepared(prepared, silent).audio_tokens == 0


def test_gemini_usage_keeps_thinking_and_modalities():
    usage = {
        "promptTokenCount": 100,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 30,
        "totalTokenCount": 150,
        "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": 40}, {"modality": "TEXT", "tokenCount": 60}],
    }
    pytest.importorskip("google.genai")
    with LoopbackServer(Behaviour(text="ok", usage=usage)) as server:
        route = get_route("gemini:gemini-test", base_url=server.url, api_key=Secret("g-key-0123456789"), timeout_s=10.0)

        async def ask():
            try:
                return await route.send(route.prepare(ChatRequest(item_id="t", text="hi")))
            finally:
                await route.aclose()

        response = asyncio.run(ask())
    assert response.usage["completion_tokens_details"] == {"reasoning_tokens": 30}
    assert response.usage["prompt_tokens_details"] == {"audio_tokens": 40, "text_tokens": 60}
    tokens = usage_tokens(response.usage)
    assert (tokens.prompt, tokens.output, tokens.audio_in) == (100, 50, 40)


def test_a_length_failure_carries_its_usage():
    usage = {"prompt_tokens": 7, "completion_tokens": 9, "total_tokens": 16}
    with LoopbackServer(Behaviour(text="cut", finish_reason="length", usage=usage)) as server:
        route = get_route("omni-test", base_url=server.base_url, timeout_s=10.0)

        async def ask():
            try:
                await route.send(route.prepare(ChatRequest(item_id="t", text="hi")))
            finally:
                await route.aclose()

        with pytest.raises(RouteError) as info:
            asyncio.run(ask())
    assert info.value.kind == "length" and info.value.usage == usage
