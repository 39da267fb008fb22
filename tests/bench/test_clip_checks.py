"""`validate` probes every clip: broken, video-less and audio-less clips are bench problems naming file and line.

Every broken clip here is made for real from a copy of examples/bench (truncated and random bytes, a video-only
copy by `strip_audio`, an audio-only file by `export_audio`, a silent copy by `mute_audio`) and probed with PyAV.
"""

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat import media
from omnivchat.bench import BenchError, load_bench
from omnivchat.benchmarks.native import BenchClipChecker
from omnivchat.cli import app
from omnivchat.media._probe import cached_probe

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "bench"
# Line of each instance in examples/bench/instances.jsonl, and its `requires`.
LINES = {
    "ex-svmr-en": 1,  # video, audio
    "ex-icc-zh": 2,  # audio
    "ex-aor-en": 3,  # video, audio
    "ex-fgc-zh": 4,  # video, audio
    "ex-pla-en": 5,  # audio
    "ex-dr-en": 6,  # video, audio
    "ex-mdcc-en": 7,  # video, audio; two turns
    "ex-er-en": 8,  # video, audio
}


@pytest.fixture
def bench_copy(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    shutil.copytree(EXAMPLES, root)
    return root


def clip(root: Path, instance_id: str, turn: int = 1) -> Path:
    return root / "media" / instance_id / f"turn{turn}.mp4"


def validate(root: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["validate", str(root)], terminal_width=400)
    return result.exit_code, result.output


def problems_of(root: Path, checker: BenchClipChecker | None = None) -> list[str]:
    with pytest.raises(BenchError) as info:
        load_bench(root, check_media=checker or BenchClipChecker())
    return info.value.problems


def edit_instances(root: Path, edit) -> None:
    path = root / "instances.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        edit(row)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def test_example_bench_clips_are_sound():
    checker = BenchClipChecker()
    bench = load_bench(EXAMPLES, check_media=checker)
    assert len(bench.instances) == 8
    assert checker.clips == 9 and checker.probed + checker.cached == 9
    assert checker.warnings == []
    code, output = validate(EXAMPLES)
    assert code == 0, output
    assert "9 clips" in output


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # the index (moov) is at the end: it is gone


def _truncated_faststart(path: Path) -> None:
    """Index first (as a streaming server writes it): the file still opens, but packets are missing."""
    whole = path.with_name("faststart.mp4")
    subprocess.run(
        [media.ffmpeg_exe(), "-v", "error", "-y", "-i", str(path), "-c", "copy", "-movflags", "+faststart", str(whole)],
        check=True,
    )
    data = whole.read_bytes()
    assert data.find(b"moov") < data.find(b"mdat")  # the index does come first
    path.write_bytes(data[: len(data) * 2 // 3])
    whole.unlink()


def _random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(7).randbytes(50_000))


@pytest.mark.parametrize(
    ("breaker", "message"),
    [
        (_zero_bytes, "unreadable clip 'media/ex-aor-en/turn1.mp4': empty file (0 bytes)"),
        (_truncated, "unreadable clip 'media/ex-aor-en/turn1.mp4': not a readable media file"),
        (_truncated_faststart, "unreadable clip 'media/ex-aor-en/turn1.mp4': truncated or corrupt"),
        (_random_bytes, "unreadable clip 'media/ex-aor-en/turn1.mp4': not a readable media file"),
    ],
    ids=["zero-bytes", "truncated", "truncated-index-first", "random-bytes"],
)
def test_unreadable_clip_is_a_problem_naming_file_and_line(bench_copy, breaker, message):
    breaker(clip(bench_copy, "ex-aor-en"))
    found = problems_of(bench_copy)
    assert len(found) == 1, found
    assert found[0].startswith(f"instances.jsonl:3: turns[0].video: {message}"), found
    assert str(bench_copy) not in found[0]  # the clip is named relative to the bench, never by a cached path
    code, output = validate(bench_copy)
    assert code == 2
    assert f"instances.jsonl:3: turns[0].video: {message}" in output
    assert "1 problem(s)" in output


def test_video_only_clip_where_audio_is_required(bench_copy):
    target = clip(bench_copy, "ex-dr-en")
    media.strip_audio(EXAMPLES / "media/ex-dr-en/turn1.mp4", out=target)
    assert not media.probe(target).has_audio
    code, output = validate(bench_copy)
    assert code == 2
    assert (
        "instances.jsonl:6: turns[0].video: clip 'media/ex-dr-en/turn1.mp4' has no audio track, "
        "but the instance requires audio"
    ) in output


def test_audio_only_file_has_no_video_stream_even_where_only_audio_is_required(bench_copy):
    for instance_id in ("ex-er-en", "ex-icc-zh"):  # requires video and audio; requires audio only
        media.export_audio(EXAMPLES / f"media/{instance_id}/turn1.mp4", fmt="m4a", out=clip(bench_copy, instance_id))
    found = problems_of(bench_copy)
    assert found == [
        "instances.jsonl:2: turns[0].video: clip 'media/ex-icc-zh/turn1.mp4' has no video stream (it holds: audio)",
        "instances.jsonl:8: turns[0].video: clip 'media/ex-er-en/turn1.mp4' has no video stream (it holds: audio)",
    ]


def test_history_turn_without_audio_is_a_problem(bench_copy):
    media.strip_audio(EXAMPLES / "media/ex-mdcc-en/turn1.mp4", out=clip(bench_copy, "ex-mdcc-en", 1))
    assert problems_of(bench_copy) == [
        "instances.jsonl:7: turns[0].video: clip 'media/ex-mdcc-en/turn1.mp4' has no audio track, "
        "but the instance requires audio"
    ]


def test_requires_decides_whether_audio_is_needed(bench_copy):
    """`requires: ["video"]` accepts a silent-less clip; unset `requires` means both, as the model documents."""
    for instance_id in ("ex-svmr-en", "ex-aor-en"):
        media.strip_audio(EXAMPLES / f"media/{instance_id}/turn1.mp4", out=clip(bench_copy, instance_id))

    def edit(row: dict) -> None:
        if row["id"] == "ex-svmr-en":
            row["requires"] = ["video"]
        elif row["id"] == "ex-aor-en":
            del row["requires"]

    edit_instances(bench_copy, edit)
    assert problems_of(bench_copy) == [
        "instances.jsonl:3: turns[0].video: clip 'media/ex-aor-en/turn1.mp4' has no audio track, "
        "but requires is unset, which means video and audio"
    ]


def test_every_problem_listed_at_once_in_line_order(bench_copy):
    """Clip problems and the file's own problems come in one listing; the broken instance's clip is not probed."""
    _zero_bytes(clip(bench_copy, "ex-er-en"))
    _random_bytes(clip(bench_copy, "ex-svmr-en"))
    media.strip_audio(EXAMPLES / "media/ex-dr-en/turn1.mp4", out=clip(bench_copy, "ex-dr-en"))
    _zero_bytes(clip(bench_copy, "ex-pla-en"))  # its instance fails to parse below: no clip problem for it

    def edit(row: dict) -> None:
        if row["id"] == "ex-pla-en":
            row["subcategory"] = "NOPE"

    edit_instances(bench_copy, edit)
    (bench_copy / "bench.yaml").write_text("version: 2\n", encoding="utf-8")
    found = problems_of(bench_copy)
    assert [p.split(": ", 1)[0] for p in found] == [
        "bench.yaml",
        "instances.jsonl:1",
        "instances.jsonl:5",
        "instances.jsonl:6",
        "instances.jsonl:8",
    ], found
    assert "unknown subcategory 'NOPE'" in found[2]
    assert "'media/ex-er-en/turn1.mp4': empty file" in found[4]
    code, output = validate(bench_copy)
    assert code == 2 and "5 problem(s)" in output


def test_silent_audio_is_a_warning_not_a_problem(bench_copy):
    media.mute_audio(EXAMPLES / "media/ex-icc-zh/turn1.mp4", out=clip(bench_copy, "ex-icc-zh"))
    checker = BenchClipChecker()
    load_bench(bench_copy, check_media=checker)
    assert len(checker.warnings) == 1
    assert checker.warnings[0].startswith(
        "instances.jsonl:2: turns[0].video: clip 'media/ex-icc-zh/turn1.mp4': audio track is silent"
    )
    code, output = validate(bench_copy)
    assert code == 0, output
    assert "warning: instances.jsonl:2: turns[0].video:" in output


def test_a_shared_clip_is_probed_once_and_reported_for_each_use(bench_copy, tmp_path):
    _random_bytes(clip(bench_copy, "ex-aor-en"))
    shutil.copy(clip(bench_copy, "ex-aor-en"), clip(bench_copy, "ex-fgc-zh"))  # same bytes, another file

    def edit(row: dict) -> None:
        if row["id"] in ("ex-svmr-en", "ex-dr-en"):
            row["turns"] = [{"video": "media/ex-aor-en/turn1.mp4"}]  # the same file as ex-aor-en

    edit_instances(bench_copy, edit)
    checker = BenchClipChecker(cache_dir=tmp_path / "cache")
    found = problems_of(bench_copy, checker)
    assert [p.split(": ", 1)[0] for p in found] == [f"instances.jsonl:{n}" for n in (1, 3, 4, 6)]
    assert "'media/ex-fgc-zh/turn1.mp4': not a readable media file" in found[2]
    # 9 clip references, 7 distinct files, 6 distinct contents: the broken bytes were probed once
    assert checker.clips == 7
    assert checker.probed == 6
    assert len(list((tmp_path / "cache" / "probe").rglob("*.json"))) == 6


def test_cache_spares_a_second_probe(bench_copy, tmp_path):
    cache = tmp_path / "cache"
    media.strip_audio(EXAMPLES / "media/ex-dr-en/turn1.mp4", out=clip(bench_copy, "ex-dr-en"))
    first = BenchClipChecker(cache_dir=cache)
    problems = problems_of(bench_copy, first)
    assert first.probed == 9 and first.cached == 0
    entries = sorted((cache / "probe").rglob("*.json"))
    assert len(entries) == 9
    stamps = [e.stat().st_mtime_ns for e in entries]

    again = BenchClipChecker(cache_dir=cache)
    assert problems_of(bench_copy, again) == problems
    assert again.probed == 0 and again.cached == 9
    assert [e.stat().st_mtime_ns for e in entries] == stamps  # nothing rewritten

    # The cache is what answered: a doctored entry for the intact ex-svmr-en clip shows up as its problem.
    intact = cached_probe(clip(bench_copy, "ex-svmr-en"), cache_dir=cache)
    assert intact.cached and intact.ok and intact.info is not None
    recorded = intact.info.model_dump(mode="json", exclude={"path"})
    entry = next(e for e in entries if json.loads(e.read_text()).get("info") == recorded)
    entry.write_text(json.dumps({"error": "doctored entry"}))
    assert "instances.jsonl:1: turns[0].video: unreadable clip 'media/ex-svmr-en/turn1.mp4': doctored entry" in (
        problems_of(bench_copy, BenchClipChecker(cache_dir=cache))
    )

    # A changed clip is new content: probed again, while the others still come from the cache.
    shutil.copy(EXAMPLES / "media/ex-dr-en/turn1.mp4", clip(bench_copy, "ex-dr-en"))
    third = BenchClipChecker(cache_dir=cache)
    problems_of(bench_copy, third)
    assert third.probed == 1 and third.cached == 8


def test_cached_probe_does_not_cache_a_missing_file(tmp_path):
    result = cached_probe(tmp_path / "nowhere.mp4", cache_dir=tmp_path / "cache")
    assert not result.ok and result.error == "no such file" and result.sha256 is None
    assert not (tmp_path / "cache").exists()
