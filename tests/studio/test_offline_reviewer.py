"""The offline Reviewer on real clips: rendered here with the procedural renderer, then damaged with ffmpeg
(audio stripped, truncated, frozen, blanked, joined, clicked, corrupted) to check that each report says so."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnivchat.media import MediaError, ffmpeg_exe
from omnivchat.studio.engine._types import Question
from omnivchat.studio.minibench._kit import COLOURS, SHAPES
from omnivchat.studio.offline._caption import CANNOT_TELL
from omnivchat.studio.offline._measure import colour_name
from omnivchat.studio.offline._reviewer import OfflineReviewer

MAIN: dict[str, Any] = {
    "duration": 3.6,
    "size": [320, 180],
    "background": "navy",
    "objects": [
        {"shape": "square", "color": "red", "position": "left", "label": "box", "name": "box"},
        {"shape": "circle", "color": "gold", "position": "right", "appear": 1.0, "name": "ball"},
    ],
    "person": {"expression": "happy"},
    "placards": [{"text": "QUIZ", "position": "top", "start": 1.0}],
    "speech": [{"text": "What colour is the square? [pause 0.8] Tell me.", "language": "en", "start": 0.3}],
}
# Front camera, positions from the user's side: the user's left is the image's right. The "red cube" is blue.
MIRRORED: dict[str, Any] = {
    "duration": 2.0,
    "size": [320, 180],
    "background": "dimgray",
    "floor": "saddlebrown",
    "camera": {"mode": "front", "positions": "user", "label": True},
    "objects": [
        {"shape": "cube", "color": "royalblue", "position": "left", "name": "red cube"},
        {"shape": "circle", "color": "limegreen", "position": "right", "name": "green ball"},
        {"shape": "star", "color": "white", "position": "top", "size": 0.2, "name": "star", "disappear": 1.0},
    ],
}
POSITIONS = ("far-left", "left", "center-left", "center", "center-right", "right", "far-right")


def colour_scene(lighting: str) -> dict[str, Any]:
    """Every mini-bench colour on one table, each a different shape, named without its colour."""
    return {
        "duration": 1.0,
        "size": [320, 180],
        "background": "slategray",
        "floor": "sienna",
        "lighting": lighting,
        "camera": {"mode": "rear", "label": True},
        "objects": [
            {"shape": s.shape, "color": c.css, "position": p, "size": 0.24, "name": f"thing {i}"}
            for i, (c, s, p) in enumerate(zip(COLOURS, SHAPES, POSITIONS, strict=True))
        ],
    }


def ffmpeg(*args: str) -> None:
    subprocess.run([ffmpeg_exe(), "-y", "-loglevel", "error", *args], check=True)


def with_timeline(src: Path, dst: Path) -> Path:
    """Give ``dst`` (a clip derived from ``src``) a copy of ``src``'s timeline, as if rendered there."""
    shutil.copyfile(src.with_name(f"{src.stem}.timeline.json"), dst.with_name(f"{dst.stem}.timeline.json"))
    return dst


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from omnivchat.media import blank_video, freeze_video, mute_audio
    from omnivchat.synth import render_clip

    d = tmp_path_factory.mktemp("reviewer")
    scenes = {
        "main": MAIN,
        "mirrored": MIRRORED,
        "normal": colour_scene("normal"),
        "dim": colour_scene("dim"),
        "dark": {**colour_scene("dark"), "camera": "rear"},
        "away": {
            "duration": 1.0,
            "background": "lightsteelblue",
            "person": {"facing": "away", "position": [0.06, 0.5], "hair": "black", "shirt": "maroon"},
        },
        "fast": {
            "duration": 3.0,
            "size": [160, 90],
            "speech": [{"text": "What colour is the big red square on the table today", "start": 0.2, "rate": 420}],
        },
        "surprised": {
            "duration": 2.0,
            "size": [160, 90],
            "person": {"expression": "surprised"},
            "speech": [{"text": "Oh, is that for me?", "start": 0.2}],
        },
        "zh": {
            "duration": 2.6,
            "size": [160, 90],
            "speech": [{"text": "左边是什么颜色？", "language": "zh", "start": 0.2}],
        },
    }
    out = {name: render_clip(spec, d / f"{name}.mp4").path for name, spec in scenes.items()}
    main = out["main"]
    out["noaudio"] = d / "noaudio.mp4"
    ffmpeg("-i", str(main), "-an", "-c:v", "copy", str(out["noaudio"]))
    out["cut"] = d / "cut.mp4"
    ffmpeg("-i", str(main), "-t", "1.5", "-c", "copy", str(out["cut"]))
    out["frozen"] = freeze_video(main, out=d / "frozen.mp4")
    out["blank"] = blank_video(main, out=d / "blank.mp4")
    out["muted"] = mute_audio(main, out=d / "muted.mp4")
    for name in ("noaudio", "cut", "frozen", "blank", "muted"):
        with_timeline(main, out[name])
    # Two scenes joined: a cut from the navy backdrop to a dark green one (no timeline for the join).
    other = render_clip({**MAIN, "background": "darkgreen", "placards": [], "person": None}, d / "other.mp4").path
    out["joined"] = d / "joined.mp4"
    graph = "[0:v][0:a][1:v][1:a]concat=n=2:v=1:a=1[v][a]"
    ffmpeg(
        "-i", str(main), "-i", str(other), "-filter_complex", graph, "-map", "[v]", "-map", "[a]", str(out["joined"])
    )
    out["nosidecar"] = d / "alone" / "main.mp4"
    out["nosidecar"].parent.mkdir()
    shutil.copyfile(main, out["nosidecar"])
    # The main clip's picture with speech-like audio that ends in a broadband click.
    out["click"] = with_timeline(main, d / "click.mp4")
    _click_audio(d / "click.wav", 3.6)
    ffmpeg("-i", str(main), "-i", str(d / "click.wav"), "-map", "0:v", "-map", "1:a", "-c:v", "copy", str(out["click"]))
    # The "red cube" is drawn blue; its timeline is edited to claim red, which the Reviewer must not believe.
    tl_path = out["mirrored"].with_name("mirrored.timeline.json")
    tl = json.loads(tl_path.read_text(encoding="utf-8"))
    tl["objects"][0]["color"] = "red"
    tl_path.write_text(json.dumps(tl), encoding="utf-8")
    return out


def _click_audio(path: Path, duration: float) -> None:
    from scipy.io import wavfile

    from omnivchat.synth import content_end
    from omnivchat.synth._signals import add_click, speech_like

    sr = 44100
    x = speech_like(sr, duration, seed=0, trailing=0.1, noise_db=-90)
    x = add_click(x, sr, content_end(x, sr) - round(0.03 * sr), amplitude=0.3)
    wavfile.write(path, sr, np.asarray(x, dtype=np.float32))


@pytest.fixture(scope="module")
def reviewer() -> OfflineReviewer:
    return OfflineReviewer()


def timeline(clip: Path) -> dict[str, Any]:
    from omnivchat.synth import load_timeline

    return load_timeline(clip)


# ------------------------------------------------------------------------------------------------ colours


@pytest.mark.parametrize("lighting", ["normal", "dim"])
def test_every_minibench_colour_is_named_from_the_pixels(clips, reviewer, lighting) -> None:
    cap = reviewer.caption(clips[lighting])
    seen = {o["name"]: o["colour_seen"] for o in cap.observed["objects"]}
    assert seen == {f"thing {i}": c.en for i, c in enumerate(COLOURS)}
    assert all(o["drawn"] for o in cap.observed["objects"])
    for c in COLOURS:
        assert f"{_a(c.en)} " in cap.text


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def test_colour_names_survive_tints_and_dim_light() -> None:
    from PIL import ImageColor

    tints = {"neutral": (1.0, 1.0, 1.0), "warm": (1.08, 1.0, 0.84), "cool": (0.88, 0.97, 1.1)}
    for colour in COLOURS:
        base = ImageColor.getrgb(colour.css)
        for level in (1.0, 0.6):
            for tint in tints.values():
                rgb = [min(255, round(c * t * level)) for c, t in zip(base, tint, strict=True)]
                assert colour_name(rgb, light=level) == colour.en, (colour.en, level, tint, rgb)
    assert colour_name((139, 69, 19)) == "brown"
    assert colour_name((255, 105, 180)) == "pink"
    assert colour_name((128, 128, 128)) == "gray"
    assert colour_name((5, 5, 5)) == "black"


def test_a_render_whose_colour_differs_from_its_name_reports_the_real_colour(clips, reviewer) -> None:
    cap = reviewer.caption(clips["mirrored"])
    cube = next(o for o in cap.observed["objects"] if o["name"] == "red cube")
    assert cube["colour_seen"] == "blue"
    assert "a blue cube" in cap.text and not re.search(r"\bred\b", cap.text)
    (ans,) = reviewer.answer(
        clips["mirrored"], [Question(text="What colour?", about={"object": "red cube", "ask": "colour"})]
    )
    assert ans.observed["colour_seen"] == "blue" and "blue" in ans.answer


def test_object_sides_follow_the_camera(clips, reviewer) -> None:
    mirrored = {o["name"]: o for o in reviewer.caption(clips["mirrored"]).observed["objects"]}
    assert (mirrored["red cube"]["image_side"], mirrored["red cube"]["user_side"]) == ("right", "left")
    assert (mirrored["green ball"]["image_side"], mirrored["green ball"]["user_side"]) == ("left", "right")
    rear = {o["name"]: o for o in reviewer.caption(clips["main"]).observed["objects"]}
    assert (rear["box"]["image_side"], rear["box"]["user_side"]) == ("left", "left")
    assert rear["ball"]["visible"] == [1.0, 3.6]
    (ans,) = reviewer.answer(
        clips["mirrored"], [Question(text="Which side?", about={"object": "red cube", "ask": "side"})]
    )
    assert ans.observed == {"object": "red cube", "image_side": "right", "user_side": "left"}
    assert "user's left" in ans.answer
    assert reviewer.caption(clips["mirrored"]).observed["camera_tag"] is True  # label: true draws a FRONT CAM tag
    assert reviewer.caption(clips["main"]).observed["camera_tag"] is False


# ------------------------------------------------------------------------------------------------ speech


def test_speech_timing_comes_from_the_timeline_where_the_audio_holds_it(clips, reviewer) -> None:
    tl = timeline(clips["main"])
    cap = reviewer.caption(clips["main"])
    (line,) = tl["lines"]
    (heard,) = cap.observed["speech"]
    assert heard["start"] == pytest.approx(line["start"], abs=0.01)
    assert heard["end"] == pytest.approx(line["end"], abs=0.01)
    assert heard["speaker"] == "user" and not heard["cut"]
    assert cap.observed["last_speech_end_s"] == pytest.approx(line["end"], abs=0.01)
    assert cap.transcript == tl["transcript"] == "What colour is the square? Tell me."
    assert cap.observed["transcript_source"] == "sidecar"
    assert '"What colour is the square? Tell me."' in cap.text
    assert cap.report.delivery_speed.ok, cap.report.delivery_speed.note
    assert cap.report.artifacts.ok, cap.report.artifacts.note


def test_a_clip_without_audio_reports_no_audio_and_no_speech(clips, reviewer) -> None:
    cap = reviewer.caption(clips["noaudio"])
    assert not cap.observed["has_audio"]
    assert not cap.report.artifacts.ok and "no audio track" in cap.report.artifacts.note
    assert cap.observed["speech"] == [] and cap.transcript == "" and cap.observed["last_speech_end_s"] is None
    assert cap.observed["speech_not_heard"][0]["reason"] == "no audio track"
    assert "no audio track" in cap.text


def test_a_truncated_clip_reports_its_real_duration_and_the_speech_cut(clips, reviewer) -> None:
    cap = reviewer.caption(clips["cut"])
    duration = cap.observed["duration_s"]
    assert 1.4 <= duration <= 1.7
    assert cap.observed["timeline_duration_s"] == pytest.approx(3.6)
    assert not cap.report.artifacts.ok and "truncated" in cap.report.artifacts.note
    (heard,) = cap.observed["speech"]
    assert heard["cut"] and heard["end"] <= duration + 0.01
    assert cap.observed["last_speech_end_s"] <= duration + 0.01
    assert cap.transcript.startswith("What colour") and "Tell me" not in cap.transcript
    assert "cut off" in cap.text
    assert "not judged" in cap.report.delivery_speed.note


def test_silent_audio_and_a_tail_click_are_artifacts(clips, reviewer) -> None:
    muted = reviewer.caption(clips["muted"])
    assert not muted.report.artifacts.ok and "silent audio" in muted.report.artifacts.note
    assert muted.observed["speech"] == [] and muted.transcript == ""  # the timeline's line is not heard
    assert muted.observed["speech_not_heard"][0]["reason"] == "no speech energy in the audio"
    click = reviewer.caption(clips["click"])
    assert not click.report.artifacts.ok and "click" in click.report.artifacts.note


def test_fast_delivery_is_reported_with_its_rate(clips, reviewer) -> None:
    fast = reviewer.caption(clips["fast"]).report.delivery_speed
    assert not fast.ok and "words/s, faster than 3.2" in fast.note
    zh = reviewer.caption(clips["zh"])
    assert zh.report.delivery_speed.ok and "chars/s" in zh.report.delivery_speed.note
    assert zh.transcript == "左边是什么颜色？"
    strict = OfflineReviewer(max_speaking_rate={"en": 3.2, "zh": 1.0}).caption(clips["zh"]).report.delivery_speed
    assert not strict.ok


# ------------------------------------------------------------------------------------------------ picture


def test_placards_and_labels_are_on_screen_text(clips, reviewer) -> None:
    text = reviewer.caption(clips["main"]).report.on_screen_text
    assert not text.ok
    assert 'placard "QUIZ"' in text.note and 'label "box"' in text.note
    assert reviewer.caption(clips["normal"]).report.on_screen_text.ok


def test_a_person_is_seen_where_the_timeline_puts_it(clips, reviewer) -> None:
    cap = reviewer.caption(clips["main"])
    assert cap.report.body_structure.ok and "head" in cap.report.body_structure.note
    person = cap.observed["person"]
    assert person["head_drawn"] and person["facing_seen"] == "camera"
    assert "faces the camera" in cap.report.appearance.note
    assert "a person in the centre facing the camera" in cap.text
    assert "mouth moves" in cap.report.realism.note


def test_a_person_partly_out_of_frame_and_seen_from_behind(clips, reviewer) -> None:
    cap = reviewer.caption(clips["away"])
    assert cap.observed["person"]["facing_seen"] == "away"
    assert "seen from behind" in cap.report.appearance.note
    assert cap.report.body_structure.ok and "out of frame" in cap.report.body_structure.note


def test_a_person_the_timeline_places_but_the_picture_lacks(clips, reviewer, tmp_path) -> None:
    clip = tmp_path / "ghost.mp4"
    shutil.copyfile(clips["normal"], clip)
    tl = timeline(clips["normal"])
    tl["person"] = {"box": [100, 18, 220, 180], "facing": "camera", "expression": "neutral", "speaker": None}
    clip.with_name("ghost.timeline.json").write_text(json.dumps(tl), encoding="utf-8")
    body = OfflineReviewer().caption(clip).report.body_structure
    assert not body.ok and "no head" in body.note


def test_a_dark_scene_is_reported(clips, reviewer) -> None:
    dark = reviewer.caption(clips["dark"]).report.appearance
    assert not dark.ok and "too dark" in dark.note
    assert reviewer.caption(clips["dim"]).report.appearance.ok
    assert reviewer.caption(clips["normal"]).report.appearance.ok


def test_cuts_frozen_and_blank_video(clips, reviewer) -> None:
    joined = reviewer.caption(clips["joined"]).report
    assert not joined.cuts.ok and "3." in joined.cuts.note  # the join is at 3.6 s
    main = reviewer.caption(clips["main"]).report
    assert main.cuts.ok and main.realism.ok
    frozen = reviewer.caption(clips["frozen"])
    assert not frozen.report.realism.ok and "frozen" in frozen.report.realism.note
    ball = next(o for o in frozen.observed["objects"] if o["name"] == "ball")  # frozen before it appears
    assert ball["drawn"] is False and "circle" not in frozen.text
    (gone,) = reviewer.answer(clips["frozen"], [Question(text="?", about={"object": "ball", "ask": "colour"})])
    assert gone.answer.startswith("The ball is not seen")
    # A surprised face keeps its mouth open: a still mouth there is no frozen picture.
    assert reviewer.caption(clips["surprised"]).report.realism.ok
    blank = reviewer.caption(clips["blank"])
    assert not blank.report.realism.ok and "blank" in blank.report.realism.note
    assert not blank.report.body_structure.ok


# ------------------------------------------------------------------------------------------------ bad input


def test_a_corrupt_or_missing_file_raises_media_error_naming_it(tmp_path, reviewer) -> None:
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8)
    with pytest.raises(MediaError, match=r"broken\.mp4"):
        reviewer.caption(bad)
    with pytest.raises(MediaError, match=r"nowhere\.mp4"):
        reviewer.caption(tmp_path / "nowhere.mp4")


def test_a_clip_without_its_timeline_is_still_reviewed(clips, reviewer) -> None:
    cap = reviewer.caption(clips["nosidecar"])
    assert cap.observed["timeline"] is False
    assert cap.observed["speech_timing"].startswith("unknown")
    assert "cannot tell the speech timing" in cap.report.delivery_speed.note
    assert cap.observed["objects"] == [] and cap.transcript == ""
    assert cap.observed["audio"]["sound"]  # the audio still shows where there is sound
    assert cap.report.cuts.ok and cap.report.artifacts.ok
    (ans,) = reviewer.answer(clips["nosidecar"], [Question(text="When?", about={"ask": "speech_end"})])
    assert ans.answer == CANNOT_TELL


# ------------------------------------------------------------------------------------------------ answers


def test_answers_to_each_kind_of_question(clips, reviewer) -> None:
    def q(**about: Any) -> Question:
        return Question(text="?", about=about)

    questions = [
        q(object="star", ask="visible_at", t=0.5),
        q(object="star", ask="visible_at", t=1.5),
        q(ask="camera"),
        q(object="nothing here", ask="colour"),
        q(ask="weather"),
        q(object="green ball", ask="texture"),
    ]
    early, late, camera, missing, weather, texture = reviewer.answer(clips["mirrored"], questions)
    assert early.observed["visible"] is True and early.answer.startswith("Yes")
    assert late.observed["visible"] is False and late.answer.startswith("No")
    assert camera.observed["camera"] == "front" and "selfie" in camera.answer
    assert missing.answer == CANNOT_TELL and missing.observed["found"] is False
    assert weather.answer == texture.answer == CANNOT_TELL
    assert weather.observed == texture.observed == {"unsupported": True}

    end, transcript, person = reviewer.answer(
        clips["main"], [q(ask="speech_end"), q(ask="transcript"), q(ask="person")]
    )
    last = timeline(clips["main"])["lines"][0]["end"]
    assert end.observed["last_speech_end_s"] == pytest.approx(last, abs=0.01) and f"{last:.2f}" in end.answer
    assert transcript.observed["transcript"] == "What colour is the square? Tell me."
    assert person.answer.startswith("A person in the centre, facing the camera")
    (nobody,) = reviewer.answer(clips["normal"], [q(ask="person")])
    assert nobody.answer == "No person is seen in the clip."


def test_a_ten_second_caption_takes_well_under_a_second(tmp_path) -> None:
    from omnivchat.synth import render_clip

    spec = {
        **MAIN,
        "duration": 10.0,
        "speech": [
            {"text": "What colour is the square on my left? [pause 0.8] Tell me please.", "start": 0.4},
            {"text": "左边是什么颜色？", "language": "zh", "start": 6.0},
        ],
    }
    clip = render_clip(spec, tmp_path / "ten.mp4").path
    OfflineReviewer().caption(clip)  # imports
    best = min(_timed(clip) for _ in range(2))
    assert best < 1.0


def _timed(clip: Path) -> float:
    start = time.perf_counter()
    OfflineReviewer().caption(clip)
    return time.perf_counter() - start
