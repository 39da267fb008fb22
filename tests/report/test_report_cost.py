"""The report's Cost section (issue 17): each run's cost from its store, traced to the store file; a run without a
price shows "cost unknown", never $0."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from omnivchat.benchmarks.native import run_eval
from omnivchat.cli.judging import score_run
from omnivchat.report import build_report
from omnivchat.routes import get_route
from omnivchat.testing import Behaviour, LoopbackServer

EXAMPLE_BENCH = Path(__file__).parents[2] / "examples" / "bench"  # scored by the rule judge alone
USAGE = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}


def test_report_shows_each_runs_cost(small_bench, tmp_path):
    priced, unpriced = tmp_path / "priced", tmp_path / "unpriced"
    with LoopbackServer(Behaviour(text="An answer.", usage=USAGE)) as server:
        for out, price in ((priced, {"input_per_mtok": 100.0, "output_per_mtok": 200.0}), (unpriced, None)):
            route = get_route("omni-test", base_url=server.base_url, price=price, timeout_s=10.0)
            assert run_eval(small_bench, route, out, system_prompt=f"x {out.name}", progress=False).done == 4
            score_run(out, None, None, "rule", "mean", None, allow_incomplete=True)
    html = build_report([priced, unpriced], tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="costs">') :]
    section = section[section.index("<tbody>") : section.index("</section>")]
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.S)
    assert len(rows) == 4  # per run: all, candidate
    assert "$0.8000" in rows[0] and "store.sqlite → attempt_costs" in rows[0]
    assert "cost unknown" in rows[2] and "no price: 4" in rows[2] and "$0" not in rows[2]
    assert "run store" in html  # the store is listed among the inputs, with its sha256


def test_an_ablation_grid_counts_every_run_it_made(tmp_path):
    """The cost table showed only the grid's "both" run (17 of the 68 attempts of a grid, issue 36.8): each
    condition, the self-check's runs and the grid in all, each equal to what the stores hold."""
    from typer.testing import CliRunner

    from omnivchat.cli import app

    grid = tmp_path / "grid"
    args = ["ablate", "--bench", str(EXAMPLE_BENCH), "--model", "sim:healthy", "-o", str(grid), "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    html = build_report([grid], tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="costs">') :]
    section = section[section.index("<tbody>") : section.index("</section>")]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", section, re.S)]
    rows = {re.sub(r"<[^>]+>", "", row[1]): int(row[3]) for row in cells}

    def attempts(store):
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            return db.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]

    stores = sorted(grid.rglob("store.sqlite"))
    checks = [s for s in stores if "self-check" in s.parts]
    assert len(stores) == 16 and len(checks) == 12
    for condition in ("both", "video_only", "audio_only", "neither"):
        assert rows[f"condition {condition}"] == attempts(grid / condition / "store.sqlite")
    assert rows["self-check (12 runs of simulated models)"] == sum(map(attempts, checks))
    assert rows["grid, in all"] == sum(map(attempts, stores)) == rows["grid, candidate"] > 0
    assert "all" not in rows and "candidate" not in rows  # the grid's both run is not listed again on its own
