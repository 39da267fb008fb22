"""Simulated models decide from the media they receive; defaults, overrides and credentials."""

from __future__ import annotations

import asyncio

import pytest

from omnivchat.media import blank_video, mute_audio, strip_audio
from omnivchat.routes import (
    AdaptiveLimiter,
    ChatRequest,
    CredentialError,
    RouteError,
    Secret,
    SettingsError,
    SimOracle,
    backoff_delay,
    get_route,
    read_key_file,
    resolve_api_key,
    resolve_settings,
)
from omnivchat.routes._sim import parse_sim_id


def answer(model: str, clip, requires=("video", "audio"), text=None, item="s1") -> tuple[str, object]:
    route = get_route(model)
    oracle = SimOracle(reference="THE ANSWER", language="en", requires=requires)
    request = ChatRequest(item_id=item, clip=clip, text=text, oracle=oracle)

    async def go():
        prepared = route.prepare(request)
        return await route.send(prepared)

    response = asyncio.run(go())
    return response.text, response.delivered


@pytest.fixture
def clips(small_bench):
    clip = small_bench.media_path(small_bench.get("s1").turns[0])
    return {
        "both": clip,
        "video_only": mute_audio(clip),
        "audio_only": blank_video(clip),
        "no_audio": strip_audio(clip),
    }


def test_healthy_model_needs_both_streams(clips):
    assert answer("sim:healthy", clips["both"])[0] == "THE ANSWER"
    for condition in ("video_only", "audio_only", "no_audio"):
        assert answer("sim:healthy", clips[condition])[0] != "THE ANSWER", condition
    assert answer("sim:healthy", None)[0] != "THE ANSWER"


def test_perception_of_received_media(clips):
    assert answer("sim:healthy", clips["both"])[1].model_dump(exclude={"cut_from_s"}) == {
        "video": True,
        "audio": True,
        "dropped": (),
    }
    assert answer("sim:healthy", clips["video_only"])[1].audio is False  # muted: silent track
    assert answer("sim:healthy", clips["audio_only"])[1].video is False  # black frames


def test_a_clip_rewritten_in_place_is_perceived_anew(clips, tmp_path):
    """Perception is remembered per file as it is now: the same path rewritten (a blanked picture, then a corrupt
    file) is perceived again, and a clip that cannot be read still fails its request alone."""
    import os
    import shutil

    clip = tmp_path / "clip.mp4"
    shutil.copy(clips["both"], clip)
    assert answer("sim:healthy", clip)[1].video is True
    shutil.copy(clips["audio_only"], clip)
    os.utime(clip, ns=(clip.stat().st_atime_ns, clip.stat().st_mtime_ns + 1_000_000))  # a coarse clock aside
    assert answer("sim:healthy", clip)[1].video is False
    clip.write_bytes(b"not a video")
    with pytest.raises(RouteError) as err:
        answer("sim:healthy", clip)
    assert err.value.kind == "media"
    clip.unlink()
    with pytest.raises(RouteError) as gone:
        answer("sim:healthy", clip)
    assert gone.value.kind == "media"


def test_broken_models(clips):
    assert answer("sim:video-blind", clips["both"])[0] != "THE ANSWER"
    assert answer("sim:video-blind", clips["both"], requires=("audio",))[0] == "THE ANSWER"
    assert answer("sim:audio-blind", clips["both"], requires=("video",))[0] == "THE ANSWER"
    assert answer("sim:no-fusion", clips["both"])[0] != "THE ANSWER"
    assert answer("sim:no-fusion", clips["audio_only"], requires=("audio",))[0] == "THE ANSWER"
    assert answer("sim:prior-only", None, text="the answer leaks here")[0] == "THE ANSWER"
    assert answer("sim:prior-only", clips["both"])[0] != "THE ANSWER"


def test_skills_are_probabilities_drawn_per_item(clips):
    hits = sum(
        answer("sim:custom?fusion=0.5&seed=1", clips["both"], item=f"i{n}")[0] == "THE ANSWER" for n in range(40)
    )
    assert 8 < hits < 32
    assert answer("sim:custom?fusion=0.5&seed=1", clips["both"], item="i3") == answer(
        "sim:custom?fusion=0.5&seed=1", clips["both"], item="i3"
    )


def test_sim_ids():
    assert parse_sim_id("sim:video-blind")[1].video == 0.0
    assert parse_sim_id("sim:healthy?latency=0.2")[1].latency == 0.2
    with pytest.raises(ValueError, match="unknown simulated model"):
        parse_sim_id("sim:genius")
    with pytest.raises(ValueError, match="not a number"):
        parse_sim_id("sim:custom?video=high")


def test_defaults_table_and_overrides(tmp_path):
    qwen = resolve_settings("qwen3-omni-flash")
    assert (qwen.thinking, qwen.include_modalities, qwen.media_input, qwen.api_key_env) == (
        False,
        True,
        "video_url",
        "DASHSCOPE_API_KEY",
    )
    assert resolve_settings("qwen-omni-turbo").limits.max_duration_s == 40.0
    vllm = resolve_settings("Qwen/Qwen2.5-Omni-7B")
    assert (vllm.audio_delivery, vllm.audio_in_video_kwarg, vllm.include_modalities) == ("in_video", True, False)
    assert resolve_settings("openbmb/MiniCPM-o-4_5").audio_delivery == "input_audio"
    gemini = resolve_settings("gemini-3.8-flash")
    # its OpenAI-compatible endpoint documents image_url and input_audio, no video part
    assert (gemini.media_input, gemini.include_modalities, gemini.thinking_switch) == ("frames", False, "google")
    other = resolve_settings("my-own-model")
    assert (other.media_input, other.thinking, other.include_modalities) == ("video_url", None, True)
    assert resolve_settings("qwen3-omni-flash", overrides={"thinking": "default"}).thinking is None
    assert resolve_settings("qwen3-omni-flash", overrides={"thinking": True, "media_input": None}).thinking is True
    user = tmp_path / "models.yaml"
    user.write_text("qwen3-omni-flash:\n  media_input: file\n  limits: {max_bytes: 1000}\n")
    mine = resolve_settings("qwen3-omni-flash", user_file=user)
    assert mine.media_input == "file" and mine.limits.max_bytes == 1000 and mine.limits.max_duration_s == 150.0
    bad = tmp_path / "bad.toml"
    bad.write_text('["qwen*"]\nmedia_input = "telepathy"\n')
    with pytest.raises(SettingsError, match="media_input"):
        resolve_settings("qwen3-omni-flash", user_file=bad)


def test_key_file_and_environment(tmp_path, monkeypatch):
    keys = tmp_path / "k.env"
    keys.write_text('# comment\nexport A="alpha"\nB=beta # note\nEMPTY=\n')
    assert read_key_file(keys, "A").reveal() == "alpha"
    assert read_key_file(keys, "B").reveal() == "beta"
    with pytest.raises(CredentialError, match="no field named C") as info:
        read_key_file(keys, "C")
    assert "alpha" not in str(info.value)
    with pytest.raises(CredentialError, match="EMPTY is empty"):
        read_key_file(keys, "EMPTY")
    with pytest.raises(CredentialError, match="needs --key-field"):
        resolve_api_key(None, keys, None)
    monkeypatch.setenv("MY_ENV_KEY", "from-env")
    assert resolve_api_key("MY_ENV_KEY").reveal() == "from-env"
    assert resolve_api_key("UNSET_VARIABLE_XYZ") is None
    secret = Secret("hidden-value")
    assert "hidden-value" not in repr(secret) + str(secret) + f"{secret}"


def test_limiter_halves_on_429_and_grows_back():
    async def go():
        limiter = AdaptiveLimiter(8)
        await limiter.record(RouteError("rate_limited", "429"))
        assert limiter.limit == 4
        await limiter.record(RouteError("rate_limited", "429"))
        assert limiter.limit == 2
        for _ in range(2):
            await limiter.record(None)
        assert limiter.limit == 3
        await limiter.record(RouteError("server_error", "500"))
        assert limiter.limit == 3

    asyncio.run(go())


def test_backoff_honours_retry_after_and_caps():
    assert backoff_delay(RouteError("rate_limited", "", retry_after=5.0), 1, base=0.1, cap=2.0) == 5.0
    delays = [backoff_delay(RouteError("server_error", ""), n, base=1.0, cap=8.0) for n in range(1, 8)]
    assert all(0.5 <= d <= 8.0 for d in delays) and delays[-1] >= 4.0
