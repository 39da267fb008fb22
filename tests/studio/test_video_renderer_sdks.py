"""Each hosted renderer against its provider's official SDK (issue 23, item 12): both are pointed at the same
loopback server (omnivchat.testing._videos, which records every request), make the same job, and their requests
are compared: method, path, body, and the headers that matter (the auth header's presence, not its value; not
user-agent and other client marks). Where the SDK reads the answer (Gemini's ``output_video``), what it reads is
what the renderer delivers.

google-genai is a dev dependency, so its test always runs. dashscope and volcengine's Ark runtime are not (both
pull in many packages: fastapi, uvicorn, opentelemetry, tiktoken...; the Ark runtime needs volcenginesdk-core and
-ark): their tests run when the SDK is importable and are skipped otherwise."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from omnivchat.studio.engine import MediaReference, RenderRequest, Script, Segment
from omnivchat.studio.hosted._bridge import LoopThread
from omnivchat.studio.hosted.renderers import GeminiOmniRenderer, SeedanceRenderer, WanRenderer
from omnivchat.testing._videos import VideoMockServer, VideoRequest, VideoTask

ENV = "OMNIVCHAT_SDK_TEST_KEY"
SEED = 1_234_567
SPEECH = "Which cup is mine?"
SCRIPT = Script(
    language="en",
    duration_s=5.2,
    question=SPEECH,
    segments=[
        Segment(start=0.0, end=0.5, kind="silence"),
        Segment(start=0.5, end=2.5, kind="speech", text=SPEECH),
        Segment(start=2.5, end=5.2, kind="silence"),
    ],
    scene={"description": "Two cups on a desk, filmed with a phone"},
    references=[MediaReference(turn=1, kind="final_frame", purpose="continue from its last frame")],
)
IGNORED_HEADERS = {"user-agent", "x-goog-api-client", "host", "accept-encoding", "connection", "content-length"}
IGNORED_HEADERS |= {"x-dashscope-useragent", "x-dashscope-sdk-client", "x-dashscope-sdk-session-id", "date"}
IGNORED_HEADERS |= {"x-client-request-id", "x-request-id"}


def _key() -> str:
    return "sk-sdk-" + hashlib.sha256(b"omnivchat sdk comparison").hexdigest()[:32]  # made at run time


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from omnivchat.studio.hosted.renderers._refs import final_frame
    from omnivchat.synth import render_clip

    folder = tmp_path_factory.mktemp("sdk-compare")
    spec = {"duration": 2.0, "size": [64, 36], "speech": [{"text": "Hello.", "language": "en", "start": 0.2}]}
    clip = render_clip(spec, folder / "turn1.mp4", use_cache=False).path
    frame = final_frame(clip, folder / "turn1.final_frame.png")
    return {"clip": clip, "bytes": clip.read_bytes(), "frame": frame, "frame_bytes": frame.read_bytes()}


@pytest.fixture
def server(media: dict[str, Any]) -> Iterator[VideoMockServer]:
    with VideoMockServer(media["bytes"], api_key=_key()) as mock:
        yield mock


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture(autouse=True)
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, _key())


def _settings(server: VideoMockServer) -> dict[str, Any]:
    return {"base_url": server.url, "api_key_env": ENV, "poll_interval_s": 0.01, "timeout_s": 10.0, "trust_env": False}


def _request(tmp_path: Path, media: dict[str, Any]) -> RenderRequest:
    refs = {"turn1.final_frame": media["frame"]}
    return RenderRequest(SCRIPT, (), refs, SEED, tmp_path / "ours" / "turn2.mp4")


def _headers(request: VideoRequest) -> dict[str, str]:
    """The headers that matter, auth values masked (never compared, never shown)."""
    shown: dict[str, str] = {}
    for name, value in request.headers.items():
        low = name.lower()
        if low in IGNORED_HEADERS:
            continue
        if low in ("authorization", "x-goog-api-key"):
            value = "<key>" if _key() in value else "<another value>"
        shown[low] = value.split(";")[0].strip() if low in ("content-type", "accept") else value
    return shown


def _split(requests: list[VideoRequest], start: int) -> tuple[list[VideoRequest], list[VideoRequest]]:
    return requests[:start], requests[start:]


# ------------------------------------------------------------------------------------------ google-genai


def test_gemini_omni_requests_match_google_genai(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    renderer = GeminiOmniRenderer(loop=loop, **_settings(server))
    clip = renderer.render(_request(tmp_path, media))
    ours = server.requests
    [submit] = [r for r in ours if r.method == "POST"]
    body = submit.json

    client = genai.Client(api_key=_key(), http_options=types.HttpOptions(base_url=server.url))
    image = {"type": "image", "data": media_b64(media["frame_bytes"]), "mime_type": "image/png"}
    created = client.interactions.create(
        model="gemini-omni-1.2-flash",
        input=[{"type": "text", "text": clip.notes["prompt"]}, image],
        response_modalities=["video"],
        background=True,
        response_format={
            "type": "video",
            "aspect_ratio": "16:9",
            "resolution": "720p",
            "duration": "6s",
            "delivery": "inline",
        },
        generation_config={"seed": SEED, "video_config": {"task": "image_to_video"}},
    )
    polled = client.interactions.get(created.id)
    while polled.status == "in_progress":
        polled = client.interactions.get(created.id)
    theirs = server.requests[len(ours) :]
    [sdk_submit] = [r for r in theirs if r.method == "POST"]
    assert (submit.method, submit.path) == (sdk_submit.method, sdk_submit.path) == ("POST", "/v1/interactions")
    assert body == sdk_submit.json
    assert _headers(submit) == _headers(sdk_submit)
    our_poll = next(r.path for r in ours if r.method == "GET").replace(clip.notes["task"], "{id}")
    assert our_poll == next(r.path for r in theirs if r.method == "GET").replace(created.id, "{id}")
    # The SDK reads the clip where the renderer does.
    assert polled.status == "completed" and polled.output_video is not None
    assert base64.b64decode(polled.output_video.data) == (tmp_path / "ours" / clip.path).read_bytes()


def test_gemini_omni_reads_an_extension_as_google_genai(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """An extension's answer repeats the earlier turn's steps: the SDK's output_video and the renderer's clip are
    the new one."""
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    renderer = GeminiOmniRenderer(loop=loop, extend=True, **_settings(server))
    first = renderer.render(RenderRequest(SCRIPT.model_copy(update={"references": []}), (), {}, 1, tmp_path / "a.mp4"))
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    second = RenderRequest(script, (), {"turn1.clip": tmp_path / first.path}, 2, tmp_path / "b.mp4")
    renderer.render(second)
    extension = server.submissions()[-1]
    client = genai.Client(api_key=_key(), http_options=types.HttpOptions(base_url=server.url))
    created = client.interactions.create(**extension.json)
    polled = client.interactions.get(created.id)
    while polled.status == "in_progress":
        polled = client.interactions.get(created.id)
    assert polled.output_video is not None
    delivered = second.out_path.read_bytes()
    assert base64.b64decode(polled.output_video.data) == delivered == media["bytes"]


def test_gemini_omni_cancels_as_google_genai(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    from omnivchat.studio.engine import RenderFailed

    server.script(VideoTask(outcome="never"), VideoTask(outcome="never"))
    renderer = GeminiOmniRenderer(loop=loop, **{**_settings(server), "timeout_s": 0.1})
    with pytest.raises(RenderFailed, match="cancelled"):
        renderer.render(RenderRequest(SCRIPT.model_copy(update={"references": []}), (), {}, 1, tmp_path / "a.mp4"))
    [ours] = [r for r in server.requests if r.path.endswith("/cancel")]
    client = genai.Client(api_key=_key(), http_options=types.HttpOptions(base_url=server.url))
    created = client.interactions.create(model="gemini-omni-1.2-flash", input="x", background=True)
    client.interactions.cancel(created.id)
    [theirs] = [r for r in server.requests if r.path.endswith("/cancel") and r is not ours]
    assert (ours.method, ours.path.replace("task-1", "ID")) == (theirs.method, theirs.path.replace("task-2", "ID"))


def media_b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# ---------------------------------------------------------------------------------------------- dashscope


def _oss_normalised(server: VideoMockServer, body: Any) -> Any:
    """The body with each ``oss://`` URL replaced by the sha256 of the object it names (the upload directories
    differ from one policy to the next)."""
    if isinstance(body, dict):
        return {k: _oss_normalised(server, v) for k, v in body.items()}
    if isinstance(body, list):
        return [_oss_normalised(server, v) for v in body]
    if isinstance(body, str) and body.startswith("oss://"):
        data = server.uploads.get(body.removeprefix("oss://"))
        return "oss:<missing>" if data is None else "oss:" + hashlib.sha256(data).hexdigest()
    return body


@pytest.mark.parametrize("model", ["wan2.6-i2v", "wan2.7-i2v"])
def test_wan_requests_match_dashscope(
    model: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """The same image-to-video job: the local frame goes to DashScope's temporary storage in both, and the task
    requests match (the SDK's deprecated ``input.extend_prompt`` aside)."""
    dashscope = pytest.importorskip("dashscope")
    from dashscope import VideoSynthesis

    renderer = WanRenderer(loop=loop, model=model.replace("i2v", "t2v"), i2v_model=model, **_settings(server))
    clip = renderer.render(_request(tmp_path, media))
    ours = server.requests
    [submit] = server.submissions()

    dashscope.base_http_api_url = server.url + "/api/v1"
    new = model.startswith("wan2.7")
    frame = str(media["frame"])
    shape: dict[str, Any] = (
        {"media": [{"type": "first_frame", "url": frame}], "ratio": "16:9"}
        if new
        else {"img_url": frame, "audio": True, "shot_type": "single"}
    )
    answer = VideoSynthesis.async_call(
        model=model,
        prompt=clip.notes["prompt"],
        api_key=_key(),
        resolution="720P",
        duration=6,
        seed=SEED,
        prompt_extend=False,
        watermark=False,
        **shape,
    )
    assert answer.status_code == 200, answer
    theirs = server.requests[len(ours) :]
    [sdk_submit] = [r for r in theirs if r.path.endswith("/video-synthesis")]
    sdk_body = _oss_normalised(server, sdk_submit.json)
    # SDK 2.x artefacts in input: the deprecated extend_prompt (default true; parameters.prompt_extend decides) and
    # "function", the name of its own API module ("video-synthesis", the URL's last segment)
    sdk_body["input"].pop("extend_prompt", None)
    sdk_body["input"].pop("function", None)
    assert _oss_normalised(server, submit.json) == sdk_body
    assert "oss:<missing>" not in str(sdk_body)
    assert _headers(submit) == _headers(sdk_submit)
    # The storage flow: one policy for the model, the file posted with the same form fields.
    assert [r.query for r in ours if r.path == "/api/v1/uploads"] == [
        r.query for r in theirs if r.path == "/api/v1/uploads"
    ]
    [our_upload] = [r for r in ours if r.path == "/oss"]
    [sdk_upload] = [r for r in theirs if r.path == "/oss"]
    assert set(our_upload.form) == set(sdk_upload.form) and our_upload.files == sdk_upload.files
    assert {k: v for k, v in our_upload.form.items() if k != "key"} == {
        k: v for k, v in sdk_upload.form.items() if k != "key"
    }
    task_id = answer.output.task_id
    VideoSynthesis.cancel(task_id, api_key=_key())
    [cancel] = [r for r in server.requests if r.path.endswith("/cancel")]
    assert (cancel.method, cancel.path) == ("POST", f"/api/v1/tasks/{task_id}/cancel")


# ------------------------------------------------------------------------------------ volcengine Ark runtime


def test_seedance_requests_match_the_ark_sdk(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    ark_runtime = pytest.importorskip("volcenginesdkarkruntime")

    renderer = SeedanceRenderer(loop=loop, **_settings(server))
    clip = renderer.render(_request(tmp_path, media))
    ours = server.requests
    [submit] = server.submissions()
    client = ark_runtime.Ark(base_url=server.url + "/api/v3", api_key=_key())
    url = submit.json["content"][1]["image_url"]["url"]
    created = client.content_generation.tasks.create(
        model="dreamina-seedance-2-0-260128",
        content=[
            {"type": "text", "text": clip.notes["prompt"]},
            {"type": "image_url", "image_url": {"url": url}, "role": "first_frame"},
        ],
        ratio="16:9",
        duration=6,
        resolution="720p",
        generate_audio=True,
        seed=SEED,
    )
    client.content_generation.tasks.get(task_id=created.id)
    client.content_generation.tasks.delete(task_id=created.id)
    theirs = server.requests[len(ours) :]
    sdk_submit = theirs[0]
    assert (submit.method, submit.path) == (sdk_submit.method, sdk_submit.path)
    assert submit.json == {k: v for k, v in sdk_submit.json.items() if v is not None}  # the SDK sends unset as null
    assert _headers(submit) == _headers(sdk_submit)
    our_poll = next(r for r in ours if r.method == "GET")
    sdk_poll = next(r for r in theirs if r.method == "GET")
    assert our_poll.path.rsplit("/", 1)[0] == sdk_poll.path.rsplit("/", 1)[0]
    [sdk_delete] = [r for r in theirs if r.method == "DELETE"]
    assert sdk_delete.path == f"/api/v3/contents/generations/tasks/{created.id}"
