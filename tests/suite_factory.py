"""A suite on real data for the suite tests: the example bench and a small byo file with a real clip; attempts
counted in every store of a suite directory."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

from omnivchat.runs import run_cost

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bench"


def byo_rows() -> list[dict[str, object]]:
    return [
        {"qid": f"q{n}", "question": f"Which colour is square number {n}?",
         "options": ["red", "blue", "green", "yellow"], "answer": "A",
         "requires": ["video", "audio"], "category": "cross-modal", "video": "media/a.mp4"}
        for n in range(4)
    ]  # fmt: skip


def write_suite(root: Path, models: str, *, extra: str = "", ablate: bool = False) -> Path:
    """A suite of ``models`` on the example bench and a byo file of 4 multiple-choice items (a real clip)."""
    (root / "media").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE / "media" / "ex-aor-en" / "turn1.mp4", root / "media" / "a.mp4")
    (root / "qa.json").write_text(json.dumps(byo_rows()))
    path = root / "suite.toml"
    path.write_text(
        f"max_attempts = 1\n{extra}\n[models]\n{models}\n\n"
        f'[benchmarks.example]\nbenchmark = "omnivchat"\ndata = "{EXAMPLE}"\n\n'
        f'[benchmarks.qa]\nbenchmark = "byo"\ndata = "qa.json"\nablate = {str(ablate).lower()}\n\n'
        '[judges]\npanel = "rule"\n'
    )
    return path


def attempts(out: Path) -> int:
    """Every attempt any store of the suite directory records."""
    return sum(run_cost(store.parent).total.attempts for store in out.glob("**/store.sqlite"))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed now: a connection there is refused
