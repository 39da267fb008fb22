"""Render recipes (issue 37.2): a new synthesis encodes with the latest recipe and records it in its manifest; a
synthesis begun with recipe 1 resumes with recipe 1 (its clips and its manifest unchanged); the two recipes give
different bytes under different cache keys, pictures within 35 dB PSNR and the same sound; a clip's audio is
decoded once for the Reviewer and the tail repair of the same bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from omnivchat import media, synth
from omnivchat.cli import app
from omnivchat.media._ffmpeg import ffmpeg_calls
from omnivchat.studio.backends import make_agents
from omnivchat.studio.engine import MANIFEST, STUDIO_DIR

runner = CliRunner()
SPEC = {
    "duration": 3.0,
    "size": [320, 180],
    "objects": [{"shape": "circle", "color": "red", "position": "left"}],
    "speech": [{"text": "Which colour is the circle on the left?", "language": "en", "start": 0.3}],
}


def _run(out: Path) -> str:
    args = ["studio", "run", "--config", "AOR", "--n", "1", "-o", str(out), "--backend", "offline", "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def _renderer_name(out: Path) -> str:
    return json.loads((out / STUDIO_DIR / MANIFEST).read_text())["agents"]["renderer"]


def _psnr(a: Path, b: Path) -> float:
    """The average PSNR of b's frames against a's, as ffmpeg's psnr filter measures it."""
    proc = media.run_ffmpeg(["-loglevel", "info", "-i", str(a), "-i", str(b), "-lavfi", "psnr", "-f", "null", "-"])
    found = re.search(r"average:(\S+)", proc.stderr.decode())
    assert found is not None, proc.stderr.decode()[-300:]
    return float(found.group(1))


def test_the_two_recipes_differ_in_bytes_and_cache_not_in_picture_or_sound(tmp_path: Path) -> None:
    one = synth.render_clip(SPEC, tmp_path / "r1.mp4", cache_dir=tmp_path / "cache")
    two = synth.render_clip(SPEC, tmp_path / "r2.mp4", cache_dir=tmp_path / "cache", recipe=2)
    assert not one.cached and not two.cached  # recipe 2 is not served recipe 1's cached file
    assert one.path.read_bytes() != two.path.read_bytes()
    assert one.timeline == two.timeline
    calls = ffmpeg_calls()
    again = synth.render_clip(SPEC, tmp_path / "r2b.mp4", cache_dir=tmp_path / "cache", recipe=2)
    assert again.cached and ffmpeg_calls() == calls and again.path.read_bytes() == two.path.read_bytes()
    assert _psnr(one.path, two.path) >= 35.0
    a1, sr = media.extract_audio_with_rate(one.path, sr=None)
    a2, _ = media.extract_audio_with_rate(two.path, sr=None)
    assert sr == 44_100 and np.array_equal(a1, a2)  # the same audio: what an ASR hears cannot change
    with pytest.raises(media.MediaError, match=r"r9\.mp4: unknown render recipe 9"):
        synth.render_clip(SPEC, tmp_path / "r9.mp4", recipe=9)


def test_a_new_synthesis_records_the_latest_recipe_and_an_old_one_resumes_with_its_own(tmp_path: Path) -> None:
    new = tmp_path / "new"
    _run(new)
    assert _renderer_name(new) == f"offline-renderer/1 defects=0 recipe={synth.LATEST_RENDER_RECIPE}"

    # A synthesis made before recipes existed: its manifest names the renderer without a recipe.
    old = tmp_path / "old"
    agents = make_agents("offline", output=old)
    assert agents.renderer.recipe == synth.LATEST_RENDER_RECIPE  # nothing there yet: a new synthesis
    from omnivchat.studio.config import load_config
    from omnivchat.studio.engine import Agents, studio_run
    from omnivchat.studio.offline import OfflineRenderer

    studio_run([load_config("AOR")], old, Agents(agents.director, OfflineRenderer(recipe=1), agents.reviewer), n=1)
    assert _renderer_name(old) == "offline-renderer/1 defects=0"
    clips = {p: p.read_bytes() for p in sorted((old / "media").rglob("*.mp4"))}
    assert clips
    assert make_agents("offline", output=old).renderer.recipe == 1
    # The instance synthesized again with its render made again (the work clip gone): recipe 2 would give
    # other bytes.
    next((old / STUDIO_DIR / "traces").glob("*.json")).unlink()
    for work_clip in (old / STUDIO_DIR / "work").rglob("*.mp4"):
        work_clip.unlink()
    printed = _run(old)
    assert "1 instance(s) synthesized now" in printed
    assert _renderer_name(old) == "offline-renderer/1 defects=0"
    assert {p: p.read_bytes() for p in sorted((old / "media").rglob("*.mp4"))} == clips


def test_a_clips_audio_is_decoded_once_for_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import omnivchat.synth._clip as clip_module

    clip = synth.render_clip(SPEC, tmp_path / "a.mp4", cache_dir=tmp_path / "cache", recipe=2).path
    decoded: list[Path] = []
    real = clip_module._decode_channels

    def counting(path: Path) -> object:
        decoded.append(path)
        return real(path)

    monkeypatch.setattr(clip_module, "_decode_channels", counting)
    copy = tmp_path / "b.mp4"
    copy.write_bytes(clip.read_bytes())
    first = synth.decode_channels(clip)
    second = synth.decode_channels(copy)  # the same bytes elsewhere: not decoded again
    assert decoded == [clip] and second is first
    assert not first.samples.flags.writeable  # shared: nobody may change it in place
    other = tmp_path / "c.mp4"
    media.run_ffmpeg(["-i", str(clip), "-t", "1.5", "-c", "copy", str(other)])
    assert synth.decode_channels(other).samples.shape[0] < first.samples.shape[0]
    assert decoded == [clip, other]
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a clip")
    with pytest.raises(media.MediaError, match=r"broken\.mp4"):
        synth.decode_channels(broken)
    with pytest.raises(media.MediaError, match=r"missing\.mp4"):
        synth.decode_channels(tmp_path / "missing.mp4")


def test_a_manifest_naming_an_unknown_recipe_is_one_line_and_untouched(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    _run(out)
    manifest = out / STUDIO_DIR / MANIFEST
    data = json.loads(manifest.read_text())
    data["agents"]["renderer"] = "offline-renderer/1 defects=0 recipe=99"
    manifest.write_text(json.dumps(data))
    before = manifest.read_bytes()
    args = ["studio", "run", "--config", "AOR", "--n", "1", "-o", str(out), "--backend", "offline", "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code != 0
    assert "render recipe 99" in result.output and "Traceback" not in result.output
    assert manifest.read_bytes() == before
