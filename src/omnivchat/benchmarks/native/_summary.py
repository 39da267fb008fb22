"""What ``omnivchat score`` shows of a native run: its Table 1 row under a judge panel, as the paper prints it,
with the prompts that ran, the unscored items by kind and the instances rejected since the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnivchat.bench import InspectionDecision
from omnivchat.benchmarks._protocol import ScoreOptions, ScoreReport, ScoreTable
from omnivchat.benchmarks.native._judging import collect_scores, run_bench
from omnivchat.benchmarks.native._options import NativeScoreOptions
from omnivchat.benchmarks.native._scores import bench_name, native_scores, prompt_labels
from omnivchat.judges import RULE_JUDGE, write_benchmark_scores
from omnivchat.scoring import TABLE1_COLUMNS, Table1Row, table1_row


def table1_table(row: Table1Row, title: str) -> ScoreTable:
    """A Table 1 row as a table, with the counts behind it under it (— marks a column with no data)."""
    values = row.model_dump()
    cells = ["—" if values[c] is None else f"{values[c]:.{2 if c in ('RE', 'Len') else 3}f}" for c in TABLE1_COLUMNS]
    note = (
        f"{values['n_instances']} instances: {values['n_scored']} scored, {values['n_unscored']} unscored "
        f"({values['n_failed_requests']} failed requests, {values['n_not_run']} not run), "
        f"{values['n_empty_replies']} empty replies, {values['n_style_graded']} style-graded. "
        "— marks a column with no data."
    )
    partial = row.partial_mean_note()
    if partial is not None:
        note += f" Mean —: {partial}, not Eq. 2's Mean over every subcategory of the bench."
    return ScoreTable(title, list(TABLE1_COLUMNS), [cells], note, incomplete=row.incompleteness() is not None)


def rejected_note(rejected: dict[str, InspectionDecision], delivered_only: bool) -> str | None:
    """The run's instances that human inspection rejected after the run, and whether they count."""
    if not rejected:
        return None
    named = "; ".join(f"{item_id} ({decision.reason})" for item_id, decision in rejected.items())
    how = (
        "left out of the scores (--delivered-only)"
        if delivered_only
        else "still scored, as run; pass --delivered-only to leave them out"
    )
    return f"{len(rejected)} of this run's instance(s) rejected by inspection since the run: {named}; {how}"


def score_summary(run_dir: Path, options: ScoreOptions, own: NativeScoreOptions) -> ScoreReport:
    """Table 1 row of a run under a panel (``options.panel``, the rule judge when empty), from stored verdicts;
    ``own``: the style judge and whether only the delivered instances count.

    Items are counted against the bench: a run with items that have no reply is incomplete (scores.json is written
    either way, marked incomplete)."""
    members = options.panel or [RULE_JUDGE]
    aggregate, style_judge = options.aggregate, own.style_judge
    bench = run_bench(run_dir, options.data, delivered_only=own.delivered_only)
    items = collect_scores(run_dir, bench, members, aggregate=aggregate, style_judge=style_judge)
    row = table1_row([i.scored_reply() for i in items], style_graded=style_judge is not None)
    title = f"Table 1 row: {bench.info.name}, panel {'+'.join(members)} ({aggregate})"
    values: dict[str, Any] = {**row.model_dump(), "panel": members, "aggregate": aggregate}
    report = ScoreReport(name=bench.info.name, values=values, tables=[table1_table(row, title)])
    labels = prompt_labels(run_dir, style_judge)  # omnivchat's own prompts are not the paper's protocol: say which ran
    if labels:
        report.lines.append("prompts: " + "; ".join(f"{kind} prompt: {label}" for kind, label in labels.items()))
    try:
        scores = native_scores(run_dir, bench_name(bench), items, row, members, aggregate, style_judge)
        report.written = write_benchmark_scores(run_dir, scores)
    except OSError as err:  # read-only storage: the row is the result; say what was not kept
        report.not_written = f"{run_dir / 'scores.json'} not written ({err.strerror})"
    for item in items:
        if item.score is None:
            kind = item.failure or "unscored"
            report.unscored[kind] = report.unscored.get(kind, 0) + 1
            report.first_unscored.setdefault(kind, f"{item.item_id}: {item.reason}")
    note = rejected_note(bench.rejected, own.delivered_only)
    if note is not None:
        report.notes.append(note)
    incomplete = row.incompleteness()
    if incomplete is not None:
        todo = []
        if row.n_failed_requests + row.n_not_run:
            todo.append("resume the run with `omnivchat eval`")
        if row.unscored_subcategories:
            todo.append("score every subcategory (a panel with an LLM judge: `omnivchat judge`, then `score --panel`)")
        report.incomplete = f"{incomplete}: these figures are not the bench's; {' and '.join(todo)}"
    return report
