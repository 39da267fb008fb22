"""Derived clips: exact streams and durations, frame-accurate trims, untouched inputs, cache hits."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from omnivchat import media
from omnivchat.media._ffmpeg import ffmpeg_calls

FPS = 25
AAC_FRAME = 1024 / 44_100  # the granularity of an AAC track's length


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stream_kinds(path: Path) -> list[str]:
    return [s.kind for s in media.probe(path, energy=False).streams]


@pytest.mark.parametrize(("end_s", "frames"), [(1.0, 25), (2.02, 51), (1.37, 34), (10.0, 90)])
def test_trim_is_frame_accurate(clip: Path, end_s: float, frames: int) -> None:
    out = media.trim(clip, end_s)
    info = media.probe(out)
    assert info.n_frames == frames  # rounded to the nearest frame; past the end keeps all 90
    assert info.video_duration == pytest.approx(frames / FPS, abs=1e-6)
    assert info.audio_duration == pytest.approx(frames / FPS, abs=AAC_FRAME)
    assert (info.video_codec, info.audio_codec) == ("h264", "aac")


def test_trim_with_start_cuts_audio_at_the_same_instant(clip: Path, rendered) -> None:  # type: ignore[no-untyped-def]
    out = media.trim(clip, 2.0, start_s=1.0)
    info = media.probe(out)
    assert info.n_frames == 25
    src, sr = media.extract_audio_with_rate(clip, None)
    cut, sr2 = media.extract_audio_with_rate(out, None)
    assert sr == sr2 == 44_100
    # The trimmed audio is the source's 1.0-2.0 s (AAC re-encoding changes samples a little, not the envelope).
    a, b = src[sr : 2 * sr], cut[:sr]
    env = lambda x: np.sqrt((x[: x.size // 441 * 441].reshape(-1, 441) ** 2).mean(axis=1))  # noqa: E731
    assert np.corrcoef(env(a), env(b))[0, 1] > 0.95


def test_trim_refuses_an_empty_cut(clip: Path) -> None:
    with pytest.raises(media.MediaError, match=str(clip)):
        media.trim(clip, 0.01)


def test_strip_audio_keeps_only_the_video(clip: Path) -> None:
    out = media.strip_audio(clip)
    src, info = media.probe(clip), media.probe(out)
    assert stream_kinds(out) == ["video"]
    assert not info.has_audio and info.has_video
    assert info.n_frames == src.n_frames and info.duration == pytest.approx(src.video_duration, abs=1e-6)


def test_mute_audio_keeps_a_silent_track_of_the_same_length(clip: Path) -> None:
    out = media.mute_audio(clip)
    src, info = media.probe(clip), media.probe(out)
    assert stream_kinds(out) == ["video", "audio"]
    assert info.audio_duration == pytest.approx(src.audio_duration, abs=1e-6)
    assert info.n_frames == src.n_frames
    assert src.audio_rms_dbfs is not None and src.audio_rms_dbfs > -40
    assert info.audio_peak == 0.0 and info.is_silent


def test_mute_audio_adds_silence_to_a_clip_without_audio(silent_video: Path) -> None:
    info = media.probe(media.mute_audio(silent_video))
    assert info.has_audio and info.is_silent
    assert info.audio_duration == pytest.approx(info.video_duration, abs=AAC_FRAME)


def test_blank_video_is_black_with_the_audio_kept(clip: Path) -> None:
    out = media.blank_video(clip)
    src, info = media.probe(clip), media.probe(out)
    assert stream_kinds(out) == ["video", "audio"]
    assert (info.n_frames, info.width, info.height, info.fps) == (src.n_frames, 320, 180, 25.0)
    assert info.audio_duration == src.audio_duration
    assert info.audio_rms_dbfs == pytest.approx(src.audio_rms_dbfs, abs=1e-9)  # copied, not re-encoded
    frames = media.sample_frames(out, fps=2)
    assert max(int(f.array.max()) for f in frames) <= 20  # black (limited-range YUV may give a few levels)


def test_freeze_video_holds_one_frame(clip: Path) -> None:
    out = media.freeze_video(clip, at_s=2.0)
    src, info = media.probe(clip), media.probe(out)
    assert info.n_frames == src.n_frames
    assert info.audio_duration == src.audio_duration
    frames = [f.array.astype(int) for f in media.sample_frames(out, fps=4)]
    assert all(np.abs(f - frames[0]).mean() < 1.0 for f in frames)
    # The frozen frame is the one at 2.0 s: the QUIZ placard (from 1.0 s) is on it.
    at2 = next(f for f in media.sample_frames(clip, fps=4) if f.time > 2.0).array.astype(int)
    assert np.abs(frames[0] - at2).mean() < 3.0


def test_operations_never_touch_their_input(clip: Path) -> None:
    before = (sha256(clip), clip.stat().st_mtime_ns)
    for op in (media.strip_audio, media.mute_audio, media.blank_video, media.freeze_video):
        assert op(clip) != clip
    media.trim(clip, 1.5)
    assert (sha256(clip), clip.stat().st_mtime_ns) == before


def test_cache_hits_run_no_ffmpeg(clip: Path) -> None:
    first = media.trim(clip, 1.1)
    mtime = first.stat().st_mtime_ns
    calls = ffmpeg_calls()
    for _ in range(3):
        assert media.trim(clip, 1.1) == first
    media.mute_audio(clip)  # built earlier in the session or now; now it is a hit too
    calls = ffmpeg_calls()
    media.mute_audio(clip)
    media.trim(clip, 1.1)
    assert ffmpeg_calls() == calls
    assert first.stat().st_mtime_ns == mtime


def test_cache_key_follows_parameters_and_content(clip: Path, tmp_path: Path) -> None:
    assert media.trim(clip, 1.2) != media.trim(clip, 1.3)
    copy = tmp_path / "copy.mp4"
    copy.write_bytes(clip.read_bytes())
    calls = ffmpeg_calls()
    assert media.trim(copy, 1.2) == media.trim(clip, 1.2)  # same content: same cache entry
    assert ffmpeg_calls() == calls


def test_cache_dir_argument_and_out_copy(clip: Path, tmp_path: Path) -> None:
    cache = tmp_path / "own-cache"
    got = media.strip_audio(clip, cache_dir=cache)
    assert got.is_relative_to(cache)
    dest = media.strip_audio(clip, cache_dir=cache, out=tmp_path / "x" / "stripped.mp4")
    assert dest == tmp_path / "x" / "stripped.mp4" and sha256(dest) == sha256(got)


def test_derived_encodes_are_deterministic(clip: Path, tmp_path: Path) -> None:
    a = media.blank_video(clip, cache_dir=tmp_path / "a")
    b = media.blank_video(clip, cache_dir=tmp_path / "b")
    assert sha256(a) == sha256(b)


def test_export_audio_wav(clip: Path) -> None:
    wav = media.export_audio(clip, sr=16_000)
    info = media.probe(wav)
    assert not info.has_video and info.sample_rate == 16_000 and info.channels == 1
    assert info.audio_duration == pytest.approx(3.6, abs=1e-3)


def test_fit_for_route_returns_a_fitting_clip_unchanged(clip: Path) -> None:
    calls = ffmpeg_calls()
    assert media.fit_for_route(clip, max_duration_s=60, max_width=1280) == clip
    assert ffmpeg_calls() == calls


def test_fit_for_route_applies_duration_size_and_fps_limits(clip: Path) -> None:
    limits = media.MediaLimits(max_duration_s=2.0, max_width=160, max_fps=10)
    info = media.probe(media.fit_for_route(clip, limits))
    assert info.duration == pytest.approx(2.0, abs=AAC_FRAME)
    assert (info.width, info.height) == (160, 90)
    assert info.fps == 10.0 and info.n_frames == 20


def test_fit_for_route_meets_a_byte_cap(clip: Path) -> None:
    cap = 30_000
    out = media.fit_for_route(clip, max_bytes=cap)
    assert out.stat().st_size <= cap
    info = media.probe(out)
    assert info.has_video and info.has_audio and info.duration == pytest.approx(3.6, abs=AAC_FRAME)


def test_foreign_codecs_are_converted_to_mp4(clip: Path, tmp_path: Path) -> None:
    from omnivchat.media._ffmpeg import run_ffmpeg

    mkv = tmp_path / "clip.mkv"  # Motion JPEG video + PCM audio: we re-encode rather than copy them into MP4
    run_ffmpeg(["-i", str(clip), "-c:v", "mjpeg", "-q:v", "5", "-c:a", "pcm_s16le", str(mkv)])
    src = media.probe(mkv)
    assert (src.video_codec, src.audio_codec) == ("mjpeg", "pcm_s16le")
    for op in (media.strip_audio, media.mute_audio, media.blank_video, media.freeze_video, media.trim):
        out = op(mkv, 2.0) if op is media.trim else op(mkv)
        info = media.probe(out)
        assert info.video_codec == "h264" and info.audio_codec in (None, "aac")
        assert info.n_frames == (50 if op is media.trim else src.n_frames)
