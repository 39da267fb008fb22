"""A fresh clone works for anyone (issue 22, item 11): no message, help text or docstring of the package names a
path of our own machines (the `rl` install hint named /opt/wheels), and `.ci/run` proves that the tests needing an
extra or a group pass or skip in an environment synced with plain `uv sync`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
# An absolute path under a machine's own folders; "studio/work/<id>" or "{STUDIO_DIR}/work/" are relative paths.
MACHINE_PATH = re.compile(r"(?<![\w}.~-])/(opt|work|root|tmp|home|mnt|srv)/")


def test_no_user_facing_text_names_a_path_of_our_machines() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "src" / "omnivchat").rglob("*"))
        if path.suffix in (".py", ".j2", ".html", ".yaml", ".toml", ".txt", ".md")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if MACHINE_PATH.search(line)
    ]
    assert not hits, "\n".join(hits)


def test_the_pattern_finds_the_paths_it_is_for() -> None:
    assert MACHINE_PATH.search('uv pip install --find-links /opt/wheels "torch==2.13.0+cpu"')
    assert MACHINE_PATH.search("see /work/shared/realdata") and MACHINE_PATH.search("written to /tmp/x")
    assert not MACHINE_PATH.search("studio/work/<id>/ and {STUDIO_DIR}/work/{job.id}")
    assert not MACHINE_PATH.search("https://download.pytorch.org/whl/cpu")


def test_ci_runs_the_whole_suite_in_an_environment_without_extras() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    plain = script.index('UV_PROJECT_ENVIRONMENT="$plain_env" uv sync')
    assert plain < script.index("uv sync --group llama")  # before anything installs an extra
    block = script[plain : script.index("uv sync --group llama")]
    assert re.search(r"uv sync --frozen(?! --(extra|group|all))", block)  # plain: no extra, no group
    # the README's test command, whole: every test states what it needs, so no hand-kept list can go stale
    run = re.search(r"uv run --frozen --no-sync pytest([^|\n]*)\|\| plain_status", block)
    assert run is not None and "tests/" not in run.group(1) and "exit 1" in block
