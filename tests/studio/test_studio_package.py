"""The studio package: a light import, its public names, and the request path (media) never reaching into it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import omnivchat.media
import omnivchat.studio
import omnivchat.synth

HEAVY = ("av", "numpy", "PIL", "matplotlib", "scipy")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys; {statement}; print(' '.join(k for k in {HEAVY!r} if k in sys.modules))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_package_imports_are_lazy() -> None:
    assert _loaded_after("import omnivchat.studio, omnivchat.synth") == []


def test_every_public_name_resolves() -> None:
    for module in (omnivchat.studio, omnivchat.synth):
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"


def test_media_never_imports_studio() -> None:
    """media is below studio: no module of it names omnivchat.studio (the renderer and tail repair moved out)."""
    root = Path(omnivchat.media.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith("omnivchat.studio") for n in names), f"{path.name} imports {names}"
    assert not any(n in omnivchat.media.__all__ for n in ("render_clip", "SceneSpec", "repair_tail"))
