"""`eval` applies validate's own clip check to each item it sends: a clip without an audio track for an instance
that needs the audio fails that item as `media`, in validate's words, and the other items run; nothing is sent for
it and it is never scored as an answer."""

from __future__ import annotations

import shutil

from typer.testing import CliRunner

from omnivchat import media
from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()


def test_an_item_validate_refuses_fails_in_eval_with_the_same_line(small_bench, tmp_path):
    clip = small_bench.media_path(small_bench.get("s1").turns[-1])  # s1 requires video and audio
    shutil.copy(media.strip_audio(clip), clip)
    checked = runner.invoke(app, ["validate", str(small_bench.root)], env={"COLUMNS": "300"})
    assert checked.exit_code != 0
    line = next(x for x in checked.output.splitlines() if "has no audio track, but the instance requires audio" in x)
    said = line.split("instances.jsonl", 1)[1]
    with LoopbackServer(Behaviour(text="An answer.")) as srv:
        args = ["eval", "--bench", str(small_bench.root), "--model", "my-omni", "--base-url", srv.base_url]
        result = runner.invoke(app, [*args, "--no-key", "-o", str(tmp_path / "run")], env={"COLUMNS": "300"})
        sent = len(srv.chat_requests)
    assert result.exit_code == 1 and "3 done" in result.output and "1 failed" in result.output, result.output
    assert "media: 1" in result.output and said in result.output
    assert sent == 3  # the other items ran; nothing went for s1
