"""The run viewer (``omnivchat view RUN_DIR...``): a local page on 127.0.0.1 that lists every item of any
benchmark's run (state, score or why there is none, group, language, reply length, cost) with server-side
filters, sorting and paging, and opens one item in full: each turn's clip as it was sent, the question, the
reference, the reply, every judge's verdict per rubric criterion and the panel's, the Eq. 1 score and the tier that
gated it, the style checklist, a multiple-choice item's parsed letters, every attempt. Two runs side by side.
Read-only: it changes no file. See docs/viewer.md.

- :class:`ViewServer`: serve runs (``with ViewServer([run_dir], port=0) as server: server.url``).
- :class:`RunView`, :func:`run_query`, :class:`ItemReader`, :func:`compare`: the data side, for other uses.
"""

from omnivchat.view._app import Viewer, make_app
from omnivchat.view._data import STATES, Row, RunView, ViewError, build_rows
from omnivchat.view._export import Written, export_viewer
from omnivchat.view._item import ItemReader, gating_tier
from omnivchat.view._pair import PAIR_FILTERS, RIGHT_AT, PairQuery, compare, parse_pair_query, right
from omnivchat.view._query import SORTS, Query, QueryError, counts, parse_query, run_query
from omnivchat.view._server import DEFAULT_PORT, ViewServer, expand_runs, open_runs

__all__ = [
    "DEFAULT_PORT",
    "PAIR_FILTERS",
    "RIGHT_AT",
    "SORTS",
    "STATES",
    "ItemReader",
    "PairQuery",
    "Query",
    "QueryError",
    "Row",
    "RunView",
    "ViewError",
    "ViewServer",
    "Viewer",
    "Written",
    "build_rows",
    "compare",
    "counts",
    "expand_runs",
    "export_viewer",
    "gating_tier",
    "make_app",
    "open_runs",
    "parse_pair_query",
    "parse_query",
    "right",
    "run_query",
]
