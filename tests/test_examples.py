"""The shipped example bench: it validates, scores as worked out by hand, and is exactly what its script renders."""

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.bench import load_bench
from omnivchat.cli import app

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_example_bench_validates_and_covers_the_taxonomy():
    bench = load_bench(EXAMPLES / "bench")
    assert len(bench.instances) == 8
    assert {i.language for i in bench.instances} == {"en", "zh"}
    assert any(i.is_multi_turn for i in bench.instances) and any(not i.is_multi_turn for i in bench.instances)
    assert {i.subcategory for i in bench.instances} >= {"SVMR", "ICC", "MDCC", "AOR", "FGC", "PLA", "DR", "ER"}


def test_example_score_matches_hand_computation(tmp_path):
    out = tmp_path / "row.json"
    args = ["score", "--bench", str(EXAMPLES / "bench"), "--hits", str(EXAMPLES / "hits.jsonl"), "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())
    # scores: svmr 2/3, icc 1, aor 2/3, fgc 1/3, pla 0, dr 1, mdcc 2/3, er 1
    assert row["AH"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert row["MSA"] == 0.0 and row["ER"] == 1.0 and row["MEA"] == 1.0
    assert row["DSLP"] == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    assert row["Multi"] == pytest.approx(2 / 3)
    assert row["Mean"] == pytest.approx((2 / 3 + 1 + 2 / 3 + 1 / 3 + 0 + 1 + 2 / 3 + 1) / 8)
    assert row["Human"] is None and row["Style"] == 7 / 8


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_example_clips_are_what_the_script_renders(tmp_path):
    spec = importlib.util.spec_from_file_location("make_example_bench", EXAMPLES / "make_example_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fresh = module.main(tmp_path / "bench")
    committed = EXAMPLES / "bench"
    assert (tmp_path / "bench" / "instances.jsonl").read_text() == (committed / "instances.jsonl").read_text()
    for instance in fresh.instances:
        for turn in instance.turns:
            assert _sha(fresh.media_path(turn)) == _sha(committed / turn.video), turn.video


def test_references_pass_their_own_machine_checks():
    from omnivchat.judges import rule_verdict
    from omnivchat.scoring import rubric_score

    bench = load_bench(EXAMPLES / "bench")
    checked = [i for i in bench.instances if all(c.check is not None for c in i.rubric)]
    assert len(checked) >= 4
    for instance in checked:
        hits, reason = rule_verdict(instance, instance.reference)
        assert hits is not None and rubric_score(instance.tiers, hits) == 1.0, (instance.id, hits, reason)
