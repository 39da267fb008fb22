"""RUN_DIR/scores.json of a native run: its Table 1 row and every item's score with its reason (what reports
read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnivchat._files import write_model
from omnivchat.bench import Bench
from omnivchat.benchmarks.native._files import load_manifest
from omnivchat.benchmarks.native._judging import ItemScore, style_prompt_label
from omnivchat.judges import SCORES_FILE, BenchName, NativeScores, ScoreRecord
from omnivchat.scoring import Table1Row, is_empty_reply


def item_records(items: list[ItemScore]) -> list[ScoreRecord]:
    """Each item of a native run as scores.json records it: its score with the reason, and why it has none."""
    return [
        ScoreRecord(
            id=i.item_id,
            subcategory=i.subcategory,
            source=i.source,
            score=i.score,
            style=i.style,
            reason=i.reason,
            per_judge=i.per_judge,
            empty=i.reply is not None and is_empty_reply(i.reply),
            request_failed=i.reply is None and i.ran,
            not_run=not i.ran,
        )
        for i in items
    ]


def prompt_labels(run_dir: Path, style_judge: str | None) -> dict[str, str]:
    """Which prompts made a native run's scores, said plainly (omnivchat.prompts.prompt_label): ``system`` (the
    model's, from the run's manifest) and ``style`` (the style judge's, from RUN/judges.json) when style is graded."""
    labels: dict[str, str] = {}
    system = load_manifest(run_dir).prompt_label("system")
    if system is not None:
        labels["system"] = system
    style = style_prompt_label(run_dir, style_judge)
    if style is not None:
        labels["style"] = style
    return labels


def write_scores_file(
    run_dir: Path,
    *,
    bench: BenchName | dict[str, Any],
    panel: list[str],
    aggregate: str,
    style_judge: str | None,
    table1: Table1Row | dict[str, Any],
    complete: bool,
    incomplete: str | None,
    items: list[ScoreRecord] | list[dict[str, Any]],
) -> Path:
    """RUN_DIR/scores.json of a native run (schema omnivchat-scores-v1): the Table 1 row and every item's score
    with its reason, with the model and condition from the run's manifest (what reports read)."""
    manifest = load_manifest(run_dir)
    scores = NativeScores.model_validate(
        {
            "model": manifest.route.model,
            "simulated": manifest.simulated,
            "condition": manifest.condition,
            "bench": bench,
            "panel": panel,
            "aggregate": aggregate,
            "style_judge": style_judge,
            "prompts": prompt_labels(run_dir, style_judge),
            "complete": complete,
            "incomplete": incomplete,
            "table1": table1,
            "items": items,
        }
    )
    return write_model(Path(run_dir) / SCORES_FILE, scores)


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
        bench=BenchName(name=bench.info.name, version=bench.info.version),
        panel=panel,
        aggregate=aggregate,
        style_judge=style_judge,
        table1=row,
        complete=row.complete,
        incomplete=row.incompleteness(),
        items=item_records(items),
    )
