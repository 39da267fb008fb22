"""The report's Cost section (issue 17): each run's cost from its store, traced to the store file; a run without a
price shows "cost unknown", never $0."""

from __future__ import annotations

import re

from omnivchat.benchmarks.native import run_eval
from omnivchat.cli.judging import score_run
from omnivchat.report import build_report
from omnivchat.routes import get_route
from omnivchat.testing import Behaviour, LoopbackServer

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
