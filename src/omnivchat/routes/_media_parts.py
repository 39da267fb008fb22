"""Turning clips into content parts: fit to the route's limits, then describe each part by content hash.

The request identity (its hash) uses the description, where each media part holds a placeholder naming its
sha256; the bytes are read and base64-encoded only when the request is sent. Two requests with the same media
and settings therefore have the same key, without encoding media just to look a result up.

At send time the body is streamed (:meth:`MediaStore.body`): the JSON around the media is built once per attempt and
each clip is read from its file and base64-encoded block by block as the socket takes it, so C requests in flight
hold C small buffers rather than C copies of every clip (its bytes, its base64 text and the JSON text, each whole).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat.routes._types import Delivered, RouteError, media_failure

PLACEHOLDER = "omnivchat-media:"  # followed by "<sha256>"; replaced by a data URL at send time
PLACEHOLDER_RAW = "omnivchat-media-b64:"  # replaced by bare base64 (input_audio on vLLM)
_SLOT = re.compile(r'"(omnivchat-media(?:-b64)?:)([0-9a-f]{64})"')  # a placeholder as a whole JSON string
BLOCK = 3 * 256 * 1024
"""Bytes read per step when streaming a clip: a multiple of 3, so the base64 of consecutive blocks concatenates."""


def _b64_size(n: int) -> int:
    return 4 * ((n + 2) // 3)


@dataclass(frozen=True)
class _Media:
    """One media value of a streamed body: its opening text (a quote, and the data URL's head), its source, and
    how many bytes the source must hold."""

    head: bytes
    source: Path | bytes
    size: int
    sha256: str
    """The bytes the request was prepared with: a file that no longer hashes to it is not sent as if it did."""


@dataclass(frozen=True)
class StreamedBody:
    """A JSON request body sent piece by piece: literal JSON text and media read from files as the socket drains.

    ``size`` is exact, so the request carries a Content-Length (some servers refuse chunked uploads)."""

    pieces: tuple[bytes | _Media, ...]
    size: int

    @property
    def whole(self) -> bytes | None:
        """The body as one bytes object when it holds no media file (a text request): sent as is, which costs
        aiohttp less than a stream; None when media are streamed."""
        if all(isinstance(piece, bytes) for piece in self.pieces):
            return b"".join(piece for piece in self.pieces if isinstance(piece, bytes))
        return None

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body in writes of about :data:`BLOCK` bytes or more: a small clip's request is one write (each
        write is a socket send, which hands the GIL over), a large one is read and encoded as the socket drains."""
        pending = bytearray()
        for text in self._pieces():
            pending += text
            if len(pending) >= BLOCK:
                yield bytes(pending)
                pending.clear()
        if pending:
            yield bytes(pending)

    def _pieces(self) -> Iterator[bytes]:
        for piece in self.pieces:
            if isinstance(piece, bytes):
                yield piece
                continue
            yield piece.head
            if isinstance(piece.source, bytes):
                yield base64.b64encode(piece.source)
            else:
                sent = 0
                digest = hashlib.sha256()
                try:
                    with piece.source.open("rb") as f:
                        while block := f.read(BLOCK):
                            sent += len(block)
                            digest.update(block)
                            yield base64.b64encode(block)
                except OSError as err:
                    raise RouteError("media", f"{piece.source}: cannot read ({err.strerror})") from None
                # Checked before the body's last byte goes: a request with other bytes than its record says is
                # never completed (the server sees a cut upload) and the item fails instead of being answered.
                if sent != piece.size or digest.hexdigest() != piece.sha256:
                    forget_hashes()
                    raise RouteError("media", changed_message(piece.source))
            yield b'"'


@dataclass
class MediaStore:
    """The files behind the placeholders of one request: sha256 -> (path or bytes, MIME type)."""

    files: dict[str, tuple[Path | bytes, str]] = field(default_factory=dict)
    probed: dict[Path, Any] = field(default_factory=dict)
    """What preparing found of a file (its media.MediaInfo), so that a cost estimate need not probe it again."""

    def add_file(self, path: Path, mime: str) -> str:
        digest = clip_sha256(path)
        self.files[digest] = (path, mime)
        return digest

    def add_bytes(self, data: bytes, mime: str) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self.files[digest] = (data, mime)
        return digest

    def _bytes(self, digest: str) -> tuple[bytes, str]:
        source, mime = self.files[digest]
        return (read_unchanged(source, digest) if isinstance(source, Path) else source), mime

    def materialize(self, value: Any) -> Any:
        """A copy of ``value`` with every placeholder replaced by its data URL or bare base64."""
        if isinstance(value, dict):
            return {k: self.materialize(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.materialize(v) for v in value]
        slot = _SLOT.fullmatch(f'"{value}"') if isinstance(value, str) else None
        if slot and slot.group(2) in self.files:  # else a text that only looks like a placeholder
            data, mime = self._bytes(slot.group(2))
            encoded = base64.b64encode(data).decode("ascii")
            return f"data:{mime};base64,{encoded}" if slot.group(1) == PLACEHOLDER else encoded
        return value

    def body(self, description: Any) -> StreamedBody:
        """The JSON body of ``description`` as a :class:`StreamedBody`: the same bytes ``json.dumps`` of
        :meth:`materialize` gives, without ever holding a clip's base64 whole."""
        text = json.dumps(description, ensure_ascii=False)
        pieces: list[bytes | _Media] = []
        size = 0
        start = 0
        for match in _SLOT.finditer(text):
            kind, digest = match.groups()
            if digest not in self.files:
                continue  # a text that only looks like a placeholder stays as it is
            source, mime = self.files[digest]
            literal = text[start : match.start()].encode("utf-8")
            head = b'"' + (f"data:{mime};base64,".encode("ascii") if kind == PLACEHOLDER else b"")
            n = source.stat().st_size if isinstance(source, Path) else len(source)
            pieces += [literal, _Media(head=head, source=source, size=n, sha256=digest)]
            size += len(literal) + len(head) + _b64_size(n) + 1
            start = match.end()
        tail = text[start:].encode("utf-8")
        pieces.append(tail)
        return StreamedBody(pieces=tuple(p for p in pieces if not isinstance(p, bytes) or p), size=size + len(tail))


def changed_message(path: Path) -> str:
    return (
        f"{path}: changed since the request was prepared (its bytes no longer match the sha256 recorded for it); "
        "not sent as the same clip: rerun, and the run's check of its clips says what changed"
    )


def read_unchanged(path: Path, digest: str) -> bytes:
    """The bytes of ``path``, which must still hash to ``digest`` (RouteError "media" otherwise)."""
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != digest:
        forget_hashes()
        raise RouteError("media", changed_message(path))
    return data


def forget_hashes() -> None:
    """Drop every clip hash worked out in this process: a clip rewritten with its size and modification time
    kept (os.utime) would otherwise keep its old hash."""
    from omnivchat import media

    _sha256.cache_clear()
    media.forget_hashes()  # and the probes of the files as they were


def file_identity(path: Path) -> tuple[str, int, int, int]:
    """A file as it is now: a clip rewritten in place gets a new identity (size or modification time)."""
    st = path.stat()
    return str(path), st.st_ino, st.st_size, st.st_mtime_ns


# A benchmark sends the same clip with many questions: its hash and probe are worked out once per process, not once
# per request (perf/perf_mc.py: 4 clips x 500 questions).
@functools.lru_cache(maxsize=4096)
def _sha256(path: str, inode: int, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:  # 1 MiB blocks: file_digest's 256 kB buffer per call costs more on small clips
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def clip_sha256(path: Path) -> str:
    """sha256 hex digest of a clip's bytes, worked out once per process for the file as it is now (a file rewritten
    gets a new size or modification time, so a new hash): the run manifest's clip hashes and the requests' media
    placeholders share it, so each clip of an eval is read and hashed once."""
    return _sha256(*file_identity(path))


def duration_cut(duration: float, limits: Any) -> float | None:
    """The clip's duration when the route's duration limit cuts it (keeping its start), else None."""
    limit = limits.max_duration_s
    return duration if limit is not None and duration > limit + 1e-3 else None


def audio_only_wav(clip: Path, duration: float, settings: Any) -> tuple[Path, float | None]:
    """An audio-only clip's track as a mono WAV at the route's rate, cut to its duration limit, with the duration
    it was cut from (None: whole)."""
    from omnivchat import media

    cut_from = duration_cut(duration, settings.limits)
    end = settings.limits.max_duration_s if cut_from is not None else None
    return media.export_audio(clip, fmt="wav", sr=settings.audio_sample_rate, end_s=end), cut_from


def _audio_only_parts(
    clip: Path, info: Any, settings: Any, store: MediaStore
) -> tuple[list[dict[str, Any]], Delivered]:
    """An audio-only clip as one ``input_audio`` WAV part (mono, the route's rate), cut to the route's duration
    limit; a route that delivers no audio cannot send it (RouteError "unsupported", never a silent request)."""
    if settings.audio_delivery == "none":
        raise RouteError(
            "unsupported", f"{clip}: an audio-only clip, and this route delivers no audio (--audio-delivery none)"
        )
    wav, cut_from = audio_only_wav(clip, info.duration, settings)
    data = PLACEHOLDER_RAW + store.add_file(wav, "audio/wav")
    parts = [{"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}]
    return parts, Delivered(video=False, audio=True, cut_from_s=cut_from)


def _limits_for(settings: Any, info: Any) -> Any:
    """The route's limits for this clip: with the in-video audio vLLM decodes, also its audio loader's size cap
    (it reads the whole MP4)."""
    cap = settings.audio_in_video_max_bytes
    in_video = settings.audio_in_video_kwarg and settings.audio_delivery == "in_video"
    if not (in_video and settings.media_input == "video_url" and info.has_audio and cap is not None):
        return settings.limits
    return settings.limits.model_copy(update={"max_bytes": min(cap, settings.limits.max_bytes or cap)})


def clip_parts(clip: Path, settings: Any, store: MediaStore) -> tuple[list[dict[str, Any]], Delivered]:
    """Content parts for one clip under ``settings`` (a RouteSettings), and which streams they deliver.

    Raises RouteError(kind="media") naming the file when the clip cannot be read or fitted, and
    RouteError(kind="unsupported") when the route takes no media.
    """
    from omnivchat import media

    if settings.media_input == "none":
        raise RouteError("unsupported", f"{clip}: this route takes text only and cannot deliver video or audio")
    from omnivchat.media import fits

    try:
        # One probe when the clip already fits (the common case); fit_for_route re-encodes otherwise.
        info = media.probe_headers(clip)
        if settings.media_input == "audio":  # a model that hears but takes no video (OpenAI's audio models)
            if not info.has_audio:
                raise RouteError("unsupported", f"{clip}: no audio track, and this route takes the audio alone")
            heard, delivered = _audio_only_parts(clip, info, settings, store)
            return heard, delivered.model_copy(update={"dropped": ("video",) if info.has_video else ()})
        if not info.has_video and info.has_audio:  # an audio-only item (a WAV, an MP3): its track alone
            return _audio_only_parts(clip, info, settings, store)
        cut_from = duration_cut(info.duration, settings.limits)
        limits = _limits_for(settings, info)
        fitted = clip
        if not fits(info, limits):
            fitted = media.fit_for_route(clip, limits)
            info = media.probe_headers(fitted)
        parts: list[dict[str, Any]] = []
        if settings.media_input == "frames":
            for frame in media.sample_frames(fitted, fps=settings.frames_fps, max_frames=settings.max_frames):
                url = PLACEHOLDER + store.add_bytes(frame.to_bytes("jpeg", quality=85), "image/jpeg")
                parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            url = PLACEHOLDER + store.add_file(fitted, "video/mp4")
            store.probed[fitted] = info
            if settings.media_input == "file":
                parts.append({"type": "file", "file": {"file_data": url, "filename": "clip.mp4"}})
            else:
                parts.append({"type": "video_url", "video_url": {"url": url}})
        audio_in_video = info.has_audio and settings.media_input != "frames" and settings.audio_delivery != "none"
        separate = info.has_audio and (
            settings.audio_delivery == "input_audio"
            or (settings.media_input == "frames" and settings.audio_delivery != "none")
        )
        if separate:
            wav = media.export_audio(fitted, fmt="wav", sr=settings.audio_sample_rate)
            data = PLACEHOLDER_RAW + store.add_file(wav, "audio/wav")
            parts.append({"type": "input_audio", "input_audio": {"data": data, "format": "wav"}})
    except media.MediaError as err:
        raise media_failure(err) from None
    except OSError as err:  # gone or unreadable since the benchmark loaded it
        raise RouteError("media", f"{err.filename or clip}: cannot read ({err.strerror})") from None
    audio = audio_in_video or separate
    dropped = ("audio",) if info.has_audio and not audio else ()
    return parts, Delivered(video=info.has_video, audio=audio, dropped=dropped, cut_from_s=cut_from)
