"""The leaderboard of a suite directory: models x benchmarks, each cell's mean item score with its 95% interval,
a rank per benchmark with paired tests between neighbours (Holm-corrected across the table), the fusion gain
where ablated, and cost and tokens per model; written as HTML, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from omnivchat._files import FileModel, write_text_atomic
from omnivchat.benchmarks import ScoreOptions, benchmark_of
from omnivchat.diagnostics import CompareError, compare_runs, read_ablation
from omnivchat.diagnostics.compare import UNSCORED, unscored_kind
from omnivchat.errors import OmnivchatError
from omnivchat.report import viewer_href
from omnivchat.runs import MANIFEST_FILE, run_cost, store_counts
from omnivchat.scoring.statistics import bootstrap_interval, holm
from omnivchat.suite._file import Suite, read_suite_manifest
from omnivchat.suite._run import ABLATION, REPORT, RUN, STATUS_FILE, panel_of

LEADERBOARD_SCHEMA = "omnivchat-leaderboard-v1"
METRIC = "mean item score"  # every benchmark's items on its own scale; a failed or unscored item is never a 0
TEMPLATE = "leaderboard.html.j2"


class Neighbour(BaseModel):
    """The paired test of a cell against the cell ranked just above it (B − A = above − this)."""

    above: str = Field(description="The model ranked just above.")
    n_paired: int
    difference: float | None = Field(description="Mean of (above − this) over the items scored in both.")
    p: float | None = Field(description="Two-sided sign-flip permutation p-value (omnivchat compare).")
    p_holm: float | None = Field(default=None, description="p Holm-corrected across every test of the table.")
    note: str | None = None


class Cell(BaseModel):
    """One (model, benchmark) pair of the table."""

    model: str
    benchmark: str
    status: Literal["complete", "incomplete", "not run"]
    reason: str | None = None
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_items: int = 0
    n_scored: int = 0
    note: str | None = Field(default=None, description="Replies the panel could not score, counted apart.")
    rank: int | None = Field(default=None, description="Among the benchmark's complete cells; None: not ranked.")
    neighbour: Neighbour | None = None
    fusion_gain: float | None = None
    fusion_ci: tuple[float, float] | None = None
    fusion_note: str | None = None
    report: str | None = Field(default=None, description="The pair's report, relative to the leaderboard.")
    viewer: str | None = Field(default=None, description="The run viewer's page of the pair's run (omnivchat view).")
    view_command: str | None = Field(default=None, description="The command that serves that page.")


class ModelCost(BaseModel):
    """What a model's pairs cost (their runs and ablation grids), from their stores."""

    model: str
    attempts: int = 0
    spent_usd: float = 0.0
    unknown: int = Field(default=0, description="Attempts of unknown cost (no price, no usage).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    unreadable: list[str] = Field(default_factory=list, description="Stores that could not be read: cost unknown.")


class Leaderboard(FileModel):
    """leaderboard.json (schema omnivchat-leaderboard-v1)."""

    schema_: str = Field(LEADERBOARD_SCHEMA, alias="schema")
    suite_dir: str
    metric: str = METRIC
    panel: list[str]
    models: list[str]
    benchmarks: list[str]
    cells: list[Cell]
    costs: list[ModelCost]
    notes: list[str] = Field(default_factory=list)

    def cell(self, model: str, benchmark: str) -> Cell:
        return next(c for c in self.cells if c.model == model and c.benchmark == benchmark)


def _reasons(out_dir: Path) -> dict[tuple[str, str], str]:
    """Why each pair failed in the last `suite run` (DIR/suite-status.json; none when absent or unreadable)."""
    try:
        rows = json.loads((out_dir / STATUS_FILE).read_text(encoding="utf-8")).get("pairs", [])
        return {(r["model"], r["benchmark"]): r["reason"] for r in rows if r.get("reason")}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return {}


def _cell(model: str, benchmark: str, pair: Path, options: ScoreOptions, reason: str | None) -> Cell:
    run_dir = pair / RUN
    if not (run_dir / MANIFEST_FILE).is_file():
        return Cell(model=model, benchmark=benchmark, status="not run", reason=reason or "no run yet")
    try:
        scores = benchmark_of(run_dir).score(None, run_dir, options)
    except OmnivchatError as err:  # this cell cannot be scored (its data moved, a store damaged): said, not fatal
        return Cell(
            model=model, benchmark=benchmark, status="incomplete", reason=" ".join(f"cannot score: {err}".split())
        )
    values = [i.score for i in scores.items if i.score is not None]
    n = len(scores.items)
    low, high = bootstrap_interval(values)
    kinds: dict[str, int] = {}
    for item in scores.items:
        if item.score is None:
            kind = unscored_kind(item)
            kinds[kind] = kinds.get(kind, 0) + 1
    # Items never run or whose request failed make the cell incomplete: never averaged in, never ranked. A reply
    # the panel cannot score (no machine check for the rule judge) is counted apart, as `omnivchat score` does.
    missing = {k: v for k, v in kinds.items() if k != UNSCORED}
    whole = scores.complete and bool(values) and not missing
    why = None
    if not whole:
        parts = [scores.incomplete] if scores.incomplete else []
        parts += [f"{v} of {n} items: {k}" for k, v in sorted(missing.items())]
        parts += [reason] if reason else []
        why = "; ".join(parts) or "no item scored"
    cell = Cell(
        model=model,
        benchmark=benchmark,
        status="complete" if whole else "incomplete",
        reason=why,
        value=sum(values) / len(values) if values else None,
        ci_low=low,
        ci_high=high,
        n_items=n,
        n_scored=len(values),
        note=f"{kinds[UNSCORED]} of {n} replies the panel could not score (counted apart)"
        if UNSCORED in kinds
        else None,
    )
    ablation = pair / ABLATION
    if (ablation / "ablation.json").is_file():
        diagnosis = read_ablation(ablation).diagnosis
        cell.fusion_gain = diagnosis.fusion_gain
        interval = diagnosis.intervals.get("fusion_gain")
        cell.fusion_ci = (float(interval[0]), float(interval[1])) if interval is not None else None
        if diagnosis.refused:
            cell.fusion_note = "refused: the prior floor is above chance"
    return cell


def _rank(cells: list[Cell], pairs: dict[str, Path], options: ScoreOptions, notes: list[str]) -> None:
    """Rank one benchmark's complete cells (highest first; equal values share a rank) and test each against the
    one just above it with the paired comparison of `omnivchat compare`."""
    ranked = sorted((c for c in cells if c.status == "complete"), key=lambda c: -(c.value or 0.0))
    for position, cell in enumerate(ranked):
        above = ranked[position - 1] if position else None
        cell.rank = position + 1 if above is None or above.value != cell.value else above.rank
        if above is None:
            continue
        try:
            compared = compare_runs(pairs[cell.model] / RUN, pairs[above.model] / RUN, options=options)
        except CompareError as err:
            cell.neighbour = Neighbour(above=above.model, n_paired=0, difference=None, p=None, note=str(err))
            notes.append(f"{cell.benchmark}: {cell.model} vs {above.model} not tested ({err})")
            continue
        stats = compared.stats
        cell.neighbour = Neighbour(
            above=above.model, n_paired=compared.n_paired, difference=stats.difference, p=stats.sign_flip.p
        )


def _costs(model: str, pairs: list[Path]) -> ModelCost:
    cost = ModelCost(model=model)
    for pair in pairs:
        for store in sorted(pair.glob("**/store.sqlite")):
            try:
                total = run_cost(store.parent).total
                tokens = store_counts(store.parent)[0].get("tokens", {})
            except OmnivchatError:  # a damaged store: its cost is unknown, said apart, never taken as 0
                cost.unreadable.append(str(store))
                continue
            cost.attempts += total.attempts
            cost.spent_usd += total.spent_usd
            cost.unknown += total.n_unknown
            cost.prompt_tokens += int(tokens.get("prompt_tokens") or 0)
            cost.completion_tokens += int(tokens.get("completion_tokens") or 0)
            cost.total_tokens += int(tokens.get("total_tokens") or 0)
    return cost


def build_leaderboard(out_dir: Path, where: Path | None = None) -> Leaderboard:
    """The leaderboard of a suite directory, read from its pairs' runs (no request is sent). ``where``: the
    folder the HTML goes to, which each cell's link to its pair's report is relative to."""
    out_dir = Path(out_dir)
    suite = Suite.model_validate(read_suite_manifest(out_dir).suite)
    config, members = panel_of(suite)
    options = ScoreOptions(config=config, panel=members, aggregate=suite.judges.aggregate)
    reasons = _reasons(out_dir)
    where = where or out_dir
    cells: list[Cell] = []
    notes: list[str] = []
    for benchmark in suite.benchmarks:
        pairs = {model: out_dir / model / benchmark for model in suite.models}
        row = [_cell(m, benchmark, pairs[m], options, reasons.get((m, benchmark))) for m in suite.models]
        for cell in row:
            report = pairs[cell.model] / REPORT
            cell.report = os.path.relpath(report, where) if report.is_file() else None
            if (pairs[cell.model] / RUN / MANIFEST_FILE).is_file():  # the viewer names a lone run by its folder
                cell.viewer = viewer_href(RUN)
                cell.view_command = f"omnivchat view {pairs[cell.model] / RUN}"
        _rank(row, pairs, options, notes)
        cells += row
    tested = [c.neighbour for c in cells if c.neighbour is not None]
    for neighbour, adjusted in zip(tested, holm([n.p for n in tested]), strict=True):
        neighbour.p_holm = adjusted
    order = {m: i for i, m in enumerate(suite.models)}
    cells.sort(key=lambda c: (order[c.model], list(suite.benchmarks).index(c.benchmark)))
    costs = [_costs(m, [out_dir / m / b for b in suite.benchmarks]) for m in suite.models]
    return Leaderboard(
        suite_dir=str(out_dir),
        panel=members,
        models=list(suite.models),
        benchmarks=list(suite.benchmarks),
        cells=cells,
        costs=costs,
        notes=notes,
    )


CSV_COLUMNS = (
    "model", "benchmark", "status", "value", "ci_low", "ci_high", "n_items", "n_scored", "rank", "above",
    "difference", "p", "p_holm", "fusion_gain", "fusion_low", "fusion_high", "reason", "note", "report",
    "model_attempts", "model_spent_usd", "model_unknown_cost", "model_total_tokens",
)  # fmt: skip


def render_csv(board: Leaderboard) -> str:
    """One row per cell, its model's cost and tokens repeated on each of its rows."""
    costs = {c.model: c for c in board.costs}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for c in board.cells:
        n, cost = c.neighbour, costs[c.model]
        writer.writerow(
            [
                c.model,
                c.benchmark,
                c.status,
                c.value,
                c.ci_low,
                c.ci_high,
                c.n_items,
                c.n_scored,
                c.rank,
                n.above if n else None,
                n.difference if n else None,
                n.p if n else None,
                n.p_holm if n else None,
                c.fusion_gain,
                c.fusion_ci[0] if c.fusion_ci else None,
                c.fusion_ci[1] if c.fusion_ci else None,
                c.reason,
                c.note,
                c.report,
                cost.attempts,
                cost.spent_usd,
                cost.unknown,
                cost.total_tokens,
            ]
        )
    return buffer.getvalue()


def render_leaderboard(board: Leaderboard) -> str:
    """The leaderboard page: self-contained HTML (inline CSS, no outside assets)."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    source = resources.files("omnivchat.suite").joinpath(TEMPLATE).read_text(encoding="utf-8")
    table = [[board.cell(m, b) for b in board.benchmarks] for m in board.models]
    return env.from_string(source).render(
        board=board,
        rows=list(zip(board.models, table, board.costs, strict=True)),
        ablated=[b for b in board.benchmarks if any(board.cell(m, b).fusion_gain is not None for m in board.models)],
        fmt=_fmt,
    )


def _fmt(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def write_leaderboard(board: Leaderboard, html: Path) -> list[Path]:
    """Write the HTML, and the CSV and JSON beside it (same name, .csv and .json)."""
    return [
        write_text_atomic(html, render_leaderboard(board)),
        write_text_atomic(html.with_suffix(".csv"), render_csv(board)),
        write_text_atomic(html.with_suffix(".json"), board.to_json()),
    ]
