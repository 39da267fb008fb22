"""Spoken replies: the OpenAI-compatible route asks for audio and reads it back (whole or streamed) from a real
loopback server; bad audio fails its item with one clear line; the simulated model answers aloud with omnivchat's
TTS; the store keeps each reply's audio as a content-addressed file."""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import wave
from pathlib import Path

import numpy as np
import pytest

from omnivchat.routes import ChatRequest, ReplyAudio, RouteError, Secret, SimOracle, get_route
from omnivchat.routes._audio import checked_wav, wav_from_pcm16
from omnivchat.runs import RunStore
from omnivchat.testing import Behaviour, LoopbackServer

SECRET = "test-key-0123456789-not-a-real-one"
VOICE = ReplyAudio(voice="alloy")


def pcm_tone(seconds: float = 0.3, rate: int = 24000) -> bytes:
    """16-bit mono PCM of a 440 Hz tone."""
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()


def wav_file(pcm: bytes, rate: int = 24000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm)
    return buffer.getvalue()


def read_wav(data: bytes) -> tuple[int, bytes]:
    with wave.open(io.BytesIO(data)) as w:
        return w.getframerate(), w.readframes(w.getnframes())


@pytest.fixture
def server():
    with LoopbackServer() as srv:
        yield srv


def ask(server, request: ChatRequest, *, stream: bool = True, model: str = "some-omni-model"):
    route = get_route(model, base_url=server.base_url, api_key=Secret(SECRET), timeout_s=5.0, stream=stream)

    async def go():
        try:
            prepared = await asyncio.to_thread(route.prepare, request)
            return prepared, await route.send(prepared)
        finally:
            await route.aclose()

    return asyncio.run(go())


def spoken(text: str = "What colour is the square?", reply_audio: ReplyAudio = VOICE) -> ChatRequest:
    return ChatRequest(item_id="q1", text=text, reply_audio=reply_audio)


def test_non_streamed_wav_reply_is_asked_for_and_read_back(server) -> None:
    pcm = pcm_tone()
    server.default = Behaviour(text="", audio=wav_file(pcm), audio_transcript="It is red.")
    prepared, response = ask(server, spoken(), stream=False)
    body = server.chat_requests[0].json
    assert body["modalities"] == ["text", "audio"] and body["audio"] == {"voice": "alloy", "format": "wav"}
    assert prepared.description["audio"] == {"voice": "alloy", "format": "wav"}  # part of the request's key
    assert response.audio is not None and response.audio.format == "wav"
    assert read_wav(response.audio.data) == (24000, pcm)
    # The server's own transcript is kept apart from the text and never taken for anything else.
    assert response.audio.transcript == "It is red." and response.text == ""


def test_streamed_pcm_pieces_become_one_wav(server) -> None:
    pcm = pcm_tone(0.5)
    server.default = Behaviour(text="It is red.", audio=pcm, audio_transcript="It is red.", audio_chunk_bytes=1001)
    _, response = ask(server, spoken(), stream=True)
    assert server.chat_requests[0].json["stream"] is True
    assert response.text == "It is red." and response.audio is not None
    assert response.audio.format == "wav" and response.audio.transcript == "It is red."
    assert read_wav(response.audio.data) == (24000, pcm)  # pieces of 1001 bytes: base64 each padded, decoded alone


def test_streamed_pcm16_at_another_rate_and_a_streamed_wav_header(server) -> None:
    pcm = pcm_tone(0.2, 16000)
    server.default = Behaviour(text="ok", audio=pcm, audio_chunk_bytes=640)
    _, response = ask(server, spoken(reply_audio=ReplyAudio(voice="Cherry", format="pcm16", pcm_rate=16000)))
    assert server.chat_requests[0].json["audio"] == {"voice": "Cherry", "format": "pcm16"}
    assert response.audio is not None and read_wav(response.audio.data) == (16000, pcm)
    # A WAV streamed with a streaming writer's placeholder sizes: the sizes are written in.
    streamed = bytearray(wav_file(pcm))
    struct.pack_into("<I", streamed, 4, 0xFFFFFFFF)
    struct.pack_into("<I", streamed, 40, 0xFFFFFFFF)
    server.default = Behaviour(text="ok", audio=bytes(streamed), audio_chunk_bytes=333)
    _, response = ask(server, spoken())
    assert response.audio is not None and read_wav(response.audio.data) == (24000, pcm)


def test_a_text_request_asks_for_no_audio_and_ignores_any(server) -> None:
    server.default = Behaviour(text="Red.", audio=wav_file(pcm_tone()))
    _, response = ask(server, ChatRequest(item_id="q1", text="Colour?"))
    assert "audio" not in server.chat_requests[0].json and response.audio is None


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("audio", "kind", "says"),
    [
        ("this is not base64 !!", "malformed", "item q1: the reply's audio is not base64"),
        (None, "empty", "item q1: the reply holds no audio, though a spoken reply was asked for"),
        (b"", "empty", "item q1: the reply holds no audio"),
        (wav_file(pcm_tone())[:2000], "malformed", "item q1: the reply's WAV audio is truncated: its header promises"),
        (wav_file(b""), "empty", "item q1: the reply's WAV audio holds no samples"),
        (b"RIFF\x10\x00\x00\x00WAVEjunk", "malformed", "item q1: the reply's WAV audio is truncated"),
    ],
)
def test_bad_audio_fails_the_item_with_one_clear_line(server, stream, audio, kind, says) -> None:
    server.default = Behaviour(text="It is red.", audio=audio)
    with pytest.raises(RouteError) as info:
        ask(server, spoken(), stream=stream)
    assert info.value.kind == kind and info.value.message.startswith(says), info.value.message
    assert "\n" not in info.value.message


def test_non_streamed_wav_without_a_header_and_odd_pcm_fail(server) -> None:
    server.default = Behaviour(text="x", audio=pcm_tone(0.1))
    with pytest.raises(RouteError, match="not a WAV file"):
        ask(server, spoken(), stream=False)
    server.default = Behaviour(text="x", audio=pcm_tone(0.1) + b"\x01")
    with pytest.raises(RouteError, match="odd byte count"):
        ask(server, spoken(), stream=True)
    server.default = Behaviour(text="x", audio=b"\x00" * 64)
    with pytest.raises(RouteError, match="not mp3"):
        ask(server, spoken(reply_audio=ReplyAudio(voice="alloy", format="mp3")), stream=False)


def test_the_key_is_masked_in_audio_and_redacted_from_the_transcript(server) -> None:
    pcm = pcm_tone(0.1) + SECRET.encode() + pcm_tone(0.1)[: len(SECRET) % 2]
    server.default = Behaviour(text="", audio=wav_file(pcm), audio_transcript="key {{api_key}} here")
    _, response = ask(server, spoken(), stream=False)
    assert response.audio is not None
    assert SECRET.encode() not in response.audio.data and len(response.audio.data) == len(wav_file(pcm))
    assert response.audio.transcript == "key *** here"


def test_wav_checks_directly() -> None:
    good = wav_from_pcm16(pcm_tone(0.05), 24000)
    assert checked_wav(good, "x") == good
    with pytest.raises(RouteError, match="no RIFF/WAVE header"):
        checked_wav(b"RIFF\x00\x00\x00\x00AVI LIST", "x")
    with pytest.raises(RouteError, match="before its 'fmt ' chunk"):
        checked_wav(b"RIFF\x0c\x00\x00\x00WAVEdata\x02\x00\x00\x00\x00\x00", "x")


def test_the_simulated_model_answers_aloud_with_the_tts() -> None:
    from omnivchat.diagnostics.asr_wer import speak_wav

    oracle = SimOracle(reference="The square is red.", language="en")
    request = ChatRequest(item_id="q1", text="Colour?", oracle=oracle, reply_audio=ReplyAudio(voice="auto"))

    async def go(route):
        return await route.send(route.prepare(request))

    response = asyncio.run(go(get_route("sim:healthy?text=1", speaker=speak_wav)))
    assert response.text == "The square is red." and response.audio is not None
    rate, frames = read_wav(response.audio.data)
    assert rate == 22050 and len(frames) > 22050  # over half a second of speech
    assert np.abs(np.frombuffer(frames, "<i2")).max() > 1000  # audible
    assert response.audio.transcript == "The square is red."
    # Without a speaker it cannot answer aloud; a voice espeak-ng lacks fails the item, naming it.
    with pytest.raises(RouteError, match="given no speaker"):
        asyncio.run(go(get_route("sim:healthy?text=1")))
    bad = request.model_copy(update={"reply_audio": ReplyAudio(voice="alloy")})
    route = get_route("sim:healthy?text=1", speaker=speak_wav)
    with pytest.raises(RouteError, match=r"cannot speak: .*unknown espeak-ng voice 'alloy'"):
        asyncio.run(route.send(route.prepare(bad)))
    # A spoken request has its own key; a text request keeps the key it always had.
    plain = request.model_copy(update={"reply_audio": None})
    assert route.prepare(plain).key != route.prepare(request).key
    assert "reply_audio" not in route.prepare(plain).description


def test_the_store_keeps_audio_as_a_content_addressed_file(tmp_path: Path) -> None:
    from omnivchat.routes import ChatResponse, SpokenReply

    wav = wav_file(pcm_tone(0.1))
    store = RunStore(tmp_path / "store.sqlite")
    for key in ("k1", "k2"):  # two replies with the same audio: one file
        store.add_request(key, "open", "m", "e", {})
        attempt = store.start_attempt(key, key)
        reply = ChatResponse(text="", audio=SpokenReply(data=wav, format="wav", transcript="It is red."))
        store.finish_attempt(attempt, key, reply)
    store.close()
    files = list((tmp_path / "audio").iterdir())
    assert len(files) == 1 and files[0].read_bytes() == wav and files[0].suffix == ".wav"
    with RunStore(tmp_path / "store.sqlite", read_only=True) as reader:
        record = reader.audio("k1")
        assert record is not None and record == reader.audio("k2")
        assert record["path"] == f"audio/{files[0].name}" and record["sha256"] == files[0].stem
        assert record["bytes"] == len(wav) and record["server_transcript"] == "It is red."
        assert reader.audio("nope") is None


def test_base64_pieces_joined_or_alone() -> None:
    from omnivchat.routes._audio import decode_base64

    data = bytes(range(256)) * 3
    whole = base64.b64encode(data).decode()
    assert decode_base64([whole[:5], whole[5:]], "x") == data  # cut anywhere: joined
    pieces = [base64.b64encode(data[i : i + 100]).decode() for i in range(0, len(data), 100)]
    assert decode_base64(pieces, "x") == data  # each piece padded: decoded alone
