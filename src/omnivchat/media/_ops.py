"""Derived clips: trim, strip / mute audio, blank / freeze video, export audio, fit a route's limits.

Each operation writes a new file into the cache (never touching its input) and returns its path; a repeated
call with the same source content and parameters finds the cached file and starts no ffmpeg. Encodes are
deterministic (``-threads 1`` and the bitexact flags) so a derived clip has a stable hash on one ffmpeg build.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnivchat.media._cache import atomic_build, cache_key, cached_path, content_hash, deliver
from omnivchat.media._cache import cache_dir as resolve_cache_dir
from omnivchat.media._ffmpeg import (
    AUDIO_ENCODE_ARGS,
    DETERMINISTIC_ARGS,
    VIDEO_ENCODE_ARGS,
    MediaError,
    run_ffmpeg,
)
from omnivchat.media._probe import MediaInfo, probe, require_audio, require_video

PathLike = str | os.PathLike[str]


def _derive(
    op: str,
    src: PathLike,
    params: dict[str, Any],
    build: Callable[[Path, Path, MediaInfo], None],
    *,
    suffix: str = ".mp4",
    out: PathLike | None = None,
    cache_dir: PathLike | None = None,
) -> Path:
    """Return the cached result of ``op(src, **params)``, building it with ``build(src, tmp, info)`` on a miss.

    The source is only probed on a miss, so a hit costs one stat, a memoised hash and one ``exists``.
    """
    source = Path(src)
    key = cache_key(content_hash(source), op, params)
    target = cached_path(key, op, suffix, resolve_cache_dir(cache_dir))
    if not target.exists():
        # verify: ffmpeg would quietly encode what is left of a truncated file.
        info = probe(source, energy=False, verify=True)
        atomic_build(target, lambda tmp: build(source, tmp, info), subject=source)
    return deliver(target, out)


def _fps(info: MediaInfo) -> Fraction:
    return Fraction(info.fps_exact) if info.fps_exact else Fraction(info.fps or 25).limit_denominator(1001)


def _nearest_frame(t: float, fps: Fraction) -> int:
    """The frame boundary nearest to ``t`` seconds, halves rounding up (Python's round() would go to even)."""
    return math.floor(Fraction(t).limit_denominator(10**6) * fps + Fraction(1, 2))


def _frame_count(info: MediaInfo) -> int:
    if info.n_frames:
        return info.n_frames
    return max(1, round((info.video_duration or info.duration) * float(_fps(info))))


# Codecs an MP4 can carry as they are; anything else (VP8, PCM, Vorbis, ...) is re-encoded when copied over.
_MP4_VIDEO = {"h264", "hevc", "av1", "vp9", "mpeg4"}
_MP4_AUDIO = {"aac", "mp3", "opus", "ac3", "alac", "flac"}


def _video_copy(info: MediaInfo) -> list[str]:
    return ["-c:v", "copy"] if info.video_codec in _MP4_VIDEO else [*VIDEO_ENCODE_ARGS]


def _audio_copy(info: MediaInfo) -> list[str]:
    return ["-c:a", "copy"] if info.audio_codec in _MP4_AUDIO else [*AUDIO_ENCODE_ARGS]


# ---------------------------------------------------------------------------------------------------- trim


def trim_args(src: Path, out: Path, info: MediaInfo, end_s: float, start_s: float = 0.0) -> list[str]:
    """The ffmpeg arguments :func:`trim` runs (public so the perf script can time the very same command).

    The cut happens in the filter graph, on decoded frames, before encoding: the result has exactly the frames
    from ``round(start_s * fps)`` up to ``round(end_s * fps)``, and the audio is cut at the same instants to the
    sample. (A stream-copy cut would start and end on packet boundaries instead.)
    """
    require_video(info)
    fps = _fps(info)
    n = _frame_count(info)
    first = max(0, _nearest_frame(start_s, fps))
    last = min(n, _nearest_frame(end_s, fps))
    if last <= first:
        raise MediaError(f"{src}: trim from {start_s} s to {end_s} s leaves no frame (clip has {n} at {fps} fps)")
    graph = f"[0:v]trim=start_frame={first}:end_frame={last},setpts=PTS-STARTPTS[v]"
    maps = ["-map", "[v]"]
    if info.has_audio and info.sample_rate:
        sr = info.sample_rate
        a0, a1 = round(first / fps * sr), round(last / fps * sr)
        graph += f";[0:a:0]atrim=start_sample={a0}:end_sample={a1},asetpts=PTS-STARTPTS[a]"
        maps += ["-map", "[a]", *AUDIO_ENCODE_ARGS]
    # Read only up to a little past the cut; decoding the rest would be wasted.
    read_until = float(last / fps) + 1.0
    return [
        "-t",
        f"{read_until:.6f}",
        "-i",
        str(src),
        "-filter_complex",
        graph,
        *maps,
        *VIDEO_ENCODE_ARGS,
        "-fps_mode",
        "passthrough",
        *DETERMINISTIC_ARGS,
        "-f",
        "mp4",
        str(out),
    ]


def trim(
    path: PathLike,
    end_s: float,
    *,
    start_s: float = 0.0,
    out: PathLike | None = None,
    cache_dir: PathLike | None = None,
) -> Path:
    """A frame-accurate cut of ``path`` from ``start_s`` to ``end_s`` seconds, re-encoded as H.264 + AAC.

    Both bounds are rounded to the nearest frame; ``end_s`` past the end keeps the whole clip. Returns the
    cached file, or a copy at ``out``.
    """

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        run_ffmpeg(trim_args(src, tmp, info, end_s, start_s), subject=src)

    return _derive(
        "trim", path, {"end_s": float(end_s), "start_s": float(start_s)}, build, out=out, cache_dir=cache_dir
    )


# ---------------------------------------------------------------------------------------- audio variants


def strip_audio(path: PathLike, *, out: PathLike | None = None, cache_dir: PathLike | None = None) -> Path:
    """The video stream alone (stream copy: same frames, same duration), with no audio track at all.

    (A codec MP4 cannot carry, such as VP8, is re-encoded to H.264 instead of copied.)"""

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        require_video(info)
        args = ["-i", str(src), "-map", "0:v:0", *_video_copy(info), *DETERMINISTIC_ARGS, "-f", "mp4", str(tmp)]
        run_ffmpeg(args, subject=src)

    return _derive("strip_audio", path, {}, build, out=out, cache_dir=cache_dir)


def mute_audio(path: PathLike, *, out: PathLike | None = None, cache_dir: PathLike | None = None) -> Path:
    """The same video (stream copy) with a digitally silent audio track of the same length and rate.

    A source without audio gets a silent 44.1 kHz mono track as long as its video.
    """

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        require_video(info)
        if info.has_audio:
            require_audio(info)
            # volume=0 keeps every sample, so the silent track has exactly the source's length.
            args = ["-i", str(src), "-map", "0:v:0", "-map", "0:a:0", *_video_copy(info), "-af", "volume=0"]
        else:
            length = info.video_duration or info.duration
            args = [
                "-i",
                str(src),
                "-f",
                "lavfi",
                "-i",
                "anullsrc=r=44100:cl=mono",
                "-map",
                "0:v:0",
                "-map",
                "1:a",
                *_video_copy(info),
                "-t",
                f"{length:.6f}",
            ]
        run_ffmpeg([*args, *AUDIO_ENCODE_ARGS, *DETERMINISTIC_ARGS, "-f", "mp4", str(tmp)], subject=src)

    return _derive("mute_audio", path, {}, build, out=out, cache_dir=cache_dir)


def export_audio(
    path: PathLike,
    *,
    fmt: Literal["wav", "mp3", "m4a"] = "wav",
    sr: int | None = None,
    mono: bool = True,
    end_s: float | None = None,
    out: PathLike | None = None,
    cache_dir: PathLike | None = None,
) -> Path:
    """The audio track alone as a file (16-bit WAV, MP3 or AAC in M4A), for routes that take audio separately.

    ``sr=None`` keeps the source rate; ``mono`` down-mixes; ``end_s`` keeps the first that many seconds (a route's
    duration limit on an audio-only clip). A clip without audio raises MediaError.
    """
    codecs = {"wav": ["-c:a", "pcm_s16le"], "mp3": ["-c:a", "libmp3lame", "-b:a", "96k"], "m4a": [*AUDIO_ENCODE_ARGS]}
    if fmt not in codecs:
        raise ValueError(f"fmt must be one of {sorted(codecs)}")

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        require_audio(info)
        args = ["-i", str(src), "-map", "0:a:0", "-vn", *codecs[fmt]]
        if mono:
            args += ["-ac", "1"]
        if sr:
            args += ["-ar", str(int(sr))]
        if end_s is not None:
            args += ["-t", f"{end_s:.6f}"]
        muxer = {"wav": "wav", "mp3": "mp3", "m4a": "ipod"}[fmt]
        run_ffmpeg([*args, *DETERMINISTIC_ARGS, "-f", muxer, str(tmp)], subject=src)

    return _derive(
        "export_audio",
        path,
        {"fmt": fmt, "sr": sr, "mono": mono, **({"end_s": end_s} if end_s is not None else {})},  # old keys kept
        build,
        suffix=f".{fmt}",
        out=out,
        cache_dir=cache_dir,
    )


# ---------------------------------------------------------------------------------------- video variants


def blank_video(path: PathLike, *, out: PathLike | None = None, cache_dir: PathLike | None = None) -> Path:
    """Black frames of the same size, rate and count as the source video; the audio track is copied as is."""

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        require_video(info)
        n = _frame_count(info)
        black = f"color=c=black:s={info.width}x{info.height}:r={info.fps_exact}"
        args = ["-f", "lavfi", "-i", black, "-i", str(src), "-map", "0:v", "-frames:v", str(n), *VIDEO_ENCODE_ARGS]
        if info.has_audio:
            args += ["-map", "1:a:0", *_audio_copy(info)]
        run_ffmpeg([*args, *DETERMINISTIC_ARGS, "-f", "mp4", str(tmp)], subject=src)

    return _derive("blank_video", path, {}, build, out=out, cache_dir=cache_dir)


def freeze_video(
    path: PathLike, *, at_s: float = 0.0, out: PathLike | None = None, cache_dir: PathLike | None = None
) -> Path:
    """The frame shown at ``at_s`` held for the whole clip (same frame count); the audio track is copied."""

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        require_video(info)
        n = _frame_count(info)
        k = min(n - 1, max(0, math.floor(Fraction(at_s).limit_denominator(10**6) * _fps(info))))
        graph = f"[0:v]trim=start_frame={k}:end_frame={k + 1},setpts=PTS-STARTPTS,tpad=stop_mode=clone:stop={n - 1}[v]"
        args = ["-i", str(src), "-filter_complex", graph, "-map", "[v]", *VIDEO_ENCODE_ARGS, "-fps_mode", "passthrough"]
        if info.has_audio:
            args += ["-map", "0:a:0", *_audio_copy(info)]
        run_ffmpeg([*args, *DETERMINISTIC_ARGS, "-f", "mp4", str(tmp)], subject=src)

    return _derive("freeze_video", path, {"at_s": float(at_s)}, build, out=out, cache_dir=cache_dir)


# ----------------------------------------------------------------------------------------------- routes


class MediaLimits(BaseModel):
    """What a model route accepts for one video; None means no limit. Used by :func:`fit_for_route`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_duration_s: float | None = Field(default=None, gt=0, description="Longest clip accepted, in seconds.")
    max_width: int | None = Field(default=None, gt=1, description="Widest frame accepted, in pixels.")
    max_height: int | None = Field(default=None, gt=1, description="Tallest frame accepted, in pixels.")
    max_fps: float | None = Field(default=None, gt=0, description="Highest frame rate accepted.")
    max_bytes: int | None = Field(default=None, gt=0, description="Largest file accepted (e.g. a data-URL cap).")


def _even(x: float) -> int:
    return max(2, int(x) // 2 * 2)


def fits(info: MediaInfo, limits: MediaLimits) -> bool:
    """Whether the clip already satisfies ``limits`` and is H.264 (+ AAC) in MP4, so needs no re-encode."""
    lim = limits
    checks = [
        info.container.startswith("mov,mp4"),
        info.video_codec == "h264",
        not info.has_audio or info.audio_codec == "aac",
        lim.max_duration_s is None or info.duration <= lim.max_duration_s + 1e-3,
        lim.max_width is None or (info.width or 0) <= lim.max_width,
        lim.max_height is None or (info.height or 0) <= lim.max_height,
        lim.max_fps is None or (info.fps or 0) <= lim.max_fps + 1e-3,
        lim.max_bytes is None or info.size_bytes <= lim.max_bytes,
    ]
    return all(checks)


def _fit_args(
    src: Path, tmp: Path, info: MediaInfo, lim: MediaLimits, scale: float, bitrate: int | None, audio_rate: int = 96_000
) -> list[str]:
    assert info.width and info.height
    fps = _fps(info)
    n = _frame_count(info)
    last = n
    if lim.max_duration_s is not None:
        last = min(n, int(Fraction(lim.max_duration_s).limit_denominator(10**6) * fps))
    box = scale
    if lim.max_width:
        box = min(box, lim.max_width / info.width)
    if lim.max_height:
        box = min(box, lim.max_height / info.height)
    box = min(1.0, box)
    w, h = _even(info.width * box), _even(info.height * box)
    chain = f"[0:v]trim=end_frame={last},setpts=PTS-STARTPTS"
    if lim.max_fps is not None and float(fps) > lim.max_fps + 1e-3:
        chain += f",fps={Fraction(lim.max_fps).limit_denominator(1001)}"
    chain += f",scale={w}:{h}:flags=bicubic,setsar=1[v]"
    maps = ["-map", "[v]"]
    if info.has_audio and info.sample_rate:
        end_sample = round(last / fps * info.sample_rate)
        chain += f";[0:a:0]atrim=end_sample={end_sample},asetpts=PTS-STARTPTS[a]"
        maps += ["-map", "[a]", "-c:a", "aac", "-b:a", str(audio_rate)]
    video = list(VIDEO_ENCODE_ARGS)
    if bitrate:
        video = ["-c:v", "libx264", "-preset", "veryfast", "-b:v", str(bitrate), "-maxrate", str(bitrate)]
        video += ["-bufsize", str(bitrate * 2), "-pix_fmt", "yuv420p"]
    return ["-i", str(src), "-filter_complex", chain, *maps, *video, *DETERMINISTIC_ARGS, "-f", "mp4", str(tmp)]


def fit_for_route(
    path: PathLike,
    limits: MediaLimits | None = None,
    *,
    max_duration_s: float | None = None,
    max_width: int | None = None,
    max_height: int | None = None,
    max_fps: float | None = None,
    max_bytes: int | None = None,
    out: PathLike | None = None,
    cache_dir: PathLike | None = None,
) -> Path:
    """A version of ``path`` within a route's limits (duration, frame size, frame rate, bytes), as H.264 + AAC.

    Limits come from ``limits`` and/or the keyword arguments (keywords win). A clip that already fits is
    returned as is (its own path, or a copy at ``out``): no re-encode, so its content hash is unchanged.
    Otherwise it is cut to ``max_duration_s`` (frame-accurate, keeping the start), scaled down to fit the frame
    box, capped in frame rate, and, if still too big, re-encoded at a bitrate computed from ``max_bytes`` and
    then at smaller sizes. Raises MediaError naming the file if no attempt fits.
    """
    base = limits.model_dump() if limits is not None else {}
    given = {
        "max_duration_s": max_duration_s,
        "max_width": max_width,
        "max_height": max_height,
        "max_fps": max_fps,
        "max_bytes": max_bytes,
    }
    lim = MediaLimits(**{**base, **{k: v for k, v in given.items() if v is not None}})
    source = Path(path)
    info = probe(source, energy=False, verify=True)
    require_video(info)
    if fits(info, lim):
        return deliver(source, out) if out is not None else source

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        run_ffmpeg(_fit_args(src, tmp, info, lim, 1.0, None), subject=src)
        if lim.max_bytes is None or tmp.stat().st_size <= lim.max_bytes:
            return
        duration = min(info.duration, lim.max_duration_s or info.duration)
        scale = 1.0
        for _ in range(4):
            # Aim 10 % under the cap: the container and the audio's own overshoot take the rest.
            total = lim.max_bytes * 8 * 0.9 / max(duration, 0.1)
            audio = int(min(64_000, max(24_000, 0.3 * total))) if info.has_audio else 0
            video = int(max(total - audio, 16_000))
            run_ffmpeg(_fit_args(src, tmp, info, lim, scale, video, audio), subject=src)
            if tmp.stat().st_size <= lim.max_bytes:
                return
            scale *= 0.7
        raise MediaError(f"{src}: cannot fit under {lim.max_bytes} bytes ({tmp.stat().st_size} at the smallest)")

    return _derive("fit", source, lim.model_dump(), build, out=out, cache_dir=cache_dir)
