"""The validate and score commands, end to end through the CLI."""

import json
import shutil
from pathlib import Path

from bench_factory import instance, write_bench
from typer.testing import CliRunner

from omnivchat.cli import app

runner = CliRunner()
REAL_CLIP = Path(__file__).parent.parent / "examples" / "bench" / "media" / "ex-svmr-en" / "turn1.mp4"


def _bench(tmp_path):
    rows = [
        instance("a1"),
        instance("b2", "AOR", language="zh"),
        instance("c3", "MDCC", turns=2),
        instance("h4", "ICC", source="human"),
    ]
    root = write_bench(tmp_path / "bench", rows)
    # validate probes every clip: the factory's placeholder bytes become a real clip (H.264 + AAC)
    for placeholder in (root / "media").rglob("*.mp4"):
        shutil.copyfile(REAL_CLIP, placeholder)
    return root


def _hits(tmp_path, rows):
    path = tmp_path / "hits.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    return path


GOOD = [
    {"id": "a1", "hits": [1, 2, 3], "reply": "It is closed.", "style": True},
    {"id": "b2", "hits": [1, 2], "reply": "左边的门关着。", "style": False},
    {"id": "c3", "hits": [1], "reply": "Yes.", "style": True},
    {"id": "h4", "hits": [1, 2, 3], "reply": "I hear you."},
]


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "validate" in result.output and "score" in result.output


def test_validate_prints_counts(tmp_path):
    result = runner.invoke(app, ["validate", str(_bench(tmp_path))], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "4 instances" in result.output
    for text in ("DSLP", "AH", "DSLP-VDMC-SVMR", "AH-AOR", "zh", "2 "):
        assert text in result.output


def test_validate_lists_every_problem(tmp_path):
    root = write_bench(tmp_path / "bad", [instance("a1", "NOPE"), instance("a1", "SVMR", turns=2)])
    result = runner.invoke(app, ["validate", str(root)], terminal_width=200)
    assert result.exit_code == 2
    assert "instances.jsonl:1: subcategory: unknown subcategory 'NOPE'" in result.output
    assert "instances.jsonl:2: turns: SVMR is single-turn but has 2 turns" in result.output


def test_score_prints_and_writes_table1(tmp_path):
    out = tmp_path / "out" / "row.json"
    args = ["score", "--bench", str(_bench(tmp_path)), "--hits", str(_hits(tmp_path, GOOD)), "-o", str(out)]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())
    # a1 SVMR 1.0, b2 AOR 0.5, c3 MDCC 0.0 (tier 1 missed); h4 is human: 1.0
    assert row["DSLP"] == 0.5 and row["AH"] == 0.5
    assert row["Single"] == 0.75 and row["Multi"] == 0.0
    assert row["Mean"] == (1.0 + 0.5 + 0.0) / 3
    assert row["Human"] == 1.0
    assert row["RE"] == 1000 * 1.5 / (3 + 6 + 1)  # It is closed (3) + 左边的门关着 (6) + Yes (1)
    assert row["Style"] == 2 / 3
    assert f"wrote {out}" in result.output


def test_score_refuses_missing_ids_and_out_of_range_hits(tmp_path):
    bad = [GOOD[0], {"id": "b2", "hits": [1, 4], "reply": "x"}, {"id": "zz", "hits": [], "reply": ""}, "{oops"]
    path = tmp_path / "hits.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in bad) + "\n")
    result = runner.invoke(app, ["score", "--bench", str(_bench(tmp_path)), "--hits", str(path)], terminal_width=200)
    assert result.exit_code == 2
    out = result.output
    assert "hits.jsonl:2: hits: [4] outside 1..3 for instance 'b2'" in out
    assert "hits.jsonl:3: id: 'zz' is not an instance of the bench" in out
    assert "hits.jsonl:4: not valid JSON" in out
    assert "no hits for 2 instance(s): c3, h4" in out


def test_score_refuses_duplicate_lines(tmp_path):
    path = _hits(tmp_path, [*GOOD, GOOD[0]])
    result = runner.invoke(app, ["score", "--bench", str(_bench(tmp_path)), "--hits", str(path)], terminal_width=200)
    assert result.exit_code == 2
    assert "hits.jsonl:5: id: 'a1' appears twice" in result.output
