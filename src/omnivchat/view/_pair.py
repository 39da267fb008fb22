"""Side by side: two runs of the same data item by item (two models, or two conditions of an ablation grid):
both replies and scores, the difference, and the filters "A right, B wrong" and the reverse. An item is right
when its score is at least :data:`RIGHT_AT` (a multiple-choice item: its letter is the gold); an unscored item is
neither right nor wrong, and is never counted as a difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omnivchat.view._data import Row, RunView
from omnivchat.view._query import MAX_PAGE, QueryError

RIGHT_AT = 0.5
PAIR_FILTERS = ("", "a_right_b_wrong", "b_right_a_wrong", "differ", "only_a", "only_b")
_SHOWN_CHARS = 400


@dataclass(frozen=True)
class PairQuery:
    a: int
    b: int
    which: str = ""
    text: str = ""
    offset: int = 0
    limit: int = 100


def parse_pair_query(params: Mapping[str, str], n_runs: int) -> PairQuery:
    def index(name: str, default: int) -> int:
        raw = params.get(name, str(default))
        if not raw.isdigit() or int(raw) >= n_runs:
            raise QueryError(f"{name}={raw[:20]!r} is not a run (0..{n_runs - 1})")
        return int(raw)

    def number(name: str, default: int, high: int) -> int:
        raw = params.get(name, "")
        if raw == "":
            return default
        if not raw.isdigit() or not 0 <= int(raw) <= high:
            raise QueryError(f"{name}={raw[:20]!r} is not a whole number in 0..{high}")
        return int(raw)

    which = params.get("filter", "")
    if which not in PAIR_FILTERS:
        raise QueryError(f"filter={which[:40]!r} is not one of {', '.join(f for f in PAIR_FILTERS if f)}")
    if n_runs < 2:
        raise QueryError("side by side needs two runs: give two run directories")
    limit = number("limit", 100, MAX_PAGE)
    return PairQuery(
        a=index("a", 0),
        b=index("b", 1),
        which=which,
        text=params.get("q", "")[:500],
        offset=number("offset", 0, 10**9),
        limit=max(limit, 1),
    )


def right(row: Row | None) -> bool | None:
    """True (right), False (wrong) or None (no score: failed, not run or unscored)."""
    if row is None or row.score is None:
        return None
    return row.score >= RIGHT_AT


def classify(a: Row | None, b: Row | None) -> set[str]:
    """Which of the pair filters an item falls under."""
    kinds = {""}
    if a is None:
        kinds.add("only_b")
    if b is None:
        kinds.add("only_a")
    ra, rb = right(a), right(b)
    if ra is True and rb is False:
        kinds.add("a_right_b_wrong")
    if rb is True and ra is False:
        kinds.add("b_right_a_wrong")
    if a is not None and b is not None and a.score is not None and b.score is not None and a.score != b.score:
        kinds.add("differ")
    return kinds


def _side(row: Row | None, reply: str | None) -> dict[str, Any] | None:
    if row is None:
        return None
    shown = None if reply is None else reply[:_SHOWN_CHARS]
    return {"state": row.state, "why": row.why, "score": row.score, "right": right(row), "reply": shown}


def compare(runs: Sequence[RunView], query: PairQuery) -> dict[str, Any]:
    """The page of paired items under ``query.which``, with the count of every filter."""
    run_a, run_b = runs[query.a], runs[query.b]
    for run in (run_a, run_b):
        run.wait_full()  # both replies are shown
    listed = [run.with_questions() if query.text else run.rows() for run in (run_a, run_b)]
    rows_a = {(r.task, r.id): r for r in listed[0]}
    rows_b = {(r.task, r.id): r for r in listed[1]}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a]
    tally = dict.fromkeys(PAIR_FILTERS, 0)
    chosen = []
    needle = query.text.casefold()
    for key in keys:
        a, b = rows_a.get(key), rows_b.get(key)
        if needle and not any(needle in r.search for r in (a, b) if r is not None):
            continue
        kinds = classify(a, b)
        for kind in kinds:
            tally[kind] += 1
        if query.which in kinds:
            chosen.append((key, a, b, kinds))
    page = chosen[query.offset : query.offset + query.limit]
    out = []
    for (task, item_id), a, b, kinds in page:
        found_a, found_b = run_a.record(task, item_id), run_b.record(task, item_id)
        diff = None if a is None or b is None or a.score is None or b.score is None else b.score - a.score
        out.append(
            {
                "task": task,
                "id": item_id,
                "a": _side(a, found_a[1].reply if found_a else None),
                "b": _side(b, found_b[1].reply if found_b else None),
                "diff": diff,
                "marks": sorted(k for k in kinds if k),
            }
        )
    return {
        "a": run_a.info,
        "b": run_b.info,
        "right_at": RIGHT_AT,
        "counts": {k or "all": v for k, v in tally.items()},
        "matched": len(chosen),
        "offset": query.offset,
        "rows": out,
    }
