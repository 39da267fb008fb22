"""compose_clip: one clip from media released apart (a video and audio files, images and audio files), with an
exact timeline, the released sound audible in it, cached by content, and one error naming a bad source."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from omnivchat import media
from omnivchat.media._compose import GAP_S
from omnivchat.media._ffmpeg import ffmpeg_calls


@pytest.fixture(scope="module")
def images(clips_dir: Path) -> tuple[Path, Path]:
    first, second = clips_dir / "still.png", clips_dir / "still.jpg"
    Image.new("RGB", (333, 250), (220, 40, 40)).save(first)  # odd sizes: the clip gets even ones
    Image.new("RGB", (64, 48), (40, 200, 90)).save(second)
    return first, second


def test_a_silent_video_gets_the_released_audio_as_its_soundtrack(silent_video: Path, clip: Path) -> None:
    wav = media.export_audio(clip, fmt="wav")
    composed = media.compose_clip([silent_video], [wav], visual_kind="video")
    info = media.probe(composed.path)
    assert info.has_video and info.has_audio and not info.is_silent
    assert info.video_codec == "h264" and info.audio_codec == "aac"
    assert composed.layout == "video+audio" and composed.sha256 == media.content_hash(composed.path)
    assert composed.audios[0].start == 0.0 and composed.audios[0].end == pytest.approx(3.6, abs=0.05)


def test_images_take_equal_whole_frame_shares_and_audio_files_play_in_turn(
    images: tuple[Path, Path], clip: Path
) -> None:
    wav = media.export_audio(clip, fmt="wav")
    mp3 = media.export_audio(clip, fmt="mp3")
    composed = media.compose_clip(list(images), [wav, mp3], visual_kind="image")
    first, second = composed.audios
    assert first.start == 0.0 and second.start == pytest.approx(first.end + GAP_S, abs=1e-3)
    visuals = composed.visuals
    assert visuals[0].start == 0.0 and visuals[0].end == visuals[1].start and visuals[1].end == composed.duration
    assert composed.duration >= second.end and (composed.duration * 2) % 1 == 0  # whole frames at 2 fps
    info = media.probe(composed.path)
    assert (info.width, info.height) == (332, 250) and not info.is_silent
    assert info.duration == pytest.approx(composed.duration, abs=0.05)


def test_a_second_composition_of_the_same_files_runs_no_encoder(images: tuple[Path, Path], clip: Path) -> None:
    mp3 = media.export_audio(clip, fmt="mp3")
    first = media.compose_clip([images[0]], [mp3], visual_kind="image")
    calls = ffmpeg_calls()
    again = media.compose_clip([images[0]], [mp3], visual_kind="image")
    assert again == first and ffmpeg_calls() == calls


def test_a_source_without_its_stream_is_named(images: tuple[Path, Path], silent_video: Path) -> None:
    with pytest.raises(media.MediaError, match="no audio stream") as caught:
        media.compose_clip([images[0]], [silent_video], visual_kind="image")
    assert str(caught.value).startswith(str(silent_video))
    with pytest.raises(media.MediaError, match="no such file"):
        media.compose_clip([images[0].with_name("gone.png")], [silent_video], visual_kind="image")
