"""A placeholder key (KEY=EMPTY, as vLLM users pass) never changes a reply; a real key echoed inside a reply is
masked and the item says so (``redacted: true`` in the store, the export and `runs show`) (issue 22, item 1)."""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.routes import ChatResponse, Redactor, RouteError, Secret, SpokenReply, is_placeholder
from omnivchat.runs import RunStore
from omnivchat.testing import API_KEY, Behaviour, LoopbackServer

runner = CliRunner()
REPLY = "The box is empty and the sky is blue"
SCENE = {
    "size": [160, 90],
    "background": "navy",
    "objects": [{"shape": "square", "color": "red", "position": "left"}],
    "speech": [{"text": "What is in the box?", "language": "en", "start": 0.2}],
}


def real_key() -> str:
    return "sk-live-" + secrets.token_urlsafe(24)


@pytest.mark.parametrize(
    "key", ["EMPTY", "empty", "none", "None", "dummy", "test", "x", "sk-no-key-required", "SK-NO-KEY-REQUIRED",
            "sk-" + "x" * 24, "0" * 16, "my-vllm-secret"],
)  # fmt: skip
def test_short_or_common_keys_are_placeholders(key):
    assert is_placeholder(key) and Secret(key).placeholder


def test_real_keys_are_secrets():
    google_shaped = "AIza" + secrets.token_urlsafe(26)[:35]  # a Google key's shape, made at run time
    for key in (real_key(), google_shaped, "sk-" + secrets.token_hex(16)):
        assert not is_placeholder(key) and not Secret(key).placeholder


@pytest.mark.parametrize("key", ["EMPTY", "x", "none", "dummy", "test", "sk-no-key-required"])
def test_a_placeholder_never_changes_what_the_model_said(key):
    r = Redactor(Secret(key))
    reply = f"The box is empty and the sky is blue; none of it is a dummy test: {key} x-ray"
    audio = SpokenReply(data=b"RIFF" + key.encode() + b"xxxx", format="wav", transcript=reply)
    out = r.response(ChatResponse(text=reply, reasoning=reply, audio=audio))
    assert out.text == reply and out.reasoning == reply and out.audio == audio and not out.redacted
    partial = r.error(RouteError("length", "cut", partial_text=reply)).partial_text
    assert partial == reply
    # Still never repeated by us where it stands alone in what a server says about the request
    assert (
        r.error(RouteError("http_error", f"HTTP 401: bad key Bearer {key}")).message == "HTTP 401: bad key Bearer ***"
    )
    assert r.text(f"model-{key}extra") == f"model-{key}extra"  # inside a word: not the key


def test_a_real_key_in_the_reply_is_masked_and_marked():
    key = real_key()
    r = Redactor(Secret(key))
    out = r.response(ChatResponse(text=f"your key is {key}"))
    assert out.text == "your key is ***" and out.redacted
    clean = r.response(ChatResponse(text="The box is empty", model=f"m {key}"))
    assert clean.model == "m ***" and not clean.redacted  # the reply itself is intact: not marked
    spoken = r.response(ChatResponse(text="ok", audio=SpokenReply(data=b"RIFF" + key.encode(), format="wav")))
    assert spoken.redacted and key.encode() not in spoken.audio.data


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byo file of two open questions on one real rendered clip, answered by the reply's own words."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("placeholder")
    render_clip(SCENE, root / "media" / "box.mp4")
    rows = [
        {
            "qid": "q1",
            "question": "What is in the box?",
            "answer": "empty",
            "requires": ["video", "audio"],
            "video": "media/box.mp4",
        },
        {
            "qid": "q2",
            "question": "What colour is the sky?",
            "answer": "blue",
            "requires": ["video"],
            "video": "media/box.mp4",
        },
    ]
    path = root / "open.json"
    path.write_text(json.dumps(rows))
    return path


def evaluate(data: Path, server: LoopbackServer, run_dir: Path, key_file: Path) -> str:
    args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", "vllm-served", "--base-url"]
    args += [server.base_url, "--key-file", str(key_file), "--key-field", "KEY", "-o", str(run_dir), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_key_empty_keeps_the_reply_stored_exported_and_scored(data, tmp_path):
    key_file = tmp_path / "vllm.env"
    key_file.write_text("KEY=EMPTY\n")
    run_dir = tmp_path / "run"
    with LoopbackServer(default=Behaviour(text=REPLY), api_key="EMPTY") as server:
        output = evaluate(data, server, run_dir, key_file)
        assert server.chat_requests[0].headers["Authorization"] == "Bearer EMPTY"  # still sent
    assert output.count("treated as a placeholder") == 1, output
    assert "EMPTY" not in output
    with RunStore(run_dir / "store.sqlite", read_only=True) as store:
        results = [store.result(i["key"]) for i in store.items("open")]
    assert [(r.text, r.redacted) for r in results] == [(REPLY, False)] * 2
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "export.json")])
    assert exported.exit_code == 0, exported.output
    records = json.loads((tmp_path / "export.json").read_text())["records"]
    assert [(r["reply"], r["redacted"]) for r in records] == [(REPLY, False)] * 2
    scored = runner.invoke(app, ["score", str(run_dir)], env={"COLUMNS": "200"})
    assert scored.exit_code == 0, scored.output
    assert json.loads((run_dir / "scores.json").read_text())["metrics"]["overall"]["accuracy"] == 1.0
    for path in [*run_dir.rglob("*"), tmp_path / "export.json"]:  # the key itself is written nowhere
        if path.is_file():
            assert b"EMPTY" not in path.read_bytes(), path


def test_a_real_key_echoed_in_a_reply_is_marked_redacted_everywhere(data, tmp_path):
    key = real_key()
    key_file = tmp_path / "company.env"
    key_file.write_text(f"KEY={key}\n")
    run_dir = tmp_path / "run"
    with LoopbackServer(default=Behaviour(text=f"The box holds {API_KEY}"), api_key=key) as server:
        output = evaluate(data, server, run_dir, key_file)
    assert "placeholder" not in output
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "export.json")])
    assert exported.exit_code == 0, exported.output
    records = json.loads((tmp_path / "export.json").read_text())["records"]
    assert [(r["reply"], r["redacted"]) for r in records] == [("The box holds ***", True)] * 2
    shown = runner.invoke(app, ["runs", "show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "warning: 2 open replies held the key and were masked (redacted: true in the export)" in shown.output
    for path in [*run_dir.rglob("*"), tmp_path / "export.json"]:
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_a_store_made_before_redaction_was_recorded_still_reads(tmp_path):
    path = tmp_path / "store.sqlite"
    with RunStore(path) as store:
        store.add_request("k", "candidate", "m", "e", {})
        store.finish_attempt(store.start_attempt("k", "i"), "k", ChatResponse(text="old reply"))
    with sqlite3.connect(path) as db:  # as an older omnivchat wrote it: no redacted column
        db.execute("ALTER TABLE results DROP COLUMN redacted")
    with RunStore(path, read_only=True) as store:
        assert store.result("k").text == "old reply" and not store.result("k").redacted
        assert store.redacted_counts() == {}
    with RunStore(path) as store:  # a writer adds the column; the old result reads as not redacted
        assert not store.result("k").redacted and store.redacted_counts() == {}


def test_a_native_run_exports_its_redacted_replies(small_bench, tmp_path):
    key = real_key()
    key_file = tmp_path / "company.env"
    key_file.write_text(f"KEY={key}\n")
    run_dir = tmp_path / "run"
    args = ["eval", "--bench", str(small_bench.root), "--model", "my-omni", "--key-file", str(key_file)]
    with LoopbackServer(default=Behaviour(text=f"It is {API_KEY}"), api_key=key) as server:
        result = runner.invoke(app, [*args, "--key-field", "KEY", "--base-url", server.base_url, "-o", str(run_dir)])
        assert result.exit_code == 0, result.output
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(tmp_path / "export.json")])
    assert exported.exit_code == 0, exported.output
    records = json.loads((tmp_path / "export.json").read_text())["records"]
    assert records and all(r["reply"] == "It is ***" and r["redacted"] for r in records)


def test_a_socialomni_export_marks_redacted_answers(tmp_path):
    from socialomni_factory import make_socialomni

    from omnivchat.testing import message_text

    annotations, media, _ = make_socialomni(tmp_path / "so")
    key = real_key()
    key_file = tmp_path / "company.env"
    key_file.write_text(f"KEY={key}\n")

    def rules(request_json):
        if "Target participant:" in message_text(request_json):  # a How question: the answer echoes the key
            return Behaviour(text=f"Sure, my key is {API_KEY}.")
        return Behaviour(text="A")

    run_dir = tmp_path / "run"
    args = ["socialomni", "evaluate", "--annotations", str(annotations), "--media", str(media), "-o", str(run_dir)]
    args += ["--model", "my-omni", "--key-file", str(key_file), "--key-field", "KEY", "--limit", "4", "--no-progress"]
    with LoopbackServer(rules=rules, api_key=key) as server:
        result = runner.invoke(app, [*args, "--tasks", "when,how", "--base-url", server.base_url])
        assert result.exit_code == 0, result.output
    out = tmp_path / "export.json"
    exported = runner.invoke(app, ["socialomni", "export", str(run_dir), "-o", str(out), "--allow-incomplete"])
    assert exported.exit_code == 0, exported.output
    items = [r for r in json.loads(out.read_text())["records"] if r["status"] == "done"]
    assert {(i["task"], i["redacted"]) for i in items} == {("when", False), ("how", True)}
    assert all(i["reply"] == "Sure, my key is ***." for i in items if i["task"] == "how")
