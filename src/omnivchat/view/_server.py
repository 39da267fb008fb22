"""Serving the viewer: the runs opened read-only, a socket on 127.0.0.1, the application in a thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from omnivchat._loopback import HOST, ServerThread, bind, check_host
from omnivchat.view._app import Viewer, make_app
from omnivchat.view._data import RunView, ViewError

DEFAULT_PORT = 8766
CONDITION_DIRS = ("both", "video_only", "audio_only", "neither")
ABLATION_FILE = "ablation.json"


def expand_runs(paths: Sequence[str | Path]) -> list[tuple[Path, str]]:
    """Each run directory with its label; an ablation directory (ablation.json beside its condition folders)
    stands for its conditions' runs, labelled ``<dir>/<condition>``. ViewError for a path that is neither."""
    found: list[tuple[Path, str]] = []
    for given in paths:
        path = Path(given)
        if "\x00" in str(path) or not path.is_dir():
            raise ViewError(f"{path}: no such run directory")
        if (path / "manifest.json").is_file():
            found.append((path, path.resolve().name or str(path)))
        elif (path / ABLATION_FILE).is_file() or any((path / c / "manifest.json").is_file() for c in CONDITION_DIRS):
            conditions = [c for c in CONDITION_DIRS if (path / c / "manifest.json").is_file()]
            found += [(path / c, f"{path.resolve().name}/{c}") for c in conditions]
        else:
            raise ViewError(f"{path}: not a run directory (no manifest.json) nor an ablation directory")
    labels = [label for _, label in found]
    # two runs named alike (two models' "run" folders): their parent folders tell them apart
    labels = [label if labels.count(label) == 1 else f"{path.resolve().parent.name}/{label}" for (path, label) in found]
    return [
        (path, label if labels.count(label) == 1 else f"{label} ({n + 1})")
        for n, ((path, _), label) in enumerate(zip(found, labels, strict=True))
    ]


def open_runs(paths: Sequence[str | Path]) -> list[RunView]:
    """The runs to view, each read once now (so a damaged run is refused before the server starts)."""
    if not paths:
        raise ViewError("give at least one run directory")
    runs = [RunView(path, label) for path, label in expand_runs(paths)]
    for run in runs:
        run.refresh()
    return runs


class ViewServer:
    """The viewer of some runs on ``http://127.0.0.1:<port>/``; ``port=0`` picks a free port. Read-only: stores
    are opened read-only and nothing is written, so any number of viewers may watch a run being written."""

    def __init__(self, run_dirs: Sequence[str | Path], *, host: str = HOST, port: int = DEFAULT_PORT) -> None:
        check_host(host, ViewError, "the viewer shows replies and clips of the runs")
        self.viewer = Viewer(open_runs(run_dirs))
        sock = bind(port, ViewError)
        self.port: int = sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}/"
        self._server = ServerThread(sock, lambda: make_app(self.viewer, self.port), f"view-{self.port}")
        self.benches_read = threading.Event()
        """Set once the native runs' benches are read (in the background from start)."""

    @property
    def runs(self) -> list[RunView]:
        return self.viewer.runs

    def start(self) -> ViewServer:
        self._server.start()
        # a native run's bench (its rubrics and clips) is read beside the first list, not on the first item opened
        threading.Thread(target=self._read_benches, name="omnivchat-view-benches", daemon=True).start()
        return self

    def _read_benches(self) -> None:
        try:
            for reader in self.viewer.readers:
                reader.bench()
        finally:
            self.benches_read.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._server.wait(timeout)

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> ViewServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
