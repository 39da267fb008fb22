"""`score --bench --hits`: Style exists only where the hits file carries style grades."""

import json

from bench_factory import instance, write_bench
from typer.testing import CliRunner

from omnivchat.cli import app

runner = CliRunner()


def test_hits_without_styles_give_no_style_even_with_an_empty_reply(tmp_path):
    bench = write_bench(tmp_path / "bench", [instance("a1"), instance("b2", "AOR")])
    hits = tmp_path / "hits.jsonl"
    rows = [{"id": "a1", "hits": [1, 2, 3], "reply": "It is closed."}, {"id": "b2", "hits": [], "reply": ""}]
    hits.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "row.json"
    result = runner.invoke(app, ["score", "--bench", str(bench), "--hits", str(hits), "-o", str(out)])
    assert result.exit_code == 0, result.output
    row = json.loads(out.read_text())
    assert row["Style"] is None and row["n_empty_replies"] == 1 and row["n_style_graded"] == 0
    # with style grades in the file, the empty reply counts 0
    rows[0]["style"] = True
    hits.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    refused = runner.invoke(app, ["score", "--bench", str(bench), "--hits", str(hits), "-o", str(out)])
    assert refused.exit_code == 2 and "exists; pass --force" in refused.output
    result = runner.invoke(app, ["score", "--bench", str(bench), "--hits", str(hits), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["Style"] == 0.5
