"""A clip re-encoded with only the frames a model samples from it (OmniVChat-RL's Table 4: 2 fps, at most 16)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

from omnivchat.media._decode import sample_times
from omnivchat.media._ffmpeg import AUDIO_ENCODE_ARGS, DETERMINISTIC_ARGS, VIDEO_ENCODE_ARGS, run_ffmpeg
from omnivchat.media._ops import PathLike, _audio_copy, _derive, _fps, _frame_count
from omnivchat.media._probe import MediaInfo, require_video


def sampled_frame_indices(info: MediaInfo, fps: float, max_frames: int) -> list[int]:
    """The source frames on screen at :func:`sample_times` (the frame whose start is the last at or before each
    sample time), in order."""
    rate = _fps(info)
    last = _frame_count(info) - 1
    times = sample_times(info.video_duration or info.duration, fps, max_frames)
    return [min(last, math.floor(Fraction(t).limit_denominator(10**6) * rate)) for t in times]


def sample_video(
    path: PathLike,
    fps: float = 2.0,
    max_frames: int = 16,
    *,
    out: PathLike | None = None,
    cache_dir: PathLike | None = None,
) -> Path:
    """``path`` with only its sampled frames: ``fps`` frames a second, or ``max_frames`` spread evenly over a
    longer clip (the frames :func:`omnivchat.media.sample_frames` takes), played at a constant rate n / duration so
    the clip keeps its length; the audio track is kept whole (copied when MP4 carries it). H.264 + AAC in MP4.

    A model sampling the result at ``fps`` with at most ``max_frames`` frames gets these frames back, and its
    audio still lines up with them by timestamp.
    """

    def build(src: Path, tmp: Path, info: MediaInfo) -> None:
        require_video(info)
        frames = sampled_frame_indices(info, fps, max_frames)
        duration = Fraction(info.video_duration or info.duration).limit_denominator(10**4)
        rate = Fraction(len(frames)) / duration
        kept = sorted(set(frames))
        pick = "+".join(f"eq(n\\,{k})" for k in kept)
        # Each kept frame starts at the first slot that shows it; a source slower than the sampling shows one
        # frame in several slots, which the constant output rate fills by repeating it (and tpad after the last).
        slots = [frames.index(k) for k in kept]
        when = "".join(f"if(eq(N\\,{j})\\,{slot}\\," for j, slot in enumerate(slots)) + "0" + ")" * len(slots)
        r = f"{rate.numerator}/{rate.denominator}"
        graph = f"[0:v]select='{pick}',setpts='({when})/({r})/TB'"
        if slots[-1] < len(frames) - 1:
            graph += f",tpad=stop_mode=clone:stop={len(frames) - 1 - slots[-1]}"
        graph += "[v]"
        # A constant rate gives every frame, the last included, the length 1 / rate: the video lasts the clip.
        args = [
            "-i",
            str(src),
            "-filter_complex",
            graph,
            "-map",
            "[v]",
            *VIDEO_ENCODE_ARGS,
            "-fps_mode",
            "cfr",
            "-r",
            r,
        ]
        if info.has_audio:
            audio = _audio_copy(info) if info.audio_codec == "aac" else list(AUDIO_ENCODE_ARGS)
            args += ["-map", "0:a:0", *audio]
        args += ["-t", f"{float(duration):.6f}", *DETERMINISTIC_ARGS, "-f", "mp4", str(tmp)]
        run_ffmpeg(args, subject=src)

    params = {"fps": float(fps), "max_frames": int(max_frames)}
    return _derive("sample_video", path, params, build, out=out, cache_dir=cache_dir)
