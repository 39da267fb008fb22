"""Probing media files with PyAV (headers only, about 2 ms; audio energy decodes the audio track)."""

from __future__ import annotations

import functools
import json
import math
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from omnivchat.media._bounded import bounded
from omnivchat.media._cache import atomic_build, cache_key, cached_path, content_hash
from omnivchat.media._cache import cache_dir as resolve_cache_dir
from omnivchat.media._cache import forget_hashes as forget_content_hashes
from omnivchat.media._ffmpeg import MediaError, MediaTimeout

if TYPE_CHECKING:
    import numpy as np

# Below this the audio counts as silent; also the floor reported for digital silence (JSON has no -inf).
SILENCE_FLOOR_DBFS = -120.0


class StreamInfo(BaseModel):
    """One stream of a media file."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(description="Stream index in the container.")
    kind: Literal["video", "audio", "subtitle", "data", "attachment", "unknown"] = Field(description="Stream type.")
    codec: str = Field(description="Codec name as FFmpeg spells it (e.g. h264, aac); 'none' if unknown.")
    duration: float | None = Field(default=None, description="Stream duration in seconds, when known.")


class MediaInfo(BaseModel):
    """What :func:`probe` found in a media file. Durations are seconds; sizes are pixels."""

    model_config = ConfigDict(frozen=True)

    path: str = Field(description="The file probed.")
    size_bytes: int = Field(description="File size in bytes.")
    container: str = Field(description="Container format name(s) as FFmpeg reports them.")
    duration: float = Field(description="Overall duration: the longest of the streams (or the container's).")
    has_video: bool = Field(description="At least one video stream (cover art excluded).")
    has_audio: bool = Field(description="At least one audio stream.")
    width: int | None = Field(default=None, description="Video width.")
    height: int | None = Field(default=None, description="Video height.")
    fps: float | None = Field(default=None, description="Video frame rate (average).")
    fps_exact: str | None = Field(default=None, description="The frame rate as an exact fraction, e.g. 30000/1001.")
    n_frames: int | None = Field(default=None, description="Video frame count (from the index, or estimated).")
    video_codec: str | None = Field(default=None, description="Video codec name.")
    pix_fmt: str | None = Field(default=None, description="Video pixel format.")
    video_duration: float | None = Field(default=None, description="Video stream duration.")
    audio_codec: str | None = Field(default=None, description="Audio codec name.")
    sample_rate: int | None = Field(default=None, description="Audio sample rate in Hz.")
    channels: int | None = Field(default=None, description="Audio channel count.")
    channel_layout: str | None = Field(
        default=None, description="Audio channel layout as FFmpeg names it (mono, stereo, 5.1; '2 channels': none)."
    )
    audio_duration: float | None = Field(default=None, description="Audio stream duration.")
    audio_rms_dbfs: float | None = Field(
        default=None,
        description="RMS level of the whole audio track in dBFS (mono mix); None without audio or with "
        f"energy=False; {SILENCE_FLOOR_DBFS} for digital silence.",
    )
    audio_peak: float | None = Field(default=None, description="Peak absolute sample value (0..1) of the mono mix.")
    streams: tuple[StreamInfo, ...] = Field(default=(), description="Every stream, in container order.")

    @property
    def is_silent(self) -> bool:
        """True when the audio energy was measured and lies below -60 dBFS (or there is no audio)."""
        if not self.has_audio:
            return True
        return self.audio_rms_dbfs is not None and self.audio_rms_dbfs < -60.0


def _av() -> Any:
    import av  # deferred: keeps `import omnivchat.media` cheap

    return av


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise MediaError(f"{path}: no such file")
    if not path.is_file():
        raise MediaError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise MediaError(f"{path}: empty file (0 bytes)")


def open_container(path: Path) -> Any:
    """Open ``path`` with PyAV, turning any failure into a MediaError that names the file."""
    _check_readable(path)
    av = _av()
    try:
        return av.open(str(path), mode="r")
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: not a readable media file (corrupt, truncated or unknown format: {exc})") from None
    except OSError as exc:
        raise MediaError(f"{path}: cannot open ({exc})") from None


def _seconds(value: int | None, time_base: Fraction | None) -> float | None:
    if value is None or time_base is None:
        return None
    return float(value * time_base)


def _kind(stream: Any) -> Literal["video", "audio", "subtitle", "data", "attachment", "unknown"]:
    kind = getattr(stream, "type", None)
    return kind if kind in ("video", "audio", "subtitle", "data", "attachment") else "unknown"


def _codec_name(stream: Any) -> str:
    try:
        name = stream.codec_context.name  # codec_context is None when FFmpeg has no decoder for the codec
    except Exception:
        return "none"
    return name or "none"


def _layout_name(cc: Any) -> str | None:
    layout = getattr(cc, "layout", None) if cc is not None else None
    return getattr(layout, "name", None) or None


@bounded("probing")
def probe(path: str | os.PathLike[str], *, energy: bool = True, verify: bool | None = None) -> MediaInfo:
    """Read the streams, duration, size, frame rate and codecs of ``path``.

    With ``energy`` (the default) the audio track is decoded to measure its RMS level and peak (about 20 ms for
    10 s). ``verify`` (default: same as ``energy``) also reads every packet to catch truncation (see
    :func:`verify_complete`, about 3 ms for 10 s); with both off only the headers are read (about 1.5 ms).
    Raises MediaError naming the file if it cannot be read. A file without video is not an error here: check
    ``has_video``.
    """
    p = Path(path)
    with open_container(p) as container:
        streams: list[StreamInfo] = []
        video = audio = None
        for s in container.streams:
            kind = _kind(s)
            # An attached picture (cover art) is a video stream of one frame, not video content.
            attached = bool(getattr(s, "disposition", 0) and int(s.disposition) & 0x400)
            streams.append(
                StreamInfo(index=s.index, kind=kind, codec=_codec_name(s), duration=_seconds(s.duration, s.time_base))
            )
            if kind == "video" and video is None and not attached:
                video = s
            elif kind == "audio" and audio is None:
                audio = s
        container_duration = container.duration / 1_000_000 if container.duration else None
        info: dict[str, object] = {}
        durations: list[float] = []
        if video is not None:
            rate = video.average_rate or video.guessed_rate
            vdur = _seconds(video.duration, video.time_base)
            n_frames = int(video.frames) if video.frames else None
            if n_frames is None and rate and (vdur or container_duration):
                n_frames = round((vdur or container_duration or 0.0) * float(rate))
            if vdur is None and n_frames and rate:
                vdur = n_frames / float(rate)
            cc = video.codec_context
            info.update(
                width=(cc.width if cc is not None else getattr(video, "width", 0)) or None,
                height=(cc.height if cc is not None else getattr(video, "height", 0)) or None,
                fps=float(rate) if rate else None,
                fps_exact=f"{rate.numerator}/{rate.denominator}" if rate else None,
                n_frames=n_frames,
                video_codec=_codec_name(video),
                pix_fmt=getattr(cc, "pix_fmt", None) if cc is not None else None,
                video_duration=vdur,
            )
            if vdur:
                durations.append(vdur)
        if audio is not None:
            adur = _seconds(audio.duration, audio.time_base)
            cc = audio.codec_context
            info.update(
                audio_codec=_codec_name(audio),
                sample_rate=(cc.sample_rate or None) if cc is not None else None,
                channels=(cc.channels or None) if cc is not None else None,
                channel_layout=_layout_name(cc),
                audio_duration=adur,
            )
            if adur:
                durations.append(adur)
        duration = max(durations) if durations else (container_duration or 0.0)
        result = MediaInfo(
            path=str(p),
            size_bytes=p.stat().st_size,
            container=container.format.name,
            duration=duration,
            has_video=video is not None,
            has_audio=audio is not None,
            streams=tuple(streams),
            **info,
        )
        if energy if verify is None else verify:
            _check_packets(container, p)  # same open file: the headers are already parsed
    if energy and result.has_audio:
        samples, _ = decode_audio(p, sr=None, info=result)
        if samples.size:
            rms = float(math.sqrt(float((samples.astype("float64") ** 2).mean())))
            peak = float(abs(samples).max())
        else:
            rms = peak = 0.0
        db = 20 * math.log10(rms) if rms > 0 else SILENCE_FLOOR_DBFS
        result = result.model_copy(update={"audio_rms_dbfs": max(db, SILENCE_FLOOR_DBFS), "audio_peak": peak})
    return result


@bounded("decoding the audio")
def decode_audio(path: Path, *, sr: int | None, info: MediaInfo | None = None) -> tuple[np.ndarray, int]:
    """Decode the first audio track of ``path`` to mono float32 at ``sr`` (None: the source rate).

    The result is cropped or zero-padded to the stream's duration, because AAC decoders emit a different number
    of samples from one build to the next (priming and the last frame's padding).
    """
    import av
    import numpy as np

    if info is None:
        info = probe(path, energy=False, verify=True)
    require_audio(info)
    rate = int(sr or info.sample_rate or 0)
    if rate <= 0:
        raise MediaError(f"{path}: audio track has no sample rate")
    chunks: list[np.ndarray] = []
    try:
        with open_container(path) as container:
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout="mono", rate=rate)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: cannot decode audio ({exc})") from None
    samples = np.concatenate(chunks).astype(np.float32, copy=False) if chunks else np.zeros(0, np.float32)
    if info.audio_duration:
        expected = round(info.audio_duration * rate)
        short = expected - samples.size
        samples = np.pad(samples, (0, short)) if short > 0 else samples[:expected]
    return np.ascontiguousarray(samples), rate


def require_video(info: MediaInfo) -> None:
    """Raise MediaError naming the file unless it has a decodable video stream with a known size and rate."""
    if not info.has_video:
        raise MediaError(f"{info.path}: no video stream")
    if info.video_codec in (None, "none"):
        raise MediaError(f"{info.path}: unsupported video codec (no decoder available)")
    if not info.width or not info.height or not info.fps:
        raise MediaError(f"{info.path}: video stream has no usable size or frame rate")


def require_audio(info: MediaInfo) -> None:
    """Raise MediaError naming the file unless it has a decodable audio stream."""
    if not info.has_audio:
        raise MediaError(f"{info.path}: no audio track")
    if info.audio_codec in (None, "none"):
        raise MediaError(f"{info.path}: unsupported audio codec (no decoder available)")


@bounded("reading every packet")
def verify_complete(path: Path) -> None:
    """Raise MediaError naming the file if its packets are unreadable or fewer than its index promises.

    A truncated MP4 whose index (moov) comes first still opens and probes as whole; only reading the packets
    shows the missing data. This demuxes without decoding: about 3 ms for a 10 s clip.
    """
    with open_container(path) as container:
        _check_packets(container, path)


def _check_packets(container: Any, path: Path) -> None:
    av = _av()
    expected = {s.index: int(s.frames) for s in container.streams if s.frames}
    seen = dict.fromkeys(expected, 0)
    try:
        for packet in container.demux():
            if packet.size and packet.stream.index in seen:
                seen[packet.stream.index] += 1
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: corrupt media data ({exc})") from None
    for index, want in expected.items():
        if seen[index] < want:
            raise MediaError(f"{path}: truncated or corrupt: stream {index} has {seen[index]} of {want} packets")


# Bump when probe() changes what it reports, so cached probe results made by the old code are not reused.
PROBE_RECIPE = "2"  # 2: the audio channel layout


class ProbeResult(BaseModel):
    """The outcome of :func:`cached_probe`: what the file holds, or why it cannot be read; never raises for it."""

    model_config = ConfigDict(frozen=True)

    path: str = Field(description="The file probed.")
    sha256: str | None = Field(default=None, description="Content hash; None when the file could not be read.")
    info: MediaInfo | None = Field(default=None, description="What probe() found; None when it failed.")
    error: str | None = Field(default=None, description="Why the file is not a readable clip (without its path).")
    cached: bool = Field(default=False, description="True when the result came from the cache, with no probing.")

    @property
    def ok(self) -> bool:
        return self.error is None


def _reason(exc: MediaError, path: Path) -> str:
    """A MediaError's message without the file's path (the cache entry serves every copy of the same bytes)."""
    message = str(exc).removeprefix(f"{path}: ")
    message = message.replace(f": '{path}'", "").replace(f": {path}", "")  # FFmpeg's errors end with the path
    return re.sub(r"\[Errno -?\d+\] ", "", message)


def _pyav_version() -> str:
    av = _av()
    libs = getattr(av, "library_versions", {})
    return f"{av.__version__} {sorted(libs.items())}"


def probe_headers(path: str | os.PathLike[str]) -> MediaInfo:
    """``probe(path, energy=False)`` (headers only, about 2 ms), worked out once per process for the file as it is
    now (a file rewritten gets a new size or modification time; :func:`forget_hashes` drops them all): the check of
    an item's clips and the route that sends them share one probe. A file that cannot be read raises each time."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise MediaError(f"{path}: no such file") from None
    except OSError as exc:
        raise MediaError(f"{path}: cannot read ({exc.strerror})") from None
    return _headers(str(path), st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _headers(path: str, inode: int, size: int, mtime_ns: int) -> MediaInfo:
    return probe(Path(path), energy=False)


def forget_hashes() -> None:
    """Drop the hashes and header probes memoised in this process: a file rewritten with its size and
    modification time kept (os.utime) would otherwise keep its old hash, its media and its probe."""
    forget_content_hashes()
    _headers.cache_clear()


def cached_probe(
    path: str | os.PathLike[str],
    *,
    energy: bool = True,
    verify: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
) -> ProbeResult:
    """:func:`probe` once per file content: the result (or the reason the file is unreadable) is kept in the cache.

    The entry lives under ``<cache>/probe/`` keyed by the sha256 of the file, the probe options, the PyAV and
    FFmpeg library versions and :data:`PROBE_RECIPE`; a copy of the same bytes elsewhere, or the same file after
    a touch, is not probed again. A file that cannot be read (missing, permissions) gives a result with ``error``
    and is not cached. Probing releases the GIL (PyAV), so threads can probe several files at once.
    """
    p = Path(path)
    try:
        digest = content_hash(p)
    except MediaError as exc:
        return ProbeResult(path=str(p), error=_reason(exc, p))
    params = {"energy": energy, "verify": verify, "pyav": _pyav_version(), "recipe": PROBE_RECIPE}
    key = cache_key(digest, "probe", params)
    target = cached_path(key, "probe", ".json", resolve_cache_dir(cache_dir))
    entry = _read_entry(target)
    if entry is not None:
        info, error = entry
        if info is not None:
            info = info.model_copy(update={"path": str(p)})
        return ProbeResult(path=str(p), sha256=digest, info=info, error=error, cached=True)
    try:
        info, error = probe(p, energy=energy, verify=verify), None
    except MediaTimeout as exc:  # a bound says nothing lasting of the bytes: never cached
        return ProbeResult(path=str(p), sha256=digest, error=_reason(exc, p))
    except MediaError as exc:
        info, error = None, _reason(exc, p)
    record = {"error": error} if info is None else {"info": info.model_dump(mode="json", exclude={"path"})}

    def write(tmp: Path) -> None:
        tmp.write_text(json.dumps(record), encoding="utf-8")

    atomic_build(target, write, subject=p)
    return ProbeResult(path=str(p), sha256=digest, info=info, error=error)


def _read_entry(target: Path) -> tuple[MediaInfo | None, str | None] | None:
    """A cached probe result, or None when there is none (or it is unreadable: it is then probed again)."""
    try:
        record = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("error"), str):
        return None, record["error"]
    try:
        return MediaInfo.model_validate({**record.get("info", {}), "path": ""}), None
    except (ValidationError, TypeError):
        return None
