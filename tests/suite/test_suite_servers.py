"""`omnivchat suite run` against a loopback server: pairs on one server run one after another (its limit shared),
a total budget stops the pair that would pass it (the others done, nothing over the budget), and --shard reaches
every pair's eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from suite_factory import attempts, byo_rows, write_suite
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.runs import run_cost
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
PRICE = "price = { input_per_mtok = 100.0, output_per_mtok = 200.0 }"  # $0.10 + $0.10 per attempt


def served_suite(root: Path, url: str, *, head: str = "") -> Path:
    """Two models on one server, a simulated one beside them, on a byo file of 4 items."""
    write_suite(root, 'x = "sim:healthy"')  # the clip and qa.json
    entry = f'base_url = "{url}"\nno_key = true\nconcurrency = 2\nmax_tokens = 64\n{PRICE}\n'
    path = root / "served.toml"
    path.write_text(
        f'{head}max_attempts = 1\n\n[models]\nsim = "sim:healthy"\n\n'
        f'[models.a]\nmodel = "omni-a"\n{entry}\n[models.b]\nmodel = "omni-b"\n{entry}\n'
        '[benchmarks.qa]\nbenchmark = "byo"\ndata = "qa.json"\n'
    )
    return path


def test_pairs_on_one_server_run_one_after_another(tmp_path: Path) -> None:
    with LoopbackServer(Behaviour(text="A", latency=0.05, usage=USAGE)) as server:
        path = served_suite(tmp_path, server.base_url)
        result = runner.invoke(app, ["suite", "run", str(path), "-o", str(tmp_path / "out"), "--no-progress"])
        assert result.exit_code == 0, result.output
        models = [r.json["model"] for r in server.chat_requests]
    # Every request of one pair before any of the other: the server never had both models' requests in flight.
    assert models == ["omni-a"] * 4 + ["omni-b"] * 4
    assert attempts(tmp_path / "out") == 12  # the simulated model's pair ran beside them


def test_a_total_budget_stops_the_pair_that_would_pass_it(tmp_path: Path) -> None:
    with LoopbackServer(Behaviour(text="A", usage=USAGE)) as server:
        path = served_suite(tmp_path, server.base_url, head="budget_usd = 1.0\n")
        out = tmp_path / "out"
        result = runner.invoke(app, ["suite", "run", str(path), "-o", str(out), "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "b/qa: budget reached:" in result.output and "a/qa" not in result.output.split("failed pairs:")[1]
    spent = sum(run_cost(s.parent).total.spent_usd for s in out.glob("**/store.sqlite"))
    assert spent <= 1.0 + 1e-9 and run_cost(out / "a" / "qa" / "run").total.spent_usd == pytest.approx(0.8)


def test_a_model_without_a_price_is_refused_under_a_budget(tmp_path: Path) -> None:
    path = served_suite(tmp_path, "http://127.0.0.1:9/v1", head="budget_usd = 1.0\n")
    path.write_text(path.read_text().replace(PRICE, ""))
    result = runner.invoke(app, ["suite", "run", str(path), "-o", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 2 and "needs a price for omni-a (model 'a' of the suite)" in result.output
    assert not (tmp_path / "out").exists()


def test_the_shard_reaches_every_pair(tmp_path: Path) -> None:
    path = write_suite(tmp_path, 'healthy = "sim:healthy"')
    parts = []
    for index in (1, 2):
        out = tmp_path / f"out-{index}"
        result = runner.invoke(
            app, ["suite", "run", str(path), "-o", str(out), "--shard", f"{index}/2", "--no-progress"]
        )
        assert result.exit_code == 0, result.output
        manifest = json.loads((out / "healthy" / "qa" / "run" / "manifest.json").read_text())
        assert (manifest["shard"]["index"], manifest["shard"]["count"]) == (index, 2)
        parts.append(attempts(out))
    assert sum(parts) == 8 + len(byo_rows())  # each item in exactly one shard
    other = runner.invoke(app, ["suite", "run", str(path), "-o", str(tmp_path / "out-1"), "--shard", "2/2"])
    assert other.exit_code == 2 and 'shard: "1/2" -> "2/2"' in other.output


def test_a_judged_suite_asks_the_panel_once(tmp_path: Path) -> None:
    with LoopbackServer(Behaviour(text='{"hits": [1], "reasoning": "the gate only"}')) as server:
        judges = {"judges": [{"name": "A", "model": "judge-a", "base_url": server.base_url}], "panels": {"p": ["A"]}}
        (tmp_path / "judges.json").write_text(json.dumps(judges))
        path = write_suite(tmp_path, 'healthy = "sim:healthy"\nblind = "sim:video-blind"')
        text = path.read_text().replace('[judges]\npanel = "rule"', '[judges]\nfile = "judges.json"\npanel = "p"')
        path.write_text(text)
        out = tmp_path / "out"
        result = runner.invoke(app, ["suite", "run", str(path), "-o", str(out), "--no-progress"])
        assert result.exit_code == 0, result.output
        asked = len(server.chat_requests)
        assert asked == 2 * 8  # the example bench's 8 replies per model; byo is scored without judges
        again = runner.invoke(app, ["suite", "run", str(path), "-o", str(out), "--no-progress"])
        assert again.exit_code == 0 and "0 requests sent" in again.output and len(server.chat_requests) == asked
        board = runner.invoke(app, ["suite", "report", str(out)])
        assert board.exit_code == 0, board.output
    cells = {(c["model"], c["benchmark"]): c for c in json.loads((out / "leaderboard.json").read_text())["cells"]}
    assert json.loads((out / "leaderboard.json").read_text())["panel"] == ["A"]
    example = cells[("healthy", "example")]
    assert example["status"] == "complete" and example["n_scored"] == 8 and example["note"] is None


def test_sigterm_stops_a_suite_as_ctrl_c_does_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    with LoopbackServer(Behaviour(text="A", latency=0.4, usage=USAGE)) as server:
        path = served_suite(tmp_path, server.base_url)
        out = tmp_path / "out"
        command = [sys.executable, "-m", "omnivchat", "suite", "run", str(path), "-o", str(out), "--no-progress"]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
        deadline = time.monotonic() + 60
        while not server.chat_requests and time.monotonic() < deadline:  # the first served pair is sending
            time.sleep(0.05)
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=60)
        assert child.returncode == 130, stderr
        assert "interrupted:" in stderr and "rerun the same command to resume" in stderr
        status = json.loads((out / "suite-status.json").read_text())["pairs"]
        assert "stopped" in [p["step"] for p in status]  # what had not started is marked, not lost
        assert attempts(out) < 3 * 4
        again = runner.invoke(app, ["suite", "run", str(path), "-o", str(out), "--no-progress"])
        assert again.exit_code == 0, again.output
    # Each served item sent once over both commands: nothing answered before the signal was sent again.
    assert attempts(out) == 3 * 4 and len(server.chat_requests) == 2 * 4
