"""A scores.json older than its run's store is never shown as the run's scores: a resumed eval (or a judge) after
`score` makes it out of date; `report` refuses it naming the command that refreshes it, `view` lists the items as
unscored saying why, `rl curves` leaves the point out; a fresh `score` makes it current again."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.judges import read_scores, stale_scores
from omnivchat.testing import Behaviour, LoopbackServer
from omnivchat.view import open_runs

runner = CliRunner()


def eval_args(bench, url, out):
    return [
        "eval", "--bench", str(bench.root), "--model", "my-omni", "--base-url", url, "--no-key", "-o", str(out),
        "--max-attempts", "1", "--no-progress", "--media-input-type", "video_url",
    ]  # fmt: skip


def test_a_resume_after_score_makes_the_scores_out_of_date_until_scored_again(small_bench, tmp_path):
    out = tmp_path / "run"
    # m1, the two-turn item (a history turn: more messages), fails the first time
    failing = lambda payload: Behaviour(status=400) if len(payload["messages"]) > 2 else None  # noqa: E731
    with LoopbackServer(Behaviour(text="There is one square."), rules=failing) as srv:
        first = runner.invoke(app, eval_args(small_bench, srv.base_url, out))
    assert first.exit_code == 1, first.output  # m1 failed
    scored = runner.invoke(app, ["score", str(out), "--panel", "rule", "--allow-incomplete"])
    assert scored.exit_code in (0, 1), scored.output
    assert stale_scores(out, read_scores(out)) is None and read_scores(out).store_state
    report = runner.invoke(app, ["report", str(out), "-o", str(tmp_path / "r1.html")])
    assert report.exit_code == 0, report.output

    with LoopbackServer(Behaviour(text="There is one square.")) as srv:  # the resume completes the run
        again = runner.invoke(app, eval_args(small_bench, srv.base_url, out))
    assert again.exit_code == 0, again.output
    why = stale_scores(out, read_scores(out))
    assert why is not None and f"omnivchat score {out}" in why

    stale_report = runner.invoke(app, ["report", str(out), "-o", str(tmp_path / "r2.html")], env={"COLUMNS": "300"})
    assert stale_report.exit_code == 2 and "is out of date" in stale_report.output
    assert not (tmp_path / "r2.html").exists()

    [view] = open_runs([out])
    assert view.wait_full(60)
    view.refresh()
    rows = {r.id: r for r in view.rows()}
    assert view.info["stale"] == why and view.info["scored"] is False
    assert rows["m1"].state == "unscored" and "out of date" in rows["m1"].why  # not "request failed"
    assert all(r.state != "failed" for r in rows.values())

    rescored = runner.invoke(app, ["score", str(out), "--panel", "rule", "--allow-incomplete"])
    assert rescored.exit_code in (0, 1), rescored.output
    assert stale_scores(out, read_scores(out)) is None
    fresh = runner.invoke(app, ["report", str(out), "-o", str(tmp_path / "r3.html")])
    assert fresh.exit_code == 0, fresh.output


def test_a_scores_file_from_before_the_state_was_kept_is_read_as_it_is(small_bench, tmp_path):
    out = tmp_path / "run"
    with LoopbackServer(Behaviour(text="There is one square.")) as srv:
        assert runner.invoke(app, eval_args(small_bench, srv.base_url, out)).exit_code == 0
    runner.invoke(app, ["score", str(out), "--panel", "rule", "--allow-incomplete"])
    path = out / "scores.json"
    data = json.loads(path.read_text())
    del data["store_state"]
    path.write_text(json.dumps(data))
    assert stale_scores(out, read_scores(out)) is None
    assert runner.invoke(app, ["report", str(out), "-o", str(tmp_path / "r.html")]).exit_code == 0
