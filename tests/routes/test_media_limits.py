"""vLLM refuses a request holding more media items of a modality than its `--limit-mm-per-prompt` allows. The limit a
bench needs is derived from the bench (the dry run prints it, as vLLM counts: the audio taken out of a video counts
as one audio item), and `check-route --bench` proves the server takes the bench's largest request."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.routes import ChatRequest, HistoryTurn, get_route, limit_flag, media_items, most_items
from omnivchat.testing import Behaviour, LoopbackServer

QWEN = "Qwen/Qwen2.5-Omni-3B"
runner = CliRunner()
HEARD = "A red square. The password is copper meadow and the number is 53."
# vLLM's own refusal (vllm/multimodal/..., "At most N {modality}(s) may be provided in one prompt")
REFUSAL = "At most {n} {modality}(s) may be provided in one prompt."


def clips_of(bench, item):
    return [bench.media_path(turn) for turn in bench.get(item).turns]


def prepared_items(route, request) -> dict[str, int]:
    return media_items(route.prepare(request).description)


def test_items_are_counted_as_vllm_counts_them(small_bench):
    first, last = clips_of(small_bench, "m1")
    two_turns = ChatRequest(item_id="m1", clip=last, history=[HistoryTurn(clip=first, text="q", reply="r")])
    in_video = get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True)
    assert prepared_items(in_video, two_turns) == {"image": 0, "video": 2, "audio": 2}  # each video's own track
    separate = get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True, audio_delivery="input_audio")
    assert prepared_items(separate, two_turns) == {"image": 0, "video": 2, "audio": 2}  # each clip's WAV part
    other = get_route("my-model", base_url="http://127.0.0.1:9/v1", no_key=True)  # no kwarg: vLLM takes no track
    assert prepared_items(other, two_turns) == {"image": 0, "video": 2, "audio": 0}
    frames = get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True, media_input="frames")
    counted = prepared_items(frames, two_turns)
    assert counted["video"] == 0 and counted["audio"] == 2 and 2 <= counted["image"] <= 2 * 16
    text = get_route(QWEN, base_url="http://127.0.0.1:9/v1", no_key=True)
    assert prepared_items(text, ChatRequest(item_id="t", text="hello")) == {"image": 0, "video": 0, "audio": 0}
    assert most_items([{"video": 1, "audio": 3}, {"video": 2}]) == {"image": 0, "video": 2, "audio": 3}
    assert limit_flag({"video": 2, "audio": 2}) == """--limit-mm-per-prompt '{"image": 0, "video": 2, "audio": 2}'"""


def _dry_run_limit(output: str) -> dict[str, int]:
    found = re.search(r"--limit-mm-per-prompt '([^']*)'", output)
    assert found is not None, output
    return json.loads(found.group(1))


def test_the_dry_run_derives_the_limit_from_the_bench(small_bench, tmp_path):
    base = ["eval", "--bench", str(small_bench.root), "--model", QWEN, "--base-url", "http://127.0.0.1:9/v1"]
    result = runner.invoke(app, [*base, "--no-key", "--dry-run", "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "largest request: 2 videos, 2 audio items" in result.output  # m1: two turns, each with its track
    assert _dry_run_limit(result.output) == {"image": 0, "video": 2, "audio": 2}
    single = runner.invoke(app, [*base, "--no-key", "--dry-run", "--limit", "1", "-o", str(tmp_path / "run")])
    assert _dry_run_limit(single.output) == {"image": 0, "video": 1, "audio": 1}
    assert not (tmp_path / "run").exists()  # a dry run writes nothing


def vllm_like(audible_b64: str, limits: dict[str, int]) -> Callable[[dict], Behaviour]:
    """A stand-in for vLLM serving Qwen-Omni with --limit-mm-per-prompt ``limits``: it counts the request's items its
    own way (parts by type, one audio more per video with use_audio_in_video) and refuses with vLLM's message; it
    hears the audible clip through the flag or a WAV part."""

    def rules(payload: dict) -> Behaviour:
        parts = [p for m in payload["messages"] if isinstance(m["content"], list) for p in m["content"]]
        flagged = bool((payload.get("mm_processor_kwargs") or {}).get("use_audio_in_video"))
        videos = sum(p["type"] == "video_url" for p in parts)
        counts = {
            "image": sum(p["type"] == "image_url" for p in parts),
            "video": videos,
            "audio": sum(p["type"] == "input_audio" for p in parts) + (videos if flagged else 0),
        }
        for modality, n in counts.items():
            if n > limits[modality]:
                return Behaviour(status=400, error_message=REFUSAL.format(n=limits[modality], modality=modality))
        last = payload["messages"][-1]["content"]
        video = next(p["video_url"]["url"] for p in last if p["type"] == "video_url")
        if video.endswith(audible_b64):
            return Behaviour(text=HEARD)
        return Behaviour(text="A red square. I cannot hear any speech: the audio is unavailable.")

    return rules


@pytest.mark.parametrize(
    ("limits", "passes"),
    [
        ({"image": 1, "video": 1, "audio": 2}, False),  # the limit docs/self-serve.md once showed
        ({"image": 0, "video": 2, "audio": 2}, True),  # what the dry run derives
    ],
)
def test_check_route_proves_the_server_takes_the_largest_request(small_bench, tmp_path, monkeypatch, limits, passes):
    from omnivchat.diagnostics.route_check import check_clips

    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    audible, _ = check_clips()
    with LoopbackServer() as srv:
        srv.rules = vllm_like(base64.b64encode(audible.read_bytes()).decode(), limits)
        args = ["check-route", "--model", QWEN, "--base-url", srv.base_url, "--no-key", "-o", str(tmp_path / "c.json")]
        result = runner.invoke(app, [*args, "--bench", str(small_bench.root)])
        sent = [media_items(r.json) for r in srv.chat_requests]
    assert result.exit_code == (0 if passes else 1), result.output
    assert "largest request of" in result.output and "2 videos, 2 audio items" in result.output
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["bench_media_items"] == {"image": 0, "video": 2, "audio": 2}
    capacity = next(r for r in record["records"] if r["control"] == "capacity")
    assert capacity["media_items"] == {"image": 0, "video": 2, "audio": 2} == sent[-1]
    if passes:
        assert record["passed"] and capacity["answer"] == HEARD
        assert "answered: the server takes 2 videos, 2 audio items in one request" in result.output
    else:
        assert capacity["http_status"] == 400 and capacity["answer"] is None
        (reason,) = record["reasons"]
        assert "largest request of the bench was refused" in reason and "At most 1 video(s)" in reason
        assert """--limit-mm-per-prompt '{"image": 0, "video": 2, "audio": 2}'""" in reason


def test_check_route_without_bench_sends_two_requests(tmp_path, monkeypatch):
    from omnivchat.diagnostics.route_check import check_clips

    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    audible, _ = check_clips()
    with LoopbackServer() as srv:
        srv.rules = vllm_like(base64.b64encode(audible.read_bytes()).decode(), {"image": 0, "video": 1, "audio": 1})
        result = runner.invoke(app, ["check-route", "--model", QWEN, "--base-url", srv.base_url, "--no-key"])
        assert len(srv.chat_requests) == 2
    assert result.exit_code == 0, result.output
