"""Bad input: every error is a MediaError that names the file, and a batch keeps the good results."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnivchat import media


@pytest.fixture(scope="module")
def bad_files(clip: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Broken variants of the main clip, written next to each other like a bench's media dir."""
    d = tmp_path_factory.mktemp("bad")
    data = clip.read_bytes()
    files = {
        "corrupt": d / "corrupt.mp4",
        "truncated": d / "truncated.mp4",
        "truncated_faststart": d / "truncated_fs.mp4",
        "empty": d / "empty.mp4",
        "unsupported": d / "unsupported.mp4",
    }
    files["corrupt"].write_bytes(b"not a video at all\n" * 100)
    files["truncated"].write_bytes(data[: len(data) // 2])  # our MP4s end with their index: unreadable
    files["empty"].write_bytes(b"")
    # An unknown codec: rename the H.264 sample entry, so FFmpeg has no decoder for the stream.
    assert data.count(b"avc1") >= 1
    files["unsupported"].write_bytes(data.replace(b"avc1", b"zzzz"))
    # A truncated file whose index comes first still opens; only its packets are missing.
    faststart = d / "faststart.mp4"
    from omnivchat.media._ffmpeg import run_ffmpeg

    run_ffmpeg(["-i", str(clip), "-c", "copy", "-movflags", "+faststart", str(faststart)])
    fs = faststart.read_bytes()
    files["truncated_faststart"].write_bytes(fs[: len(fs) * 2 // 3])
    return files


OPS = {
    "probe": media.probe,
    "trim": lambda p: media.trim(p, 1.0),
    "strip_audio": media.strip_audio,
    "mute_audio": media.mute_audio,
    "blank_video": media.blank_video,
    "freeze_video": media.freeze_video,
    "extract_audio": media.extract_audio,
    "sample_frames": media.sample_frames,
    "fit_for_route": lambda p: media.fit_for_route(p, max_width=100),
}


@pytest.mark.parametrize("kind", ["corrupt", "truncated", "truncated_faststart", "empty"])
@pytest.mark.parametrize("op", sorted(OPS))
def test_broken_files_raise_media_error_naming_the_file(bad_files: dict[str, Path], kind: str, op: str) -> None:
    path = bad_files[kind]
    with pytest.raises(media.MediaError) as err:
        OPS[op](path)
    assert str(path) in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.mp4"
    for op in OPS.values():
        with pytest.raises(media.MediaError, match="no such file"):
            op(missing)


@pytest.mark.parametrize("op", ["trim", "blank_video", "freeze_video", "sample_frames", "fit_for_route"])
def test_unsupported_codec(bad_files: dict[str, Path], op: str) -> None:
    path = bad_files["unsupported"]
    assert media.probe(path, energy=False).video_codec == "none"
    with pytest.raises(media.MediaError, match="unsupported video codec") as err:
        OPS[op](path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("op", ["trim", "blank_video", "freeze_video", "sample_frames", "strip_audio"])
def test_no_video_stream(audio_only: Path, op: str) -> None:
    info = media.probe(audio_only)
    assert info.has_audio and not info.has_video
    with pytest.raises(media.MediaError, match="no video stream") as err:
        OPS[op](audio_only)
    assert str(audio_only) in str(err.value)


def test_extract_audio_without_audio_is_a_clear_error(silent_video: Path) -> None:
    with pytest.raises(media.MediaError) as err:
        media.extract_audio(silent_video)
    assert str(silent_video) in str(err.value) and "no audio track" in str(err.value)
    assert "234" not in str(err.value)
    with pytest.raises(media.MediaError, match="no audio track"):
        media.export_audio(silent_video)


def test_path_outside_the_bench(clips_dir: Path) -> None:
    for bad in ("../outside.mp4", "media/../../etc/passwd", "/etc/passwd"):
        with pytest.raises(media.MediaError) as err:
            media.resolve_media_path(clips_dir, bad)
        assert bad in str(err.value)
    assert media.resolve_media_path(clips_dir, "main.mp4") == (clips_dir / "main.mp4").resolve()


def test_symlink_escaping_the_bench(clips_dir: Path, tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "link.mp4").symlink_to(clips_dir / "main.mp4")
    with pytest.raises(media.MediaError, match="escapes the bench dir"):
        media.resolve_media_path(bench, "link.mp4")


def test_batch_keeps_going_past_bad_files(clips_dir: Path, bad_files: dict[str, Path]) -> None:
    for name, path in bad_files.items():
        (clips_dir / f"bad_{name}.mp4").write_bytes(path.read_bytes())
    items = ["main.mp4", "bad_corrupt.mp4", "../escape.mp4", "bad_unsupported.mp4", "no_audio.mp4", "zh.mp4"]
    results = media.batch(media.blank_video, items, root=clips_dir)
    assert [r.source for r in results] == items
    ok = {r.source for r in results if r.ok}
    # no_audio.mp4 and zh.mp4 are made by other fixtures/tests and may not exist yet: only require main.mp4.
    assert "main.mp4" in ok
    for r in results:
        if r.source in ("bad_corrupt.mp4", "../escape.mp4", "bad_unsupported.mp4"):
            assert not r.ok and r.source.split("/")[-1] in str(r.error)
        if r.ok:
            assert media.probe(r.value).has_video
