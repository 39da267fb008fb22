"""The hosted video renderers (omnivchat.studio.hosted.renderers) against a loopback mock of their five APIs
(omnivchat.testing._videos): real HTTP on 127.0.0.1, a real MP4 delivered, and every failure the engine routes
(moderation -> RenderRefused, failed or timed-out task -> RenderFailed, 429/5xx -> retryable RouteError), with a
hostile server echoing the key wherever it can."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omnivchat.routes import CredentialError, RouteError
from omnivchat.studio.engine import MediaReference, RenderFailed, RenderRefused, RenderRequest, Script, Segment
from omnivchat.studio.hosted._bridge import LoopThread
from omnivchat.studio.hosted.renderers import (
    RENDERERS,
    Capabilities,
    GeminiOmniRenderer,
    HostedVideoRenderer,
    MediaPlan,
    OpenAIVideosRenderer,
    RendererConfigError,
    RenderInputRefused,
    RenderKeyRejected,
    SeedanceRenderer,
    VeoRenderer,
    WanRenderer,
    build_prompt,
    make_renderer,
    plan_media,
    price_for,
)
from omnivchat.studio.hosted.renderers._refs import final_frame
from omnivchat.testing._videos import VideoMockServer, VideoRequest, VideoTask

KEY = "sk-vidtest-Zq8R2mW4xK9pL7vN3cJ5"
ENV = "OMNIVCHAT_VIDEO_TEST_KEY"
SEED = 3_000_000_123  # past 2**31: each backend brings it into its API's range
SPEECH = "What colour is the mug on the left?"

SCRIPT = Script(
    language="en",
    duration_s=5.2,
    question=SPEECH,
    segments=[
        Segment(start=0.0, end=0.4, kind="silence"),
        Segment(start=0.4, end=2.6, kind="speech", text=SPEECH),
        Segment(start=2.6, end=3.1, kind="action", text="the user points at the left mug"),
        Segment(start=3.1, end=5.2, kind="silence"),
    ],
    scene={"description": "A kitchen table with two mugs, filmed with a phone", "lighting": "warm evening light"},
)
FRAGMENTS = ("One continuous shot from the first frame to the last.", "No subtitles or captions.")


# -------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real 2-second MP4 (what the mock delivers, and turn 1's clip) and its final frame (turn 1's frame)."""
    from omnivchat.synth import render_clip

    folder = tmp_path_factory.mktemp("video-renderers")
    spec = {"duration": 2.0, "size": [64, 36], "speech": [{"text": "Hello.", "language": "en", "start": 0.2}]}
    clip = render_clip(spec, folder / "turn1.mp4", use_cache=False).path
    frame = final_frame(clip, folder / "turn1.final_frame.png")
    return {"clip": clip, "bytes": clip.read_bytes(), "frame": frame, "frame_bytes": frame.read_bytes()}


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.close()


@pytest.fixture
def server(media: dict[str, Any]) -> Iterator[VideoMockServer]:
    with VideoMockServer(media["bytes"], api_key=KEY) as mock:
        yield mock


@pytest.fixture(autouse=True)
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, KEY)


def _dig(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def _data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


@dataclass(frozen=True)
class Backend:
    """One backend as the tests see it: how to build it, where its request keeps the prompt, and what the
    submission must hold for SCRIPT (5.2 s) and SEED."""

    make: Callable[..., HostedVideoRenderer]
    prompt: Callable[[VideoRequest], str]
    fields: dict[str, Any]
    price: float | None
    first_frame: Callable[[VideoRequest, bytes, VideoMockServer], bool]
    reference: Callable[[VideoRequest, bytes, VideoMockServer], bool]
    moderated: bool = True


def _gemini_prompt(r: VideoRequest) -> str:
    value = r.json["input"]
    return value if isinstance(value, str) else value[0]["content"][0]["text"]


def _gemini_image(r: VideoRequest, frame: bytes, task: str) -> bool:
    [turn] = r.json["input"]  # one user turn, as google-genai sends a list of blocks
    image = {"type": "image", "data": base64.b64encode(frame).decode(), "mime_type": "image/png"}
    return (
        turn["type"] == "user_input"
        and turn["content"][1] == image
        and r.json["generation_config"]["video_config"]["task"] == task
    )


def _veo_blob(frame: bytes) -> dict[str, str]:
    return {"bytesBase64Encoded": base64.b64encode(frame).decode(), "mimeType": "image/png"}


def _uploaded(server: VideoMockServer, url: str, data: bytes, r: VideoRequest) -> bool:
    """``url`` names a file uploaded to DashScope's temporary storage with ``data``, and the task says so."""
    return (
        url.startswith("oss://")
        and server.uploads.get(url.removeprefix("oss://")) == data
        and r.headers.get("X-DashScope-OssResourceResolve") == "enable"
    )


def _wan26_first(r: VideoRequest, frame: bytes, server: VideoMockServer) -> bool:
    p = r.json["parameters"]
    return (
        r.json["model"] == "wan2.6-i2v"
        and _uploaded(server, r.json["input"]["img_url"], frame, r)
        and p["resolution"] == "720P"
        and p["duration"] == 6  # image to video takes 2-15 s: no rounding up to 10
        and "size" not in p
    )


def _wan_media(r: VideoRequest, frame: bytes, server: VideoMockServer, kind: str) -> bool:
    [item] = r.json["input"]["media"]
    return item["type"] == kind and _uploaded(server, item["url"], frame, r)


def _ark_item(r: VideoRequest, frame: bytes, role: str) -> bool:
    item = {"type": "image_url", "image_url": {"url": _data_url(frame)}, "role": role}
    return r.json["content"][0]["type"] == "text" and r.json["content"][1:] == [item]


def _openai_first(r: VideoRequest, frame: bytes, server: VideoMockServer) -> bool:
    return r.files.get("input_reference") == frame and r.form["seed"] == str(SEED % 2**31)


BACKENDS: dict[str, Backend] = {
    "gemini-omni": Backend(
        make=lambda **kw: GeminiOmniRenderer(**kw),
        prompt=_gemini_prompt,
        fields={
            "model": "gemini-omni-1.2-flash",
            "background": True,
            "response_modalities": ["video"],
            "generation_config.seed": SEED % 2**31,
            "response_format.duration": "6s",
            "response_format.resolution": "720p",
            "response_format.aspect_ratio": "16:9",
            "response_format.delivery": "inline",
        },
        price=0.07,
        first_frame=lambda r, f, _: _gemini_image(r, f, "image_to_video"),
        reference=lambda r, f, _: _gemini_image(r, f, "reference_to_video"),
    ),
    "veo": Backend(
        make=lambda **kw: VeoRenderer(project="proj-1", **kw),
        prompt=lambda r: r.json["instances"][0]["prompt"],
        fields={
            "parameters.seed": SEED,  # uint32: sent whole
            "parameters.durationSeconds": 6,
            "parameters.resolution": "720p",
            "parameters.generateAudio": True,
            "parameters.sampleCount": 1,
            "parameters.aspectRatio": "16:9",
        },
        price=None,  # unconfirmed: no default
        first_frame=lambda r, f, _: r.json["instances"][0]["image"] == _veo_blob(f),
        reference=lambda r, f, _: (
            r.json["instances"][0]["referenceImages"] == [{"image": _veo_blob(f), "referenceType": "asset"}]
            and r.json["parameters"]["durationSeconds"] == 8
            and "image" not in r.json["instances"][0]
        ),
    ),
    "wan2.6": Backend(
        make=lambda **kw: WanRenderer(**kw),
        prompt=lambda r: r.json["input"]["prompt"],
        fields={
            "model": "wan2.6-t2v",
            "parameters.seed": SEED % 2**31,
            "parameters.duration": 10,  # 5, 10 or 15 s
            "parameters.size": "1280*720",
            "parameters.audio": True,
            "parameters.prompt_extend": False,
        },
        price=0.10,
        first_frame=_wan26_first,
        reference=_wan26_first,  # no reference images on 2.6: the frame becomes the first frame
    ),
    "wan3.0": Backend(
        make=lambda **kw: WanRenderer(model="wan3.0-video", **kw),
        prompt=lambda r: r.json["input"]["prompt"],
        fields={
            "model": "wan3.0-video",
            "parameters.seed": SEED % 2**31,
            "parameters.duration": 6,
            "parameters.resolution": "720P",
            "parameters.ratio": "16:9",
        },
        price=0.06,
        first_frame=lambda r, f, s: _wan_media(r, f, s, "first_frame"),
        reference=lambda r, f, s: _wan_media(r, f, s, "reference_image"),
    ),
    "seedance": Backend(
        make=lambda **kw: SeedanceRenderer(**kw),
        prompt=lambda r: r.json["content"][0]["text"],
        fields={
            "model": "dreamina-seedance-2-0-260128",
            "seed": SEED % 2**31,
            "duration": 6,
            "resolution": "720p",
            "ratio": "16:9",
            "generate_audio": True,
        },
        price=0.18,
        first_frame=lambda r, f, _: _ark_item(r, f, "first_frame"),
        reference=lambda r, f, _: _ark_item(r, f, "reference_image"),
    ),
    "openai-videos": Backend(
        make=lambda **kw: OpenAIVideosRenderer(model="mova-720p", **kw),
        prompt=lambda r: r.json["prompt"] if r.json else r.form["prompt"],
        fields={"model": "mova-720p", "seed": SEED % 2**31, "seconds": 6, "size": "1280x720"},
        price=None,  # GPU time
        first_frame=_openai_first,
        reference=_openai_first,  # no reference images: the frame becomes the first frame
        moderated=False,
    ),
}
ALL = list(BACKENDS)
MODERATED = [name for name, b in BACKENDS.items() if b.moderated]


def _renderer(name: str, server: VideoMockServer, loop: LoopThread, **kw: Any) -> HostedVideoRenderer:
    settings: dict[str, Any] = {
        "base_url": server.url,
        "api_key_env": ENV,
        "poll_interval_s": 0.01,
        "timeout_s": 10.0,
        "trust_env": False,
    }
    return BACKENDS[name].make(loop=loop, **{**settings, **kw})


def _request(tmp_path: Path, *, script: Script = SCRIPT, refs: dict[str, Path] | None = None) -> RenderRequest:
    return RenderRequest(script, FRAGMENTS, refs or {}, SEED, tmp_path / "work" / "turn1-abc-1.mp4")


def _no_key_anywhere(err: BaseException) -> None:
    seen: BaseException | None = err
    while seen is not None:
        assert KEY not in str(seen) and KEY not in repr(seen), type(seen)
        assert KEY[8:20] not in str(seen)  # nor a long piece of it
        seen = seen.__cause__ or seen.__context__


def _leftovers(request: RenderRequest) -> list[str]:
    folder = request.out_path.parent
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# ---------------------------------------------------------------------------------------------- success


@pytest.mark.parametrize("name", ALL)
def test_success_writes_the_clip_and_prices_it(
    name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    from omnivchat._canonical import sha256_file
    from omnivchat.media import probe

    request = _request(tmp_path)
    clip = _renderer(name, server, loop).render(request)
    out = request.out_path
    assert out.read_bytes() == media["bytes"]
    assert clip.path == out.name and clip.sha256 == sha256_file(out)
    assert clip.duration_s == pytest.approx(probe(out).duration, abs=1e-3)
    assert clip.seed == SEED
    price = BACKENDS[name].price
    if price is None:
        assert clip.cost_usd is None  # unknown, never 0
    else:
        assert clip.cost_usd == pytest.approx(clip.duration_s * price)
        assert clip.notes["price_usd_per_s"] == price and "unconfirmed" in clip.notes["price_source"]
    assert _leftovers(request) == [out.name]  # no partial file left behind
    assert clip.notes["polls"] == 2  # one "running", then done


@pytest.mark.parametrize("name", ALL)
def test_request_fields(name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    clip = _renderer(name, server, loop).render(_request(tmp_path))
    [sent] = server.submissions()
    backend = BACKENDS[name]
    for path, value in backend.fields.items():
        got = _dig(sent.json if sent.json is not None else sent.form, path)
        assert got == value, path
    prompt = backend.prompt(sent)
    assert f'says, in English: "{SPEECH}"' in prompt
    # The final wait runs to the end of the clip asked for (6 s; Wan 2.6 only takes 5, 10 or 15 s).
    assert f"3.1-{clip.notes['requested_s']}.0 s: the user has finished and waits in silence" in prompt
    assert clip.notes["requested_s"] == (10 if name == "wan2.6" else 6)
    assert "the user points at the left mug" in prompt and "No subtitles or captions." in prompt
    assert "A kitchen table with two mugs" in prompt
    assert KEY not in json.dumps(sent.json) + json.dumps(sent.form)  # the key only ever travels in a header


@pytest.mark.parametrize("name", ALL)
def test_first_frame_continuation(
    name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """turn1.clip referenced: its final frame starts the new clip (extension is off by default)."""
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip", purpose="same room")]})
    refs = {"turn1.clip": media["clip"], "turn1.final_frame": media["frame"]}
    clip = _renderer(name, server, loop).render(_request(tmp_path, script=script, refs=refs))
    [sent] = server.submissions()
    assert BACKENDS[name].first_frame(sent, media["frame_bytes"], server)
    assert clip.notes["references"] == {"turn1.clip": "first_frame"}
    assert "Image 1 is the first frame: the last frame of the earlier clip (turn1.clip) (same room)" in (
        BACKENDS[name].prompt(sent)
    )


@pytest.mark.parametrize("name", ALL)
def test_reference_image_for_the_same_person(
    name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """turn1.final_frame referenced for identity: a reference image where the provider takes one, else the first
    frame (Wan 2.6, the /v1/videos server)."""
    ref = MediaReference(turn=1, kind="final_frame", purpose="the same person as before")
    script = SCRIPT.model_copy(update={"references": [ref]})
    _renderer(name, server, loop).render(_request(tmp_path, script=script, refs={"turn1.final_frame": media["frame"]}))
    [sent] = server.submissions()
    assert BACKENDS[name].reference(sent, media["frame_bytes"], server)
    assert "Image 1" in BACKENDS[name].prompt(sent)


def test_a_clip_without_its_frame_is_continued_from_an_extracted_frame(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    request = _request(tmp_path, script=script, refs={"turn1.clip": media["clip"]})
    _renderer("veo", server, loop).render(request)
    [sent] = server.submissions()
    image = base64.b64decode(sent.json["instances"][0]["image"]["bytesBase64Encoded"])
    assert image.startswith(b"\x89PNG")
    assert _leftovers(request) == [request.out_path.name]  # the extracted frame is removed


@pytest.mark.parametrize("name", ["gemini-omni", "veo", "wan2.6"])
def test_a_large_clip_arrives_whole(name: str, media: dict[str, Any], loop: LoopThread, tmp_path: Path) -> None:
    """Inline base64 of several MB spans many reads (and a URL download many chunks)."""
    padding = 6 * 1024 * 1024
    big = media["bytes"] + (8 + padding).to_bytes(4, "big") + b"free" + bytes(padding)  # an MP4 box players skip
    with VideoMockServer(big, api_key=KEY) as mock:
        request = _request(tmp_path)
        clip = _renderer(name, mock, loop).render(request)
    assert request.out_path.read_bytes() == big and clip.duration_s == pytest.approx(2.0, abs=0.1)


def test_veo_extends_the_earlier_clip_when_asked(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    refs = {"turn1.clip": media["clip"], "turn1.final_frame": media["frame"]}
    clip = _renderer("veo", server, loop, extend=True).render(_request(tmp_path, script=script, refs=refs))
    [sent] = server.submissions()
    instance = sent.json["instances"][0]
    assert base64.b64decode(instance["video"]["bytesBase64Encoded"]) == media["bytes"]
    assert "image" not in instance
    assert clip.notes["references"] == {"turn1.clip": "extend"}


def test_gemini_extends_its_own_earlier_interaction(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    renderer = _renderer("gemini-omni", server, loop, extend=True)
    first = renderer.render(_request(tmp_path))
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    earlier = tmp_path / "work" / first.path
    second = RenderRequest(script, FRAGMENTS, {"turn1.clip": earlier}, SEED, tmp_path / "work" / "turn2.mp4")
    renderer.render(second)
    submitted = server.submissions()[1].json
    assert submitted["previous_interaction_id"] == first.notes["task"]
    assert submitted["generation_config"]["video_config"]["task"] == "extend"


def test_media_roles(media: dict[str, Any], tmp_path: Path) -> None:
    """One mode per request (extension, else a first frame, else references); the fallbacks; reasons kept."""
    clip, frame = media["clip"], media["frame"]
    audio = tmp_path / "turn1.audio.wav"
    audio.write_bytes(b"RIFF")

    def plan(refs: dict[str, Path], caps: Capabilities, purposes: dict[str, str] | None = None) -> MediaPlan:
        purposes = purposes or {}
        listed = [MediaReference(turn=int(m[4]), kind=m.split(".")[1], purpose=purposes.get(m, "")) for m in refs]
        script = SCRIPT.model_copy(update={"references": listed})
        return plan_media(RenderRequest(script, (), refs, 1, tmp_path / "out.mp4"), caps, extend=False)

    every = {"turn1.clip": clip, "turn2.clip": clip, "turn2.final_frame": frame, "turn1.audio": audio}
    p = plan(every, Capabilities(reference_images=3, reference_audio=2))
    assert p.first_frame == ("turn2.clip", frame) and not p.reference_images and not p.reference_audio
    assert set(p.dropped) == {"turn1.clip", "turn1.audio"}  # an older clip; audio cannot join a first frame
    p = plan({"turn1.final_frame": frame, "turn1.audio": audio}, Capabilities(reference_images=3, reference_audio=2))
    assert p.reference_images == [("turn1.final_frame", frame)] and p.reference_audio == [("turn1.audio", audio)]
    p = plan({"turn1.final_frame": frame, "turn1.audio": audio}, Capabilities())
    assert p.first_frame == ("turn1.final_frame", frame) and "turn1.audio" in p.dropped  # the fallback
    p = plan({"turn1.clip": clip}, Capabilities(first_frame=False, reference_images=6))  # Gemini Omni past 10 s
    assert p.first_frame is None and p.reference_images[0][0] == "turn1.clip"
    p.cleanup()
    p = plan({"turn1.final_frame": frame}, Capabilities(reference_images=3), {"turn1.final_frame": "continue from it"})
    assert p.first_frame == ("turn1.final_frame", frame)


def test_an_upload_hook_sends_voice_references(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    audio = tmp_path / "turn1.audio.wav"
    audio.write_bytes(b"RIFF")
    uploaded: list[Path] = []

    def upload(path: Path) -> str:
        uploaded.append(path)
        return f"https://bucket.example/{path.name}"

    refs = {"turn1.final_frame": media["frame"], "turn1.audio": audio}
    listed = [MediaReference(turn=1, kind="final_frame"), MediaReference(turn=1, kind="audio")]
    script = SCRIPT.model_copy(update={"references": listed})
    _renderer("wan3.0", server, loop, upload=upload).render(_request(tmp_path, script=script, refs=refs))
    assert server.submissions()[0].json["input"]["media"] == [
        {"type": "reference_image", "url": "https://bucket.example/turn1.final_frame.png"},
        {"type": "reference_audio", "url": "https://bucket.example/turn1.audio.wav"},
    ]
    assert "Audio 1 (turn1.audio) is how the user sounded before" in server.submissions()[0].json["input"]["prompt"]


# ---------------------------------------------------------------------------------------------- failures


@pytest.mark.parametrize("name", MODERATED)
def test_refusal_at_submit(name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    server.script(VideoTask(submit_refusal=True))
    request = _request(tmp_path)
    with pytest.raises(RenderRefused, match="refused the prompt"):
        _renderer(name, server, loop).render(request)
    assert len(server.requests) == 1 and _leftovers(request) == []


@pytest.mark.parametrize("name", MODERATED)
def test_refusal_in_the_task(name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    server.script(VideoTask(outcome="refuse"))
    with pytest.raises(RenderRefused, match="refused the prompt"):
        _renderer(name, server, loop).render(_request(tmp_path))


@pytest.mark.parametrize("name", ALL)
def test_failed_task(name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    server.script(VideoTask(outcome="fail"))
    request = _request(tmp_path)
    with pytest.raises(RenderFailed):
        _renderer(name, server, loop).render(request)
    assert _leftovers(request) == []


def test_the_self_hosted_server_has_no_moderation(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    server.script(VideoTask(outcome="refuse"))
    with pytest.raises(RenderFailed, match="CUDA out of memory"):
        _renderer("openai-videos", server, loop).render(_request(tmp_path))


@pytest.mark.parametrize("name", ALL)
def test_a_task_that_never_finishes_times_out(
    name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    server.script(VideoTask(outcome="never"))
    with pytest.raises(RenderFailed, match=r"not finished after 0.2 s"):
        _renderer(name, server, loop, timeout_s=0.2).render(_request(tmp_path))
    assert len(server.submissions()) == 1  # polled, never submitted twice


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limited"), (500, "server_error"), (503, "server_error")])
def test_transient_http_errors_at_submit_are_retryable(
    name: str, status: int, kind: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    server.script(VideoTask(submit_status=status, retry_after=0.01))
    with pytest.raises(RouteError) as caught:
        _renderer(name, server, loop).render(_request(tmp_path))
    assert caught.value.kind == kind and caught.value.retryable and caught.value.http_status == status
    assert caught.value.retry_after == pytest.approx(0.01)


def test_connection_refused_is_retryable(loop: LoopThread, tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    renderer = WanRenderer(base_url=f"http://127.0.0.1:{port}", api_key_env=ENV, trust_env=False, loop=loop)
    with pytest.raises(RouteError) as caught:
        renderer.render(_request(tmp_path))
    assert caught.value.kind == "connection" and caught.value.retryable


@pytest.mark.parametrize("name", ["gemini-omni", "wan2.6", "seedance", "openai-videos"])
def test_a_download_that_404s_fails_the_render(
    name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    server.script(VideoTask(delivery="url", download_status=404))
    request = _request(tmp_path)
    with pytest.raises(RenderFailed, match="HTTP 404"):
        _renderer(name, server, loop).render(request)
    assert _leftovers(request) == []


def test_veo_gcs_output_needs_a_download_hook(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    server.script(VideoTask(delivery="url"), VideoTask(delivery="url"))
    with pytest.raises(RenderFailed, match="gcs_download"):
        _renderer("veo", server, loop, storage_uri="gs://mock-bucket/out/").render(_request(tmp_path))
    fetched: list[str] = []

    def gcs(uri: str) -> bytes:
        fetched.append(uri)
        return media["bytes"]

    clip = _renderer("veo", server, loop, gcs_download=gcs).render(_request(tmp_path))
    assert fetched and fetched[0].startswith("gs://mock-bucket/") and clip.notes["gcs_uri"] == fetched[0]


def test_download_auth_goes_only_to_the_api_itself(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    """Gemini's uri is the API's own (key sent); DashScope's video_url is a signed storage URL (no key)."""
    server.script(VideoTask(delivery="url"))
    _renderer("gemini-omni", server, loop).render(_request(tmp_path))
    _renderer("wan2.6", server, loop).render(_request(tmp_path / "b"))
    downloads = [r for r in server.requests if r.path.startswith("/files/")]
    assert downloads[0].headers.get("x-goog-api-key") == KEY
    assert "Authorization" not in downloads[1].headers


def test_dashscope_submits_asynchronously(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    _renderer("wan2.6", server, loop).render(_request(tmp_path))
    [sent] = server.submissions()
    assert sent.headers["X-DashScope-Async"] == "enable" and sent.headers["Authorization"] == f"Bearer {KEY}"


# ------------------------------------------------------------------------------------------------- keys

HOSTILE = {
    "submit-500": VideoTask(submit_status=500, echo_key=True),
    "submit-refusal": VideoTask(submit_refusal=True, echo_key=True),
    "failed": VideoTask(outcome="fail", echo_key=True),
    "refused": VideoTask(outcome="refuse", echo_key=True),
    "timeout": VideoTask(outcome="never", echo_key=True),
    "download-404": VideoTask(delivery="url", download_status=404, echo_key=True),
    "success": VideoTask(delivery="url", echo_key=True),
}


@pytest.mark.parametrize("name", ALL)
def test_the_key_never_leaks(name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    """A server that puts the key in task ids, error messages and URLs: no exception, note or file keeps it."""
    renderer = _renderer(name, server, loop, timeout_s=0.1)
    assert KEY not in repr(renderer) and KEY not in renderer.name
    failures = 0
    for case, plan in HOSTILE.items():
        if name == "veo" and plan.delivery == "url":
            if case == "download-404":
                continue  # Veo's URL is a gs:// object, fetched by the user's hook
            plan = dataclasses.replace(plan, delivery="default")
        server.script(plan)
        request = _request(tmp_path / case)
        try:
            clip = renderer.render(request)
        except (RouteError, RenderFailed, RenderRefused) as err:
            failures += 1
            _no_key_anywhere(err)
            if case != "timeout":  # the only failure that carries no server message
                assert "***" in str(err), (case, str(err))
        else:
            assert case == "success"
            notes = json.dumps(clip.model_dump(mode="json"))
            assert KEY not in notes and "***" in notes  # the task id was redacted
    assert failures == len(HOSTILE) - (2 if name == "veo" else 1)


@pytest.mark.parametrize("name", ALL)
def test_a_missing_key_fails_before_any_request(
    name: str, server: VideoMockServer, loop: LoopThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV)
    with pytest.raises(CredentialError, match=ENV):
        _renderer(name, server, loop)
    assert server.requests == []


def test_the_self_hosted_server_needs_no_key(media: dict[str, Any], loop: LoopThread, tmp_path: Path) -> None:
    with VideoMockServer(media["bytes"]) as open_server:
        renderer = OpenAIVideosRenderer(
            model="mova-720p", base_url=open_server.url + "/v1", poll_interval_s=0.01, trust_env=False, loop=loop
        )
        renderer.render(_request(tmp_path))
        assert "Authorization" not in open_server.submissions()[0].headers


# ---------------------------------------------------------------------------------- before any request


def test_a_script_too_long_is_refused_before_any_request(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    script = SCRIPT.model_copy(update={"duration_s": 9.5})
    with pytest.raises(RenderRefused, match="renders at most 8 s"):
        _renderer("veo", server, loop).render(_request(tmp_path, script=script))
    assert server.requests == []


def test_mova_needs_an_image(server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]) -> None:
    with pytest.raises(RendererConfigError, match="first_frame"):
        _renderer("openai-videos", server, loop, requires_image=True).render(_request(tmp_path))
    assert server.requests == []
    renderer = _renderer("openai-videos", server, loop, requires_image=True, first_frame=media["frame"])
    renderer.render(_request(tmp_path))
    assert server.submissions()[0].files["input_reference"] == media["frame_bytes"]


def test_configuration_errors_and_the_factory(server: VideoMockServer, loop: LoopThread) -> None:
    with pytest.raises(RendererConfigError, match="kind must be one of"):
        make_renderer({"kind": "sora"})
    with pytest.raises(RendererConfigError, match="project"):
        make_renderer({"kind": "veo", "api_key_env": ENV})
    with pytest.raises(RendererConfigError, match="credentials"):
        make_renderer({"kind": "wan", "api_key_env": ENV, "base_url": "https://user:pw@example.com"})
    a = make_renderer({"kind": "seedance", "api_key_env": ENV, "base_url": server.url}, loop=loop)
    b = make_renderer({"kind": "seedance", "api_key_env": ENV, "resolution": "1080p"}, loop=loop)
    c = make_renderer({"kind": "seedance", "api_key_env": ENV, "timeout_s": 5}, loop=loop)
    assert isinstance(a, SeedanceRenderer) and a.name.startswith("seedance:dreamina-seedance-2-0-260128/")
    assert a.name != b.name  # the resolution changes the clip, so the engine's cache key
    assert a.name == c.name  # the base URL and timeouts do not


# ------------------------------------------------------------------------------------------ prompt, prices


def test_the_prompt() -> None:
    zh = Script(
        language="zh",
        duration_s=4.0,
        question="这是什么？",
        segments=[Segment(start=0.3, end=1.8, kind="speech", text='这是 "什么"？')],
        scene={"description": "一张书桌"},
    )
    prompt = build_prompt(zh, ("No subtitles.",), clip_s=5)
    assert "One continuous 5-second video clip" in prompt
    assert "0.3-1.8 s: the user says, in Mandarin Chinese: \"这是 '什么'？\"" in prompt
    assert "1.8-5.0 s: the user has finished and waits in silence" in prompt
    assert prompt.index("Scene: 一张书桌.") < prompt.index("Timeline") < prompt.index("Rendering:\n- No subtitles.")
    assert "References" not in prompt


def test_prices() -> None:
    assert price_for("gemini-omni-1.2-flash", "1080p").usd_per_s == 0.105  # type: ignore[union-attr]
    assert price_for("wan2.6-i2v", "720P").usd_per_s == 0.10  # type: ignore[union-attr]
    assert price_for("veo-3.1-generate-001", "720p") is None
    assert price_for("dreamina-seedance-2-0-fast-260128", "720p") is None  # the relay measured 2.0, not fast
    override = price_for("veo-3.1-generate-001", "720p", 0.4)
    assert override is not None and override.usd_per_s == 0.4 and override.confirmed


def test_a_user_price_overrides_the_table(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    clip = _renderer("veo", server, loop, price_per_s=0.5).render(_request(tmp_path))
    assert clip.cost_usd == pytest.approx(clip.duration_s * 0.5)


# ---------------------------------------------------------------------------------------------- the engine


def test_the_engine_call_layer_retries_429_and_routes_refusals(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    """Through the engine's AgentCalls: a 429 is retried (one clip paid), a refusal is not (cause: RenderRefused)."""
    from omnivchat.studio.engine import AgentCallError, AgentCalls

    renderer = _renderer("seedance", server, loop)
    calls = AgentCalls(tmp_path / "calls.sqlite", attempts=3, backoff_s=0.0)
    try:
        server.script(VideoTask(submit_status=429, retry_after=0.01))
        request = _request(tmp_path)
        answer, replayed = calls.call(
            renderer.name, "render", {"n": 1}, lambda: renderer.render(request).model_dump(mode="json"), item_id="i1"
        )
        assert not replayed and answer["path"] == request.out_path.name and len(server.submissions()) == 2
        server.script(VideoTask(submit_refusal=True))
        with pytest.raises(AgentCallError) as caught:
            calls.call(
                renderer.name,
                "render",
                {"n": 2},
                lambda: renderer.render(request).model_dump(mode="json"),
                item_id="i2",
            )
        assert isinstance(caught.value.cause, RenderRefused) and len(server.submissions()) == 3
    finally:
        calls.close()


def test_the_documented_examples_build(loop: LoopThread, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/video-renderers.md: every [renderer] example is a valid configuration of its backend."""
    import re
    import tomllib

    text = (Path(__file__).parents[2] / "docs" / "video-renderers.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    kinds = set()
    for block in blocks:
        config = tomllib.loads(block)["renderer"]
        cls = RENDERERS[config["kind"]]
        env = config.get("api_key_env") or cls.config_type.model_fields["api_key_env"].default
        if env:
            monkeypatch.setenv(env, KEY)
        renderer = make_renderer(config, loop=loop)
        assert renderer.name.startswith(f"{config['kind']}:{config['model']}/")
        kinds.add(config["kind"])
    assert kinds == {"gemini-omni", "veo", "wan", "seedance", "openai-videos"}


# ------------------------------------------------- answers read as the providers' SDKs read them (issue 23, item 12)


@pytest.mark.parametrize("name", ALL)
def test_a_blocked_key_stops_the_instance_not_a_rewrite(
    name: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    """A 403 for a blocked key ("Requests from this API key are blocked.") is no moderation refusal, whatever its
    words: RenderKeyRejected (the engine stops the instance); the next render with the same renderer fails the same
    way at once, with no request."""
    server.script(VideoTask(key_blocked=True, echo_key=True))
    renderer = _renderer(name, server, loop)
    with pytest.raises(RenderKeyRejected, match=f"HTTP 403 the provider rejected the key in {ENV}") as caught:
        renderer.render(_request(tmp_path))
    assert not isinstance(caught.value, RenderRefused | RenderFailed)
    _no_key_anywhere(caught.value)
    made = len(server.requests)
    with pytest.raises(RenderKeyRejected, match="rejected the key"):
        renderer.render(_request(tmp_path / "again"))
    assert len(server.requests) == made == 1


def test_a_key_rejected_while_polling_stops_too(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    """A 401 on a poll (a key revoked mid-task) is not polled until the timeout."""
    import threading
    import time

    server.script(VideoTask(outcome="never"))
    renderer = _renderer("seedance", server, loop, timeout_s=30.0, poll_interval_s=0.05)

    def revoke() -> None:
        deadline = time.monotonic() + 20
        while not server.submissions() and time.monotonic() < deadline:
            time.sleep(0.01)
        server.api_key = "another-key-0123456789abcdef"  # the server stops accepting ours once the task runs

    revoker = threading.Thread(target=revoke)
    revoker.start()
    started = time.monotonic()
    try:
        with pytest.raises(RenderKeyRejected, match="poll: HTTP 401"):
            renderer.render(_request(tmp_path))
    finally:
        revoker.join()
    assert time.monotonic() - started < 15 and len(server.submissions()) == 1


def test_a_rejected_key_is_attempted_once_by_the_engine(tmp_path: Path) -> None:
    """The engine's call layer makes one attempt of a render that raised RenderKeyRejected, and hands the engine
    an error that is neither a refusal nor a failure (the pipeline stops the instance on those)."""
    from omnivchat.studio.engine._calls import AgentCallError, AgentCalls

    calls = AgentCalls(tmp_path / "calls.sqlite", backoff_s=0.0)
    attempts: list[int] = []

    def render() -> dict[str, Any]:
        attempts.append(1)
        raise RenderKeyRejected("gemini-omni: submit: HTTP 403 the provider rejected the key")

    try:
        with pytest.raises(AgentCallError) as caught:
            calls.call("gemini-omni:x", "render", {"n": 1}, render, item_id="item-1")
    finally:
        calls.close()
    assert len(attempts) == 1 and isinstance(caught.value.cause, RenderKeyRejected)


@pytest.mark.parametrize("status", ["budget_exceeded", "requires_action", "requires_continuation", "incomplete"])
def test_gemini_end_states_end_the_render(
    status: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    server.script(VideoTask(end_status=status))
    with pytest.raises(RenderFailed, match=f"ended {status}") as caught:
        _renderer("gemini-omni", server, loop, timeout_s=3.0).render(_request(tmp_path))
    assert "not finished" not in str(caught.value)
    assert len([r for r in server.requests if r.method == "GET"]) == 2  # running, then the end: no more polls


def test_gemini_error_in_a_200_answer_ends_the_render(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    server.script(VideoTask(error_body=True, echo_key=True))
    with pytest.raises(RenderFailed, match="INTERNAL Internal error encountered") as caught:
        _renderer("gemini-omni", server, loop, timeout_s=3.0).render(_request(tmp_path))
    _no_key_anywhere(caught.value)


def test_gemini_a_step_error_is_read(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    """A clip blocked in its step (``steps[].error``) is a refusal, not "completed without a video"."""
    server.script(VideoTask(step_error=True))
    with pytest.raises(RenderRefused, match="blocked by safety filters"):
        _renderer("gemini-omni", server, loop).render(_request(tmp_path))


def test_gemini_posts_to_v1_with_one_user_turn(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    refs = {"turn1.final_frame": media["frame"]}
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="final_frame")]})
    _renderer("gemini-omni", server, loop).render(_request(tmp_path, script=script, refs=refs))
    [sent] = server.submissions()
    assert sent.path == "/v1/interactions"
    assert [step["type"] for step in sent.json["input"]] == ["user_input"]
    assert [block["type"] for block in sent.json["input"][0]["content"]] == ["text", "image"]
    assert {r.path for r in server.requests if r.method == "GET"} == {"/v1/interactions/task-1"}


def test_gemini_an_extension_delivers_the_new_clip(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """The extension's answer repeats the earlier turn's steps (its video first): the clip delivered is the last
    video after the last user_input step, as the SDK's output_video."""
    renderer = _renderer("gemini-omni", server, loop, extend=True)
    first = renderer.render(_request(tmp_path))
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    earlier = tmp_path / "work" / first.path
    second = RenderRequest(script, FRAGMENTS, {"turn1.clip": earlier}, SEED, tmp_path / "work" / "turn2.mp4")
    renderer.render(second)
    assert second.out_path.read_bytes() == media["bytes"] != server.earlier_video


@pytest.mark.parametrize(("name", "cancel"), [("gemini-omni", "POST"), ("wan2.6", "POST"), ("seedance", "DELETE")])
def test_a_timed_out_task_is_cancelled(
    name: str, cancel: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    server.script(VideoTask(outcome="never"))
    with pytest.raises(RenderFailed, match=r"not finished after 0.2 s.*the task was cancelled"):
        _renderer(name, server, loop, timeout_s=0.2).render(_request(tmp_path))
    [task] = server.cancelled
    [request] = [r for r in server.requests if r.method == cancel and task in r.path]
    assert request.path.endswith("/cancel") or cancel == "DELETE"


def test_veo_an_extension_asks_for_7_s(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    refs = {"turn1.clip": media["clip"]}
    clip = _renderer("veo", server, loop, extend=True).render(_request(tmp_path, script=script, refs=refs))
    assert server.submissions()[0].json["parameters"]["durationSeconds"] == 7 == clip.notes["requested_s"]
    longer = script.model_copy(update={"duration_s": 7.5})
    with pytest.raises(RenderRefused, match="adds 7 s: shorten the script"):
        _renderer("veo", server, loop, extend=True).render(_request(tmp_path / "b", script=longer, refs=refs))
    assert len(server.submissions()) == 1  # refused before any request


@pytest.mark.parametrize("resolution", ["1080p", "4k"])
def test_veo_1080p_and_4k_are_8_s(resolution: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    _renderer("veo", server, loop, resolution=resolution).render(_request(tmp_path))
    assert server.submissions()[0].json["parameters"]["durationSeconds"] == 8


@pytest.mark.parametrize("model", ["wan2.7-t2v", "wan3.0-video"])
def test_wan_prompt_extend_is_off_for_every_generation(
    model: str, server: VideoMockServer, loop: LoopThread, tmp_path: Path
) -> None:
    _renderer("wan2.6", server, loop, model=model).render(_request(tmp_path))
    assert server.submissions()[0].json["parameters"]["prompt_extend"] is False


def test_wan_an_error_in_a_200_answer_is_sorted(server: VideoMockServer, loop: LoopThread, tmp_path: Path) -> None:
    """``{"code": "DataInspectionFailed"}`` with HTTP 200 is the moderation refusal it says, not "no task_id"."""
    server.script(VideoTask(error_body=True, echo_key=True))
    with pytest.raises(RenderRefused, match="DataInspectionFailed") as caught:
        _renderer("wan2.6", server, loop).render(_request(tmp_path))
    assert len(server.submissions()) == 1
    _no_key_anywhere(caught.value)


def test_wan_uploads_local_media_to_dashscope_storage(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """wan2.7 continues turn 1's clip (``first_clip``) with no upload hook: the clip goes to DashScope's
    temporary storage under one policy, the key never goes to the storage host, and the task names it oss://."""
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="clip")]})
    refs = {"turn1.clip": media["clip"]}
    renderer = _renderer("wan2.6", server, loop, model="wan2.7-i2v", extend=True)
    clip = renderer.render(_request(tmp_path, script=script, refs=refs))
    [policy] = [r for r in server.requests if r.path == "/api/v1/uploads"]
    assert dict(policy.query) == {"action": "getPolicy", "model": "wan2.7-i2v"}
    [upload] = [r for r in server.requests if r.path == "/oss"]
    assert "Authorization" not in upload.headers and KEY not in str(dict(upload.headers))
    assert upload.form["x-oss-content-type"] == "video/mp4" and upload.form["key"].endswith("/turn1.mp4")
    [sent] = server.submissions()
    assert sent.json["input"]["media"] == [{"type": "first_clip", "url": f"oss://{upload.form['key']}"}]
    assert _uploaded(server, sent.json["input"]["media"][0]["url"], media["bytes"], sent)
    assert clip.notes["uploaded"] == 1


def test_seedance_a_real_face_is_the_images_refusal(
    server: VideoMockServer, loop: LoopThread, tmp_path: Path, media: dict[str, Any]
) -> None:
    """InputImageSensitiveContentDetected.PrivacyInformation: rewriting the script sends the same image, so the
    instance stops (RenderInputRefused), at submit or in the task; a refused text stays a rewrite."""
    code = "InputImageSensitiveContentDetected.PrivacyInformation"
    refs = {"turn1.final_frame": media["frame"]}
    script = SCRIPT.model_copy(update={"references": [MediaReference(turn=1, kind="final_frame")]})
    server.script(VideoTask(submit_refusal=True, refusal_code=code), VideoTask(outcome="refuse", refusal_code=code))
    for folder in ("a", "b"):
        with pytest.raises(RenderInputRefused, match=r"refused an input medium.*PrivacyInformation") as caught:
            _renderer("seedance", server, loop).render(_request(tmp_path / folder, script=script, refs=refs))
        assert not isinstance(caught.value, RenderRefused | RenderFailed)
    server.script(VideoTask(submit_refusal=True, refusal_code="InputTextSensitiveContentDetected"))
    with pytest.raises(RenderRefused):
        _renderer("seedance", server, loop).render(_request(tmp_path / "c"))
