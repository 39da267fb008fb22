"""The procedural renderer: determinism, the picture as specified, real speech where the timeline says."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnivchat import media, synth
from omnivchat.media._ffmpeg import ffmpeg_calls
from omnivchat.synth._tts import tokenize

MINIMAL = {
    "duration": 4.0,
    "size": [320, 180],
    "background": "navy",
    "objects": [{"shape": "square", "color": "red", "position": "left"}],
    "speech": [{"text": "What colour is the square?", "language": "en", "start": 0.5}],
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return synth.render_clip(MINIMAL, tmp_path_factory.mktemp("min") / "min.mp4", use_cache=False)


def test_minimal_spec_renders_as_it_reads(minimal) -> None:  # type: ignore[no-untyped-def]
    info = media.probe(minimal.path)
    assert (info.width, info.height, info.duration, info.sample_rate) == (320, 180, 4.0, 44_100)
    assert (info.video_codec, info.audio_codec) == ("h264", "aac")
    frame = media.sample_frames(minimal.path, fps=1, max_frames=1)[0].array.astype(int)
    left, right = frame[100:120, 60:80].mean(axis=(0, 1)), frame[100:120, 240:260].mean(axis=(0, 1))
    assert left[0] > 180 and left[1] < 60 and left[2] < 60  # a red square on the left
    assert right[2] > 90 and right[0] < 30  # navy elsewhere
    assert minimal.transcript == "What colour is the square?"
    words = minimal.words
    assert [w["text"] for w in words] == ["What", "colour", "is", "the", "square"]
    assert words[0]["start"] >= 0.5
    obj = minimal.timeline["objects"][0]
    assert (obj["name"], obj["image_side"], obj["user_side"]) == ("red square", "left", "left")


def test_render_is_deterministic(tmp_path: Path, rendered, main_spec) -> None:  # type: ignore[no-untyped-def]
    again = synth.render_clip(main_spec, tmp_path / "again.mp4", use_cache=False)
    assert sha256(again.path) == sha256(rendered.path)
    assert again.timeline == rendered.timeline


def test_saved_spec_renders_the_same_clip(tmp_path: Path, rendered) -> None:  # type: ignore[no-untyped-def]
    saved = json.loads(rendered.spec_path.read_text())
    assert saved["fps"] == 25 and saved["camera"]["mode"] == "rear"  # defaults filled in
    again = synth.render_clip(rendered.spec_path, tmp_path / "from_file.mp4", use_cache=False)
    assert sha256(again.path) == sha256(rendered.path)


def test_render_cache_hit_runs_no_ffmpeg(tmp_path: Path) -> None:
    spec = {**MINIMAL, "seed": 7, "duration": 2.0}
    first = synth.render_clip(spec, tmp_path / "a.mp4")
    calls = ffmpeg_calls()
    second = synth.render_clip(spec, tmp_path / "b.mp4")
    assert ffmpeg_calls() == calls and second.cached and not first.cached
    assert sha256(first.path) == sha256(second.path)
    assert synth.load_timeline(second.path) == first.timeline


def test_speech_is_where_the_timeline_says(rendered) -> None:  # type: ignore[no-untyped-def]
    x, sr = media.extract_audio_with_rate(rendered.path, sr=None)
    line = rendered.timeline["lines"][0]
    assert line["text"] == "What colour is the square? Tell me."
    ((p0, p1),) = line["pauses"]
    assert p1 - p0 == pytest.approx(0.8, abs=1e-3)
    for w in line["words"]:
        assert rms(x[round(w["start"] * sr) : round(w["end"] * sr)]) > 0.02, w
    # Silence before the first word, in the pause, and after the line.
    assert rms(x[: round(0.28 * sr)]) < 1e-3
    assert rms(x[round((p0 + 0.05) * sr) : round((p1 - 0.05) * sr)]) < 1e-3
    assert rms(x[round((line["end"] + 0.05) * sr) :]) < 1e-3


def test_timeline_is_consistent(rendered) -> None:  # type: ignore[no-untyped-def]
    tl: dict[str, Any] = synth.load_timeline(rendered.path)
    assert tl == rendered.timeline
    assert tl["duration"] == 3.6 and tl["frames"] == 90 and tl["sample_rate"] == 44_100
    for line in tl["lines"]:
        words = line["words"]
        assert [w["text"] for w in words] == [t for t, _, _ in tokenize(line["text"])]
        assert line["start"] <= words[0]["start"] and words[-1]["end"] <= line["end"] <= tl["duration"]
        for a, b in itertools.pairwise(words):
            assert a["start"] < a["end"] <= b["start"] < b["end"]
    assert [w["text"] for w in tl["words"]] == [w["text"] for ln in tl["lines"] for w in ln["words"]]
    sides = {o["name"]: (o["image_side"], o["user_side"]) for o in tl["objects"]}
    assert sides == {"red square": ("left", "left"), "yellow circle": ("right", "right")}
    assert tl["person"]["facing"] == "camera"


def test_mandarin_speech_and_selfie_sides(zh_rendered) -> None:  # type: ignore[no-untyped-def]
    tl = zh_rendered.timeline
    assert [w["text"] for w in tl["words"]] == list("左边是什么颜色")
    assert tl["lines"][0]["voice"].startswith("cmn")
    x, sr = media.extract_audio_with_rate(zh_rendered.path, sr=None)
    for w in tl["words"]:
        assert rms(x[round(w["start"] * sr) : round(w["end"] * sr)]) > 0.02
    obj = tl["objects"][0]
    assert (obj["image_side"], obj["user_side"]) == ("left", "right")  # the selfie camera swaps sides


def test_user_positions_are_mirrored_under_the_front_camera(tmp_path: Path) -> None:
    spec = synth.SceneSpec.model_validate(
        {"camera": {"mode": "front", "positions": "user"}, "objects": [{"position": "left"}]}
    )
    assert synth.user_side(spec, spec.objects[0]) == "left"
    assert synth.image_side(spec, spec.objects[0]) == "right"


def test_overlapping_speakers_unfinished_line_and_noise(tmp_path: Path) -> None:
    spec = {
        "size": [320, 180],
        "person": {"expression": "upset"},
        "speech": [
            {"text": "Where did I leave my keys?", "style": "upset"},
            {"text": "Not now!", "speaker": "friend", "start": 0.9},
            {"text": "Is it the one on the", "stop_after": 0.6},
        ],
        "noise": {"kind": "pink", "level_db": -45},
    }
    clip = synth.render_clip(spec, tmp_path / "busy.mp4", use_cache=False)
    lines = clip.timeline["lines"]
    assert lines[0]["voice"] != lines[1]["voice"]  # two speakers, two voices by default
    assert lines[1]["start"] < lines[0]["end"]  # the second voice talks over the first
    assert lines[2]["start"] == pytest.approx(max(lines[0]["end"], lines[1]["end"]) + 0.3, abs=1e-3)
    assert lines[2]["cut"] and lines[2]["end"] - lines[2]["start"] == pytest.approx(0.6, abs=1e-3)
    assert clip.duration == pytest.approx(lines[2]["end"] + 0.7, abs=0.05)  # automatic duration
    x, sr = media.extract_audio_with_rate(clip.path, sr=None)
    tail = x[round((lines[2]["end"] + 0.1) * sr) :]
    assert -50 < 20 * np.log10(rms(tail)) < -40  # the noise floor at its level


def test_objects_appear_and_disappear(tmp_path: Path) -> None:
    spec = {"duration": 2.0, "background": "black", "objects": [{"color": "white", "appear": 1.0}]}
    clip = synth.render_clip(spec, tmp_path / "appear.mp4", use_cache=False)
    frames = media.sample_frames(clip.path, fps=2)
    centre = [float(f.array[90:110, 150:170].mean()) for f in frames]
    assert centre[0] < 20 and centre[1] < 20 and centre[2] > 200 and centre[3] > 200


# ------------------------------------------------------------------------------------------- bad specs


def test_invalid_spec_names_the_output(tmp_path: Path) -> None:
    out = tmp_path / "bad.mp4"
    with pytest.raises(media.MediaError) as err:
        synth.render_clip({"size": [321, 180]}, out)
    assert str(out) in str(err.value) and "even" in str(err.value)
    with pytest.raises(media.MediaError, match="colr"):
        synth.render_clip({"objects": [{"colr": "red"}]}, out)
    assert not out.exists()


def test_speech_longer_than_the_clip(tmp_path: Path) -> None:
    out = tmp_path / "long.mp4"
    spec = {"duration": 1.0, "speech": [{"text": "This sentence is far too long for one second.", "start": 0.2}]}
    with pytest.raises(media.MediaError, match="past the clip"):
        synth.render_clip(spec, out)
    assert not out.exists()


def test_cjk_placard_needs_a_font(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMNIVCHAT_CJK_FONT", raising=False)
    with pytest.raises(media.MediaError, match="CJK font"):
        synth.render_clip({"duration": 1.0, "placards": [{"text": "出口"}]}, tmp_path / "zh.mp4")


def test_cjk_placard_with_a_configured_font(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib

    # DejaVu (shipped with matplotlib) has no CJK glyphs; this checks the opt-in path, not the glyphs.
    font = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    monkeypatch.setenv("OMNIVCHAT_CJK_FONT", str(font))
    clip = synth.render_clip({"duration": 1.0, "placards": [{"text": "出口 EXIT"}]}, tmp_path / "zh.mp4")
    assert media.probe(clip.path).has_video
