"""`omnivchat compare`: real runs of the example bench (examples/bench, its rendered clips) made on the simulated
route and scored by the offline rule judge, one of them with an item whose request failed; two bring-your-own runs;
and bad input (a directory that is not a run, runs of different benchmarks, runs on different data)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks import ItemResult
from omnivchat.cli import app
from omnivchat.diagnostics import CompareError, read_comparison
from omnivchat.diagnostics.compare import pair_items, unscored_kind
from omnivchat.scoring import compare_paired

EXAMPLES = Path(__file__).parent.parent.parent / "examples" / "bench"
BROKEN = "ex-pla-en"  # its clip is sent undecodable in run B: the request fails
runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


def evaluate(bench: Path, model: str, out: Path, *extra: str) -> Path:
    result = runner.invoke(
        app, ["eval", "--bench", str(bench), "--model", model, "-o", str(out), "--no-progress", *extra]
    )
    assert result.exit_code == 0, result.output
    return out


@dataclass
class Runs:
    bench: Path
    blind: Path  # sim:video-blind, through the CLI
    failing: Path  # sim:healthy with one request failed
    partial: Path  # sim:healthy, --limit 3: five items never run
    other_data: Path  # sim:healthy on a copy of the bench with one reference changed, --limit 2
    root: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    from omnivchat.bench import load_bench
    from omnivchat.benchmarks.native import run_eval
    from omnivchat.routes import get_route

    root = tmp_path_factory.mktemp("compare")
    bench = root / "bench"
    shutil.copytree(EXAMPLES, bench)
    blind = evaluate(bench, "sim:video-blind", root / "blind")
    garbage = root / "not-a-video.mp4"
    garbage.write_bytes(b"not a video at all")

    def break_one(clip: Path) -> Path:  # the same data, but this one clip reaches the model undecodable
        return garbage if clip.parent.name == BROKEN else clip

    run_eval(load_bench(bench), get_route("sim:healthy"), root / "failing", system_prompt=None, progress=False,
             clip_transform=break_one)  # fmt: skip
    partial = evaluate(bench, "sim:healthy", root / "partial", "--limit", "3")
    other = root / "bench-other"
    shutil.copytree(EXAMPLES, other)
    lines = (other / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["reference"] += " Anything else?"
    (other / "instances.jsonl").write_text("\n".join([json.dumps(first, ensure_ascii=False), *lines[1:]]) + "\n")
    other_data = evaluate(other, "sim:healthy", root / "other-data", "--limit", "2")
    return Runs(bench, blind, root / "failing", partial, other_data, root)


def compare(*args: str | Path) -> tuple[int, str]:
    result = runner.invoke(app, ["compare", *map(str, args)], env={"COLUMNS": "200"})
    return result.exit_code, flat(result.output)


def test_compare_two_runs_with_a_failed_item(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "comparison.json"
    code, output = compare(runs.blind, runs.failing, "-o", out)
    assert code == 0, output
    c = read_comparison(out)
    assert c.benchmark == "omnivchat" and c.a.model == "sim:video-blind" and c.b.model == "sim:healthy"
    assert c.data.same is True and c.data.compared == ["bench.instances_sha256", "bench.clips"]
    # 8 items: 3 carry a criterion with no machine check (unscored in both runs), one request failed in B.
    assert (c.a.n_items, c.a.n_scored, c.b.n_items, c.b.n_scored) == (8, 5, 8, 4)
    assert c.n_paired == 4 and not c.only_a and not c.only_b
    assert c.unscored_counts == {"a": {"unscored": 3}, "b": {"unscored": 3, "request failed": 1}}
    failed = next(u for u in c.unscored if u.key == BROKEN)
    assert failed.kind_a is None and failed.kind_b == "request failed" and failed.b.startswith("request failed")
    assert not c.b.complete and "1 failed requests" in (c.b.incomplete or "")
    assert any("run B is incomplete" in w for w in c.warnings)
    # The pairs are what `omnivchat score` writes for each run, item by item.
    for run, side in ((runs.blind, "a"), (runs.failing, "b")):
        assert runner.invoke(app, ["score", str(run), "--allow-incomplete"]).exit_code == 0
        by_id = {i["key"]: i["score"] for i in json.loads((run / "scores.json").read_text())["items"]}
        assert {p.key: getattr(p, side) for p in c.pairs} == {k: by_id[k] for k in (p.key for p in c.pairs)}
    # By hand: the video-blind model gets the audio-only ICC item right and the three others wrong; the healthy
    # one gets all four: differences (0, 1, 1, 1), mean 0.75, t = 0.75 / (0.5 / 2) = 3 on 3 df, and the exact
    # sign-flip p = 2/8 (only +++ and --- of the three non-zero differences reach |3|).
    assert sorted(p.key for p in c.pairs) == ["ex-aor-en", "ex-dr-en", "ex-icc-zh", "ex-mdcc-en"]
    s = c.stats
    assert (s.mean_a, s.mean_b, s.difference) == (0.25, 1.0, 0.75)
    assert s.t_test.statistic == pytest.approx(3.0) and s.t_test.df == 3
    assert s.sign_flip.p == pytest.approx(0.25) and s.sign_flip.exact
    assert s == compare_paired([p.a for p in c.pairs], [p.b for p in c.pairs])
    assert c.verdict == "no significant difference at the 5% level"
    assert "B − A = +0.750" in output and "t(3) = 3.00" in output and "p = 0.250" in output
    assert "verdict: no significant difference at the 5% level" in output
    assert "unscored in B: request failed 1, unscored 3" in output
    assert f"{BROKEN}: A scored; B request failed" in output  # listed, with its reason
    assert "ex-svmr-en: A rule: criteria [3] carry no machine check" in output
    assert f"wrote {out}" in output
    again, message = compare(runs.blind, runs.failing, "-o", out)
    assert again == 2 and "exists; pass --force" in message  # never over a file unasked


def test_swapped_runs_flip_the_difference(runs: Runs, tmp_path: Path) -> None:
    from omnivchat.diagnostics import compare_runs

    ab = compare_runs(runs.blind, runs.failing)
    ba = compare_runs(runs.failing, runs.blind)
    assert ba.stats.difference == -ab.stats.difference and ba.stats.sign_flip.p == ab.stats.sign_flip.p
    assert ba.unscored_counts == {"a": ab.unscored_counts["b"], "b": ab.unscored_counts["a"]}
    same = compare_runs(runs.blind, runs.blind)
    # every difference 0: the sign-flip test's exact p is 1; the t-test (0/0) and the interval are undefined
    assert same.stats.difference == 0 and same.stats.sign_flip.p == 1.0
    assert same.stats.t_test.p is None and same.stats.t_test.note == "n/a (every difference is 0)"
    assert same.stats.ci is None and same.stats.ci_note == "n/a (every difference is 0)"
    assert any("same run directory" in w for w in same.warnings)
    code, output = compare(runs.blind, runs.blind)
    assert code == 0, output
    assert "paired-bootstrap CI n/a (every difference is 0)" in output
    assert "paired t-test: n/a (every difference is 0) sign-flip permutation test: p = 1.000 (no sign to flip" in output


def test_items_never_run_are_counted_and_same_model_warned(runs: Runs) -> None:
    code, output = compare(runs.partial, runs.failing)
    assert code == 0, output
    assert "warning: both runs are of the same model (sim:healthy)" in output
    assert "unscored in A: not run 5, unscored 1" in output  # --limit 3: five never run, the SVMR item unchecked
    assert "ex-er-en: A not run; B rule: criteria [4] carry no machine check" in output


def test_different_data_is_refused_unless_allowed(runs: Runs) -> None:
    code, output = compare(runs.blind, runs.other_data)
    assert code == 2 and "were run on different data (bench.instances_sha256:" in output
    assert "pass --allow-different-data" in output and str(runs.other_data) in output
    code, output = compare(runs.blind, runs.other_data, "--allow-different-data")
    assert code == 0, output
    assert "warning: the runs were made on different data" in output
    assert "on 1 paired items" in output  # --limit 2: the SVMR item (unscored) and the ICC item


def test_bad_input(runs: Runs, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, output = compare(runs.blind, empty)
    assert code == 2 and f"{empty}: not a run directory (no manifest.json" in output
    code, output = compare(tmp_path / "nowhere", runs.blind)
    assert code == 2 and "nowhere: not a run directory" in output
    code, output = compare(runs.blind, tmp_path / "bad\x00name")
    assert code == 2 and "Invalid value for 'run_b'" in output and "null byte" in output  # as every command
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "manifest.json").write_text("{not json")
    code, output = compare(damaged, runs.blind)
    assert code == 2 and "damaged/manifest.json: cannot read the manifest" in output
    # a run whose only item has no score: nothing to pair
    lone = evaluate(runs.bench, "sim:healthy", tmp_path / "lone", "--limit", "1")
    code, output = compare(lone, runs.blind)
    assert code == 2 and "no item is scored in both" in output and "(0 of 8 scored)" in output
    assert not (tmp_path / "c.json").exists()


def test_runs_of_another_benchmark(runs: Runs, tmp_path: Path) -> None:
    """Two bring-your-own runs compare through byo's own scores; a byo run and a native run are refused."""
    media = tmp_path / "media"
    media.mkdir()
    shutil.copyfile(EXAMPLES / "media" / "ex-svmr-en" / "turn1.mp4", media / "clip.mp4")
    rows = [
        {"qid": f"q{k}", "question": "Which side?", "answer": "right", "requires": needs, "video": "media/clip.mp4"}
        for k, needs in enumerate((["video"], ["audio"], ["video", "audio"], ["video"]))
    ]
    data = tmp_path / "byo.json"
    data.write_text(json.dumps(rows))
    byo = {}
    for model in ("sim:healthy", "sim:video-blind"):
        out = tmp_path / model.replace(":", "-")
        args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", model, "-o", str(out), "--no-progress"]
        assert runner.invoke(app, args).exit_code == 0
        byo[model] = out
    code, output = compare(byo["sim:video-blind"], byo["sim:healthy"], "-o", tmp_path / "byo-cmp.json")
    assert code == 0, output
    c = read_comparison(tmp_path / "byo-cmp.json")
    assert c.benchmark == "byo" and c.data.same is True and c.data.compared == ["data_sha256", "media_sha256"]
    # the video-blind model answers only the audio-only question right
    assert c.n_paired == 4 and c.stats.mean_a == 0.25 and c.stats.mean_b == 1.0
    code, output = compare(runs.blind, byo["sim:healthy"])
    assert code == 2 and "a run of 'omnivchat'" in output and "a run of 'byo'" in output
    assert "only runs of one benchmark can be compared" in output


def item(key: str, score: float | None, task: str = "t", **extra: object) -> ItemResult:
    return ItemResult(key=key, task=task, score=score, **extra)  # type: ignore[arg-type]


def test_pair_items_lists_everything_left_out() -> None:
    a = [item("1", 1.0), item("2", None, reason="no judge verdict"), item("3", 0.5), item("4", 0.0)]
    b = [item("1", 0.0), item("2", 1.0), item("3", None, ran=False, reason="not run"), item("5", 1.0)]
    pairs, only_a, only_b, unscored = pair_items(a, b)
    assert [(p.key, p.a, p.b) for p in pairs] == [("1", 1.0, 0.0)]
    assert [i.key for i in only_a] == ["4"] and [i.key for i in only_b] == ["5"]
    assert [(u.key, u.kind_a, u.kind_b) for u in unscored] == [("2", "unscored", None), ("3", None, "not run")]
    assert unscored_kind(item("x", None, reason="request failed: media: bad clip")) == "request failed"
    same_key_other_task = pair_items([item("1", 1.0, "who")], [item("1", 1.0, "when")])
    assert not same_key_other_task.pairs and len(same_key_other_task.only_a) == 1
    with pytest.raises(CompareError, match="item t/1 is scored twice"):
        pair_items([item("1", 1.0), item("1", 0.0)], [])
