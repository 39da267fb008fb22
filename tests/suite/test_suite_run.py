"""`omnivchat suite run`: 2 simulated models x 2 benchmarks (the example bench under the rule panel, a byo file) run
through eval, score and a report per pair, a rerun sends nothing, an unreachable model's pairs fail alone, a changed
suite is refused naming the change, and a malformed suite file is one line naming the file and the key."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from suite_factory import EXAMPLE, attempts, closed_port, write_suite
from typer.testing import CliRunner

from omnivchat.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    path = write_suite(root, 'healthy = "sim:healthy"\nblind = "sim:video-blind"', ablate=True)
    result = runner.invoke(app, ["suite", "run", str(path), "-o", str(root / "out"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "ran 4 pairs" in result.output and "4 done, 0 failed" in result.output
    return root


def test_every_pair_runs_scores_and_reports(suite_dir: Path) -> None:
    out = suite_dir / "out"
    for model in ("healthy", "blind"):
        for bench in ("example", "qa"):
            pair = out / model / bench
            assert (pair / "run" / "manifest.json").is_file() and (pair / "report.html").is_file()
            assert json.loads((pair / "run" / "scores.json").read_text())  # scored, as `omnivchat score` writes
    # Per model: the example bench's 8 instances, the byo file's 4 items, and its ablation grid (4 conditions x 4).
    assert attempts(out) == 2 * (8 + 4 + 4 * 4)
    assert (out / "healthy" / "qa" / "ablation" / "ablation.json").is_file()
    status = json.loads((out / "suite-status.json").read_text())
    assert [(p["model"], p["benchmark"], p["step"]) for p in status["pairs"]] == [
        ("healthy", "example", "done"), ("healthy", "qa", "done"),
        ("blind", "example", "done"), ("blind", "qa", "done"),
    ]  # fmt: skip


def test_a_rerun_sends_nothing(suite_dir: Path) -> None:
    out = suite_dir / "out"
    before = attempts(out)
    again = runner.invoke(app, ["suite", "run", str(suite_dir / "suite.toml"), "-o", str(out)])  # with the view
    assert again.exit_code == 0, again.output
    view = [line for line in again.output.splitlines() if " done " in line and "0 requests sent" in line]
    assert len(view) == 4 and {line.split()[1] + "/" + line.split()[3] for line in view} == {
        "healthy/example", "healthy/qa", "blind/example", "blind/qa",
    }  # fmt: skip
    assert "resumed 4 pairs" in again.output and "0 requests sent" in again.output
    assert attempts(out) == before


def test_a_changed_suite_is_refused_naming_the_change(suite_dir: Path) -> None:
    changed = suite_dir / "changed.toml"
    changed.write_text((suite_dir / "suite.toml").read_text().replace("sim:video-blind", "sim:audio-blind"))
    before = attempts(suite_dir / "out")
    result = runner.invoke(app, ["suite", "run", str(changed), "-o", str(suite_dir / "out"), "--no-progress"])
    assert result.exit_code == 2
    assert "holds another suite (suite.models.blind.model: " in result.output
    assert "sim:video-blind" in result.output and "sim:audio-blind" in result.output
    assert attempts(suite_dir / "out") == before
    with_view = runner.invoke(app, ["suite", "run", str(changed), "-o", str(suite_dir / "out")])
    assert with_view.exit_code == 2 and "holds another suite" in with_view.output
    assert "step" not in with_view.output and "┏" not in with_view.output  # no empty view before the refusal
    # More attempts, a budget or another concurrency are not another suite: resumed, nothing sent again.
    faster = suite_dir / "faster.toml"
    text = (suite_dir / "suite.toml").read_text().replace("max_attempts = 1", "max_attempts = 3\nbudget_usd = 9")
    faster.write_text(
        text.replace('blind = "sim:video-blind"', 'blind = { model = "sim:video-blind", concurrency = 2 }')
    )
    resumed = runner.invoke(app, ["suite", "run", str(faster), "-o", str(suite_dir / "out"), "--no-progress"])
    assert resumed.exit_code == 2 and "budget_usd cannot cap the ablation grids" in resumed.output
    faster.write_text(faster.read_text().replace("budget_usd = 9\n", ""))
    resumed = runner.invoke(app, ["suite", "run", str(faster), "-o", str(suite_dir / "out"), "--no-progress"])
    assert resumed.exit_code == 0 and "0 requests sent" in resumed.output, resumed.output


def test_a_folder_the_tool_did_not_make_is_refused(tmp_path: Path) -> None:
    path = write_suite(tmp_path, 'healthy = "sim:healthy"')
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = runner.invoke(app, ["suite", "run", str(path), "-o", str(tmp_path / "mine"), "--no-progress"])
    assert result.exit_code == 2 and "is not empty and is not a suite directory" in result.output
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_an_unreachable_model_fails_alone_and_is_named(tmp_path: Path) -> None:
    port = closed_port()
    models = (
        'healthy = "sim:healthy"\n\n[models.down]\nmodel = "some-omni-model"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nno_key = true\n'
    )
    path = write_suite(tmp_path, models)
    out = tmp_path / "out"
    result = runner.invoke(app, ["suite", "run", str(path), "-o", str(out), "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "2 done, 2 failed" in result.output
    assert "down/example: 8 of 8 items failed" in result.output and "down/qa: 4 of 4 items failed" in result.output
    assert "healthy/" not in result.output.split("failed pairs:")[1]
    for bench in ("example", "qa"):  # the other model's pairs are whole
        assert (out / "healthy" / bench / "report.html").is_file()
    status = {(p["model"], p["benchmark"]): p for p in json.loads((out / "suite-status.json").read_text())["pairs"]}
    assert status[("down", "qa")]["step"] == "failed" and "failed" in status[("down", "qa")]["reason"]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[models\nx = 1\n", "not valid TOML"),
        ('[models]\nm = "sim:healthy"\n[benchmarks.b]\ndata = "x.json"\n', "benchmarks.b.benchmark: Field required"),
        ('[models]\nm = "sim:healthy"\n[benchmarks.b]\nbenchmark = "byo"\ndata = "x"\nablat = true\n',
         "benchmarks.b.ablat: Extra inputs are not permitted"),
        ('budget_usd = -1\n[models]\nm = "sim:healthy"\n[benchmarks.b]\nbenchmark = "byo"\ndata = "x"\n',
         "budget_usd: Input should be greater than 0"),
        ('[models]\n"../up" = "sim:healthy"\n[benchmarks.b]\nbenchmark = "byo"\ndata = "x"\n', "is not a usable name"),
        ('[models]\nm = "sim:healthy"\n[benchmarks.b]\nbenchmark = "byo"\ndata = "x"\n[judges]\npanel = "strict"\n',
         "judges.panel 'strict' needs judges.file"),
        ('[models.c]\nmodel = "cascade:c.toml"\nthinking = true\ntimeout_s = 5\n[benchmarks.b]\nbenchmark = "byo"\n'
         'data = "x"\n', "models.c: thinking, timeout_s cannot be set for a cascade: each stage's"),
    ],
)  # fmt: skip
def test_a_malformed_suite_is_one_line_naming_file_and_key(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    result = runner.invoke(app, ["suite", "run", str(path), "-o", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and line.startswith(f"error: {path}") and named in line, line
    assert not (tmp_path / "out").exists()


def test_the_leaderboard_has_every_cell_ranked_tested_and_linked(suite_dir: Path) -> None:
    out = suite_dir / "out"
    before = attempts(out)
    result = runner.invoke(app, ["suite", "report", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 models x 2 benchmarks: 4 cells, 2 incomplete or not run" in result.output  # the example bench's
    assert attempts(out) == before  # the leaderboard sends nothing
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["schema"] == "omnivchat-leaderboard-v1" and len(board["cells"]) == 4
    cells = {(c["model"], c["benchmark"]): c for c in board["cells"]}
    healthy, blind = cells[("healthy", "qa")], cells[("blind", "qa")]
    # The healthy model answers each question right; the video-blind one cannot see the square.
    assert healthy["status"] == "complete" and healthy["value"] == 1.0 and healthy["rank"] == 1
    assert blind["rank"] == 2 and blind["value"] < 1.0 and blind["neighbour"]["above"] == "healthy"
    assert blind["neighbour"]["n_paired"] == 4 and blind["neighbour"]["difference"] == 1.0 - blind["value"]
    assert healthy["fusion_gain"] is not None and healthy["fusion_ci"] is not None  # the qa grid ran
    assert cells[("healthy", "example")]["fusion_gain"] is None  # not ablated
    # Holm across the table's tests: only ranked (complete) cells are tested, here the qa pair alone, a family of
    # one (the incomplete example cells are in no family; Holm's arithmetic is tested in tests/scoring/test_holm.py)
    tests = [c["neighbour"] for c in board["cells"] if c["neighbour"]]
    assert len(tests) == 1 and tests[0]["p_holm"] == pytest.approx(tests[0]["p"])
    # The rule judge cannot decide 3 of the example bench's 8 replies, all of their subcategories: counted apart,
    # and with 3 of its 8 subcategories unscored the cell has no Mean over the bench (Eq. 2): marked, never ranked.
    example = cells[("healthy", "example")]
    assert example["status"] == "incomplete" and example["rank"] is None and example["neighbour"] is None
    assert example["n_scored"] == 5 and "3 of 8 replies" in example["note"]
    assert "Mean over 5 of 8 subcategories" in example["reason"]
    costs = {c["model"]: c for c in board["costs"]}
    assert costs["healthy"]["attempts"] == 8 + 4 + 16 and costs["healthy"]["total_tokens"] > 0
    html = (out / "leaderboard.html").read_text()
    for model in ("healthy", "blind"):
        for bench in ("example", "qa"):
            assert f'href="{model}/{bench}/report.html"' in html
            assert f"omnivchat view {out / model / bench / 'run'}" in html  # how to open its items
    # nothing from outside: the only absolute link is the run viewer's on loopback (navigated to, never fetched)
    assert html.count('href="http://127.0.0.1:8766/#run=run"') == 4
    body = html.split("<body>")[1].replace('href="http://127.0.0.1:8766/#', 'href="#')
    assert "<script" not in html and "http" not in body
    rows = (out / "leaderboard.csv").read_text().splitlines()
    assert len(rows) == 5 and rows[0].startswith("model,benchmark,status,value,ci_low,ci_high")


def test_incomplete_cells_are_marked_and_never_ranked(tmp_path: Path) -> None:
    models = (
        f'healthy = "sim:healthy"\n\n[models.down]\nmodel = "some-omni-model"\n'
        f'base_url = "http://127.0.0.1:{closed_port()}/v1"\nno_key = true\n'
    )
    out = tmp_path / "out"
    ran = runner.invoke(app, ["suite", "run", str(write_suite(tmp_path, models)), "-o", str(out), "--no-progress"])
    assert ran.exit_code == 1
    html = tmp_path / "board" / "lb.html"
    html.parent.mkdir()
    result = runner.invoke(app, ["suite", "report", str(out), "-o", str(html)])
    assert result.exit_code == 0, result.output
    assert "4 cells, 3 incomplete or not run" in result.output  # the down model's two, the rule-scored example
    board = json.loads(html.with_suffix(".json").read_text())
    for cell in board["cells"]:
        if cell["model"] == "down":
            assert cell["status"] == "incomplete" and cell["rank"] is None and cell["neighbour"] is None
            assert "8 of 8 items: request failed" in cell["reason"] or "4 of 4 items: request failed" in cell["reason"]
        elif cell["benchmark"] == "example":
            assert cell["status"] == "incomplete" and cell["rank"] is None
            assert "Mean over 5 of 8 subcategories" in cell["reason"]
        else:
            assert cell["status"] == "complete" and cell["rank"] == 1 and cell["neighbour"] is None
    page = html.read_text()
    assert page.count("INCOMPLETE") == 3 and 'href="../out/healthy/qa/report.html"' in page
    # a value and its items link read "1.000 items", not "1.000items"
    assert re.search(r"\d\.\d{3}</a> <a class=\"items\"", page) and not re.search(r"\d</a><a class", page)
    again = runner.invoke(app, ["suite", "report", str(out), "-o", str(html)])
    assert again.exit_code == 2 and "--force" in again.output  # the tool replaces a chosen file only when told


def test_report_of_a_folder_that_is_no_suite_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["suite", "report", str(tmp_path)])
    assert result.exit_code == 2 and "is not a suite directory" in result.output


def test_the_documented_suite_file_loads(tmp_path: Path) -> None:
    from omnivchat.suite import SuiteError, load_suite

    text = (EXAMPLE.parents[1] / "docs" / "suites.md").read_text()
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "suite.toml"
    path.write_text(block)
    suite = load_suite(path)
    assert list(suite.models) == ["healthy", "cascade", "qwen"] and suite.models["qwen"].concurrency == 8
    assert suite.models["cascade"].model == f"cascade:{tmp_path.resolve() / 'cascade.toml'}"
    assert suite.benchmarks["qa"].ablate and suite.benchmarks["qa"].data == tmp_path.resolve() / "qa.json"
    assert suite.judges.panel == "rule"
    path.write_text("budget_usd = 5.0\n" + block)  # a budget cannot cap the grids: refused, naming the benchmark
    with pytest.raises(SuiteError, match=r"budget_usd cannot cap the ablation grids \(benchmarks.qa.ablate"):
        load_suite(path)


def test_a_stopped_suite_keeps_what_is_done_and_a_rerun_finishes_it(tmp_path: Path) -> None:
    import threading

    from omnivchat.suite import PairState, load_suite, run_suite

    suite = load_suite(write_suite(tmp_path, 'healthy = "sim:healthy"\nblind = "sim:video-blind"'))
    stop = threading.Event()

    def changed(pair: PairState) -> None:
        if pair.step == "done":  # as Ctrl-C does: no pair starts another step
            stop.set()

    out = tmp_path / "out"
    outcome = run_suite(suite, out, on_change=changed, stop=stop)
    steps = [p.step for p in outcome.pairs]
    assert set(steps) <= {"done", "stopped"} and "stopped" in steps and not outcome.failed
    assert all(p.reason is None for p in outcome.pairs)
    status = json.loads((out / "suite-status.json").read_text())["pairs"]
    assert [p["step"] for p in status] == steps
    before = attempts(out)
    again = run_suite(suite, out)
    assert [p.step for p in again.pairs] == ["done"] * 4 and attempts(out) == 2 * (8 + 4)
    assert again.requests == 2 * (8 + 4) - before  # only what the stopped pairs had not sent


def test_a_cell_that_cannot_be_scored_is_marked_and_the_rest_reported(tmp_path: Path) -> None:
    path = write_suite(tmp_path, 'healthy = "sim:healthy"\nblind = "sim:video-blind"')
    out = tmp_path / "out"
    assert runner.invoke(app, ["suite", "run", str(path), "-o", str(out), "--no-progress"]).exit_code == 0
    (out / "blind" / "qa" / "run" / "store.sqlite").write_bytes(b"not a database")  # damaged after the run
    result = runner.invoke(app, ["suite", "report", str(out)])
    assert result.exit_code == 0, result.output
    cells = {(c["model"], c["benchmark"]): c for c in json.loads((out / "leaderboard.json").read_text())["cells"]}
    damaged = cells[("blind", "qa")]
    assert damaged["status"] == "incomplete" and damaged["reason"].startswith("cannot score:")
    assert "store.sqlite" in damaged["reason"] and damaged["rank"] is None
    assert cells[("healthy", "qa")]["rank"] == 1 and cells[("healthy", "qa")]["neighbour"] is None
    assert cells[("blind", "example")]["status"] == "incomplete"  # the rule judge leaves 3 subcategories unscored
    costs = {c["model"]: c for c in json.loads((out / "leaderboard.json").read_text())["costs"]}
    assert costs["blind"]["unreadable"] == [str(out / "blind" / "qa" / "run" / "store.sqlite")]
    assert (
        costs["blind"]["attempts"] == 8
        and "1 unreadable stores (cost unknown)" in (out / "leaderboard.html").read_text()
    )


def test_a_second_suite_run_into_the_same_directory_fails_at_once_naming_the_first(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from omnivchat.suite import PairState, load_suite, run_suite

    path = write_suite(tmp_path, 'healthy = "sim:healthy"')
    suite, out = load_suite(path), tmp_path / "out"
    second: list[subprocess.CompletedProcess[str]] = []

    def changed(pair: PairState) -> None:
        if pair.step == "done" and not second:  # the first run is midway: one pair done, one to go
            command = [sys.executable, "-m", "omnivchat", "suite", "run", str(path), "-o", str(out), "--no-progress"]
            second.append(subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ))

    outcome = run_suite(suite, out, on_change=changed)
    assert [p.step for p in outcome.pairs] == ["done", "done"]
    (result,) = second
    assert result.returncode != 0
    assert f"{out} is being written by pid {os.getpid()} (suite run" in result.stderr, result.stderr
    assert "ran " not in result.stdout and "resumed " not in result.stdout
    assert attempts(out) == 8 + 4  # the second process sent nothing
    status = json.loads((out / "suite-status.json").read_text())["pairs"]
    assert [p["step"] for p in status] == ["done", "done"]


@pytest.mark.parametrize("name", ["suite.html", "suite-status.html"])
def test_force_never_overwrites_the_suites_own_files(suite_dir: Path, name: str) -> None:
    # -o out/suite.html writes its JSON beside it: out/suite.json, the suite's own record
    out = suite_dir / "out"
    before = {p.name: p.read_bytes() for p in out.glob("suite*.json")}
    result = runner.invoke(app, ["suite", "report", str(out), "-o", str(out / name), "--force"], env={"COLUMNS": "300"})
    assert result.exit_code == 2 and "--force never overwrites it" in result.output, result.output
    assert {p.name: p.read_bytes() for p in out.glob("suite*.json")} == before
    again = runner.invoke(app, ["suite", "run", str(suite_dir / "suite.toml"), "-o", str(out), "--no-progress"])
    assert again.exit_code == 0, again.output  # the suite folder is still the suite's
