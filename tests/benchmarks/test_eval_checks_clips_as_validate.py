"""`eval` checks a native bench's clips with validate's own check before anything is sent: a clip without an audio
track for an instance that needs the audio is refused by both, with the same line, and nothing is sent or written."""

from __future__ import annotations

import shutil

from typer.testing import CliRunner

from omnivchat import media
from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()


def test_eval_refuses_what_validate_refuses_with_the_same_line(small_bench, tmp_path):
    clip = small_bench.media_path(small_bench.get("s1").turns[-1])  # s1 requires video and audio
    shutil.copy(media.strip_audio(clip), clip)
    checked = runner.invoke(app, ["validate", str(small_bench.root)], env={"COLUMNS": "300"})
    assert checked.exit_code != 0 and "has no audio track, but the instance requires audio" in checked.output
    line = next(x for x in checked.output.splitlines() if "has no audio track" in x).strip()
    with LoopbackServer(Behaviour(text="An answer.")) as srv:
        args = ["eval", "--bench", str(small_bench.root), "--model", "my-omni", "--base-url", srv.base_url]
        result = runner.invoke(app, [*args, "--no-key", "-o", str(tmp_path / "run")], env={"COLUMNS": "300"})
        assert srv.chat_requests == []
    assert result.exit_code == 2 and line.split("instances.jsonl")[-1] in result.output, result.output
    assert not (tmp_path / "run").exists()
