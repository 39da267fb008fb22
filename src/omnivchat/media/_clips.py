"""Checking clips: every clip probed (in parallel, cached by content), each problem named where it is used.

This package knows no bench format: :class:`ClipChecker` takes the uses of clips (:class:`ClipUse`: where, which
file, what the use needs). The native benchmark walks a bench into these uses
(``omnivchat.benchmarks.native.BenchClipChecker``, plugged into ``load_bench(path, check_media=...)``) so that one
pass lists the problems of the files and of the clips together.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from omnivchat.media._cache import content_hash
from omnivchat.media._ffmpeg import MediaError
from omnivchat.media._probe import ProbeResult, _reason, cached_probe, probe_headers

# Below this RMS level an audio track is reported as silent (a warning, never a problem: it may be intended).
SILENT_DBFS = -60.0


@dataclass(frozen=True)
class ClipUse:
    """One use of a clip (a turn of an instance) and what it needs."""

    where: str  # how problems name it: instances.jsonl:<line>: turns[<i>].video
    video: str  # the path as written
    path: Path | None  # resolved inside its directory; None when it escapes
    needs: frozenset[str]  # "video", "audio": what the answer needs of the clip
    why: str = "the use needs audio"  # why audio is needed, as a problem says it


class ClipChecker:
    """Probes every clip used and lists what makes a clip unusable for the uses that need it.

    ``problems = ClipChecker().check(uses)``. Each distinct clip file is probed once however many uses it has,
    files with identical bytes share one probe, and results are cached by content hash (:func:`cached_probe`), so
    checking unchanged clips again probes nothing. Problems, in the order of the uses:

    - a missing, empty (0 bytes) or unreadable clip (corrupt, truncated, random bytes: the probe error is given);
    - a clip with no video stream, or one whose video cannot be decoded or has no size or frame rate;
    - a clip without a decodable audio track in a use that needs audio.

    A silent audio track (below -60 dBFS) where audio is required is listed in ``warnings``, not as a problem.
    ``headers_only``: read each clip's headers and nothing more (:func:`probe_headers`, once per process: about
    2 ms against 24 ms for decoding its audio and reading every packet): the stream problems are the same, a silent
    track or a truncated file is not seen (the check of what is about to be sent, where the route reads the file
    anyway).
    After a call, ``clips``, ``probed`` and ``cached`` count the distinct files, the probes run and the results
    taken from the cache.
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
        headers_only: bool = False,
    ) -> None:
        self.workers = workers or min(16, (os.cpu_count() or 1) + 4)
        self.headers_only = headers_only
        self.cache_dir = cache_dir
        self.progress = progress
        self.warnings: list[str] = []
        self.clips = 0
        self.probed = 0
        self.cached = 0

    def check(self, uses: Sequence[ClipUse]) -> list[str]:
        """The problems of these uses (``warnings`` then holds theirs)."""
        paths = list(dict.fromkeys(u.path for u in uses if u.path is not None))
        results = self._probe_all(paths)
        problems: list[str] = []
        self.warnings = []
        for use in uses:
            if use.path is None:
                problems.append(f"{use.where}: media path {use.video!r} escapes the bench directory")
                continue
            found, notes = _check(use, results[use.path])
            problems.extend(f"{use.where}: {message}" for message in found)
            self.warnings.extend(f"{use.where}: {message}" for message in notes)
        return problems

    def _probe_all(self, paths: list[Path]) -> dict[Path, ProbeResult]:
        """One result per path; a file whose bytes equal an earlier one's takes that one's result, unprobed."""
        self.clips, self.probed, self.cached = len(paths), 0, 0
        results: dict[Path, ProbeResult] = {}
        lock = threading.Lock()
        done = 0

        def tick() -> None:
            nonlocal done
            with lock:
                done += 1
                if self.progress is not None:
                    self.progress(done, len(paths))

        if self.headers_only:  # a few clips, 2 ms each, remembered by the process: no threads, no hashing
            for path in paths:
                results[path] = self._probe(path)
                tick()
            return results
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="clip-probe") as pool:
            hashes = dict(zip(paths, pool.map(_hash_or_none, paths), strict=True))
            first: dict[str, Path] = {}
            for path in paths:
                digest = hashes[path]
                if digest is not None:
                    first.setdefault(digest, path)
            leaders = [p for p in paths if (digest := hashes[p]) is None or first[digest] == p]
            futures = {pool.submit(self._probe, p): p for p in leaders}
            for future in as_completed(futures):
                result = future.result()
                results[futures[future]] = result
                if result.sha256 is not None:  # a hashed file was probed now or taken from the cache
                    if result.cached:
                        self.cached += 1
                    else:
                        self.probed += 1
                tick()
        for path in paths:
            if path not in results:  # same bytes as its leader
                leader = results[first[hashes[path]]]  # type: ignore[index]  # every hash's first path was probed, so its result is there
                info = leader.info.model_copy(update={"path": str(path)}) if leader.info is not None else None
                results[path] = leader.model_copy(update={"path": str(path), "info": info, "cached": True})
                tick()
        return results

    def _probe(self, path: Path) -> ProbeResult:
        if not self.headers_only:
            return cached_probe(path, cache_dir=self.cache_dir)
        try:
            return ProbeResult(path=str(path), info=probe_headers(path))
        except MediaError as err:
            return ProbeResult(path=str(path), error=_reason(err, path))


def _hash_or_none(path: Path) -> str | None:
    try:
        return content_hash(path)
    except MediaError:
        return None  # cached_probe reports why


def _check(use: ClipUse, result: ProbeResult) -> tuple[list[str], list[str]]:
    """(problems, warnings) for one use of a clip, without the location prefix."""
    clip = f"clip {use.video!r}"
    if result.error is not None:
        return [f"unreadable {clip}: {result.error}"], []
    info = result.info
    assert info is not None
    problems: list[str] = []
    warnings: list[str] = []
    if not info.has_video:
        kinds = ", ".join(s.kind for s in info.streams) or "no streams"
        problems.append(f"{clip} has no video stream (it holds: {kinds})")
    elif info.video_codec in (None, "none"):
        problems.append(f"{clip}: video stream cannot be decoded (no decoder for its codec)")
    elif not info.width or not info.height or not info.fps:
        problems.append(f"{clip}: video stream has no usable size or frame rate")
    if "audio" in use.needs:
        if not info.has_audio:
            problems.append(f"{clip} has no audio track, but {use.why}")
        elif info.audio_codec in (None, "none"):
            problems.append(f"{clip}: audio track cannot be decoded (no decoder for its codec), but {use.why}")
        elif info.audio_rms_dbfs is not None and info.audio_rms_dbfs < SILENT_DBFS:
            warnings.append(f"{clip}: audio track is silent ({info.audio_rms_dbfs:.0f} dBFS)")
    return problems, warnings
