"""Request bodies are streamed: the JSON around the media is built once per attempt and each clip is read and
base64-encoded block by block, with an exact Content-Length. The bytes on the wire are exactly those of
``json.dumps`` of the materialised payload."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omnivchat.routes import ChatRequest, RouteError, Secret, get_route
from omnivchat.routes._media_parts import BLOCK, PLACEHOLDER, PLACEHOLDER_RAW, MediaStore
from omnivchat.testing import LoopbackServer


async def _collect(store: MediaStore, description: object) -> tuple[bytes, int]:
    body = store.body(description)
    return b"".join([chunk async for chunk in body.chunks()]), body.size


def _drain(store: MediaStore, description: object) -> tuple[bytes, int]:
    return asyncio.run(_collect(store, description))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.sampled_from([0, 1, 2, 3, 4, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 2]), max_size=3),
    texts=st.lists(st.text(max_size=20), max_size=3),
    raw=st.booleans(),
)
def test_streamed_bytes_equal_the_whole_json(tmp_path: Path, sizes: list[int], texts: list[str], raw: bool) -> None:
    store = MediaStore()
    content: list[object] = [{"type": "text", "text": t} for t in texts]
    for k, n in enumerate(sizes):
        path = tmp_path / f"clip{k}-{n}.bin"
        path.write_bytes(bytes((k + i) % 251 for i in range(n)))
        digest = store.add_file(path, "video/mp4")
        prefix = PLACEHOLDER_RAW if raw and k == 0 else PLACEHOLDER
        content.append({"type": "video_url", "video_url": {"url": prefix + digest}})
    # An in-memory part (frames), and a text that only looks like a placeholder (no such file): left as it is.
    content.append({"type": "image_url", "image_url": {"url": PLACEHOLDER + store.add_bytes(b"\xff\xd8jpeg", "i/j")}})
    content.append({"type": "text", "text": PLACEHOLDER + "0" * 64})
    description = {"model": "m", "messages": [{"role": "user", "content": content}], "stream": True}
    streamed, size = _drain(store, description)
    whole = json.dumps(store.materialize(description), ensure_ascii=False).encode("utf-8")
    assert streamed == whole
    assert size == len(whole)


def test_a_clip_that_changes_after_prepare_fails_as_media_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "clip.mp4"
    path.write_bytes(b"v" * (BLOCK + 5))
    store = MediaStore()
    description = {"url": PLACEHOLDER + store.add_file(path, "video/mp4")}
    body = store.body(description)
    path.write_bytes(b"v" * 10)

    async def drain() -> None:
        async for _ in body.chunks():
            pass

    with pytest.raises(RouteError) as info:
        asyncio.run(drain())
    assert info.value.kind == "media" and str(path) in str(info.value)


def test_the_route_sends_a_large_clip_with_a_content_length_not_chunked(tmp_path: Path, small_bench) -> None:
    """A clip over several blocks, through the real route and socket: the server reads the same bytes."""
    clip = small_bench.media_path(small_bench.get("s1").turns[-1])
    with LoopbackServer() as server:
        route = get_route("some-omni-model", base_url=server.base_url, api_key=Secret("k-not-secret"), timeout_s=5.0)

        async def go() -> None:
            try:
                prepared = await asyncio.to_thread(route.prepare, ChatRequest(item_id="s1", clip=clip))
                await route.send(prepared)
            finally:
                await route.aclose()

        asyncio.run(go())
        sent = server.chat_requests[0]
    assert "chunked" not in sent.headers.get("Transfer-Encoding", "")
    assert int(sent.headers["Content-Length"]) == len(sent.body)
    url = sent.json["messages"][-1]["content"][0]["video_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == clip.read_bytes()


def test_a_clip_rewritten_in_place_is_hashed_again_and_a_missing_one_fails_as_media(tmp_path: Path) -> None:
    """The hash and probe of a clip are remembered per file identity (path, inode, size, mtime): a rewrite is seen."""
    path = tmp_path / "clip.bin"
    path.write_bytes(b"first")
    store = MediaStore()
    first = store.add_file(path, "video/mp4")
    path.write_bytes(b"second, longer")
    assert store.add_file(path, "video/mp4") != first
    route = get_route("some-omni-model", base_url="http://127.0.0.1:9/v1", api_key=Secret("k-not-secret"))
    with pytest.raises(RouteError) as info:
        route.prepare(ChatRequest(item_id="s1", clip=tmp_path / "gone.mp4"))
    assert info.value.kind == "media" and "gone.mp4" in str(info.value)


def test_a_small_clips_body_is_one_write_and_a_large_ones_is_read_block_by_block(tmp_path: Path) -> None:
    """Each write is a socket send (which hands the GIL over): a request with a small clip goes in one, a large
    clip's in writes of about BLOCK bytes, never the whole base64 held at once."""

    async def writes(n: int) -> list[int]:
        store = MediaStore()
        path = tmp_path / f"clip-{n}.bin"
        path.write_bytes(bytes(i % 251 for i in range(n)))
        url = PLACEHOLDER + store.add_file(path, "video/mp4")
        content = [{"type": "video_url", "video_url": {"url": url}}]
        description = {"model": "m", "messages": [{"role": "user", "content": content}]}
        return [len(chunk) async for chunk in store.body(description).chunks()]

    assert len(asyncio.run(writes(24_000))) == 1
    large = asyncio.run(writes(3 * BLOCK))
    assert len(large) >= 3 and max(large) < 2 * BLOCK  # base64 of one block (4/3 BLOCK) and the JSON around it
