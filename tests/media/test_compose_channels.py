"""compose_clip keeps the released audio's channels and rate: a stereo file stays stereo with its left and right
apart (AV-Odyssey's spatial questions depend on it), a 5.1 file keeps its six channels, a mono file stays mono at
its own rate; and a clip composed by the old mono recipe is never reused for them."""

from __future__ import annotations

import subprocess
import wave
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from omnivchat import media
from omnivchat._canonical import sha256_json
from omnivchat.media._cache import cache_key, cached_path
from omnivchat.media._compose import GAP_S, soundtrack_format
from omnivchat.media._ffmpeg import ffmpeg_exe


def tone_wav(path: Path, rate: int, channels: int, loud: tuple[int, ...], seconds: float = 1.0) -> Path:
    """A 16-bit PCM WAV (no channel mask, as numpy and most tools write it) with a 440 Hz tone in the ``loud``
    channels and digital silence in the others."""
    t = np.arange(int(rate * seconds)) / rate
    samples = np.zeros((t.size, channels))
    for channel in loud:
        samples[:, channel] = 0.5 * np.sin(2 * np.pi * 440 * t)
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((samples * 32767).astype("<i2").tobytes())
    return path


def ffmpeg_audio(path: Path, expression: str, layout: str, rate: int) -> Path:
    """An audio file made by ffmpeg itself from an aevalsrc expression (one per channel, '|' between)."""
    source = f"aevalsrc={expression}:c={layout}:s={rate}:d=1"
    subprocess.run([ffmpeg_exe(), "-y", "-v", "error", "-f", "lavfi", "-i", source, str(path)], check=True)
    return path


def decoded(path: Path) -> tuple[int, int, np.ndarray]:
    """(channels, rate, RMS of each channel) of the first audio stream, decoded with PyAV."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        planes = [frame.to_ndarray() for frame in container.decode(stream)]
        rate = stream.codec_context.sample_rate
        channels = stream.codec_context.channels
    samples = np.concatenate(planes, axis=1).astype("float64")  # AAC decodes planar: one row per channel
    assert samples.shape[0] == channels
    return channels, rate, np.sqrt((samples**2).mean(axis=1))


@pytest.fixture(scope="module")
def still(clips_dir: Path) -> Path:
    path = clips_dir / "still-channels.png"
    Image.new("RGB", (64, 48), (10, 120, 200)).save(path)
    return path


def test_a_stereo_wav_keeps_its_left_and_right_apart_and_its_rate(silent_video: Path, tmp_path: Path) -> None:
    left_only = tone_wav(tmp_path / "left.wav", 48000, 2, loud=(0,))  # Daily-Omni-like: a wav beside the video
    composed = media.compose_clip([silent_video], [left_only], visual_kind="video")
    channels, rate, level = decoded(composed.path)
    assert (channels, rate) == (2, 48000)
    assert (composed.channel_layout, composed.sample_rate) == ("2c", 48000)
    assert level[0] > 0.2 and level[1] < 0.01 * level[0]  # the tone is still only on the left


def test_a_stereo_mp3_beside_an_image_keeps_its_right_channel(still: Path, tmp_path: Path) -> None:
    right_only = ffmpeg_audio(tmp_path / "right.mp3", "0|0.5*sin(440*2*PI*t)", "stereo", 44100)  # OmniBench-like
    composed = media.compose_clip([still], [right_only], visual_kind="image")
    channels, rate, level = decoded(composed.path)
    assert (channels, rate, composed.channel_layout) == (2, 44100, "stereo")
    assert level[1] > 0.2 and level[0] < 0.01 * level[1]


def test_six_channels_stay_six_and_the_loud_one_stays_loud(still: Path, tmp_path: Path) -> None:
    surround = ffmpeg_audio(tmp_path / "surround.wav", "0|0|0|0|0.5*sin(440*2*PI*t)|0", "5.1(side)", 48000)
    composed = media.compose_clip([still], [surround], visual_kind="image")
    channels, rate, level = decoded(composed.path)
    assert (channels, rate) == (6, 48000)
    assert int(np.argmax(level)) == 4 and sorted(level)[-2] < 0.01 * level[4]


def test_a_mono_file_stays_mono_at_its_own_rate(silent_video: Path, tmp_path: Path) -> None:
    mono = tone_wav(tmp_path / "mono.wav", 16000, 1, loud=(0,))
    composed = media.compose_clip([silent_video], [mono], visual_kind="video")
    channels, rate, level = decoded(composed.path)
    assert (channels, rate) == (1, 16000) and level[0] > 0.2


def test_several_files_play_in_the_widest_layout_at_the_highest_rate(still: Path, tmp_path: Path) -> None:
    """AV-Odyssey: up to four audio files in one clip. A mono file among stereo ones plays on both sides; the
    stereo file keeps its sides."""
    mono = tone_wav(tmp_path / "a-mono.wav", 16000, 1, loud=(0,))
    left = tone_wav(tmp_path / "b-left.wav", 44100, 2, loud=(0,))
    composed = media.compose_clip([still], [mono, left], visual_kind="image")
    assert (composed.channel_layout, composed.sample_rate) == ("2c", 44100)
    with av.open(str(composed.path)) as container:
        stream = container.streams.audio[0]
        samples = np.concatenate([f.to_ndarray() for f in container.decode(stream)], axis=1)
        rate = stream.codec_context.sample_rate
    first, second = composed.audios
    in_first = samples[:, int(first.start * rate) + 2048 : int(first.end * rate) - 2048]
    in_second = samples[:, int(second.start * rate) + 2048 : int(second.end * rate) - 2048]
    rms = lambda x: np.sqrt((x.astype("float64") ** 2).mean(axis=1))  # noqa: E731
    assert rms(in_first)[0] == pytest.approx(rms(in_first)[1], rel=0.05)  # mono: the same on both sides
    assert rms(in_second)[0] > 0.2 and rms(in_second)[1] < 0.01 * rms(in_second)[0]
    assert second.start == pytest.approx(first.end + GAP_S, abs=1e-3)


def test_a_rate_aac_cannot_carry_is_raised_to_the_next_one(still: Path, tmp_path: Path) -> None:
    odd = ffmpeg_audio(tmp_path / "odd.wav", "0.5*sin(440*2*PI*t)|0", "stereo", 44000)
    composed = media.compose_clip([still], [odd], visual_kind="image")
    assert decoded(composed.path)[:2] == (2, 44100) and composed.sample_rate == 44100


def test_the_soundtrack_format_is_the_widest_source_at_the_highest_rate(tmp_path: Path) -> None:
    infos = [
        media.probe(tone_wav(tmp_path / "m.wav", 22050, 1, loud=(0,)), energy=False),
        media.probe(ffmpeg_audio(tmp_path / "q.wav", "0|0|0|0", "quad", 8000), energy=False),
    ]
    track = soundtrack_format(infos)
    assert (track.layout, track.channels, track.rate) == ("quad", 4, 22050)


def test_a_clip_cached_by_the_mono_recipe_is_not_reused(still: Path, tmp_path: Path, media_cache: Path) -> None:
    """The mono recipe's cache key covered only the sources, the layout and the gap: the soundtrack's format is
    part of the key now (and the recipe moved on), so a stale mono clip at the old key is never returned."""
    stereo = tone_wav(tmp_path / "stale.wav", 44100, 2, loud=(1,))
    old_params = {"kind": "image", "pictures": 1, "gap_s": GAP_S, "recipe": "1"}
    sources = [media.content_hash(still), media.content_hash(stereo)]
    stale = cached_path(cache_key(sha256_json(sources), "compose", old_params), "compose", ".mp4", media_cache)
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"a mono clip of the old recipe")
    composed = media.compose_clip([still], [stereo], visual_kind="image")
    assert composed.path != stale and decoded(composed.path)[0] == 2
