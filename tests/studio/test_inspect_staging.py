"""The inspection page shows what was staged: the offline Director records the sampled domain and camera but does
not stage them, so the page marks them "recorded, not staged" (with the camera the clip was rendered with)
instead of showing a sampled camera beside a caption that contradicts it."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.bench import Bench
from omnivchat.cli import app
from omnivchat.studio.inspect import InspectServer


def _get(server: InspectServer, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}"})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _instances(server: InspectServer) -> list[dict[str, Any]]:
    status, body = _get(server, "/api/instances")
    assert status == 200
    return list(json.loads(body)["instances"])


@pytest.fixture(scope="module")
def offline_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("staging") / "bench"
    made = CliRunner().invoke(app, ["studio", "run", "--config", "SVMR", "--n", "2", "-o", str(out), "--no-progress"])
    assert made.exit_code == 0, made.output
    return out


def test_an_offline_bench_marks_camera_and_domain_recorded_not_staged(offline_bench: Path) -> None:
    with InspectServer(offline_bench, port=0) as server:
        views = _instances(server)
        status, script = _get(server, "/static/inspect.js")
    assert status == 200 and b"for (const [label, value] of instance.notes) field(notes, label, value)" in script
    for view in views:
        notes = dict(view["notes"])
        assignment = json.loads((offline_bench / "studio" / "accepted" / f"{view['id']}.json").read_text())["meta"][
            "assignment"
        ]
        assert notes["domain"] == f"{assignment['domain']} (recorded, not staged)"
        spec = json.loads((offline_bench / "media" / view["id"] / "turn1.spec.json").read_text())
        rendered = spec["camera"]["mode"]
        assert notes["camera"] == (
            f"{assignment['camera']} (recorded, not staged; the clip was rendered with the {rendered} camera)"
        )
        assert "not staged" not in notes["language"] and "not staged" not in notes["audio_interference"]
        caption = view["turns"][0]["caption"]
        assert ("front (selfie) camera" in caption) == (rendered == "front")  # the note agrees with the caption


def test_a_bench_not_made_offline_shows_its_notes_as_recorded(small_bench: Bench) -> None:
    with InspectServer(small_bench.root, port=0) as server:
        views = _instances(server)
    assert not any("not staged" in value for view in views for _, value in view["notes"])
