"""``omnivchat view --export DIR``: the same viewer as static files, opened from disk (file://) or shared with the
run directories. ``DIR/index.html`` and ``DIR/static/`` are the page; ``DIR/data/runs.js`` holds every row and
``DIR/data/item-<run>-<n>.js`` each item's detail, as scripts (a page opened from disk may load scripts beside it,
not fetch JSON). Clips and spoken replies are linked by relative paths, never copied; the page filters, sorts
and pairs in the browser what the server would."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from omnivchat._files import OutputError, check_output_dir, write_text_atomic
from omnivchat.view._app import Viewer, static_files
from omnivchat.view._server import open_runs

_MARK = "omnivchat-view-export"
_REPLY_CHARS = 400  # what a side-by-side row shows of each reply


@dataclass(frozen=True)
class Written:
    index: Path
    runs: int
    items: int


def _json(value: Any) -> str:
    # ASCII-only JSON: no byte of a hostile reply can end the script or confuse its encoding
    return json.dumps(value, ensure_ascii=True)


def _link(target: Path, out: Path) -> str:
    return quote(Path(os.path.relpath(target.resolve(), out.resolve())).as_posix())


def export_viewer(run_dirs: Sequence[str | Path], out: str | Path) -> Written:
    """Write the viewer of ``run_dirs`` into the new (or empty, or an earlier export's) directory ``out``."""
    out = Path(out)
    check_output_dir(out, ours=lambda p: (p / "data" / _MARK).is_file(), kind="a viewer export")
    for run_dir in run_dirs:  # a run directory holds what its commands wrote, nothing else
        if Path(run_dir).resolve() in (out.resolve(), *out.resolve().parents):
            raise OutputError(f"{out} is inside the run {run_dir}; export the viewer to a folder outside it")
    viewer = Viewer(open_runs(run_dirs))
    static = static_files()
    page = static["index.html"].decode("utf-8").replace("<!--DATA-->", '<script src="data/runs.js"></script>\n')
    rows: list[list[dict[str, Any]]] = []
    items = 0
    for n, (run, reader) in enumerate(zip(viewer.runs, viewer.readers, strict=True)):
        run.wait_full()
        run.refresh()
        listed = []
        for index, row in enumerate(run.with_questions()):
            found = run.record(row.task, row.id)
            reply = found[1].reply if found else None
            shown = None if reply is None else reply[:_REPLY_CHARS]
            listed.append({**row.public(), "search": row.search, "reply": shown})
            detail = reader.detail(row.task, row.id, n) or {}
            paths = {c.turn: c.path for c in reader.clips(row.task, row.id)}
            for clip in detail.get("clips", []):
                clip["url"] = _link(paths[clip["turn"]], out) if clip["turn"] in paths else ""
            if detail.get("spoken"):
                audio = reader.audio(row.task, row.id)
                detail["spoken"]["url"] = _link(audio, out) if audio else ""
            script = f"omnivchatViewItem({n}, {index}, {_json(detail)});\n"
            write_text_atomic(out / "data" / f"item-{n}-{index}.js", script)
            items += 1
        rows.append(listed)
    runs = [{"index": n, **run.info} for n, run in enumerate(viewer.runs)]
    data = _json({"runs": runs, "rows": rows, "items": {}})
    write_text_atomic(out / "data" / "runs.js", f"window.OMNIVCHAT_VIEW = {data};\n")
    for name in ("viewer.js", "viewer.css"):
        write_text_atomic(out / "static" / name, static[name].decode("utf-8"))
    write_text_atomic(out / "index.html", page)
    write_text_atomic(out / "data" / _MARK, "a static export of omnivchat view\n")
    return Written(out / "index.html", len(runs), items)
