"""No media call hangs: every ffmpeg and PyAV call has a bound (``OMNIVCHAT_MEDIA_TIMEOUT_S``); past it the call
raises MediaTimeout naming the file, the item fails with kind ``media_timeout`` and the run goes on.

The hanging clip is real: a regular file ``clip.mp4`` holding an ffconcat playlist whose one part is a named pipe
nobody writes, so FFmpeg (PyAV in process, or the ffmpeg binary) blocks for ever opening it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat import media
from omnivchat.media import MediaError, MediaTimeout

BOUND_S = 1.0


def _release(fifo: Path) -> None:
    """Let every reader stuck opening ``fifo`` go on (it reads end-of-file at once and fails)."""
    for _ in range(50):
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no reader waits (any more)
                return
            raise
        os.close(fd)
        time.sleep(0.05)


def write_hanging_clip(path: Path) -> Path:
    """``path`` as a playlist whose part is a pipe with no writer: opening it blocks for ever."""
    fifo = path.with_name(path.stem + "-part.mp4")
    os.mkfifo(fifo)
    path.write_text(f"ffconcat version 1.0\nfile '{fifo.name}'\n", encoding="utf-8")
    return fifo


@pytest.fixture
def hanging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("OMNIVCHAT_MEDIA_TIMEOUT_S", str(BOUND_S))
    clip = tmp_path / "clip.mp4"
    fifo = write_hanging_clip(clip)
    yield clip
    _release(fifo)


def _ffmpeg_running_on(path: Path) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if str(path).encode() in cmdline.read_bytes():
                return True
    return False


def test_probing_a_clip_that_hangs_stops_at_the_bound(hanging: Path) -> None:
    started = time.monotonic()
    with pytest.raises(MediaTimeout) as caught:
        media.probe(hanging)
    waited = time.monotonic() - started
    assert BOUND_S <= waited < BOUND_S + 30  # the bound, not for ever (30 s: slack for a busy machine)
    message = str(caught.value)
    assert message.startswith(f"{hanging}: probing did not finish within 1 s")
    assert "OMNIVCHAT_MEDIA_TIMEOUT_S" in message
    with pytest.raises(MediaTimeout):
        media.sample_frames(hanging)


def test_a_probe_that_timed_out_is_never_cached_as_a_verdict(hanging: Path) -> None:
    first = media.cached_probe(hanging)
    assert not first.ok and "did not finish within" in (first.error or "")
    again = media.cached_probe(hanging)  # probed again (and stopped again): nothing was kept
    assert not again.cached and "did not finish within" in (again.error or "")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ffmpeg_that_hangs_is_killed_at_the_bound(hanging: Path, tmp_path: Path) -> None:
    with pytest.raises(MediaTimeout) as caught:
        media.run_ffmpeg(["-i", str(hanging), "-f", "null", "-"], subject=hanging)
    assert str(caught.value).startswith(f"{hanging}: ffmpeg did not finish within 1 s")
    assert not _ffmpeg_running_on(hanging)  # killed and reaped, not left running

    # a derived clip goes through the same bound
    with pytest.raises(MediaTimeout):
        media.strip_audio(hanging, out=tmp_path / "out.mp4", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "out.mp4").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ffmpeg_fed_through_a_pipe_is_killed_at_the_bound(hanging: Path, tmp_path: Path) -> None:
    """A frame writer blocks once ffmpeg stops reading; the deadline kills ffmpeg, the write fails, and
    finish_ffmpeg says it timed out (not 'killed by signal 9')."""
    out = tmp_path / "out.mp4"
    proc = media.popen_ffmpeg(
        ["-i", str(hanging), "-f", "rawvideo", "-s", "8x8", "-pix_fmt", "gray", "-i", "pipe:0", "-f", "mp4", str(out)]
    )
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        for _ in range(10_000):  # far more than a pipe holds: this blocks until the deadline kills ffmpeg
            proc.stdin.write(bytes(64 * 1024))
    with pytest.raises(MediaTimeout) as caught:
        media.finish_ffmpeg(proc, subject=out)
    assert str(caught.value).startswith(f"{out}: ffmpeg did not finish within 1 s")
    assert proc.returncode is not None and not _ffmpeg_running_on(hanging)


def test_a_call_within_its_bound_is_not_touched(clip: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNIVCHAT_MEDIA_TIMEOUT_S", "120")
    assert media.probe(clip).has_audio
    with pytest.raises(MediaError, match="no such file"):  # a call's own error reaches the caller as it was
        media.probe(clip.with_name("missing.mp4"))


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf", "nan"])
def test_an_unusable_bound_is_refused_naming_the_variable(value: str, clip: Path, monkeypatch) -> None:
    monkeypatch.setenv("OMNIVCHAT_MEDIA_TIMEOUT_S", value)
    with pytest.raises(MediaError, match=f"OMNIVCHAT_MEDIA_TIMEOUT_S='{value}': not a positive number of seconds"):
        media.probe(clip)


def test_a_run_with_a_clip_that_hangs_fails_that_item_alone(small_bench, tmp_path, monkeypatch) -> None:
    from omnivchat.cli import app
    from omnivchat.runs import STORE_FILE, RunStore

    monkeypatch.setenv("OMNIVCHAT_MEDIA_TIMEOUT_S", str(BOUND_S))
    hung = small_bench.instances[0]
    clip = small_bench.media_path(hung.turns[-1])
    clip.unlink()
    fifo = write_hanging_clip(clip)
    try:
        run_dir = tmp_path / "run"
        args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(run_dir)]
        result = CliRunner().invoke(app, [*args, "--no-progress"], terminal_width=200)
    finally:
        _release(fifo)
    assert result.exit_code == 1, result.output
    line = next(x for x in result.output.splitlines() if x.strip().startswith("media_timeout: 1"))
    store = RunStore(run_dir / STORE_FILE)
    try:
        items = {row["item_id"]: row for row in store.items()}
    finally:
        store.close()
    assert items[hung.id]["error_kind"] == "media_timeout"
    assert items[hung.id]["error"].startswith(f"{clip}: probing did not finish within 1 s")
    shown = line.strip().removeprefix("media_timeout: 1 (first: s1: ").rstrip(")")
    assert shown and items[hung.id]["error"].startswith(shown)  # the line shows its start; the store keeps it whole
    assert sum(1 for row in items.values() if row["status"] == "done") == len(small_bench.instances) - 1


def test_an_unusable_bound_stops_a_run_before_anything_is_written(small_bench, tmp_path, monkeypatch) -> None:
    """One line and nothing written, instead of every item failing with the same setting's error."""
    from omnivchat.cli import app

    monkeypatch.setenv("OMNIVCHAT_MEDIA_TIMEOUT_S", "abc")
    run_dir = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "sim:healthy", "-o", str(run_dir), "--no-progress"]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "OMNIVCHAT_MEDIA_TIMEOUT_S='abc': not a positive number of seconds" in result.output
    assert not run_dir.exists()
