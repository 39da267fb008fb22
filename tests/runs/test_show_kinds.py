"""`runs show` reads every kind of run directory the runner makes: a native run, a SocialOmni run and its judging
directory; anything else is one line naming the directory and what was expected."""

from __future__ import annotations

import json

import pytest
from socialomni_factory import candidate_answers, make_socialomni
from typer.testing import CliRunner

from omnivchat.benchmarks import status as run_status
from omnivchat.cli import app
from omnivchat.socialomni import SOCIALOMNI_JUDGING_PROTOCOL, SOCIALOMNI_PROTOCOL
from omnivchat.socialomni._run import PROTOCOL as SO_PROTOCOL
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
PANEL = ("gpt-5.6-sol", "gemini-3.8-flash", "qwen3.8-omni")


@pytest.fixture(scope="module")
def socialomni_run(tmp_path_factory):
    """A SocialOmni run (3 Who, 4 When, 3 How items) and its judging directory, made through the CLI."""
    root = tmp_path_factory.mktemp("so")
    annotations, media, contexts = make_socialomni(root)
    key = root / "k.env"
    key.write_text("K=secret-key-123\n")
    run = root / "run"
    with LoopbackServer(rules=candidate_answers) as server:
        made = runner.invoke(app, [
            "socialomni", "evaluate", "--annotations", str(annotations), "--media", str(media), "--output", str(run),
            "--model", "dashscope/qwen3.8-omni-flash", "--base-url", server.base_url, "--key-file", str(key),
            "--key-field", "K", "--limit", "4", "--no-progress",
        ])  # fmt: skip
        assert made.exit_code == 0, made.output
    with LoopbackServer(rules=lambda _: Behaviour(text="75")) as judges_server:
        judges = root / "judges.json"
        judges.write_text(json.dumps({"judges": [
            {"name": n, "model": f"judge-{n}", "base_url": judges_server.base_url, "api_key_env": None}
            for n in PANEL
        ]}))  # fmt: skip
        judged = runner.invoke(
            app,
            ["socialomni", "judge", str(run), "--contexts", str(contexts), "--judges", str(judges), "--no-progress"],
        )
        assert judged.exit_code == 0, judged.output
    return run


def test_runs_show_on_a_socialomni_run_prints_its_counts_per_task(socialomni_run):
    # omnivchat.runs may not import omnivchat.socialomni: it keeps a copy of the protocol names, which must agree
    assert (SOCIALOMNI_PROTOCOL, SOCIALOMNI_JUDGING_PROTOCOL) == (SO_PROTOCOL, SO_PROTOCOL + "-judging")
    shown = runner.invoke(app, ["runs", "show", str(socialomni_run)])
    assert shown.exit_code == 0, shown.output
    assert "SocialOmni run of dashscope/qwen3.8-omni-flash" in shown.output and "--limit 4" in shown.output
    rows = {line.split("│")[1].strip(): line for line in shown.output.splitlines() if line.count("│") == 6}
    assert [c.strip() for c in rows["who"].split("│")[2:6]] == ["3", "3", "0", "0"]  # declared, done, failed, not run
    assert [c.strip() for c in rows["when"].split("│")[2:6]] == ["4", "4", "0", "0"]
    assert [c.strip() for c in rows["how"].split("│")[2:6]] == ["3", "3", "0", "0"]
    assert "Attempts: ok 10" in shown.output
    status = run_status(socialomni_run)
    assert status.tasks["when"].model_dump() == {"declared": 4, "done": 4, "failed": 0, "not_run": 0}
    assert "secret-key-123" not in shown.output and "127.0.0.1" not in shown.output


def test_runs_show_on_a_socialomni_judging_directory_prints_each_judge(socialomni_run):
    shown = runner.invoke(app, ["runs", "show", str(socialomni_run / "judging")])
    assert shown.exit_code == 0, shown.output
    assert "SocialOmni judging, panel standard" in shown.output
    for name in PANEL:
        line = next(x for x in shown.output.splitlines() if f" {name} " in x and "│" in x)
        assert [c.strip() for c in line.split("│")[2:4]] == ["3", "0"]
    assert run_status(socialomni_run / "judging").judges[PANEL[0]].model_dump() == {"done": 3, "failed": 0}


def test_export_works_on_a_socialomni_run_through_its_benchmark(socialomni_run, tmp_path):
    """`export` reads any registered benchmark's run: a SocialOmni run gives the same export as `socialomni
    export` (the judging directory inside the run is found by default)."""
    generic = runner.invoke(app, ["export", str(socialomni_run), "-o", str(tmp_path / "x.json")])
    assert generic.exit_code == 0 and "Traceback" not in generic.output, generic.output
    alias = runner.invoke(app, ["socialomni", "export", str(socialomni_run), "-o", str(tmp_path / "y.json")])
    assert alias.exit_code == 0, alias.output
    mine, theirs = (json.loads((tmp_path / n).read_text()) for n in ("x.json", "y.json"))
    assert mine["schema"] == "omnivchat-benchmark-export-v1" and mine["records"] == theirs["records"]
    assert mine["status"] == theirs["status"]


def test_runs_show_on_anything_else_is_one_line_naming_it(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({"protocol": "someone-else-v9"}))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json")
    protocols = ("byo-run-v1", "omnivchat-run-v1", "omnivchat-socialomni", "worldsense-run-v1")
    for folder, expected, listed in (
        (empty, "not a run directory (no manifest.json; expected manifest.json with protocol", protocols),
        (other, "unknown protocol 'someone-else-v9' (expected one of", protocols),
        (broken, "manifest.json: cannot read the manifest", ()),
    ):
        shown = runner.invoke(app, ["runs", "show", str(folder)])
        assert shown.exit_code == 2, shown.output
        text = " ".join(shown.output.split())
        assert str(folder) in shown.output and expected in text
        assert all(protocol in text for protocol in listed), text
        assert "Traceback" not in shown.output
