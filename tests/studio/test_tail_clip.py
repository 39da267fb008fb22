"""Clip-level tail repair and the ``omnivchat repair-tails`` command, on real MP4 files made here."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile
from typer.testing import CliRunner

from omnivchat.media import MediaError, probe
from omnivchat.media._ffmpeg import run_ffmpeg
from omnivchat.synth import backup_path, content_end, find_clips, repair_clip, repair_clips, tail_scores
from omnivchat.synth._clip import decode_channels, mono_mix
from omnivchat.synth._signals import add_click, speech_like

SR = 44100
DUR = 2.0


def hf_energy_db(x: np.ndarray, sr: int, at: int) -> float:
    from scipy.signal import butter, sosfiltfilt

    h = sosfiltfilt(butter(8, 6000, btype="highpass", fs=sr, output="sos"), np.asarray(x, dtype=np.float64))
    return 10 * np.log10(float(np.sum(h[at - round(0.0005 * sr) : at + round(0.002 * sr)] ** 2)) + 1e-30)


def make_clip(path: Path, audio: np.ndarray, *, video: bool = True, duration: float = DUR) -> Path:
    """Mux ``audio`` ((N,) or (N, C) float at 44.1 kHz) as AAC with a synthetic H.264 video into ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    wav = path.with_suffix(".wav")
    wavfile.write(wav, SR, audio.astype(np.float32))
    args = ["-f", "lavfi", "-i", f"color=c=navy:s=64x48:r=25:d={duration}"] if video else []
    args += ["-i", str(wav)]
    args += (
        ["-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
        if video
        else []
    )
    args += ["-c:a", "aac", "-b:a", "160k", "-f", "mp4", str(path)]
    run_ffmpeg(args, subject=path)
    wav.unlink()
    return path


def click_audio(seed: int = 0) -> tuple[np.ndarray, int]:
    """Speech-like audio with a broadband click 30 ms before the end of speech; returns (audio, click index)."""
    x = speech_like(SR, DUR, seed=seed, trailing=0.1, noise_db=-90)
    at = content_end(x, SR) - round(0.030 * SR)
    return add_click(x, SR, at, amplitude=0.3, seed=seed), at


def video_packets(path: Path) -> list[tuple[int | None, bytes]]:
    import av

    with av.open(str(path)) as c:
        return [(p.pts, bytes(p)) for p in c.demux(c.streams.video[0]) if p.size]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Clips made once per module; tests copy them into their own bench."""
    d = tmp_path_factory.mktemp("tail-templates")
    clicked, at = click_audio(0)
    stereo = np.stack([clicked, 0.5 * click_audio(0)[0]], axis=1)
    late = speech_like(SR, DUR, seed=3, trailing=0.6, noise_db=-90)  # content ends 600 ms before the file end
    late = add_click(late, SR, content_end(late, SR) - round(0.03 * SR), amplitude=0.3)
    out = {
        "click": make_clip(d / "click.mp4", clicked),
        "stereo": make_clip(d / "stereo.mp4", stereo),
        "clean": make_clip(d / "clean.mp4", speech_like(SR, DUR, seed=5, trailing=0.15)),
        "late": make_clip(d / "late.mp4", late),
        "audio_only": make_clip(d / "audio_only.mp4", speech_like(SR, DUR, seed=6), video=False),
    }
    good = out["clean"].read_bytes()
    (d / "corrupt.mp4").write_bytes(good[: len(good) // 2])  # truncated mid-file
    out["corrupt"] = d / "corrupt.mp4"
    (d / "unsupported.mp4").write_bytes(good.replace(b"avc1", b"zzzz"))  # a video codec nobody knows
    out["unsupported"] = d / "unsupported.mp4"
    out["click_at"] = Path(str(at))
    return out


def bench_with(tmp_path: Path, templates: dict[str, Path], *names: str) -> Path:
    bench = tmp_path / "bench"
    (bench / "media").mkdir(parents=True)
    (bench / "instances.jsonl").write_text("")
    for name in names:
        dest = bench / "media" / name / "turn1.mp4"
        dest.parent.mkdir(parents=True)
        shutil.copy(templates[name], dest)
    return bench


def test_clip_with_a_click_is_repaired_keeping_duration_and_video(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "click")
    clip = bench / "media" / "click" / "turn1.mp4"
    original_sha, before_info = sha(clip), probe(clip, energy=False)
    before = decode_channels(clip).samples[:, 0]
    at = int(str(templates["click_at"]))

    result = repair_clip(clip, bench_dir=bench)

    assert result.status == "repaired" and result.passes >= 1
    assert result.scores_before is not None and result.scores_before.transient_flag
    assert result.scores_after is not None and not result.scores_after.flagged
    after_info = probe(clip, energy=False)
    assert after_info.duration == pytest.approx(before_info.duration, abs=1e-3)
    assert after_info.audio_duration == pytest.approx(before_info.audio_duration, abs=1e-3)
    assert (after_info.sample_rate, after_info.channels, after_info.audio_codec) == (SR, 1, "aac")
    backup = backup_path(clip)
    assert result.backup == str(backup) and sha(backup) == original_sha  # the original, byte for byte
    assert video_packets(clip) == video_packets(backup)  # copied, not re-encoded
    after = decode_channels(clip).samples[:, 0]
    assert after.shape == before.shape
    assert hf_energy_db(before, SR, at) - hf_energy_db(after, SR, at) >= 30.0
    # Re-encoding changes the audio a little everywhere, but not much before the fade.
    early = slice(SR // 2, round(1.5 * SR))
    err = np.sqrt(np.mean((after[early] - before[early]) ** 2) / np.mean(before[early] ** 2))
    assert 20 * np.log10(err) < -20

    # Running again finds nothing left and keeps the true original.
    again = repair_clip(clip, bench_dir=bench)
    assert again.status == "clean" and sha(backup) == original_sha


def test_stereo_channels_get_the_same_gain(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "stereo")
    clip = bench / "media" / "stereo" / "turn1.mp4"
    before = decode_channels(clip).samples
    result = repair_clip(clip)
    after = decode_channels(clip).samples
    assert result.status == "repaired" and result.channels == 2 and after.shape == before.shape
    at = int(str(templates["click_at"]))
    for ch in range(2):
        assert hf_energy_db(before[:, ch], SR, at) - hf_energy_db(after[:, ch], SR, at) >= 30.0
    assert result.cutoff_s is not None
    n0 = round(result.cutoff_s * SR)
    assert np.max(np.abs(after[n0 + 2048 :])) < 1e-3  # both channels silent after the cut-off (codec slack)


def test_clip_ending_long_after_its_content_is_skipped(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "late")
    clip = bench / "media" / "late" / "turn1.mp4"
    digest = sha(clip)
    result = repair_clip(clip, bench_dir=bench)
    assert result.flagged and result.status == "skipped" and "after content" in result.reason
    assert sha(clip) == digest and not backup_path(clip).exists()


def test_clean_clip_is_left_alone(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "clean")
    clip = bench / "media" / "clean" / "turn1.mp4"
    digest = sha(clip)
    result = repair_clip(clip, bench_dir=bench)
    assert result.status == "clean" and not result.flagged
    assert sha(clip) == digest and not backup_path(clip).exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("corrupt", "corrupt|truncated|readable"),
        ("audio_only", "no video stream"),
        ("unsupported", "unsupported video codec"),
    ],
)
def test_bad_clips_raise_an_error_naming_the_file(
    tmp_path: Path, templates: dict[str, Path], name: str, message: str
) -> None:
    bench = bench_with(tmp_path, templates, name)
    clip = bench / "media" / name / "turn1.mp4"
    with pytest.raises(MediaError, match=message) as err:
        repair_clip(clip, bench_dir=bench)
    assert str(clip) in str(err.value)


def test_path_outside_the_bench_is_refused(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "clean")
    outside = tmp_path / "elsewhere.mp4"
    shutil.copy(templates["click"], outside)
    link = bench / "media" / "clean" / "turn2.mp4"
    link.symlink_to(outside)
    with pytest.raises(MediaError, match="outside the bench") as err:
        repair_clip(link, bench_dir=bench)
    assert "turn2.mp4" in str(err.value)
    with pytest.raises(MediaError, match="outside the bench"):
        repair_clip(outside, bench_dir=bench)


def test_batch_reports_bad_clips_by_name_and_processes_the_rest(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "click", "corrupt", "clean", "audio_only")
    clips = find_clips(bench)
    assert [c.parent.name for c in clips] == ["audio_only", "clean", "click", "corrupt"]
    results = repair_clips(clips, bench_dir=bench, jobs=2)
    by = {Path(r.path).parent.name: r for r in results}
    assert by["click"].status == "repaired" and by["clean"].status == "clean"
    for bad in ("corrupt", "audio_only"):
        assert by[bad].status == "error" and f"media/{bad}/turn1.mp4" in (by[bad].error or "")
    # The kept original is not a clip of the bench.
    assert [c.parent.name for c in find_clips(bench)] == ["audio_only", "clean", "click", "corrupt"]


def test_mono_mix_is_the_channel_mean() -> None:
    s = np.array([[1.0, 0.0], [0.5, -0.5]], np.float32)
    assert np.array_equal(mono_mix(s), np.array([0.5, 0.0], np.float32))
    assert mono_mix(s[:, :1]).shape == (2,)


# --- the command ----------------------------------------------------------------------------------------


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("COLUMNS", "220")
    return CliRunner()


def test_command_prints_the_table_and_writes_pngs(
    tmp_path: Path, templates: dict[str, Path], runner: CliRunner
) -> None:
    from omnivchat.cli import app

    bench = bench_with(tmp_path, templates, "click", "stereo", "clean", "late", "corrupt")
    res = runner.invoke(app, ["repair-tails", str(bench), "--jobs", "2"])
    out = res.output
    assert res.exit_code == 1, out  # the corrupt clip
    assert "media/corrupt/turn1.mp4" in out  # named in the error
    for name in ("click", "stereo", "late"):
        assert f"media/{name}/turn1.mp4" in out
    assert "media/clean/turn1.mp4" not in out.split("error")[0]  # clean clips are not in the table
    assert "repaired" in out and "skipped" in out and "→" in out
    assert "5 clips: 3 flagged" in out
    pngs = sorted((bench / "tail-repair").glob("*.png"))
    assert [p.name for p in pngs] == ["click_turn1.png", "stereo_turn1.png"]
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
        assert f"wrote {p}" in out.replace("\n", "")
    report = json.loads((bench / "tail-repair" / "report.json").read_text())
    assert {Path(c["path"]).parent.name: c["status"] for c in report["clips"]} == {
        "click": "repaired",
        "stereo": "repaired",
        "clean": "clean",
        "late": "skipped",
        "corrupt": "error",
    }
    assert backup_path(bench / "media" / "click" / "turn1.mp4").exists()


def test_dry_run_changes_nothing(tmp_path: Path, templates: dict[str, Path], runner: CliRunner) -> None:
    from omnivchat.cli import app

    bench = bench_with(tmp_path, templates, "click", "clean")
    before = tree_digest(bench)
    res = runner.invoke(app, ["repair-tails", str(bench), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "would repair" in res.output and "media/click/turn1.mp4" in res.output
    assert tree_digest(bench) == before


def test_command_on_a_directory_without_media(tmp_path: Path, runner: CliRunner) -> None:
    from omnivchat.cli import app

    res = runner.invoke(app, ["repair-tails", str(tmp_path)])
    assert res.exit_code == 2 and "no media/" in res.output


def test_after_scores_come_from_the_written_file(tmp_path: Path, templates: dict[str, Path]) -> None:
    bench = bench_with(tmp_path, templates, "click")
    clip = bench / "media" / "click" / "turn1.mp4"
    result = repair_clip(clip)
    assert result.scores_after == tail_scores(mono_mix(decode_channels(clip).samples), SR)
