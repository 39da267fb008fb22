"""Helpers for the key-leak tests: a fresh key per test, and a scan of every file and everything printed."""

from __future__ import annotations

import base64
import logging
import os
import re
import secrets
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

FRAGMENT = 8
"""Any run of this many characters of the key counts as a leak (a key cut in two leaves such runs)."""


def make_key() -> str:
    # URL-safe base64 (not hex) so that an 8-character piece of the key cannot turn up by chance among the
    # sha256 hashes that run files are full of.
    return "sk-test-" + secrets.token_urlsafe(24)


def _aligned_base64(text: bytes) -> set[bytes]:
    """The parts of ``text``'s base64 that do not depend on what surrounds it, at each of the 3 alignments."""
    cores = set()
    for start in range(3):
        piece = text[start:]
        piece = piece[: len(piece) // 3 * 3]
        if piece:
            cores.add(base64.b64encode(piece))
            cores.add(base64.urlsafe_b64encode(piece))
    return cores


def needles(key: str) -> set[bytes]:
    """Lower-cased byte strings whose presence anywhere means the key leaked: every FRAGMENT-long piece of the key,
    and every such piece of the key's base64 at any of the three alignments (so inside `base64("Bearer KEY")` too).
    """
    from urllib.parse import quote

    raw = key.encode()
    forms = {raw, quote(key, safe="").encode(), *_aligned_base64(raw)}
    return {f[i : i + FRAGMENT].lower() for f in forms for i in range(len(f) - FRAGMENT + 1)}


def spelled_needles(key: str) -> set[bytes]:
    """Pieces of the key's letters and digits, forwards and backwards, of 2 x FRAGMENT: found in a file's letters
    and digits alone, they mean the key was written spaced out, split over lines, or reversed. (Longer than the
    plain pieces: the letters and digits of a whole file close up, and short runs would turn up by chance.)"""
    letters = re.sub(r"[^0-9a-z]", "", key.lower()).encode()
    size = 2 * FRAGMENT
    return {k[i : i + size] for k in (letters, letters[::-1]) for i in range(len(k) - size + 1)}


class LeakScan:
    """Collects what a test wrote and printed, then finds any trace of the key in it."""

    def __init__(self, key: str, roots: list[Path], exclude: set[Path]) -> None:
        self.key = key
        self.roots = roots
        self.exclude = exclude
        self.printed: list[tuple[str, bytes]] = []

    def add_result(self, label: str, result: Result) -> Result:
        """Keep a CliRunner result's stdout, stderr and any exception with its traceback (what a user would see)."""
        out = result.stdout_bytes + (result.stderr_bytes or b"")
        if result.exc_info is not None and not isinstance(result.exception, SystemExit):
            out += "".join(traceback.format_exception(*result.exc_info)).encode()
        self.printed.append((label, out))
        return result

    def add_text(self, label: str, text: str) -> None:
        self.printed.append((label, text.encode()))

    def files(self) -> Iterator[Path]:
        for root in self.roots:
            for path in sorted(root.rglob("*")):
                if path.is_file() and path not in self.exclude:
                    yield path

    def leaks(self) -> list[str]:
        found = needles(self.key)
        spelled = spelled_needles(self.key)
        places = [(str(p), p.read_bytes()) for p in self.files()]  # SQLite pages and WAL files, read raw
        places += self.printed
        out = []
        for label, data in places:
            lowered = data.lower()
            hits = sorted(n.decode(errors="replace") for n in found if n in lowered)
            # a key spaced out, or split over lines (shown raw or escaped as \n), closes up
            squeezed = re.sub(rb"[^0-9a-z]", b"", re.sub(rb"\\[nrt]", b"", lowered))
            hits += sorted(f"spelled {n.decode()}" for n in spelled if n in squeezed)
            if hits:
                out.append(f"{label}: {len(hits)} pieces, e.g. {hits[0]!r}")
        return out

    def assert_clean(self) -> None:
        leaks = self.leaks()
        assert not leaks, "the key leaked into:\n  " + "\n  ".join(leaks)


@pytest.fixture
def key() -> str:
    """A fresh test key (never a real one)."""
    return make_key()


@pytest.fixture
def key_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the key file lives: outside the scanned directory, as a user's private key file would."""
    return tmp_path_factory.mktemp("private")


@pytest.fixture
def key_file(key: str, key_dir: Path) -> Path:
    path = key_dir / "company.env"
    path.write_text(f"OMNIVCHAT_TEST_KEY={key}\n", encoding="utf-8")
    return path


@pytest.fixture
def scan(
    key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
):
    """A LeakScan over tmp_path (the run dirs, and OMNIVCHAT_HOME with the route-check registry), the media
    cache and everything printed; ``scan.assert_clean()`` also takes what reached the file descriptors and the
    log records a user would see (warnings and above)."""
    caplog.set_level(logging.WARNING)
    home = tmp_path / "home"
    monkeypatch.setenv("OMNIVCHAT_HOME", str(home))
    roots = [tmp_path]
    cache = os.environ.get("OMNIVCHAT_CACHE_DIR")
    if cache:
        roots.append(Path(cache))
    leak_scan = LeakScan(key, roots, exclude=set())
    original: Callable[[], None] = leak_scan.assert_clean

    def assert_clean() -> None:
        captured = capfd.readouterr()
        leak_scan.add_text("captured stdout", captured.out)
        leak_scan.add_text("captured stderr", captured.err)
        leak_scan.add_text("log records", caplog.text)
        original()

    leak_scan.assert_clean = assert_clean  # type: ignore[method-assign]
    return leak_scan
