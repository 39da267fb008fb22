"""Spoken replies as servers send them: base64 audio, whole or in streamed pieces, checked before it is kept.

OpenAI chat completions asked for ``modalities: ["text", "audio"]`` answer with ``message.audio = {id, data,
transcript, expires_at}``, or stream ``delta.audio`` objects holding pieces of ``data`` (base64) and of
``transcript``. DashScope's Qwen-Omni streams the same pieces; its audio is headerless 16-bit PCM at 24 kHz even
when ``wav`` is asked for (its documentation decodes it with ``np.frombuffer(..., np.int16)``), as OpenAI's
``pcm16`` is. So a reply is kept as:

- a WAV file as sent, when it starts with a RIFF header (checked: a WAV whose header promises more samples than
  arrived is truncated, and fails; a streaming header's placeholder sizes are filled in);
- headerless PCM (a stream, or the ``pcm16`` format) wrapped in a WAV header at ``ReplyAudio.pcm_rate``;
- mp3, flac or opus as sent, after a look at their first bytes (their decoding is checked when transcribed).

Anything else fails the item with one line that says what was wrong: audio that is not base64 (``malformed``,
retried), no audio at all where speech was asked for (``empty``), a WAV cut short (``malformed``).
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Any

from omnivchat.routes._types import ReplyAudio, RouteError, SpokenReply

_WHITESPACE = re.compile(rb"\s+")
_PLACEHOLDERS = (0, 0xFFFFFFFF)  # sizes a streaming writer puts in a WAV header before it knows the length
_MAGIC = {"mp3": (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2", b"\xff\xe3"), "flac": (b"fLaC",), "opus": (b"OggS",)}


class AudioCollector:
    """The audio of one reply, gathered from its ``message.audio`` object or from every ``delta.audio`` piece."""

    def __init__(self, item_id: str, asked: ReplyAudio) -> None:
        self.item_id = item_id
        self.asked = asked
        self._data: list[str] = []
        self._transcript: list[str] = []

    def add(self, audio: Any) -> None:
        """One ``audio`` object of a message or a delta (None or absent: nothing)."""
        if audio is None:
            return
        if not isinstance(audio, dict):
            raise RouteError("malformed", f"item {self.item_id}: the reply's audio is not an object")
        data, transcript = audio.get("data"), audio.get("transcript")
        if data is not None and not isinstance(data, str):
            raise RouteError("malformed", f"item {self.item_id}: the reply's audio data is not a base64 string")
        if data:
            self._data.append(data)
        if isinstance(transcript, str):
            self._transcript.append(transcript)

    def finish(self, *, streamed: bool) -> SpokenReply:
        """The reply's speech, decoded and checked; RouteError when it is missing, not base64 or damaged."""
        raw = decode_base64(self._data, self.item_id)
        if not raw:
            raise RouteError(
                "empty", f"item {self.item_id}: the reply holds no audio, though a spoken reply was asked for"
            )
        data, fmt = file_of(raw, self.asked, streamed=streamed, item_id=self.item_id)
        transcript = "".join(self._transcript) if self._transcript else None
        return SpokenReply(data=data, format=fmt, transcript=transcript)


def decode_base64(pieces: list[str], item_id: str) -> bytes:
    """The bytes of base64 ``pieces``: each decoded alone when each is whole (servers encode every piece on its
    own, padding included), else all joined (one encoding cut anywhere)."""
    encoded = [_WHITESPACE.sub(b"", p.encode("ascii", errors="replace")) for p in pieces]
    try:
        if all(len(p) % 4 == 0 for p in encoded):
            return b"".join(base64.b64decode(p, validate=True) for p in encoded)
        return base64.b64decode(b"".join(encoded), validate=True)
    except (binascii.Error, ValueError) as err:
        raise RouteError("malformed", f"item {item_id}: the reply's audio is not base64 ({err})") from None


def file_of(raw: bytes, asked: ReplyAudio, *, streamed: bool, item_id: str) -> tuple[bytes, str]:
    """(file bytes, format) of decoded reply audio; see the module docstring for what is accepted."""
    if raw[:4] == b"RIFF":
        return checked_wav(raw, item_id), "wav"
    if asked.format in ("wav", "pcm16"):
        if asked.format == "wav" and not streamed:
            raise RouteError("malformed", f"item {item_id}: the reply's audio is not a WAV file (no RIFF header)")
        if len(raw) % 2:
            raise RouteError(
                "malformed", f"item {item_id}: the reply's PCM audio has an odd byte count ({len(raw)}): cut short"
            )
        return wav_from_pcm16(raw, asked.pcm_rate), "wav"
    if not raw.startswith(_MAGIC[asked.format]):
        raise RouteError("malformed", f"item {item_id}: the reply's audio is not {asked.format} (its first bytes)")
    return raw, asked.format


def wav_from_pcm16(pcm: bytes, rate: int, channels: int = 1) -> bytes:
    """A WAV file around 16-bit little-endian PCM samples."""
    block = 2 * channels
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(pcm),
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        rate,
        rate * block,
        block,
        16,
        b"data",
        len(pcm),
    )
    return header + pcm


def checked_wav(data: bytes, item_id: str) -> bytes:
    """``data`` if it is a whole WAV file with samples; a streaming header's placeholder sizes filled in.

    Raises RouteError ``malformed`` when it is not RIFF/WAVE, has no ``fmt `` before its ``data``, or its
    ``data`` chunk promises more bytes than arrived (truncated); ``empty`` when it holds no sample."""
    where = f"item {item_id}: the reply's WAV audio"
    if len(data) < 12 or data[8:12] != b"WAVE":
        raise RouteError("malformed", f"{where} is not a WAV file (no RIFF/WAVE header)")
    pos, block = 12, 0
    while pos + 8 <= len(data):
        chunk, size = data[pos : pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = pos + 8
        if chunk == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise RouteError("malformed", f"{where} has a cut 'fmt ' chunk")
            channels, rate, _bps, block, bits = struct.unpack_from("<HIIHH", data, body + 2)
            if channels < 1 or block < 1 or rate < 1 or bits < 1:  # no decoder plays it: not kept, retried
                raise RouteError(
                    "malformed",
                    f"{where} declares {channels} channels, {block}-byte frames, {rate} Hz, {bits}-bit samples",
                )
        elif chunk == b"data":
            if not block:
                raise RouteError("malformed", f"{where} has its samples before its 'fmt ' chunk")
            arrived = len(data) - body
            if size in _PLACEHOLDERS:  # a header written before the length was known: take what arrived
                size = arrived - arrived % block
                data = _with_sizes(data, pos, size)
            elif size > arrived:
                raise RouteError(
                    "malformed", f"{where} is truncated: its header promises {size} bytes of samples, {arrived} arrived"
                )
            if size == 0:
                raise RouteError("empty", f"{where} holds no samples")
            return data
        pos = body + size + (size % 2)  # chunks are padded to an even length
    raise RouteError("malformed", f"{where} is truncated: it ends before its 'data' chunk")


def _with_sizes(data: bytes, data_chunk: int, size: int) -> bytes:
    """``data`` cut to ``size`` sample bytes, with the RIFF and data sizes written in."""
    end = data_chunk + 8 + size
    head = bytearray(data[:end])
    struct.pack_into("<I", head, 4, end - 8)
    struct.pack_into("<I", head, data_chunk + 4, size)
    return bytes(head)
