"""One set of route options: every command that talks to a model takes the same flags from one definition, and
check-route says what failed (audio missing, or the answer wrong)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.routes import get_route
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
SHARED = (
    "--defaults", "--base-url", "--key-file", "--key-field", "--no-key", "--thinking", "--media-input-type",
    "--omit-modalities", "--audio-delivery", "--temperature", "--top-p", "--max-tokens", "--seed",
)  # fmt: skip


@pytest.mark.parametrize("command", [["eval"], ["ablate"], ["check-route"], ["socialomni", "evaluate"]])
def test_every_model_command_takes_the_same_route_options(command):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for flag in SHARED:
        assert flag in result.output, (command, flag)


def test_check_route_blames_what_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    # a model that cannot see but hears: its audio arrives, so the route passes
    heard = runner.invoke(app, ["check-route", "--model", "sim:video-blind"])
    assert heard.exit_code == 0, heard.output
    # a model that cannot hear: the answer is wrong, and the check says so rather than blaming the route
    deaf = runner.invoke(app, ["check-route", "--model", "sim:audio-blind", "-o", str(tmp_path / "c.json")])
    assert deaf.exit_code == 1
    reasons = json.loads((tmp_path / "c.json").read_text())["reasons"]
    assert reasons[0].startswith("answer wrong:")
    # a route that says it heard nothing: audio missing
    with LoopbackServer(default=Behaviour(text="A red square. The audio is unavailable.")) as server:
        args = ["check-route", "--model", "omni", "--base-url", server.base_url, "-o", str(tmp_path / "d.json")]
        assert runner.invoke(app, args).exit_code == 1
    assert json.loads((tmp_path / "d.json").read_text())["reasons"][0].startswith("audio missing:")


def test_check_route_takes_defaults_and_sampling_like_eval(tmp_path, monkeypatch):
    """A user with a defaults file can clear eval's 'no passing audio check' warning: check-route records the
    same settings eval resolves from the same file."""
    monkeypatch.setenv("OMNIVCHAT_HOME", str(tmp_path))
    defaults = tmp_path / "mine.yaml"
    defaults.write_text("omni*:\n  media_input: file\n  include_modalities: false\n")
    with LoopbackServer(default=Behaviour(text="The password is copper meadow, number 53.")) as server:
        args = ["check-route", "--model", "omni-x", "--base-url", server.base_url, "--defaults", str(defaults)]
        result = runner.invoke(app, [*args, "--top-p", "0.5", "-o", str(tmp_path / "c.json")])
        sent = server.chat_requests[0].json
    assert result.exit_code == 1  # the loopback answers the same for silence: the check fails, honestly
    assert sent["top_p"] == 0.5 and sent["temperature"] == 0.0 and "modalities" not in sent
    record = json.loads((tmp_path / "c.json").read_text())
    expected = get_route("omni-x", base_url="http://127.0.0.1:1/v1", defaults_file=defaults).settings
    assert record["settings"]["media_input"] == expected.media_input == "file"
    assert record["sampling"]["top_p"] == 0.5
