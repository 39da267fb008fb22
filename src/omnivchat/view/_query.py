"""The list's filters, sorting and paging, done on the server (pure functions over rows), with the counts of
the whole run and of the current filter."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omnivchat.errors import OmnivchatError
from omnivchat.view._data import STATES, Row

SORTS = ("order", "id", "score", "state", "group", "language", "reply_len", "cost", "attempts")
MAX_PAGE = 1000


class QueryError(OmnivchatError):
    """A filter, sort or page the list cannot take (the message names the parameter)."""


@dataclass(frozen=True)
class Query:
    """What the list shows: ``state`` one of STATES or "" (any); ``below`` only scores under it; ``disagree``
    only items whose judges gave different scores; ``group``, ``language`` exact; ``text`` in the id, question or
    reply (case-insensitive); ``sort`` one of SORTS (unscored items last whichever way); a page."""

    state: str = ""
    below: float | None = None
    disagree: bool = False
    group: str = ""
    language: str = ""
    text: str = ""
    sort: str = "order"
    descending: bool = False
    offset: int = 0
    limit: int = 100


def parse_query(params: Mapping[str, str]) -> Query:
    """A Query from URL parameters; QueryError naming a bad one."""

    def number(name: str, default: int, low: int, high: int) -> int:
        raw = params.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise QueryError(f"{name}={raw[:40]!r} is not a whole number") from None
        if not low <= value <= high:
            raise QueryError(f"{name}={value} is outside {low}..{high}")
        return value

    state = params.get("state", "")
    if state not in ("", *STATES):
        raise QueryError(f"state={state[:40]!r} is not one of {', '.join(STATES)}")
    sort = params.get("sort", "order")
    if sort not in SORTS:
        raise QueryError(f"sort={sort[:40]!r} is not one of {', '.join(SORTS)}")
    below_raw = params.get("below", "")
    below = None
    if below_raw:
        try:
            below = float(below_raw)
        except ValueError:
            raise QueryError(f"below={below_raw[:40]!r} is not a number") from None
        if below != below:  # NaN compares with nothing
            raise QueryError("below=nan is not a number")
    return Query(
        state=state,
        below=below,
        disagree=params.get("disagree", "") in ("1", "true", "yes"),
        group=params.get("group", ""),
        language=params.get("language", ""),
        text=params.get("q", "")[:500],
        sort=sort,
        descending=params.get("order", "asc") == "desc",
        offset=number("offset", 0, 0, 10**9),
        limit=number("limit", 100, 1, MAX_PAGE),
    )


def matches(row: Row, query: Query) -> bool:
    if query.state and row.state != query.state:
        return False
    if query.below is not None and (row.score is None or row.score >= query.below):
        return False
    if query.disagree and not row.disagree:
        return False
    if query.group and row.group != query.group:
        return False
    if query.language and row.language != query.language:
        return False
    return not query.text or query.text.casefold() in row.search


_KEYS: dict[str, Callable[[Row], Any]] = {
    "id": lambda r: r.id,
    "score": lambda r: r.score,
    "state": lambda r: STATES.index(r.state),
    "group": lambda r: r.group,
    "language": lambda r: r.language,
    "reply_len": lambda r: r.reply_len,
    "cost": lambda r: r.cost_usd,
    "attempts": lambda r: r.attempts,
}


def _sorted(rows: list[tuple[int, Row]], query: Query) -> list[tuple[int, Row]]:
    if query.sort == "order":
        return rows[::-1] if query.descending else rows
    key = _KEYS[query.sort]
    known = [p for p in rows if key(p[1]) is not None]
    unknown = [p for p in rows if key(p[1]) is None]  # no score, no reply: after the rest, either way
    known.sort(key=lambda p: key(p[1]), reverse=query.descending)
    return known + unknown


def counts(rows: Sequence[Row]) -> dict[str, int]:
    """Items by state (every state present, zero included) and in all."""
    by = Counter(r.state for r in rows)
    return {**{s: by.get(s, 0) for s in STATES}, "total": len(rows)}


def run_query(rows: Sequence[Row], query: Query) -> dict[str, Any]:
    """The page of rows the query selects, with ``counts`` (the whole run), ``matched`` (the filter's, by state)
    and the groups and languages there are to filter by."""
    chosen = [(n, r) for n, r in enumerate(rows) if matches(r, query)]
    ordered = _sorted(chosen, query)
    page = ordered[query.offset : query.offset + query.limit]
    return {
        "counts": counts(rows),
        "matched": counts([r for _, r in chosen]),
        "offset": query.offset,
        "limit": query.limit,
        "rows": [{**r.public(), "index": n} for n, r in page],
        "groups": sorted({r.group for r in rows if r.group}),
        "languages": sorted({r.language for r in rows if r.language}),
    }
