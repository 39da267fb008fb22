"""Keys before requests: a hosted model without a key refuses to start, naming where it looked; key files are
dotenv files (python-dotenv), with clear errors for the broken ones."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.routes import CredentialError, Secret, get_route
from omnivchat.routes._credentials import read_key_file
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()


def test_a_hosted_model_without_a_key_refuses_before_anything(monkeypatch, small_bench, tmp_path):
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(CredentialError, match=r"needs an API key .* set DASHSCOPE_API_KEY .* --no-key"):
        get_route("qwen3-omni-flash")
    with LoopbackServer(default=Behaviour(text="hi")) as server:
        out = tmp_path / "run"
        args = ["eval", "--bench", str(small_bench.root), "--model", "qwen3-omni-flash", "--base-url"]
        result = runner.invoke(app, [*args, server.base_url, "-o", str(out), "--no-progress"])
        assert result.exit_code == 2 and "DASHSCOPE_API_KEY" in result.output
        assert server.count == 0 and not out.exists()  # nothing sent, nothing written
        # --no-key: a server that needs none (the request goes without Authorization)
        result = runner.invoke(app, [*args, server.base_url, "-o", str(out), "--no-key", "--no-progress"])
        assert result.exit_code == 0, result.output
        assert server.count == 4 and "authorization" not in {k.lower() for k in server.chat_requests[0].headers}


def test_no_key_and_a_key_contradict(tmp_path):
    with pytest.raises(CredentialError, match="contradict"):
        get_route("qwen3-omni-flash", api_key=Secret("k"), no_key=True)


def test_a_missing_key_file_field_names_the_file_and_field(tmp_path):
    path = tmp_path / "private.env"
    path.write_text("OTHER=1\n")
    with pytest.raises(CredentialError, match=r"private\.env: no field named DASHSCOPE_API_KEY"):
        get_route("qwen3-omni-flash", key_file=path, key_field="DASHSCOPE_API_KEY")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\xef\xbb\xbfKEY=abc\n", "abc"),  # a byte-order mark (Notepad)
        (b"export KEY='abc' # comment\n", "abc"),
        (b'# keys\nKEY="a b c"\n', "a b c"),
        (b"KEY=abc # trailing comment\n", "abc"),
    ],
)
def test_key_files_as_editors_write_them(tmp_path, content, expected):
    path = tmp_path / "k.env"
    path.write_bytes(content)
    assert read_key_file(path, "KEY").reveal() == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"KEY=\xff\xfeabc\n", "not UTF-8 text"),
        (b"KEY=\n", "field KEY is empty"),
        (b"", "no field named KEY"),
    ],
)
def test_broken_key_files_are_named(tmp_path, content, message):
    path = tmp_path / "k.env"
    path.write_bytes(content)
    with pytest.raises(CredentialError, match=message) as caught:
        read_key_file(path, "KEY")
    assert str(path) in str(caught.value)
