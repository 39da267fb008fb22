"""Keyless judges: a judge entry with its own base_url and no api_key_env sends no key, whatever its model's name
defaults to (gpt-* OPENAI_API_KEY, gemini-* GEMINI_API_KEY, qwen* DASHSCOPE_API_KEY); `judge`, `socialomni judge`
and `socialomni rescore` take --no-key (issue 22, item 2). The paper-v3 panel, served on 127.0.0.1 under the
judges' real names, judges a run with no key set."""

from __future__ import annotations

import csv
import json
import secrets

import pytest
from socialomni_factory import candidate_answers, make_socialomni
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.judges import JudgesFileError, JudgeSpec, judge_key, judge_route, load_judges
from omnivchat.routes import CredentialError
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
PAPER_V3 = ("gpt-4o", "gemini-2.5-pro", "qwen3-omni")
# hosted keys made at run time (none committed), each long enough to be a secret rather than a placeholder
HOSTED_KEYS = {
    name: "sk-" + secrets.token_hex(12) for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "DASHSCOPE_API_KEY")
}


def panel_file(tmp_path, base_url, **extra):
    """The paper-v3 panel under the judges' real names, each served at ``base_url``, no api_key_env."""
    path = tmp_path / "judges.json"
    entries = [{"name": n, "model": n, "base_url": base_url, "max_concurrency": 2, **extra} for n in PAPER_V3]
    path.write_text(json.dumps({"judges": entries}))
    return path


def unset_hosted_keys(monkeypatch):
    for name in HOSTED_KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A complete --limit 4 SocialOmni run (Who 3, When 4, How 3) from a model served with no key."""
    dataset = make_socialomni(tmp_path_factory.mktemp("socialomni"))
    annotations, media, contexts = dataset
    out = tmp_path_factory.mktemp("keyless") / "run"
    args = ["socialomni", "evaluate", "--annotations", str(annotations), "--media", str(media), "--output", str(out)]
    args += ["--model", "self-served-omni", "--no-key", "--limit", "4", "--no-progress", "--base-url"]
    with LoopbackServer(rules=candidate_answers) as server:
        result = runner.invoke(app, [*args, server.base_url])
        assert result.exit_code == 0, result.output
    return out, contexts


def test_a_judge_with_its_own_base_url_sends_no_key(monkeypatch):
    unset_hosted_keys(monkeypatch)
    for name in PAPER_V3:
        spec = JudgeSpec(name=name, model=name, base_url="http://127.0.0.1:9/v1")
        assert judge_key(spec) is None
        judge_route(spec)  # today: "needs an API key"
    with pytest.raises(CredentialError, match="OPENAI_API_KEY"):  # no base_url: the hosted default, its key
        judge_key(JudgeSpec(name="gpt-4o", model="gpt-4o"))
    monkeypatch.setenv("OPENAI_API_KEY", HOSTED_KEYS["OPENAI_API_KEY"])
    assert judge_key(JudgeSpec(name="j", model="gpt-4o", base_url="http://127.0.0.1:9/v1")) is None  # never sent


def test_no_key_and_api_key_env_contradict(tmp_path):
    path = tmp_path / "judges.json"
    path.write_text(json.dumps({"judges": [{"name": "j", "model": "m", "api_key_env": "K", "no_key": True}]}))
    with pytest.raises(JudgesFileError, match="no_key and api_key_env contradict"):
        load_judges(path)


@pytest.mark.parametrize("hosted_keys_set", [False, True])
def test_the_paper_v3_panel_served_locally_with_no_key_judges_a_run(run, tmp_path, monkeypatch, hosted_keys_set):
    unset_hosted_keys(monkeypatch)
    if hosted_keys_set:  # set or not, a hosted key never goes to a server the judges file names
        for name, value in HOSTED_KEYS.items():
            monkeypatch.setenv(name, value)
    out, contexts = run
    with LoopbackServer(default=Behaviour(text="75")) as judges:
        args = ["judge", str(out), "--contexts", str(contexts), "--judges", str(panel_file(tmp_path, judges.base_url))]
        result = runner.invoke(app, [*args, "--panel", "paper-v3", "-o", str(tmp_path / "judging"), "--no-progress"])
        assert result.exit_code == 0, result.output
        assert judges.count == 3 * 3
        assert all("authorization" not in {k.lower() for k in r.headers} for r in judges.chat_requests)
        assert {r.json["model"] for r in judges.chat_requests} == set(PAPER_V3)
    summary = json.loads((tmp_path / "judging" / "summary.json").read_text())
    assert summary["metrics"]["qgold"] == 75.0 and summary["metrics"]["complete"]
    for path in (tmp_path / "judging").rglob("*"):
        if path.is_file():
            assert not any(v.encode() in path.read_bytes() for v in HOSTED_KEYS.values()), path


def archive(tmp_path):
    path = tmp_path / "ensemble_response_scores.csv"
    columns = ["model", "display_model", "item_id", "context", "target_question", "reference", "candidate"]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        row = {"model": "m1", "display_model": "M1", "item_id": "video_0001", "context": "c", "reference": "r"}
        writer.writerow({**row, "target_question": "What should Anna say?", "candidate": "Hi all."})
    return path


def test_rescore_and_judge_take_no_key(run, tmp_path, monkeypatch):
    monkeypatch.delenv("LOCAL_JUDGE_KEY", raising=False)
    out, contexts = run
    with LoopbackServer(default=Behaviour(text="50")) as judges:
        path = panel_file(tmp_path, judges.base_url, api_key_env="LOCAL_JUDGE_KEY")
        rescore = ["socialomni", "rescore", "--paper", str(archive(tmp_path)), "--judges", str(path), "--panel"]
        rescore += ["paper-v3", "-o", str(tmp_path / "rs"), "--no-progress"]
        refused = runner.invoke(app, rescore)
        assert refused.exit_code == 2 and "LOCAL_JUDGE_KEY" in refused.output and judges.count == 0
        result = runner.invoke(app, [*rescore, "--no-key"])
        assert result.exit_code == 0, result.output
        assert judges.count == 3
        judge = ["socialomni", "judge", str(out), "--contexts", str(contexts), "--judges", str(path), "--panel"]
        judge += ["paper-v3", "-o", str(tmp_path / "judging"), "--no-progress"]
        assert runner.invoke(app, judge).exit_code == 2 and judges.count == 3
        result = runner.invoke(app, [*judge, "--no-key"])
        assert result.exit_code == 0, result.output
        assert judges.count == 3 + 9
        again = runner.invoke(app, [*judge, "--no-key"])  # the key setting is no identity: resumed, nothing sent
        assert again.exit_code == 0 and judges.count == 3 + 9
        assert all("authorization" not in {k.lower() for k in r.headers} for r in judges.chat_requests)
    manifest = json.loads((tmp_path / "judging" / "manifest.json").read_text())
    assert all("no_key" not in j and "api_key_env" not in j for j in manifest["judges"])


def test_a_placeholder_judge_key_is_said_once(run, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCAL_JUDGE_KEY", "EMPTY")
    out, contexts = run
    with LoopbackServer(default=Behaviour(text="100")) as judges:
        path = panel_file(tmp_path, judges.base_url, api_key_env="LOCAL_JUDGE_KEY")
        args = ["judge", str(out), "--contexts", str(contexts), "--judges", str(path), "--panel", "paper-v3"]
        result = runner.invoke(app, [*args, "-o", str(tmp_path / "judging"), "--no-progress"])
        assert result.exit_code == 0, result.output
        assert judges.chat_requests[0].headers["Authorization"] == "Bearer EMPTY"
    for name in PAPER_V3:
        assert result.output.count(f"judge {name!r}: its key is treated as a placeholder") == 1, result.output
