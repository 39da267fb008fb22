"""RUN_DIR/scores.json: a run's Table 1 row and every item's score with its reason (what reports read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omnivchat._files import write_text_atomic
from omnivchat.bench import Bench
from omnivchat.judges._run import ItemScore
from omnivchat.runs import load_manifest
from omnivchat.scoring import Table1Row, is_empty_reply

SCORES_FILE = "scores.json"


def item_records(items: list[ItemScore]) -> list[dict[str, Any]]:
    """Each item of a native run as scores.json records it: its score with the reason, and why it has none."""
    return [
        {
            "id": i.item_id,
            "subcategory": i.subcategory,
            "source": i.source,
            "score": i.score,
            "style": i.style,
            "reason": i.reason,
            "per_judge": i.per_judge,
            "empty": i.reply is not None and is_empty_reply(i.reply),
            "request_failed": i.reply is None and i.ran,
            "not_run": not i.ran,
        }
        for i in items
    ]


def write_scores_file(
    run_dir: Path,
    *,
    bench: dict[str, Any],
    panel: list[str],
    aggregate: str,
    style_judge: str | None,
    table1: dict[str, Any],
    complete: bool,
    incomplete: str | None,
    items: list[dict[str, Any]],
) -> Path:
    """RUN_DIR/scores.json of a native run (schema omnivchat-scores-v1): the Table 1 row and every item's score
    with its reason, with the model and condition from the run's manifest (what reports read)."""
    manifest = load_manifest(run_dir)
    data = {
        "schema": "omnivchat-scores-v1",
        "model": manifest["route"]["model"],
        "simulated": manifest.get("simulated", False),
        "condition": manifest["condition"],
        "bench": bench,
        "panel": panel,
        "aggregate": aggregate,
        "style_judge": style_judge,
        "complete": complete,
        "incomplete": incomplete,
        "table1": table1,
        "items": items,
    }
    return write_text_atomic(Path(run_dir) / SCORES_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_scores(
    run_dir: Path,
    bench: Bench,
    items: list[ItemScore],
    row: Table1Row,
    panel: list[str],
    aggregate: str,
    style_judge: str | None,
) -> Path:
    """RUN_DIR/scores.json from a panel's item scores and their Table 1 row (see :func:`write_scores_file`)."""
    return write_scores_file(
        run_dir,
        bench={"name": bench.info.name, "version": bench.info.version},
        panel=panel,
        aggregate=aggregate,
        style_judge=style_judge,
        table1=row.model_dump(),
        complete=row.complete,
        incomplete=row.incompleteness(),
        items=item_records(items),
    )


BENCHMARK_SCORES_SCHEMA = "omnivchat-benchmark-scores-v1"


def write_benchmark_scores(run_dir: Path, scores: Any) -> Path:
    """RUN_DIR/scores.json of a run of any benchmark but the native one: its metrics, every item's score with
    its reason, and whether it is complete (``scores`` is a :class:`omnivchat.benchmarks.Scores`)."""
    manifest = _read_manifest(run_dir)
    data = {
        "schema": BENCHMARK_SCORES_SCHEMA,
        "benchmark": scores.benchmark,
        "model": manifest.get("model") or (manifest.get("route") or {}).get("model"),
        "simulated": (manifest.get("route") or {}).get("route") == "sim" or bool(manifest.get("simulated")),
        "condition": manifest.get("condition", "both"),
        **scores.model_dump(mode="json"),
    }
    return write_text_atomic(Path(run_dir) / SCORES_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _read_manifest(run_dir: Path) -> dict[str, Any]:
    from omnivchat._files import loads_json, read_text

    data = loads_json(read_text(Path(run_dir) / "manifest.json", "manifest"))
    return data if isinstance(data, dict) else {}
