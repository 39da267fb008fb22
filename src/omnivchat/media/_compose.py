"""One clip from media released apart: a video with a separate soundtrack, or still images with audio files.

Public benchmarks often ship the picture and the sound as different files (Daily-Omni: ``<id>_video.mp4`` and
``<id>_audio.wav``; OmniBench: one image and one mp3; AV-Odyssey: up to four images or one video, and up to four
audio files). A model route takes one clip, so :func:`compose_clip` builds it, H.264 + AAC in MP4:

- **a video and its audio files:** the video stream as it is (copied when MP4 can carry it), with the audio files
  as its soundtrack, one after the other; the video's own sound, if any, is replaced (the released audio is what
  the benchmark gives);
- **images and audio files:** the images shown one after the other, each for an equal share of the clip, while
  the audio files play one after the other; the clip lasts as long as the audio, and at least
  :data:`MIN_IMAGE_S` per image.

The soundtrack keeps the sources' channel layout and sample rate (a stereo file stays stereo: spatial questions
depend on it): with several audio files, the layout of the one with the most channels (the others are mixed up
to it, a mono file into the centre) and the highest rate, raised to the next rate AAC can carry (:data:`AAC_RATES`).
Between two audio files lies :data:`GAP_S` of silence, so they do not run together. Every audio file is cut or
padded to its probed length exactly, so the timeline returned (:class:`Composed`) says to the tenth of a second
when each image is on screen and each audio file plays: a request can tell the model which is which.

The result is cached by the content of every source, the layout, the soundtrack's channel layout and rate and
the ffmpeg build (as the derived clips of
:mod:`omnivchat.media._ops` are): composing the same files again runs no encoder.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from omnivchat._canonical import sha256_json
from omnivchat.media._cache import atomic_build, cache_key, cached_path, content_hash
from omnivchat.media._cache import cache_dir as resolve_cache_dir
from omnivchat.media._ffmpeg import DETERMINISTIC_ARGS, VIDEO_ENCODE_ARGS, MediaError, run_ffmpeg
from omnivchat.media._probe import MediaInfo, probe

PathLike = str | os.PathLike[str]

GAP_S = 0.5
"""Silence between two audio files of one clip, in seconds."""
MIN_IMAGE_S = 1.0
"""The shortest time an image is on screen, in seconds."""
IMAGE_FPS = 2
"""The frame rate of a clip made of still images (a model that samples 1 or 2 frames a second sees each one)."""
MAX_SIDE = (1280, 720)
"""The largest frame a clip of images gets (the first image's size, shrunk to fit, even sides)."""
SAMPLE_RATE = 44100
"""The soundtrack's rate when no source says its own."""
AAC_RATES = (7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000)
"""The sample rates an AAC stream can carry."""
KBPS_PER_CHANNEL = 64
"""AAC bit rate per channel (a mono clip keeps the 96 kb/s of every derived clip)."""
COMPOSE_RECIPE = "2"
"""Bump when the ffmpeg arguments below change, so older composed clips are not reused (2: the sources' channel
layout and rate are kept; 1 mixed every soundtrack down to 44.1 kHz mono)."""

# Codecs an MP4 can carry as they are (the same set as the derived clips').
_MP4_VIDEO = {"h264", "hevc", "av1", "vp9", "mpeg4"}


class Span(BaseModel):
    """When one source file is on screen (an image, a video) or plays (an audio file), in seconds of the clip."""

    model_config = ConfigDict(frozen=True)

    source: str = Field(description="The file, as given.")
    start: float
    end: float


class Composed(BaseModel):
    """A composed clip: its path and sha256, its layout, and the timeline of its sources."""

    model_config = ConfigDict(frozen=True)

    path: Path
    sha256: str
    layout: Literal["video+audio", "images+audio"]
    channel_layout: str = Field(description="The soundtrack's channel layout as ffmpeg names it (mono, stereo, 2c).")
    sample_rate: int = Field(description="The soundtrack's sample rate in Hz.")
    duration: float
    visuals: tuple[Span, ...]
    audios: tuple[Span, ...]


def _span(source: Path, start: float, end: float) -> Span:
    return Span(source=str(source), start=round(start, 3), end=round(end, 3))


def _probe_source(path: Path, kind: Literal["video", "image", "audio"]) -> MediaInfo:
    info = probe(path, energy=False)
    if kind == "audio" and not info.has_audio:
        raise MediaError(f"{path}: no audio stream (an audio file is expected here)")
    if kind != "audio" and (not info.has_video or not info.width or not info.height):
        raise MediaError(f"{path}: no picture ({'a video' if kind == 'video' else 'an image'} is expected here)")
    return info


def _audio_length(info: MediaInfo) -> float:
    length = info.audio_duration or info.duration
    if not length or length <= 0:
        raise MediaError(f"{info.path}: audio of unknown or zero length")
    return float(length)


def _channel_layout(info: MediaInfo) -> str:
    """The layout ffmpeg names for an audio source: its own (stereo, 5.1(side)...), or for a file that declares none
    (a plain WAV of N channels) ``Nc``, ffmpeg's default order for N channels, as ffmpeg itself reads it."""
    named = info.channel_layout
    if named and not named.endswith("channels"):
        return named
    return f"{info.channels or 1}c"


class Soundtrack(NamedTuple):
    """The format of a composed clip's audio: a channel layout as ffmpeg names it, its channels and rate."""

    layout: str
    channels: int
    rate: int

    def encode_args(self) -> list[str]:
        """AAC at :data:`KBPS_PER_CHANNEL` a channel (96 kb/s at least), without intensity stereo, which would
        give the channels one shared waveform above a frequency and lose the difference a spatial question asks
        about."""
        kbps = max(96, KBPS_PER_CHANNEL * self.channels)
        return ["-c:a", "aac", "-b:a", f"{kbps}k", "-aac_is", "0"]


def soundtrack_format(infos: Sequence[MediaInfo]) -> Soundtrack:
    """The soundtrack composed from audio sources: the layout of the source with the most channels (the first of
    them), and the highest rate raised to the next one AAC carries."""
    widest = max(infos, key=lambda i: i.channels or 1)
    rate = max((i.sample_rate for i in infos if i.sample_rate), default=SAMPLE_RATE)
    aac_rate = next((r for r in AAC_RATES if r >= rate), AAC_RATES[-1])
    return Soundtrack(_channel_layout(widest), widest.channels or 1, aac_rate)


def _even(x: float) -> int:
    return max(2, int(x) // 2 * 2)


def _audio_graph(
    first_input: int, lengths: list[float], total: float, layout: str, rate: int
) -> tuple[str, list[tuple[float, float]]]:
    """The filter graph that plays the audio inputs one after the other with GAP_S of silence between, each cut or
    padded to its length, in ``layout`` at ``rate``, padded with silence to ``total``; its output is labelled [a]."""
    chains: list[str] = []
    parts: list[str] = []
    spans: list[tuple[float, float]] = []
    t = 0.0
    for k, length in enumerate(lengths):
        if k:
            chains.append(f"aevalsrc=0:s={rate}:c={layout}:d={GAP_S:.6f}[g{k}]")
            parts.append(f"[g{k}]")
            t += GAP_S
        chains.append(
            f"[{first_input + k}:a:0]aresample={rate},aformat=sample_fmts=fltp:channel_layouts={layout},"
            f"apad=whole_dur={length:.6f},atrim=duration={length:.6f},asetpts=PTS-STARTPTS[a{k}]"
        )
        parts.append(f"[a{k}]")
        spans.append((t, t + length))
        t += length
    chains.append(f"{''.join(parts)}concat=n={len(parts)}:v=0:a=1,apad=whole_dur={total:.6f}[a]")
    return ";".join(chains), spans


def compose_clip(
    visuals: Sequence[PathLike],
    audios: Sequence[PathLike],
    *,
    visual_kind: Literal["video", "image"],
    cache_dir: PathLike | None = None,
) -> Composed:
    """One MP4 clip from ``visuals`` (one video, or one or more images) and ``audios`` (one or more audio files),
    laid out as the module docstring says; cached under ``cache_dir`` (default: the media cache).

    Raises MediaError naming the file when a source is missing or unreadable, an audio file has no audio stream,
    an image or video has no picture, or ffmpeg fails.
    """
    pictures = [Path(p) for p in visuals]
    sounds = [Path(p) for p in audios]
    if not pictures or not sounds:
        raise ValueError("compose_clip needs at least one picture and one audio file")
    if visual_kind == "video" and len(pictures) != 1:
        raise ValueError("compose_clip takes one video (several videos cannot share one timeline honestly)")
    visual_infos = [_probe_source(p, visual_kind) for p in pictures]
    sound_infos = [_probe_source(p, "audio") for p in sounds]
    lengths = [_audio_length(info) for info in sound_infos]
    track = soundtrack_format(sound_infos)
    audio_total = sum(lengths) + GAP_S * (len(lengths) - 1)
    if visual_kind == "video":
        video = visual_infos[0]
        total = audio_total
        visual_spans = [_span(pictures[0], 0.0, float(video.video_duration or video.duration))]
    else:
        # Each image gets a whole number of frames, the same for all, so the spans are exact.
        wanted = max(audio_total, MIN_IMAGE_S * len(pictures)) / len(pictures)
        share = math.ceil(wanted * IMAGE_FPS - 1e-9) / IMAGE_FPS
        total = share * len(pictures)
        visual_spans = [_span(p, k * share, (k + 1) * share) for k, p in enumerate(pictures)]
    graph, timeline = _audio_graph(len(pictures), lengths, total, track.layout, track.rate)
    audio_spans = [_span(p, s, e) for (s, e), p in zip(timeline, sounds, strict=True)]

    sources = [content_hash(p) for p in (*pictures, *sounds)]
    params = {
        "kind": visual_kind,
        "pictures": len(pictures),
        "gap_s": GAP_S,
        "channel_layout": track.layout,
        "sample_rate": track.rate,
        "recipe": COMPOSE_RECIPE,
    }
    key = cache_key(sha256_json(sources), "compose", params)
    target = cached_path(key, "compose", ".mp4", resolve_cache_dir(cache_dir))
    if not target.exists():
        if visual_kind == "video":
            args = _video_args(pictures[0], visual_infos[0], sounds, graph, track)
        else:
            args = _image_args(pictures, visual_infos[0], sounds, graph, total, track)

        def build(tmp: Path) -> None:
            run_ffmpeg([*args, str(tmp)], subject=pictures[0])

        atomic_build(target, build, subject=pictures[0])
    layout: Literal["video+audio", "images+audio"] = "video+audio" if visual_kind == "video" else "images+audio"
    duration = max(total, visual_spans[-1].end)
    return Composed(
        path=target,
        sha256=content_hash(target),
        layout=layout,
        channel_layout=track.layout,
        sample_rate=track.rate,
        duration=duration,
        visuals=tuple(visual_spans),
        audios=tuple(audio_spans),
    )


def _video_args(video: Path, info: MediaInfo, sounds: list[Path], graph: str, track: Soundtrack) -> list[str]:
    copy = ["-c:v", "copy"] if info.video_codec in _MP4_VIDEO else [*VIDEO_ENCODE_ARGS]
    inputs = ["-i", str(video)]
    for sound in sounds:
        inputs += ["-i", str(sound)]
    maps = ["-map", "0:v:0", *copy, "-map", "[a]", *track.encode_args()]
    return [*inputs, "-filter_complex", graph, *maps, *DETERMINISTIC_ARGS, "-f", "mp4"]


def _image_args(
    pictures: list[Path], first: MediaInfo, sounds: list[Path], graph: str, total: float, track: Soundtrack
) -> list[str]:
    assert first.width and first.height
    box = min(1.0, MAX_SIDE[0] / first.width, MAX_SIDE[1] / first.height)
    w, h = _even(first.width * box), _even(first.height * box)
    frames = round(total / len(pictures) * IMAGE_FPS)
    share = frames / IMAGE_FPS
    inputs: list[str] = []
    chains: list[str] = []
    for k, picture in enumerate(pictures):
        inputs += ["-loop", "1", "-framerate", str(IMAGE_FPS), "-t", f"{share + 1:.6f}", "-i", str(picture)]
        chains.append(
            f"[{k}:v:0]scale={w}:{h}:force_original_aspect_ratio=decrease:out_range=tv,pad={w}:{h}:(ow-iw)/2:(oh-ih)/2,"
            f"setsar=1,format=yuv420p,fps={IMAGE_FPS},trim=end_frame={frames},setpts=PTS-STARTPTS[v{k}]"
        )
    for sound in sounds:
        inputs += ["-i", str(sound)]
    video = f"{''.join(f'[v{k}]' for k in range(len(pictures)))}concat=n={len(pictures)}:v=1:a=0[v]"
    full = ";".join([*chains, video, graph])
    maps = ["-map", "[v]", *VIDEO_ENCODE_ARGS, "-map", "[a]", *track.encode_args(), "-t", f"{total:.6f}"]
    return [*inputs, "-filter_complex", full, *maps, *DETERMINISTIC_ARGS, "-f", "mp4"]
