"""Clip-level tail repair: decode, detect, repair, re-mux with the video stream copied.

Policy (Appendix D.1.2 plus what a bench needs):

- The first audio track is decoded at its native rate with every channel kept. Detection and the
  cut-off use the mono mix (the mean of the channels); the same Eq. 11 gain is applied to every
  channel, so the stereo image is untouched.
- A clip whose file (its longest stream) ends more than 300 ms after the content boundary (Eq. 8) is
  skipped: the boundary may not mark the intended tail.
- A repaired clip is written with the video stream copied (``-c:v copy``, packets bit-identical) and
  the repaired audio encoded AAC at the source rate, channel count and (when known) bit rate; the
  duration is unchanged because the fade removes no sample.
- The original is kept as ``<stem>.orig.mp4`` beside the clip (a hard link, or a copy where links are
  not possible) and the repaired file atomically replaces ``<stem>.mp4``, so the bench keeps pointing
  at the same relative path and now plays the repaired clip. An existing ``.orig.mp4`` (from an earlier
  run) is never overwritten: it is the true original. Originals stay until the user removes them.
- Every failure about a file raises (or, in :func:`repair_clips`, records) a MediaError naming it.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from omnivchat.media import MediaError, MediaInfo, bounded, run_ffmpeg
from omnivchat.synth._detect import (
    SKIP_AFTER_CONTENT_S,
    TailRepair,
    TailScores,
    apply_fade,
    repair_tail,
    tail_scores,
)

ORIG_SUFFIX = ".orig.mp4"
TMP_SUFFIX = ".tail-tmp.mp4"
DEFAULT_AUDIO_BITRATE = 192_000

Status = Literal["clean", "repaired", "would repair", "skipped", "error"]


@dataclass(frozen=True)
class ClipTailResult:
    """The outcome for one clip."""

    path: str
    """The clip (as given, or relative to the bench dir in a batch)."""
    status: Status
    """``clean`` (no artifact, unchanged), ``repaired``, ``would repair`` (dry run), ``skipped``
    (file ends > 300 ms after content, or no usable tail), ``error`` (see ``error``)."""
    reason: str = ""
    """Why: the repair's reason (``repaired``, ``fallback``, ``clean``, ``silent`` ...) or the skip."""
    sample_rate: int | None = None
    channels: int | None = None
    duration: float | None = None
    """File duration (s) before; the repaired file's is checked to match."""
    duration_after: float | None = None
    content_end_s: float | None = None
    """Content boundary n_end (Eq. 8), seconds from the start."""
    cutoff_s: float | None = None
    """Cut-off n0 (Eq. 10), seconds from the start, when a repair applies."""
    first_changed_before_end_ms: float | None = None
    """How far before the file end the first changed sample lies (ms)."""
    passes: int = 0
    scores_before: TailScores | None = None
    scores_after: TailScores | None = None
    """After: measured on the written (re-encoded) file; in a dry run, on the repaired samples."""
    backup: str | None = None
    """Where the original was kept."""
    error: str | None = None

    @property
    def flagged(self) -> bool:
        """The detection flagged an artifact (whatever was then done)."""
        return self.scores_before is not None and self.scores_before.flagged

    @property
    def severity(self) -> tuple[float, float]:
        """Sort key, worst first when sorted descending: transient score, then truncation."""
        s = self.scores_before
        return (s.transient, s.truncation) if s is not None else (-math.inf, -math.inf)


@dataclass
class _Decoded:
    samples: NDArray[np.float32]  # (N, C)
    sr: int
    bit_rate: int | None
    duration: float


def _probe_checked(path: Path) -> MediaInfo:
    from omnivchat.media import probe, require_audio

    info = probe(path, energy=False, verify=True)  # corrupt / truncated: MediaError naming the file
    if not info.has_video:
        raise MediaError(f"{path}: no video stream")
    if info.video_codec in (None, "none"):
        raise MediaError(f"{path}: unsupported video codec (no decoder available)")
    require_audio(info)  # no audio track / unsupported audio codec
    return info


_REMEMBERED = 8  # clips whose decoded audio is kept, by the sha256 of their bytes
_decoded: OrderedDict[str, _Decoded] = OrderedDict()
_decoded_lock = threading.Lock()


def decode_channels(path: Path) -> _Decoded:
    """Decode the first audio track of ``path`` at its native rate as float32 ``(N, C)`` (read-only).

    Like :func:`omnivchat.media.extract_audio` but keeping every channel (that one downmixes to mono):
    cropped or zero-padded to the stream's duration, as AAC decoders differ in priming and padding. The last
    few clips decoded are remembered by their bytes' sha256, so one clip is decoded once where several steps
    read it (the Studio's Reviewer, then the tail repair of the same clip copied into the bench).
    """
    from omnivchat.media import content_hash

    try:
        digest = content_hash(path)  # memoised by the file's identity, as the media cache's keys are
    except MediaError:
        return _decode_channels(path)  # it says what is wrong with the file
    with _decoded_lock:
        known = _decoded.get(digest)
        if known is not None:
            _decoded.move_to_end(digest)
            return known
    decoded = _decode_channels(path)
    decoded.samples.flags.writeable = False  # shared by every reader of these bytes
    with _decoded_lock:
        _decoded[digest] = decoded
        while len(_decoded) > _REMEMBERED:
            _decoded.popitem(last=False)
    return decoded


@bounded("decoding the audio")
def _decode_channels(path: Path) -> _Decoded:
    import av

    from omnivchat.media import open_container

    info = _probe_checked(path)
    sr = int(info.sample_rate or 0)
    if sr <= 0:
        raise MediaError(f"{path}: audio track has no sample rate")
    chunks: list[np.ndarray] = []
    bit_rate = None
    try:
        with open_container(path) as container:
            stream = container.streams.audio[0]
            bit_rate = stream.bit_rate or (stream.codec_context.bit_rate if stream.codec_context else None)
            channels = stream.codec_context.channels or 1
            layout = stream.codec_context.layout.name if stream.codec_context.layout else None
            resampler = av.AudioResampler(format="fltp", layout=layout, rate=sr)
            for frame in container.decode(stream):
                chunks.extend(out.to_ndarray() for out in resampler.resample(frame))
            chunks.extend(out.to_ndarray() for out in resampler.resample(None))
    except av.FFmpegError as exc:
        raise MediaError(f"{path}: cannot decode audio ({exc})") from None
    planar = np.concatenate(chunks, axis=1) if chunks else np.zeros((channels, 0), np.float32)
    if info.audio_duration:
        expected = round(info.audio_duration * sr)
        short = expected - planar.shape[1]
        planar = np.pad(planar, ((0, 0), (0, short))) if short > 0 else planar[:, :expected]
    samples = np.ascontiguousarray(planar.T, dtype=np.float32)
    return _Decoded(samples, sr, int(bit_rate) if bit_rate else None, float(info.duration))


def mono_mix(samples: NDArray[np.floating]) -> NDArray[np.float32]:
    """The mono mix used for detection and the cut-off: the mean of the channels."""
    if samples.ndim == 1:
        return samples.astype(np.float32, copy=False)
    if samples.shape[1] == 1:
        return np.ascontiguousarray(samples[:, 0], dtype=np.float32)
    return cast("NDArray[np.float32]", samples.mean(axis=1, dtype=np.float64).astype(np.float32))


def _check_inside(path: Path, bench_dir: Path | None) -> Path:
    if bench_dir is None:
        return path
    base = bench_dir.resolve()
    full = path.resolve()
    if not full.is_relative_to(base):
        raise MediaError(f"{path}: path is outside the bench dir {base}")
    return full


def _write_repaired(src: Path, samples: NDArray[np.float32], sr: int, bit_rate: int | None, out: Path) -> None:
    """Mux ``src``'s video (copied) with ``samples`` encoded AAC at ``sr`` into ``out``."""
    from scipy.io import wavfile

    with tempfile.TemporaryDirectory(prefix="omnivchat-tail-") as tmp:
        wav = Path(tmp) / "audio.wav"
        wavfile.write(wav, sr, samples)
        channels = samples.shape[1] if samples.ndim == 2 else 1
        rate = bit_rate or DEFAULT_AUDIO_BITRATE
        args = ["-i", str(src), "-i", str(wav), "-map", "0:v", "-map", "1:a:0"]
        args += ["-map_metadata", "0", "-map_metadata:s:a:0", "0:s:a:0", "-c:v", "copy"]
        args += ["-c:a", "aac", "-b:a", str(rate), "-ar", str(sr), "-ac", str(channels)]
        args += ["-movflags", "+faststart", "-f", "mp4", str(out)]
        run_ffmpeg(args, subject=src)


def _keep_original(path: Path) -> Path:
    backup = path.with_name(path.name[: -len(path.suffix)] + ORIG_SUFFIX)
    if not backup.exists():
        try:
            os.link(path, backup)
        except OSError:
            shutil.copy2(path, backup)
    return backup


def backup_path(path: str | os.PathLike[str]) -> Path:
    """Where :func:`repair_clip` keeps the original of ``path``: ``<stem>.orig.mp4`` beside it."""
    p = Path(path)
    return p.with_name(p.name[: -len(p.suffix)] + ORIG_SUFFIX)


def repair_clip(
    path: str | os.PathLike[str],
    *,
    bench_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    label: str | None = None,
) -> ClipTailResult:
    """Detect and repair the audio tail of one clip (see the module docstring for the policy).

    Returns a :class:`ClipTailResult` (never with status ``error``); raises MediaError naming the file
    for a corrupt or truncated file, a missing video or audio stream, an unsupported codec, or a path
    outside ``bench_dir``. With ``dry_run`` nothing is written.
    """
    p = _check_inside(Path(path), Path(bench_dir) if bench_dir is not None else None)
    dec = decode_channels(p)
    _, info = repair_tail(mono_mix(dec.samples), dec.sr)
    res = ClipTailResult(
        path=label or str(path),
        status="clean",
        reason=info.reason,
        sample_rate=dec.sr,
        channels=dec.samples.shape[1],
        duration=dec.duration,
        content_end_s=info.n_end / dec.sr,
        scores_before=info.scores_before,
        scores_after=info.scores_before,
    )
    if not info.changed:
        if info.reason in ("clean", "silent", "too short", "empty"):
            return res
        return replace(res, status="skipped")  # flagged but not repairable (e.g. rate too low)
    gap = dec.duration - info.n_end / dec.sr
    if gap > SKIP_AFTER_CONTENT_S:
        limit = SKIP_AFTER_CONTENT_S * 1000
        return replace(res, status="skipped", reason=f"file ends {gap * 1000:.0f} ms after content (> {limit:.0f} ms)")
    assert info.cutoff is not None
    first = info.first_changed or 0
    res = replace(
        res,
        status="would repair",
        cutoff_s=info.cutoff / dec.sr,
        first_changed_before_end_ms=(dec.samples.shape[0] - first) / dec.sr * 1000.0,
        passes=info.passes,
        scores_after=info.scores_after,
    )
    if dry_run:
        return res

    repaired = apply_fade(dec.samples, info.cutoff, dec.sr, axis=0)
    tmp = p.with_name(p.name[: -len(p.suffix)] + TMP_SUFFIX)
    try:
        _write_repaired(p, repaired, dec.sr, dec.bit_rate, tmp)
        check = decode_channels(tmp)
        if abs(check.duration - dec.duration) > max(0.001, 1.0 / dec.sr):
            raise MediaError(
                f"{p}: repaired file would last {check.duration:.4f} s, not {dec.duration:.4f} s; left unchanged"
            )
        after = tail_scores(mono_mix(check.samples), check.sr)
        backup = _keep_original(p)
        os.replace(tmp, p)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return replace(res, status="repaired", duration_after=check.duration, scores_after=after, backup=str(backup))


def find_clips(bench_dir: str | os.PathLike[str]) -> list[Path]:
    """The clips of a bench dir: ``media/**/*.mp4``, sorted, without kept originals and temp files."""
    media = Path(bench_dir) / "media"
    if not media.is_dir():
        raise MediaError(f"{bench_dir}: no media/ directory (not a bench dir?)")
    return sorted(
        p for p in media.rglob("*.mp4") if not p.name.endswith(ORIG_SUFFIX) and not p.name.endswith(TMP_SUFFIX)
    )


def repair_clips(
    paths: Iterable[str | os.PathLike[str]],
    *,
    bench_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    jobs: int = 1,
    on_done: Callable[[ClipTailResult], None] | None = None,
) -> list[ClipTailResult]:
    """:func:`repair_clip` over many clips; a clip that fails becomes a result with status ``error``
    and a message naming it, and every other clip is still processed. Results keep the input order."""
    items: Sequence[Path] = [Path(p) for p in paths]
    base = Path(bench_dir) if bench_dir is not None else None

    def label(p: Path) -> str:
        if base is not None:
            with contextlib.suppress(ValueError):
                return str(p.relative_to(base))
        return str(p)

    def one(p: Path) -> ClipTailResult:
        try:
            result = repair_clip(p, bench_dir=base, dry_run=dry_run, label=label(p))
        except MediaError as exc:
            msg = str(exc)
            if str(p) not in msg and label(p) not in msg:
                msg = f"{p}: {msg}"
            result = ClipTailResult(path=label(p), status="error", reason="error", error=msg)
        except (ValueError, OSError) as exc:  # unexpected content (e.g. a sample rate we cannot use)
            result = ClipTailResult(path=label(p), status="error", reason="error", error=f"{p}: {exc}")
        if on_done is not None:
            on_done(result)
        return result

    if jobs <= 1 or len(items) <= 1:
        return [one(p) for p in items]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, items))


def load_tail_pair(
    result: ClipTailResult, path: Path
) -> tuple[NDArray[np.float32], NDArray[np.float32], int, TailRepair]:
    """Mono audio before and after for one result, for plots: before from the kept original (or the
    clip itself in a dry run), after from the repaired clip (or the in-memory repair in a dry run)."""
    backup = backup_path(path)
    before_src = backup if result.status == "repaired" and backup.exists() else path
    before_dec = decode_channels(before_src)
    before = mono_mix(before_dec.samples)
    y, info = repair_tail(before, before_dec.sr)
    if result.status == "repaired":
        after_dec = decode_channels(path)
        y = mono_mix(after_dec.samples)
    return before, y, before_dec.sr, info
