"""Rules of the code base that no linter checks: each `# type: ignore` says why, and no sync wrapper erases the
signature of the coroutine function it runs."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "omnivchat"
IGNORE = re.compile(r"#\s*type:\s*ignore(\[[^\]]*\])?(?P<after>.*)$")


def python_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_type_ignore_gives_its_reason() -> None:
    bare = []
    for path in python_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            found = IGNORE.search(line)
            if found is None:
                continue
            reason_after = found.group("after").strip().startswith("#")
            reason_above = number > 1 and lines[number - 2].strip().startswith("#")
            if not (reason_after or reason_above):
                bare.append(f"{path.relative_to(SRC)}:{number}")
    assert not bare, f"'# type: ignore' without a reason: {bare}"


def test_no_signature_erasing_wrapper() -> None:
    wrappers = []
    for path in python_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.match(r"(async\s+)?def \w+\(\*args: Any, \*\*kwargs: Any\)", line):  # a module-level function
                wrappers.append(f"{path.relative_to(SRC)}:{number}")
    assert not wrappers, f"use omnivchat._blocking.blocking (keeps the signature) instead: {wrappers}"
