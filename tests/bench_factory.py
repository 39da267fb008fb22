"""Builders of small bench directories for tests."""

import json
from pathlib import Path


def instance(id_: str = "a1", subcategory: str = "SVMR", turns: int | list = 1, **extra) -> dict:
    """An instance as JSON; `turns` is a count of well-formed turns or the literal list of turns."""
    data = {
        "id": id_,
        "subcategory": subcategory,
        "language": "en",
        "turns": turns
        if isinstance(turns, list)
        else [
            {"video": f"media/{id_}/turn{n}.mp4", **({"reply": f"reply {n}"} if n < turns else {})}
            for n in range(1, turns + 1)
        ],
        "reference": "The door on your left is closed.",
        "rubric": [
            {"tier": 0, "text": "The reply is in English."},
            {"tier": 1, "text": "Says the left door is closed."},
            {"tier": 2, "text": "Answers briefly."},
        ],
    }
    data.update(extra)
    return data


def write_bench(root: Path, rows: list, *, info: str = "name: test-bench\nversion: '1'\n", media: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bench.yaml").write_text(info, encoding="utf-8")
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
    (root / "instances.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if media:
        for row in rows:
            if isinstance(row, dict):
                for turn in row.get("turns", []):
                    video = turn.get("video", "") if isinstance(turn, dict) else ""
                    if video and not video.startswith(("/", "..")) and ".." not in video:
                        path = root / video
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_bytes(b"clip")  # the loader checks presence; decoding is the media package's job
    return root


# One real clip for the benchmarks' tests (omnivchat.synth.render_clip): a red square, asked about in English
RED_SQUARE_SCENE = {
    "size": [160, 90],
    "background": "navy",
    "objects": [{"shape": "square", "color": "red", "position": "left"}],
    "speech": [{"text": "What colour is the square?", "language": "en", "start": 0.2}],
}


REALDATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "realdata"
"""The real release files beside the checkout (../shared/realdata), read by tests that skip where it is absent."""


def realdata(path: str) -> Path:
    """A real release file under REALDATA, or the calling test is skipped (never committed into the project)."""
    import pytest

    found = REALDATA / path
    if not found.is_file():
        pytest.skip(f"{found} is not on this machine")
    return found
