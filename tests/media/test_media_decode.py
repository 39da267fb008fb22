"""Probe, audio and frame decoding, data URLs, content hashes."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from omnivchat import media


def test_probe_reports_the_clip(clip: Path) -> None:
    info = media.probe(clip)
    assert info.has_video and info.has_audio
    assert (info.width, info.height, info.fps, info.n_frames) == (320, 180, 25.0, 90)
    assert info.duration == pytest.approx(3.6, abs=1e-6)
    assert (info.video_codec, info.audio_codec, info.sample_rate, info.channels) == ("h264", "aac", 44_100, 1)
    assert [s.kind for s in info.streams] == ["video", "audio"]
    assert info.audio_rms_dbfs is not None and -40 < info.audio_rms_dbfs < -3
    assert 0.05 < (info.audio_peak or 0) <= 1.0
    # Header-only probing skips the energy; the model round-trips through JSON (for manifests).
    quick = media.probe(clip, energy=False)
    assert quick.audio_rms_dbfs is None and quick.duration == info.duration
    assert media.MediaInfo.model_validate_json(info.model_dump_json()) == info


def test_extract_audio_rates(clip: Path) -> None:
    x = media.extract_audio(clip)
    assert x.dtype == np.float32 and x.ndim == 1 and x.size == round(3.6 * 16_000)
    y, sr = media.extract_audio_with_rate(clip, sr=None)
    assert sr == 44_100 and y.size == round(3.6 * 44_100)
    z, sr8 = media.extract_audio_with_rate(clip, sr=8000)
    assert sr8 == 8000 and z.size == round(3.6 * 8000)
    assert float(np.abs(x).max()) <= 1.0


def test_sample_frames_at_2fps(clip: Path) -> None:
    frames = media.sample_frames(clip)  # 3.6 s at 2 fps: 7 frames, below the cap of 16
    assert [f.time for f in frames] == [0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25]
    assert all(f.array.shape == (180, 320, 3) and f.array.dtype == np.uint8 for f in frames)
    # The QUIZ placard appears at 1.0 s: the top band changes between the first two samples and the rest.
    top = [float(f.array[:30].mean()) for f in frames]
    assert abs(top[0] - top[1]) < 1 and abs(top[2] - top[0]) > 3


def test_sample_frames_caps_and_shrinks(clip: Path) -> None:
    frames = media.sample_frames(clip, fps=25, max_frames=4, max_side=160)
    assert len(frames) == 4
    assert frames[0].time == pytest.approx(0.45) and frames[-1].time == pytest.approx(3.15)
    assert frames[0].array.shape == (90, 160, 3)
    assert frames[0].to_pil().size == (160, 90)
    assert frames[0].to_data_url().startswith("data:image/jpeg;base64,")


@given(
    duration=st.floats(0.05, 600, allow_nan=False),
    fps=st.floats(0.1, 30, allow_nan=False),
    cap=st.integers(1, 64),
)
def test_sample_times_cover_the_clip(duration: float, fps: float, cap: int) -> None:
    times = media.sample_times(duration, fps, cap)
    assert 1 <= len(times) <= cap
    assert times == sorted(times) and all(0 <= t < duration for t in times)
    if duration * fps >= 2 * cap:
        assert times[-1] > duration * (1 - 1 / cap)  # spread to the end, not bunched at the start


def test_data_urls(clip: Path) -> None:
    url = media.to_data_url(clip)
    head, payload = url.split(",", 1)
    assert head == "data:video/mp4;base64"
    assert base64.b64decode(payload) == clip.read_bytes()
    arr = np.zeros((8, 8, 3), np.uint8)
    png = media.to_data_url(arr, image_format="png")
    assert png.startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1]))).size == (8, 8)
    assert media.to_data_url(b"abc", mime="audio/wav") == "data:audio/wav;base64,YWJj"
    with pytest.raises(media.MediaError, match=str(clip)):
        media.to_data_url(clip, max_bytes=100)


def test_content_hash(clip: Path, tmp_path: Path) -> None:
    assert media.content_hash(clip) == hashlib.sha256(clip.read_bytes()).hexdigest()
    f = tmp_path / "f.bin"
    f.write_bytes(b"one")
    first = media.content_hash(f)
    f.write_bytes(b"two!")  # a changed file is re-hashed, not served from the memo
    assert media.content_hash(f) != first
    with pytest.raises(media.MediaError, match="no such file"):
        media.content_hash(tmp_path / "missing")


def test_package_import_is_lazy() -> None:
    import subprocess
    import sys

    code = "import sys, omnivchat.media as m; print(int(any(k in sys.modules for k in ('av', 'numpy', 'PIL'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"
