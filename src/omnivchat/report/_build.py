"""Turning the inputs into the page: table cells that know where their number came from, plots, and the HTML.

Every number on the page is a :class:`Cell` whose tooltip names the input file (by its footer number and path)
and the key inside it, with the unrounded value; the footer lists every input file with its sha256.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from omnivchat._files import write_text_atomic
from omnivchat.diagnostics import Diagnosis, SelfCheckRecord
from omnivchat.report._inputs import (
    LABELS_ROLE,
    Ablation,
    BenchmarkRun,
    Comparison,
    InputFile,
    Inputs,
    ScoredRun,
    load_inputs,
)
from omnivchat.runs import CostTotals, money
from omnivchat.scoring import Table1Row

TEMPLATE = "template.html.j2"
SIMULATED_LABEL = "simulated (harness check)"

# Why a Table 1 column can be empty (scoring.table1_row returns None for "nothing to average").
NULL_REASONS = {
    "Human": "no data: no human-sourced item was scored",
    "RE": "no data: no scored reply to measure",
    "Style": "no data: no reply was style-graded",
    "Len": "no data: no non-empty reply",
    "Single": "no data: no scored single-turn item",
    "Multi": "no data: no scored multi-turn item",
    "Mean": "no data: no scored synthetic item",
}
METRIC_LABELS = {
    "fusion_gain": "Fusion gain (both − max(video_only, audio_only))",
    "video_reliance": "Video reliance (both − audio_only)",
    "audio_reliance": "Audio reliance (both − video_only)",
    "prior_floor": "Prior floor (neither)",
}
METRIC_FLAGS = {"fusion_gain": "no_fusion", "video_reliance": "video_ignored", "audio_reliance": "audio_ignored"}
FLAG_TEXT = {
    "no_fusion": "no fusion: both streams do no better than the better one alone",
    "video_ignored": "video ignored: removing the video costs almost nothing",
    "audio_ignored": "audio ignored: removing the audio costs almost nothing",
    "prior_floor_high": "prior floor high: answerable without the media",
}


@dataclass(frozen=True)
class Cell:
    """One table cell: the text shown, a tooltip tracing it to its source, and a CSS class."""

    text: str
    title: str = ""
    cls: str = ""


def _src(file: InputFile) -> str:
    return f"[{file.ref}] {file.path}"


def num(
    value: float | int | None, file: InputFile | None, key: str, why_null: str = "no data", digits: int = 3
) -> Cell:
    """A number to 3 decimals whose tooltip gives the source file, key and exact value; None shows as "—"."""
    where = f"{_src(file)} → {key}" if file is not None else key
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell("—", f"{why_null} ({where})", "null")
    if isinstance(value, int):  # counts (bool is an int too)
        return Cell(str(int(value)), f"{where} = {value}", "num")
    return Cell(f"{round(value, digits) + 0.0:.{digits}f}", f"{where} = {value!r}", "num")  # never "-0.000"


def interval(pair: Sequence[float] | None, file: InputFile, key: str) -> Cell:
    if not pair:
        return Cell("—", f"no interval ({_src(file)} → {key})", "null")
    lo, hi = pair
    return Cell(f"[{lo:.3f}, {hi:.3f}]", f"{_src(file)} → {key} = [{lo!r}, {hi!r}]", "num")


def _href(target: Path, output: Path) -> str:
    """A link from the report to an input file: relative when possible, so a copied folder keeps working."""
    try:
        rel = os.path.relpath(target.resolve(), output.resolve().parent)
    except ValueError:  # another drive (Windows): no relative path exists
        return target.resolve().as_uri()
    return quote(Path(rel).as_posix())


VIEWER_URL = "http://127.0.0.1:8766/"
"""Where ``omnivchat view`` serves by default: the report's viewer links open its matching filter there."""


def viewer_href(label: str, **filters: str) -> str:
    """A link to the run viewer's page for the run labelled ``label`` with ``filters`` set, in the fragment scheme
    of docs/viewer.md (``#run=LABEL&state=failed...``); the viewer names a run by its folder's name, a condition
    of an ablation directory ``DIR/CONDITION``."""
    from urllib.parse import urlencode

    return f"{VIEWER_URL}#{urlencode({'run': label, **filters})}"


def _viewer_links(label: str) -> list[dict[str, str]]:
    """The viewer's filters a failure-count row links to."""
    states = (("all", ""), ("unscored", "unscored"), ("failed", "failed"), ("not run", "not run"))
    return [{"text": text, "href": viewer_href(label, **({"state": s} if s else {}))} for text, s in states]


def _display(path: Path, base: Path) -> str:
    """A path as shown in tables: relative to the folder all inputs share (named in the Inputs section)."""
    try:
        return Path(os.path.relpath(path.resolve(), base)).as_posix()
    except ValueError:
        return str(path.resolve())


def _common_base(inputs: Inputs) -> Path:
    """The folder above every input directory, so even a single run keeps its own name in the tables."""
    # A file the report only names (an agreement study's labels, kept anywhere) is shown by its full path.
    dirs = [str(f.path.resolve().parent.parent) for f in inputs.sources.files if f.role != LABELS_ROLE]
    try:
        return Path(os.path.commonpath(dirs)) if dirs else Path.cwd()
    except ValueError:  # several drives (Windows): no common folder; _display falls back to absolute paths
        return Path.cwd()


# ---------------------------------------------------------------------------------------------------------------
# Sections


def _null_reason(row: Table1Row, column: str) -> str:
    """Why a Table 1 cell is empty: the Mean of a bench with unscored subcategories says over how many it is."""
    partial = row.partial_mean_note() if column == "Mean" else None
    if partial is not None:
        return f"no data: {partial}, not the Mean over every subcategory of the bench (Eq. 2)"
    return NULL_REASONS.get(column, f"no data: no scored {column} item")


def _table1(runs: list[ScoredRun], output: Path, base: Path) -> dict[str, Any]:
    from omnivchat.scoring import TABLE1_COLUMNS

    rows = []
    for run in runs:
        t1, f = run.table1, run.scores_file
        rows.append(
            {
                "model": run.label,
                "simulated": run.simulated,
                "bench": run.bench,
                "panel": "+".join(run.scores.panel) or "—",
                "prompts": run.prompts,
                "cells": [num(getattr(t1, c), f, f"metrics.table1.{c}", _null_reason(t1, c)) for c in TABLE1_COLUMNS],
                "n": num(t1.n_scored, f, "metrics.table1.n_scored"),
                "n_instances": num(t1.n_instances, f, "metrics.table1.n_instances"),
                "incomplete": _incomplete(run),
                "run_dir": _display(run.dir, base),
                "scores_href": _href(run.dir / "scores.json", output),
                "viewer_href": viewer_href(_run_label(run.dir)),
                "ref": f.ref,
            }
        )
    return {"columns": list(TABLE1_COLUMNS), "rows": rows}


def _run_label(run_dir: Path) -> str:
    """The viewer's label of a run: its folder's name, or ``ABLATION/CONDITION`` for a condition's run."""
    resolved = run_dir.resolve()
    if (resolved.parent / "ablation.json").is_file():
        return f"{resolved.parent.name}/{resolved.name}"
    return resolved.name


def _incomplete(run: ScoredRun) -> str | None:
    """Why a run is not the whole bench ("incomplete: K of N items have no reply ..."), or None. Files written
    before items were counted against the bench say nothing of unrun items: judged by failures (the model's
    default for such a file)."""
    return run.scores.incomplete


def _failures(runs: list[ScoredRun]) -> list[dict[str, Any]]:
    out = []
    for run in runs:
        t1, f = run.table1, run.scores_file
        unscored = [
            {"id": i.id, "subcategory": i.subcategory, "reason": i.reason or "—"} for i in run.items if i.score is None
        ]
        out.append(
            {
                "model": run.label,
                "simulated": run.simulated,
                "cells": [
                    num(getattr(t1, k), f, f"metrics.table1.{k}")
                    for k in (
                        "n_instances",
                        "n_scored",
                        "n_unscored",
                        "n_failed_requests",
                        "n_not_run",
                        "n_empty_replies",
                        "n_style_graded",
                    )
                ],
                "bad": bool(t1.n_unscored or t1.n_failed_requests or t1.n_empty_replies),
                "incomplete": _incomplete(run),
                "unscored": unscored,
                "viewer": _viewer_links(_run_label(run.dir)),
                "ref": f.ref,
            }
        )
    return out


def _cost_row(kind: str, totals: CostTotals, files: Sequence[InputFile]) -> dict[str, Any]:
    """One row of the cost table: what ``totals`` spent, read from the stores ``files``."""
    unknown = ", ".join(f"{why}: {n}" for why, n in sorted(totals.unknown.items())) or "none"
    spent = money(totals.spent_usd) if totals.priced else "cost unknown"
    where = ", ".join(_src(f) for f in files) if len(files) <= 2 else f"{len(files)} run stores"
    return {
        "kind": kind,
        "spent": Cell(
            spent, f"{where} → attempt_costs (sum of {totals.priced} priced attempts)", "" if totals.priced else "null"
        ),
        "attempts": totals.attempts,
        "priced": totals.priced,
        "unknown": unknown,
        "refs": [f.ref for f in files] if len(files) <= 4 else [files[0].ref, "…", files[-1].ref],
    }


def _costs(runs: Sequence[ScoredRun | BenchmarkRun], ablations: Sequence[Ablation]) -> list[dict[str, Any]]:
    """Per run with a store: the known cost, the attempts priced and those of unknown cost (with why), per kind of
    request (the model's, each judge's); per ablation grid, every run it made (its four conditions, its
    self-check's) and the grid in all, where each condition's run is counted once. An unknown cost is never $0."""
    in_grids = {file.path.resolve() for ablation in ablations for _, _, file in ablation.costs}
    out = []
    for run in runs:
        if run.cost is None or run.cost_file is None or run.cost_file.path.resolve() in in_grids:
            continue
        rows = [
            _cost_row(kind, totals, [run.cost_file])
            for kind, totals in [("all", run.cost.total), *sorted(run.cost.by_kind.items())]
        ]
        out.append({"model": run.label, "simulated": run.simulated, "rows": rows})
    for ablation in ablations:
        if not ablation.costs:
            continue
        rows, checks, grid = [], CostTotals(), CostTotals()
        check_files: list[InputFile] = []
        by_kind: defaultdict[str, CostTotals] = defaultdict(CostTotals)
        for name, cost, file in ablation.costs:
            grid.merge(cost.total)
            for kind, totals in cost.by_kind.items():
                by_kind[kind].merge(totals)
            if name.startswith("self-check "):
                checks.merge(cost.total)
                check_files.append(file)
            else:
                rows.append(_cost_row(f"condition {name}", cost.total, [file]))
        if check_files:
            rows.append(_cost_row(f"self-check ({len(check_files)} runs of simulated models)", checks, check_files))
        files = [file for _, _, file in ablation.costs]
        rows.append(_cost_row("grid, in all", grid, files))
        rows += [_cost_row(f"grid, {kind}", totals, files) for kind, totals in sorted(by_kind.items())]
        label = f"{ablation.model} · ablation grid {ablation.dir.name}"
        out.append({"model": label, "simulated": ablation.simulated, "rows": rows})
    return out


def _subcategories(
    runs: list[ScoredRun],
) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str, list[float | None]]]]:
    """Per-subcategory means of synthetic scored items (as Table 1's Mean uses), as a table and plot series."""
    from omnivchat.bench import SUBCATEGORIES, resolve_subcategory

    stats: list[dict[str, tuple[list[float], int]]] = []
    present: set[str] = set()
    for run in runs:
        groups: dict[str, list[float]] = defaultdict(list)
        counts: dict[str, int] = defaultdict(int)
        for item in run.items:
            if item.source != "synthetic":
                continue
            try:
                code = resolve_subcategory(item.subcategory).code
            except KeyError:
                continue  # not in the taxonomy: scores.json came from a bench the loader would have refused
            counts[code] += 1
            present.add(code)
            if item.score is not None:
                groups[code].append(float(item.score))
        stats.append({code: (groups[code], counts[code]) for code in counts})
    order = [code for code in SUBCATEGORIES if code in present]
    rows = []
    series = []
    for code in order:
        sub = SUBCATEGORIES[code]
        cells = []
        for run, by_code in zip(runs, stats, strict=True):
            scores, count = by_code.get(code, ([], 0))
            key = f"mean of items[subcategory={code}].score ({len(scores)} scored of {count})"
            if not count:
                cells.append(num(None, run.scores_file, key, "no data: no item of this subcategory"))
            elif not scores:
                cells.append(num(None, run.scores_file, key, f"unscored: {count} items, none scored"))
            else:
                cells.append(num(math.fsum(scores) / len(scores), run.scores_file, key))
        rows.append({"code": code, "path": sub.path, "name": sub.name, "category": sub.category, "cells": cells})
    for run, by_code in zip(runs, stats, strict=True):
        means = [
            (math.fsum(by_code[c][0]) / len(by_code[c][0])) if c in by_code and by_code[c][0] else None for c in order
        ]
        label = run.label + (" (sim)" if run.simulated else "")
        series.append((label, means))
    models = [run.label for run in runs]
    return {"models": models, "rows": rows}, [(c, SUBCATEGORIES[c].category) for c in order], series


def _diagnosis_metrics(d: Any, f: InputFile, key: str) -> list[dict[str, Any]]:
    from omnivchat.diagnostics import METRICS

    rows = []
    for metric in METRICS:
        flag = METRIC_FLAGS.get(metric)
        withheld = d.refused and metric != "prior_floor"
        value = getattr(d, metric)
        if withheld:
            # The diagnosis refuses these when the prior floor is high: show that, not a number to quote.
            cell = Cell("not reported", f"refused: prior floor above chance ({_src(f)} → {key}.{metric} = {value!r})")
            ci = Cell("—", "refused: no interval reported", "null")
        else:
            cell = num(value, f, f"{key}.{metric}")
            ci = interval(d.intervals.get(metric), f, f"{key}.intervals.{metric}")
        rows.append(
            {
                "label": METRIC_LABELS[metric],
                "value": cell,
                "ci": ci,
                "flag": ("prior_floor_high" if metric == "prior_floor" else flag)
                if (flag in d.flags or (metric == "prior_floor" and d.refused))
                else "",
            }
        )
    return rows


def _or_unknown(value: object) -> str:
    return "?" if value is None else str(value)


def _self_check_models(record: SelfCheckRecord | None) -> list[dict[str, Any]]:
    """Each simulated model of the self-check with what was expected of it (files written before the video-blind
    check held one broken model, sim:no-fusion, in flat keys: the record reads them as its two models)."""
    if record is None or record.skipped:
        return []
    return [
        {"model": m, "expected": v.expected, "flagged": "?" if v.flagged is None else v.flagged}
        for m, v in (record.models or {}).items()
    ]


def _diagnosis_rows(diagnoses: dict[str, Diagnosis | None], f: InputFile, prefix: str) -> list[dict[str, Any]]:
    """One row per category (or per task) of a grid, each number traced to its key in ablation.json."""
    from omnivchat.diagnostics import CONDITIONS

    rows: list[dict[str, Any]] = []
    for code, cd in diagnoses.items():
        key = f"{prefix}.{code}"
        if cd is None:
            rows.append({"code": code, "none": True})
            continue
        rows.append(
            {
                "code": code,
                "none": False,
                "n": num(cd.n_items, f, f"{key}.n_items"),
                "chance": num(cd.chance, f, f"{key}.chance"),
                "means": [num(cd.means.get(c), f, f"{key}.means.{c}") for c in CONDITIONS],
                "gain": Cell("not reported", "refused: prior floor above chance")
                if cd.refused
                else num(cd.fusion_gain, f, f"{key}.fusion_gain"),
                "gain_ci": Cell("—", "refused", "null")
                if cd.refused
                else interval(cd.intervals.get("fusion_gain"), f, f"{key}.intervals.fusion_gain"),
                "verdict": cd.verdict,
                "refused": cd.refused,
            }
        )
    return rows


def _ablation(ablation: Ablation, output: Path, base: Path, plot: Callable[..., str]) -> dict[str, Any]:
    from omnivchat.diagnostics import CONDITIONS

    d, f, data = ablation.diagnosis, ablation.file, ablation.data
    conditions = []
    for c in CONDITIONS:
        entry = data.conditions[c]
        run = ablation.runs.get(c)
        counts = None
        if run is not None:
            t1 = run.table1
            counts = [
                num(getattr(t1, k), run.scores_file, f"metrics.table1.{k}")
                for k in ("n_failed_requests", "n_unscored", "n_empty_replies")
            ]
        conditions.append(
            {
                "name": c,
                "mean": num(d.means.get(c), f, f"diagnosis.means.{c}"),
                "ci": interval(d.intervals.get(c), f, f"diagnosis.intervals.{c}"),
                "mean_all": num(entry.mean, f, f"conditions.{c}.mean", "no data: nothing scored"),
                "n_done": num(entry.n_done, f, f"conditions.{c}.n_done"),
                "n_unscored": num(entry.n_unscored, f, f"conditions.{c}.n_unscored"),
                "counts": counts,
                "missing": ablation.missing.get(c),
                "run_dir": _display(ablation.dir / entry.run_dir, base) if entry.run_dir else "—",
                "href": _href(ablation.dir / entry.run_dir / "scores.json", output)
                if run is not None and entry.run_dir
                else None,
                "condition_label": run.condition if run is not None else c,
                "viewer": _viewer_links(f"{ablation.dir.resolve().name}/{c}") if entry.run_dir else [],
            }
        )
    categories = _diagnosis_rows(ablation.categories, f, "categories")
    tasks = _diagnosis_rows(ablation.data.tasks, f, "tasks")
    label = ablation.model + (f" — {SIMULATED_LABEL}" if ablation.simulated else "")
    bench = data.bench
    return {
        "id": f"ablation-{f.ref}",
        "model": ablation.model,
        "simulated": ablation.simulated,
        "dir": _display(ablation.dir, base),
        "href": _href(f.path, output),
        "ref": f.ref,
        "bench": f"{bench.name or '?'} v{bench.version or '?'} ({_or_unknown(bench.n_instances)} instances)",
        "panel": "+".join(data.panel) or "—",
        "aggregate": data.aggregate or "—",
        "neither_mode": data.neither_mode or "—",
        "n_items_used": num(data.n_items_used, f, "n_items_used"),
        "chance": num(d.chance, f, "diagnosis.chance"),
        "margin": num(d.margin, f, "diagnosis.margin"),
        "floor_margin": num(d.floor_margin, f, "diagnosis.floor_margin"),
        "floor": num(d.prior_floor, f, "diagnosis.prior_floor"),
        "floor_ci": interval(d.intervals.get("prior_floor"), f, "diagnosis.intervals.prior_floor"),
        "conditions": conditions,
        "metrics": _diagnosis_metrics(d, f, "diagnosis"),
        "flags": [{"code": x, "text": FLAG_TEXT.get(x, x)} for x in sorted(d.flags)],
        "verdict": d.verdict,
        "refused": d.refused,
        "lines": d.lines,
        "categories": categories,
        "tasks": tasks,
        "self_check": data.self_check,
        "self_check_models": _self_check_models(data.self_check),
        "plot": plot(
            f"{label}: {d.n_items} items",
            {c: d.means[c] for c in CONDITIONS},
            d.intervals,
            d.chance,
            d.refused,
        ),
    }


def _agreement(run: ScoredRun) -> dict[str, Any]:
    from omnivchat.judges import TABLE2_CATEGORIES

    r, f = run.agreement, run.agreement_file
    assert f is not None  # only runs with an agreement study come here
    undefined = "undefined (no reply used, or nothing to divide or correlate)"

    def stat(obj: Any, name: str, key: str) -> Cell:
        # a statistic, or where it is undefined the reason its row records ("n/a (n=1)"); older files have none
        note = getattr(obj, "notes", {}).get(name)
        return num(getattr(obj, name), f, key, undefined) if note is None else _stat_cell(None, note, f, key)

    def cells(section: str, k: int, obj: Any, fields: tuple[str, ...]) -> list[Any]:
        # counts are always defined; every other field may be undefined (None), with the reason shown
        return [
            num(getattr(obj, name), f, f"{section}[{k}].{name}", "no data")
            if name in ("n_items", "repeat")
            else stat(obj, name, f"{section}[{k}].{name}")
            for name in fields
        ]

    judges = [
        {
            "judge": row.judge,
            "cells": [num(row.categories.get(c), f, f"rows[{k}].categories.{c}", undefined) for c in TABLE2_CATEGORIES]
            + cells("rows", k, row, ("pooled", "mean", "gate", "bootstrap_sd", "n_items")),
        }
        for k, row in enumerate(r.rows)
    ]
    pair_fields = ("criterion_agreement", "kappa", "full_score_match", "pearson", "spearman", "n_items")
    pairs = [
        {"a": p.judge_a, "b": p.judge_b, "cells": cells("pairs", k, p, pair_fields)} for k, p in enumerate(r.pairs)
    ]
    repeat_fields = (
        "repeat",
        "pooled_main",
        "pooled_repeat",
        "pooled_change",
        "score_differs",
        "criterion_agreement",
        "kappa",
        "n_items",
    )
    repeats = [{"judge": x.judge, "cells": cells("repeats", k, x, repeat_fields)} for k, x in enumerate(r.repeats)]
    d = r.decomposition
    summary = [
        (f"Krippendorff's α (nominal, {r.alpha_n_units} criterion decisions)", stat(r, "alpha", "alpha")),
        ("Pooled spread across judges", stat(r, "pooled_spread", "pooled_spread")),
        ("Pooled SD across judges", stat(r, "pooled_sd", "pooled_sd")),
        ("Mean spread", stat(r, "mean_spread", "mean_spread")),
    ]
    for code in TABLE2_CATEGORIES:
        if r.category_spreads.get(code) is not None:
            summary.append((f"{code} spread", num(r.category_spreads[code], f, f"category_spreads.{code}")))
    why = r.notes.get("decomposition") or "n/a (fewer than two subcategories or judges)"
    for part in ("subcategory", "judge", "interaction"):
        key = f"decomposition.{part}"
        summary.append((f"Variance share: {part}", _stat_cell(None if d is None else getattr(d, part), why, f, key)))
    return {
        "model": run.label,
        "simulated": run.simulated,
        "ref": f.ref,
        "judges_list": ", ".join(r.judges),
        "n_common": r.n_common,
        "n_items": r.n_items,
        "scope": "replies every judge scored" if r.common_items else "replies each judge scored",
        "columns": [*TABLE2_CATEGORIES, "Pooled", "Mean", "Gate", "Boot SD", "n"],
        "judges": judges,
        "pairs": pairs,
        "repeats": repeats,
        "summary": summary,
        "human": None if r.human is None else _human(r.human, f),
    }


def _human(h: Any, f: InputFile) -> dict[str, Any]:
    """The judges-against-people tables of an agreement study (``judges agree --human``), every cell traced."""

    def share(p: Any, note: str | None, key: str) -> Cell:
        if p.rate is None:
            return _stat_cell(None, note, f, key)
        return Cell(
            f"{100 * p.rate:.1f}% [{100 * p.low:.0f}, {100 * p.high:.0f}] ({p.k}/{p.n})",
            f"{_src(f)} → {key} = {p.rate!r}, Wilson 95% [{p.low!r}, {p.high!r}]",
            "num",
        )

    rows = []
    for k, row in enumerate(h.rows):
        key = f"human.rows[{k}]"
        kappa = _stat_cell(row.kappa, row.notes.get("kappa"), f, f"{key}.kappa")
        if row.kappa is not None:
            span = row.kappa_interval
            no_span = row.notes.get("kappa_interval", "n/a")
            shown = f", interval {no_span}" if span is None else f" [{span[0]:.2f}, {span[1]:.2f}]"
            why = f"; no interval: {no_span}" if span is None else f", 95% bootstrap [{span[0]!r}, {span[1]!r}]"
            kappa = Cell(kappa.text + shown, kappa.title + why, "num")
        rows.append(
            {
                "judge": row.judge,
                "tier": row.tier,
                "cells": [
                    num(row.n_decisions, f, f"{key}.n_decisions"),
                    share(row.accuracy, row.notes.get("accuracy"), f"{key}.accuracy"),
                    kappa,
                    share(row.false_miss_rate, row.notes.get("false_miss_rate"), f"{key}.false_miss_rate"),
                    share(row.false_accept_rate, row.notes.get("false_accept_rate"), f"{key}.false_accept_rate"),
                    num(row.n_unscored, f, f"{key}.n_unscored"),
                    num(row.n_not_graded, f, f"{key}.n_not_graded"),
                ],
            }
        )
    pairs = [
        {
            "a": p.rater_a,
            "b": p.rater_b,
            "cells": [
                num(p.n_decisions, f, f"human.rater_pairs[{k}].n_decisions"),
                share(p.agreement, None, f"human.rater_pairs[{k}].agreement"),
                _stat_cell(p.kappa, p.notes.get("kappa"), f, f"human.rater_pairs[{k}].kappa"),
            ],
        }
        for k, p in enumerate(h.rater_pairs)
    ]
    return {
        "labels_file": h.labels_file,
        "labels_sha256": h.labels_sha256[:12],
        "raters": ", ".join(h.raters[:10]) + (f" and {len(h.raters) - 10} more" if len(h.raters) > 10 else ""),
        "n_raters": len(h.raters),
        "n_labels": h.n_labels,
        "n_units": h.n_units,
        "left_out": f"{h.n_stale} stale (another reply), {h.n_no_reply} without a reply, {h.n_ties} tied",
        "panel": ", ".join(h.panel),
        "rows": rows,
        "pairs": pairs,
        "alpha": _stat_cell(h.rater_alpha, h.notes.get("rater_alpha"), f, "human.rater_alpha"),
        "pairs_note": h.notes.get("rater_pairs"),
    }


def _side_cells(side: Any, f: InputFile, key: str) -> list[Cell]:
    """Mean, its SE and "scored / items" of one side of a Table 3 row; a gap says why ("n/a (no items)")."""
    where = f"{_src(f)} → {key}"
    if side.mean is None:
        mean = Cell(side.note or "n/a", f"{side.note} ({where})", "null")
    else:
        mean = num(side.mean, f, f"{key}: pooled mean of {side.n_scored} scored items")
    if side.se is None:
        se = Cell("n/a" if side.mean is None else side.note or "n/a", f"no standard error ({where})", "null")
    else:
        se = num(side.se, f, f"{key}: SD / sqrt({side.n_scored})")
    return [mean, se, Cell(f"{side.n_scored} / {side.n_items}", f"scored / items ({where})", "num")]


def _stat_cell(value: float | None, note: str | None, f: InputFile, key: str, digits: int = 3) -> Cell:
    """A statistic, or "n/a (n=2)" (its note) where it is undefined: never a number standing in for nothing."""
    if value is None:
        return Cell(note or "n/a", f"{note or 'undefined'} ({_src(f)} → {key})", "null")
    return num(value, f, key, digits=digits)


def _p_cell(value: float | None, note: str | None, f: InputFile, key: str) -> Cell:
    if value is not None and 0 < value < 0.001:
        return Cell(f"{value:.1e}", f"{_src(f)} → {key} = {value!r}", "num")
    return _stat_cell(value, note, f, key)


def _table3(runs: list[ScoredRun]) -> list[dict[str, Any]]:
    """Table 3 (Appendix D.4) per run: each single-turn subcategory against its multi-turn extension, from the
    synthetic items of its scores.json (as Table 1's Single / Multi), with the statistics across the pairs."""
    from omnivchat.bench import resolve_subcategory
    from omnivchat.scoring import table3

    out = []
    for run in runs:
        f = run.scores_file
        records = []
        for item in run.items:
            if item.source != "synthetic":
                continue
            try:
                records.append((resolve_subcategory(item.subcategory).code, item.score))
            except KeyError:
                continue  # not in the taxonomy: the Subcategories table leaves it out too
        t3 = table3(records)
        rows = []
        for r in t3.rows:
            single, multi = " and ".join(r.single.subcategories), r.multi.subcategories[0]
            key = f"items[subcategory in {'/'.join(r.single.subcategories)} | {multi}].score"
            gap = (
                num(r.gap, f, f"{key}: multi − single")
                if r.gap is not None
                else Cell("n/a", f"{r.note} ({_src(f)} → {key})", "null")
            )
            gap_se = _stat_cell(r.gap_se, "n/a", f, f"{key}: sqrt(SE_single² + SE_multi²)")
            if r.gap_se is None and r.gap is not None:  # the note names the side and why: "n/a (multi-turn: n=1)"
                gap_se = Cell(r.note or "n/a", f"{r.note} ({_src(f)} → {key})", "null")
            within = Cell("—" if r.within_se is None else ("yes" if r.within_se else "no"), "|gap| <= SE(gap)", "")
            rows.append(
                {
                    "single": single,
                    "multi": multi,
                    "cells": [
                        *_side_cells(r.single, f, f"items[subcategory in {'/'.join(r.single.subcategories)}].score"),
                        *_side_cells(r.multi, f, f"items[subcategory={multi}].score"),
                        gap,
                        gap_se,
                        within,
                    ],
                    "missing": r.gap is None,
                }
            )
        key = "items.score (synthetic), per extension pair"
        t = t3.t_test
        t_label = f"Paired t-test, multi − single (t({t.df}))" if t.df is not None else "Paired t-test, multi − single"
        summary = [
            ("Pairs with both means", Cell(str(t3.n_pairs), f"{_src(f)} → {key}", "num")),
            ("Mean gap", _stat_cell(t3.mean_gap, f"n/a (n={t3.n_pairs})", f, f"{key}: mean of the gaps")),
            (t_label, _stat_cell(t.statistic, t.note, f, f"{key}: ttest_rel(multi means, single means)", 2)),
            ("t-test p (two-sided)", _p_cell(t.p, t.note, f, f"{key}: ttest_rel p-value")),
        ]
        for c in (t3.pearson, t3.spearman):
            name = "Pearson r" if c.method == "pearson" else "Spearman ρ"
            summary.append((f"{name}, single vs multi means", _stat_cell(c.value, c.note, f, f"{key}: {c.method}")))
            summary.append((f"{name} p", _p_cell(c.p, c.note, f, f"{key}: {c.method} p-value")))
        out.append(
            {
                "model": run.label,
                "simulated": run.simulated,
                "bench": run.bench,
                "incomplete": _incomplete(run),
                "ref": f.ref,
                "rows": rows,
                "summary": summary,
            }
        )
    return out


def _comparison(c: Comparison, output: Path, base: Path) -> dict[str, Any]:
    """One paired comparison (comparison.json): the two runs, B − A with its interval, both tests and the verdict,
    and every item left out of the pairs, counted and listed."""
    d, f = c.data, c.file
    s, t, flip = d.stats, d.stats.t_test, d.stats.sign_flip
    runs = []
    for name, side, mean in (("A", d.a, s.mean_a), ("B", d.b, s.mean_b)):
        k = name.lower()
        runs.append(
            {
                "name": name,
                "model": side.model,
                "simulated": side.simulated,
                "condition": side.condition,
                "dir": _display(Path(side.dir), base) if Path(side.dir).is_absolute() else side.dir,
                "incomplete": side.incomplete,
                "scored": Cell(f"{side.n_scored} / {side.n_items}", f"{_src(f)} → {k}.n_scored / {k}.n_items", "num"),
                "mean": num(mean, f, f"stats.mean_{k} (over the {d.n_paired} paired items)"),
                "unscored": ", ".join(f"{kind} {n}" for kind, n in sorted(d.unscored_counts.get(k, {}).items()))
                or "none",
            }
        )
    how = f"exact, {flip.resamples} sign patterns" if flip.exact else f"{flip.resamples} sampled patterns"
    ci_key = "stats.ci"
    if s.ci is None:  # files written before ci_note say only n < 2
        why = s.ci_note or f"n/a (n={s.n})"
        ci = Cell(why, f"no interval: {why} ({_src(f)} → {ci_key})", "null")
    else:
        lo, hi = s.ci
        ci = Cell(f"[{lo:+.3f}, {hi:+.3f}]", f"{_src(f)} → {ci_key} = [{lo!r}, {hi!r}]", "num")
    t_label = f"Paired t-test (t({t.df}))" if t.df is not None else "Paired t-test"
    diff = s.difference
    stats = [
        ("Items paired (scored in both runs)", num(d.n_paired, f, "n_paired")),
        ("Mean difference B − A", Cell(f"{diff:+.3f}", f"{_src(f)} → stats.difference = {diff!r}", "num"))
        if diff is not None
        else ("Mean difference B − A", Cell("—", "no pairs", "null")),
        (f"{s.level:.0%} paired-bootstrap interval ({s.bootstrap_resamples} resamples, seed {s.seed})", ci),
        (t_label, _stat_cell(t.statistic, t.note, f, "stats.t_test.statistic", 2)),
        ("t-test p (two-sided)", _p_cell(t.p, t.note, f, "stats.t_test.p")),
        (f"Sign-flip permutation test p ({how})", _p_cell(flip.p, flip.note, f, "stats.sign_flip.p")),
        ("Items only in A", num(len(d.only_a), f, "len(only_a)")),
        ("Items only in B", num(len(d.only_b), f, "len(only_b)")),
        ("Items unscored in A or B", num(len(d.unscored), f, "len(unscored)")),
    ]
    left_out = [{"item": f"{i.task}/{i.key}", "a": "—", "b": "not in this run"} for i in d.only_a]
    left_out += [{"item": f"{i.task}/{i.key}", "a": "not in this run", "b": "—"} for i in d.only_b]
    left_out += [{"item": f"{u.task}/{u.key}", "a": u.a or "scored", "b": u.b or "scored"} for u in d.unscored]
    return {
        "id": f"comparison-{f.ref}",
        "benchmark": d.benchmark,
        "ref": f.ref,
        "href": _href(c.path, output),
        "path": _display(c.path, base),
        "runs": runs,
        "stats": stats,
        "verdict": d.verdict,
        "significant": s.significant,
        "warnings": d.warnings,
        "data": d.data,
        "left_out": left_out,
    }


# ---------------------------------------------------------------------------------------------------------------
# Page


def _other(run: BenchmarkRun) -> dict[str, Any]:
    """Another benchmark's run: each metric group as a row of its numbers, each with its file and key."""
    f = run.scores_file
    rows = []
    for group, values in run.scores.metrics.items():
        if isinstance(values, dict):
            cells = [
                {"name": k, "cell": num(v, f, f"metrics.{group}.{k}") if not isinstance(v, str) else Cell(v, k, "")}
                for k, v in values.items()
                if v is None or isinstance(v, int | float | str)
            ]
        else:
            cells = [{"name": group, "cell": num(values, f, f"metrics.{group}")}]
        rows.append({"group": group, "cells": cells})
    return {
        "label": run.label,
        "benchmark": run.scores.benchmark,
        "simulated": run.scores.simulated,
        "incomplete": run.scores.incomplete,
        "rows": rows,
        "ref": f.ref,
        "dir": str(run.dir),
    }


def render_html(inputs: Inputs, output: Path, *, status: Callable[[str], None] | None = None) -> str:
    """The report page for already-loaded inputs, as one self-contained HTML string."""
    import jinja2

    import omnivchat
    from omnivchat.report import _plots

    say = status or (lambda _message: None)
    runs = inputs.runs
    base = _common_base(inputs)
    sub_table, sub_axis, sub_series = _subcategories(runs)
    say("drawing the per-subcategory bars")
    sub_plot = _plots.subcategory_bars(sub_axis, sub_series) if runs and sub_axis else None
    ablations = []
    for a in inputs.ablations:
        say(f"drawing the ablation grid of {a.model}")
        ablations.append(_ablation(a, output, base, _plots.ablation_plot))
    others = [_other(run) for run in inputs.others]
    comparisons = [_comparison(c, output, base) for c in inputs.comparisons]
    agreements = [_agreement(run) for run in runs if run.agreement is not None]
    for a in inputs.ablations:  # an agreement study may sit in a condition run that is not a Table 1 row
        agreements += [
            _agreement(r) for c, r in a.runs.items() if c != "both" and r is not None and r.agreement is not None
        ]
    now = _dt.datetime.now(_dt.UTC)
    files = [
        {
            "ref": x.ref,
            "role": x.role,
            "path": str(x.path.resolve()),
            "href": _href(x.path, output),
            "sha256": x.sha256,
            "size": x.size,
        }
        for x in inputs.sources.files
    ]
    env = jinja2.Environment(
        autoescape=True,  # model names, reasons and paths come from files: never trusted as markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    source = resources.files("omnivchat.report").joinpath(TEMPLATE).read_text(encoding="utf-8")
    return env.from_string(source).render(
        title="omnivchat report",
        generated=now.strftime("%Y-%m-%d %H:%M UTC"),
        generated_iso=now.isoformat(timespec="seconds"),
        version=omnivchat.__version__,
        python=platform.python_version(),
        simulated_label=SIMULATED_LABEL,
        any_simulated=any(r.simulated for r in runs) or any(a.simulated for a in inputs.ablations),
        run_versions=sorted({r.package_version for r in runs if r.package_version}),
        warnings=inputs.warnings,
        table1=_table1(runs, output, base),
        base=str(base),
        failures=_failures(runs),
        costs=_costs([*runs, *inputs.others], inputs.ablations),
        sub_table=sub_table,
        sub_plot=sub_plot,
        ablations=ablations,
        others=others,
        agreements=agreements,
        table3=_table3(runs),
        comparisons=comparisons,
        files=files,
    )


def build_report(paths: Sequence[Path], output: Path, *, status: Callable[[str], None] | None = None) -> Path:
    """Write one self-contained HTML report (inline CSS, plots as base64 PNG) of scored runs and ablations.

    ``paths`` are scored run directories (with scores.json from ``omnivchat score RUN_DIR``), ablation
    directories (with ablation.json), or those JSON files themselves. Returns ``output``. Raises
    :class:`~omnivchat.report.ReportError` naming the directory when an input holds neither file.
    """
    output = Path(output)
    inputs = load_inputs([Path(p) for p in paths])
    html = render_html(inputs, output, status=status)
    return write_text_atomic(output, html)  # a reader never sees half a report
