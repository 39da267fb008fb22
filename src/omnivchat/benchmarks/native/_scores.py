"""A native run's scores: its Table 1 row and every item's score with its reason, as scores.json keeps them (in
the one scores schema, omnivchat.judges.BenchmarkScores) and reports read them."""

from __future__ import annotations

from pathlib import Path

from omnivchat.bench import Bench
from omnivchat.benchmarks.native._files import NATIVE_BENCHMARK, load_manifest
from omnivchat.benchmarks.native._judging import ItemScore, style_prompt_label
from omnivchat.judges import BenchName, ScoreRecord, Scores, record_result
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


def bench_name(bench: Bench) -> BenchName:
    """The name and version of the bench a native run was scored on, as its scores.json records them."""
    return BenchName(name=bench.info.name, version=bench.info.version)


def native_scores(
    run_dir: Path,
    bench: BenchName,
    items: list[ItemScore],
    row: Table1Row,
    panel: list[str],
    aggregate: str,
    style_judge: str | None,
) -> Scores:
    """A native run's scores from a panel's item scores and their Table 1 row: each item with its record as
    ``detail``, and in ``metrics`` the Table 1 row, the bench, the panel and the prompts that ran (what
    scores.json keeps, through :func:`omnivchat.benchmarks.save_scores`)."""
    metrics = {
        "table1": row.model_dump(),
        "bench": bench.dump(),
        "panel": panel,
        "aggregate": aggregate,
        "style_judge": style_judge,
        "prompts": prompt_labels(run_dir, style_judge),
    }
    return Scores(
        benchmark=NATIVE_BENCHMARK,
        items=[record_result(r) for r in item_records(items)],
        metrics=metrics,
        complete=row.complete,
        incomplete=row.incompleteness(),
    )
