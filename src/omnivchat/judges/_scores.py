"""RUN_DIR/scores.json: a run's Table 1 row and every item's score with its reason (what reports read)."""

from __future__ import annotations

import json
from pathlib import Path

from omnivchat._files import write_text_atomic
from omnivchat.bench import Bench
from omnivchat.judges._run import ItemScore
from omnivchat.runs import load_manifest
from omnivchat.scoring import Table1Row, is_empty_reply

SCORES_FILE = "scores.json"


def write_scores(
    run_dir: Path,
    bench: Bench,
    items: list[ItemScore],
    row: Table1Row,
    panel: list[str],
    aggregate: str,
    style_judge: str | None,
) -> Path:
    """RUN_DIR/scores.json: the Table 1 row and every item's score with its reason (what reports read)."""
    manifest = load_manifest(run_dir)
    data = {
        "schema": "omnivchat-scores-v1",
        "model": manifest["route"]["model"],
        "simulated": manifest.get("simulated", False),
        "condition": manifest["condition"],
        "bench": {"name": bench.info.name, "version": bench.info.version},
        "panel": panel,
        "aggregate": aggregate,
        "style_judge": style_judge,
        "complete": row.complete,
        "incomplete": row.incompleteness(),
        "table1": row.model_dump(),
        "items": [
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
        ],
    }
    return write_text_atomic(Path(run_dir) / "scores.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
