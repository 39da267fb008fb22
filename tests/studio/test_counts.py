"""`studio run --n-per SUBCAT=N` and `--counts FILE`: per-subcategory instance counts (Figure 3's bench is not one
N for all), offline runs end to end; bad codes and counts refused before anything runs; resume and other counts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from omnivchat.bench import SUBCATEGORIES, load_bench
from omnivchat.cli import app
from omnivchat.studio.config import load_all, load_config
from omnivchat.studio.engine import CountsError, instance_counts, read_counts_file

runner = CliRunner()
FIGURE3 = Path(__file__).resolve().parents[2] / "examples" / "studio" / "figure3-counts.yaml"
RUN = ["studio", "run", "--backend", "offline", "--no-progress"]


def _run(*args: str) -> str:
    result = runner.invoke(app, [*RUN, *args])
    assert result.exit_code == 0, result.output
    return result.output


def _per_subcategory(out: Path) -> dict[str, int]:
    return dict(Counter(i.subcategory for i in load_bench(out).instances))


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    out = tmp_path_factory.mktemp("counts") / "bench"
    args = ["--config", "SVMR", "--config", "MDCC", "--config", "ER", "--n", "1"]
    args += ["--n-per", "svmr=3", "--n-per", "DSLP-VCC-MDCC=2", "-o", str(out)]
    return out, args, _run(*args)


def test_n_per_gives_exactly_those_counts_and_n_for_the_rest(counted):
    out, _, printed = counted
    assert _per_subcategory(out) == {"SVMR": 3, "MDCC": 2, "ER": 1}
    bench = yaml.safe_load((out / "bench.yaml").read_text(encoding="utf-8"))
    assert bench["subcategories"] == {"ER": 1, "MDCC": 2, "SVMR": 3}
    assert "instances: 6 (SVMR 3, MDCC 2, ER 1)" in printed and "accepted 6 of 6" in printed
    manifest = json.loads((out / "studio" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["n"] == 1 and manifest["counts"] == {"MDCC": 2, "SVMR": 3}
    assert "1 per subcategory (MDCC 2, SVMR 3)" in bench["description"]


def test_the_same_command_resumes_and_a_lost_instance_is_made_again(counted):
    out, args, _ = counted
    before = (out / "instances.jsonl").read_bytes()
    assert "0 instance(s) synthesized now, 6 already done" in _run(*args)
    # An instance not finished (no trace) is synthesized again from the run store, with the same counts.
    (trace,) = sorted((out / "studio" / "traces").glob("svmr-*.json"))[:1]
    trace.unlink()
    printed = _run(*args)
    assert "1 instance(s) synthesized now, 5 already done" in printed and "0 made" in printed
    assert (out / "instances.jsonl").read_bytes() == before


@pytest.mark.parametrize(
    ("counts", "differ"),
    [
        (["--n", "1", "--n-per", "SVMR=4", "--n-per", "MDCC=2"], "counts differ"),
        (["--n", "1"], "counts differ"),
        (["--n", "2", "--n-per", "SVMR=3", "--n-per", "MDCC=2"], "n, counts differ"),
    ],
    ids=["more", "dropped", "bigger-n"],
)
def test_other_counts_on_rerun_are_refused_as_another_n_is(counted, counts, differ):
    out, _, _ = counted
    configs = ["--config", "SVMR", "--config", "MDCC", "--config", "ER"]
    result = runner.invoke(app, [*RUN, *configs, *counts, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"other settings ({differ})" in result.output and "Traceback" not in result.output


def test_a_manifest_written_before_counts_existed_still_resumes(tmp_path):
    out = tmp_path / "bench"
    args = ["--config", "SVMR", "--n", "1", "-o", str(out)]
    _run(*args)
    path = out / "studio" / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    assert manifest.pop("counts") == {}  # --n alone records no count of its own
    path.write_text(json.dumps(manifest), encoding="utf-8")
    assert "0 instance(s) synthesized now, 1 already done" in _run(*args)


def test_a_counts_file_with_n_per_over_it(tmp_path):
    counts = tmp_path / "counts.json"
    counts.write_text(json.dumps({"SVMR": 2, "MDCC": 3, "AR": 300}), encoding="utf-8")
    out = tmp_path / "bench"
    # AR is shipped but not synthesized here: the file's entry is skipped; --n-per overrides the file's MDCC.
    _run(
        "--config", "SVMR", "--config", "MDCC", "--n", "1", "--counts", str(counts), "--n-per", "MDCC=1", "-o", str(out)
    )
    assert _per_subcategory(out) == {"SVMR": 2, "MDCC": 1}


def test_figure3_counts_are_the_papers_2800():
    counts = read_counts_file(FIGURE3, load_all())
    assert set(counts) == set(SUBCATEGORIES) and sum(counts.values()) == 2800
    multi = {code for code, s in SUBCATEGORIES.items() if s.kind == "multi"}
    assert sum(v for c, v in counts.items() if c in multi) == 250  # Section 3: 2,550 single-turn, 250 multi-turn
    assert counts["AR"] == counts["DR"] == 300 and counts["ER"] == 150
    assert instance_counts([load_config("ER")], 1, read_counts_file(FIGURE3, [load_config("ER")])) == {"ER": 150}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (["--n-per", "XYZ=3"], "--n-per 'XYZ=3': unknown subcategory 'XYZ'"),
        (["--n-per", "AR=3"], "--n-per 'AR=3': AR is not being synthesized"),
        (["--n-per", "SVMR=0"], "--n-per 'SVMR=0': count 0 is not a whole number >= 1"),
        (["--n-per", "SVMR=-2"], "--n-per 'SVMR=-2': count -2 is not a whole number >= 1"),
        (["--n-per", "SVMR=two"], "--n-per 'SVMR=two': count 'two' is not a whole number >= 1"),
        (["--n-per", "SVMR"], "--n-per 'SVMR': give SUBCAT=N"),
        (["--n-per", "SVMR=2", "--n-per", "svmr=3"], "--n-per 'svmr=3': SVMR is given a count twice"),
    ],
)
def test_bad_n_per_is_one_line_before_anything_runs(tmp_path, items, message):
    out = tmp_path / "x"
    result = runner.invoke(app, [*RUN, "--config", "SVMR", "--n", "1", *items, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("c.yaml", "SVMR: 2\nNOPE: 3\n", "c.yaml: NOPE: unknown subcategory"),
        ("c.yaml", "SVMR: 0\n", "c.yaml: SVMR: count 0 is not a whole number >= 1"),
        ("c.yaml", "SVMR: 2.5\n", "c.yaml: SVMR: count 2.5 is not a whole number >= 1"),
        ("c.yaml", "SVMR: true\n", "c.yaml: SVMR: count True is not a whole number >= 1"),
        ("c.yaml", "- SVMR\n", "c.yaml: expected a mapping of subcategory code to count"),
        ("c.yaml", "SVMR: [2\n", "c.yaml: not valid YAML"),
        ("c.json", '{"SVMR": 2,}', "c.json: not valid JSON"),
        ("c.json", '{"SVMR": 2, "DSLP-VDMC-SVMR": 3}', "c.json: DSLP-VDMC-SVMR: SVMR is given a count twice"),
    ],
)
def test_a_bad_counts_file_is_one_line_naming_the_entry(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "x"
    result = runner.invoke(app, [*RUN, "--config", "SVMR", "--n", "1", "--counts", str(path), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not out.exists()


def test_the_library_refuses_counts_for_a_subcategory_it_does_not_run():
    with pytest.raises(CountsError, match="counts name AR, which are not being synthesized"):
        instance_counts([load_config("SVMR")], 1, {"AR": 2})
    with pytest.raises(CountsError, match="count of SVMR: count 0"):
        instance_counts([load_config("SVMR")], 1, {"SVMR": 0})


FIGURE3_TURNS = {2: 75, 3: 104, 4: 15, 5: 6, 6: 12, 7: 13, 8: 9, 9: 7, 10: 9}
"""Figure 3 (right), "Turns Per Dialogue (Multi-Turn)": dialogues of the 250 multi-turn ones at 2-10 turns."""


def test_the_shipped_turn_weights_reproduce_figure3_in_expectation():
    from omnivchat.studio.sampling import sample_assignments

    configs = load_all()
    counts = read_counts_file(FIGURE3, configs)
    multi = [c for c in configs if c.turns == "multi"]
    seeds = 120
    totals = dict.fromkeys(FIGURE3_TURNS, 0)
    for config in multi:
        for seed in range(seeds):
            for a in sample_assignments(
                config.probabilities(),
                counts[config.code],
                preferences=config.preference_rules(),
                exclusions=config.exclusion_rules(),
                seed=seed,
            ):
                totals[int(a["turns"])] += 1
    mean = {t: totals[t] / seeds for t in FIGURE3_TURNS}
    assert sum(totals.values()) == 250 * seeds
    # the standard error of each mean is under 0.7 dialogues; 2.5 allows for Eq. 7's draws without replacement
    assert all(abs(mean[t] - FIGURE3_TURNS[t]) < 2.5 for t in FIGURE3_TURNS), mean
