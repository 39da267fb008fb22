"""Content hashing and the derived-file cache.

A derived file is stored under a key made of the source's content hash, the operation, its parameters, the
ffmpeg build and our recipe version, so a repeated call finds the file and runs no encoder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omnivchat.media._ffmpeg import MediaError, encoder_version

# Bump when the ffmpeg arguments of an operation change, so old cache entries are not reused.
RECIPE_VERSION = "1"
DEFAULT_CACHE_DIR = Path("~/.cache/omnivchat/media")
CACHE_ENV = "OMNIVCHAT_CACHE_DIR"

_hash_lock = threading.Lock()
# (resolved path, size, mtime_ns, inode) -> sha256; a changed file gets a new entry.
_hash_memo: dict[tuple[str, int, int, int], str] = {}


def cache_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory: ``override``, else ``$OMNIVCHAT_CACHE_DIR``, else ``~/.cache/omnivchat/media``."""
    raw = override if override is not None else os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR
    return Path(raw).expanduser()


def content_hash(path: str | os.PathLike[str]) -> str:
    """The sha256 (hex) of the file's bytes; memoised per (path, size, mtime, inode) within a process."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise MediaError(f"{p}: no such file") from None
    except OSError as exc:
        raise MediaError(f"{p}: cannot read ({exc.strerror})") from None
    if not p.is_file():
        raise MediaError(f"{p}: not a regular file")
    memo_key = (str(p.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    with _hash_lock:
        known = _hash_memo.get(memo_key)
    if known is not None:
        return known
    h = hashlib.sha256()
    try:
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise MediaError(f"{p}: cannot read ({exc.strerror})") from None
    digest = h.hexdigest()
    with _hash_lock:
        _hash_memo[memo_key] = digest
    return digest


def forget_hashes() -> None:
    """Drop the hashes memoised in this process: a file rewritten with its size and modification time kept
    (os.utime) would otherwise keep its old hash, and so the media derived from the old bytes."""
    with _hash_lock:
        _hash_memo.clear()


def cache_key(source_hash: str, op: str, params: dict[str, Any]) -> str:
    """The cache key (sha256 hex) of ``op`` with ``params`` applied to the content ``source_hash``."""
    blob = json.dumps(
        {
            "source": source_hash,
            "op": op,
            "params": params,
            "encoder": encoder_version(),
            "recipe": RECIPE_VERSION,
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def cached_path(key: str, op: str, suffix: str, root: Path) -> Path:
    """Where the entry ``key`` lives: ``<root>/<op>/<key[:2]>/<key><suffix>``."""
    return root / op / key[:2] / f"{key}{suffix}"


def atomic_build(target: Path, build: Callable[[Path], None], *, subject: Path | str) -> Path:
    """Run ``build(tmp)`` to write a temporary file next to ``target``, then rename it into place.

    Readers never see a half-written file, and two processes racing on one key both end with a whole one.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MediaError(f"{subject}: cannot create cache dir {target.parent} ({exc.strerror})") from None
    fd, tmp_name = tempfile.mkstemp(prefix=".tmp-", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        build(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def deliver(cached: Path, out: str | os.PathLike[str] | None) -> Path:
    """Return the cached file, or a copy of it at ``out`` when the caller asked for a path of its own."""
    if out is None:
        return cached
    dest = Path(out)
    if dest.exists() and dest.resolve() == cached.resolve():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".tmp-{os.getpid()}-{dest.name}")
    shutil.copyfile(cached, tmp)  # a copy, not a link: editing `out` must never corrupt the cache
    os.replace(tmp, dest)
    return dest
