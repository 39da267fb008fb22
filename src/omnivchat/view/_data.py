"""What the viewer shows of a run directory of any benchmark, read without changing anything: one row per declared
item (from the shared export and the one scores.json schema), one item's detail (the clips as sent, question,
reference, reply, each judge's verdicts, attempts), and the files it may serve. Rows are rebuilt only when the
run's files change, so a run being written refreshes its counts and a finished one is read once."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from omnivchat.benchmarks import TaskRecord, benchmark_of, export
from omnivchat.errors import OmnivchatError
from omnivchat.judges import (
    BENCHMARK_SCORES_SCHEMA,
    SCORES_FILE,
    BenchmarkScores,
    ItemResult,
    read_scores,
    stale_scores,
)
from omnivchat.runs import STORE_FILE, RunError, RunStore

STATES = ("scored", "unscored", "failed", "not run")
_WATCHED = ("manifest.json", STORE_FILE, f"{STORE_FILE}-wal", SCORES_FILE)


class ViewError(OmnivchatError):
    """The viewer cannot show a run: not a run directory, or its files cannot be read."""


@dataclass
class Row:
    """One declared item of a run as the list shows it; ``state`` is one of :data:`STATES` and ``why`` says why
    an item has no score (never a 0)."""

    task: str
    id: str
    state: str
    why: str
    score: float | None
    group: str
    language: str
    reply_len: int | None
    cost_usd: float | None
    attempts: int
    per_judge: dict[str, float | None]
    search: str = field(repr=False)

    @property
    def disagree(self) -> bool:
        """Two judges of the panel gave the item different scores."""
        given = {v for v in self.per_judge.values() if v is not None}
        return len(given) > 1

    def public(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "id": self.id,
            "state": self.state,
            "why": self.why,
            "score": self.score,
            "group": self.group,
            "language": self.language,
            "reply_len": self.reply_len,
            "cost_usd": self.cost_usd,
            "attempts": self.attempts,
            "per_judge": self.per_judge,
            "disagree": self.disagree,
        }


def _group(meta: dict[str, Any], result: ItemResult | None) -> str:
    """The item's subcategory, else its ability group, else its first breakdown value."""
    if isinstance(meta.get("subcategory"), str):
        return str(meta["subcategory"])
    if result is not None and isinstance(result.detail.get("subcategory"), str):
        return str(result.detail["subcategory"])
    if result is not None and result.group:
        return result.group
    breakdown = meta.get("breakdown")
    if isinstance(breakdown, dict):
        for values in breakdown.values():
            if isinstance(values, list) and values:
                return str(values[0])
    return ""


def _state(record: TaskRecord, result: ItemResult | None, scored: bool, unscored: str | None) -> tuple[str, str]:
    if record.status == "not run":
        return "not run", "the run never sent this item"
    if record.status == "failed":
        return "failed", record.error or "failed"
    if not scored:
        return "unscored", unscored or f"not scored yet (no {SCORES_FILE}; run omnivchat score)"
    if result is None:
        return "unscored", f"not in {SCORES_FILE} (scored before this reply was stored)"
    if result.score is None:
        return "unscored", result.reason or "unscored"
    return "scored", result.reason


def build_rows(
    records: list[TaskRecord],
    scores: BenchmarkScores | None,
    questions: dict[tuple[str, str], str],
    unscored: str | None = None,
) -> list[Row]:
    """The list's rows: every declared item, with its score or why it has none (``unscored``: why there are no
    scores, when it is not that the run was never scored: a scores.json out of date)."""
    results = {(r.task, r.key): r for r in scores.items} if scores else {}
    known = {(r.task, r.id) for r in records}
    # a run that declares a number of items (the native one: its bench) stores no row for one never sent; its
    # scores.json names it
    unsent = [
        TaskRecord(task=r.task, id=r.key, status="not run") for r in results.values() if (r.task, r.key) not in known
    ]
    rows = []
    for record in [*records, *unsent]:
        result = results.get((record.task, record.id))
        state, why = _state(record, result, scores is not None, unscored)
        detail = result.detail if result else {}
        per_judge = detail.get("per_judge") if isinstance(detail.get("per_judge"), dict) else {}
        language = record.meta.get("language")
        question = questions.get((record.task, record.id), "")
        rows.append(
            Row(
                task=record.task,
                id=record.id,
                state=state,
                why=why,
                score=result.score if result and state == "scored" else None,
                group=_group(record.meta, result),
                language=language if isinstance(language, str) else "",
                reply_len=None if record.reply is None else len(record.reply),
                cost_usd=None if record.cost is None else record.cost.spent_usd,
                attempts=record.attempts,
                per_judge=dict(per_judge or {}),
                search=f"{record.id}\n{question}\n{record.reply or ''}".casefold(),
            )
        )
    return rows


def with_unsent(records: list[TaskRecord], scores: BenchmarkScores | None) -> list[TaskRecord]:
    """The export's records and, after them, the items scores.json names that the store has no row for: a run
    that declares a number of items (the native one: its bench's) stores nothing for an item never sent."""
    known = {(r.task, r.id) for r in records}
    extra = [r for r in (scores.items if scores else []) if (r.task, r.key) not in known]
    return [*records, *(TaskRecord(task=r.task, id=r.key, status="not run") for r in extra)]


def _fingerprint(root: Path) -> tuple[object, ...]:
    stamps: list[object] = []
    for name in _WATCHED:
        try:
            st = (root / name).stat()
            stamps.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


class RunView:
    """One run directory, read-only. ``rows()`` is rebuilt when manifest.json, the store (or its WAL) or
    scores.json changes; everything else is read per request."""

    def __init__(self, root: str | Path, label: str) -> None:
        self.root = Path(root)
        self.label = label
        if not self.root.is_dir():
            raise ViewError(f"{self.root}: no such run directory")
        try:
            self.benchmark = benchmark_of(self.root)
        except (RunError, OmnivchatError) as err:
            raise ViewError(str(err)) from None
        self._lock = threading.Lock()
        self._stamp: tuple[object, ...] | None = None
        self._rows: list[Row] = []
        self._by_key: dict[tuple[str, str], int] = {}
        self._records: dict[tuple[str, str], TaskRecord] = {}
        self._scores: BenchmarkScores | None = None
        self._results: dict[tuple[str, str], ItemResult] = {}
        self._questions_read = False
        self._full = threading.Event()
        self._building: threading.Thread | None = None
        self._failure: ViewError | None = None
        self.info: dict[str, Any] = {}

    # -- the list ------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the run again when its files changed since the last read (cheap when they did not).

        The first read of a scored run lists its items at once from the store's item rows and scores.json
        (states, scores, groups), then reads the replies, attempts and costs (the shared export) in the
        background: ``info["partial"]`` says so until they are in. An item's detail waits for them."""
        stamp = _fingerprint(self.root)
        with self._lock:
            if self._building is not None and self._building.is_alive():
                return  # the full read in progress will be followed by a fresh check
            if self._failure is not None:
                failure, self._failure = self._failure, None
                raise failure
            if stamp == self._stamp:
                return
            if self._stamp is None and (self.root / SCORES_FILE).is_file():
                quick = self._quick()
                if quick is not None:
                    self._building = threading.Thread(target=self._build_later, args=(stamp,), daemon=True)
                    self._building.start()
                    return
            self._build(stamp)

    def _build_later(self, stamp: tuple[object, ...]) -> None:
        try:
            built = self._read(stamp)  # without the lock: the quick rows are served meanwhile
            with self._lock:
                self._apply(built)
        except ViewError as err:
            self._failure = err
        finally:
            self._full.set()

    def _quick(self) -> bool | None:
        """The first list of a large scored run without its replies: the store's item rows (one query per task)
        and scores.json as plain JSON. None when either cannot be read so (the full read then says why)."""
        try:
            data = json.loads((self.root / SCORES_FILE).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("schema") != BENCHMARK_SCORES_SCHEMA:
                return None  # an older file: converted by the full read
            results = [ItemResult.model_construct(**entry) for entry in data["items"]]
            tasks = sorted({r.task for r in results})
            stored: list[TaskRecord] = []
            with RunStore(self.root / STORE_FILE, read_only=True) as store:
                for task in tasks:
                    for item in store.items(task):
                        failed = item["status"] == "failed"
                        error = f"{item['error_kind']}: {item['error']}" if failed else None
                        stored.append(
                            TaskRecord.model_construct(
                                task=task, id=item["item_id"], status=item["status"], error_kind=item["error_kind"],
                                error=error, meta=item["meta"], reply=None, attempts=0, cost=None,
                            )
                        )  # fmt: skip
                if data.get("store_state") not in (None, store.state()):
                    return None  # out of date: the full read says so
        except (OSError, ValueError, KeyError, TypeError, OmnivchatError):
            return None
        scores = BenchmarkScores.model_construct(items=results, complete=data.get("complete", True))
        records = with_unsent(stored, scores)
        rows = build_rows(records, scores, {})
        for row in rows:
            row.reply_len = None
            row.attempts = 0
        self._rows = rows
        self._by_key = {(r.task, r.id): n for n, r in enumerate(rows)}
        self.info = {
            "label": self.label,
            "path": str(self.root),
            "benchmark": data.get("benchmark"),
            "model": data.get("model"),
            "condition": data.get("condition") or "both",
            "status": "reading",
            "scored": True,
            "complete": data.get("complete"),
            "incomplete": data.get("incomplete"),
            "items": len(rows),
            "unnamed_not_run": 0,
            "partial": True,
        }
        return True

    def _build(self, stamp: tuple[object, ...]) -> None:
        """The full read (the caller holds the lock)."""
        self._apply(self._read(stamp))

    def _read(self, stamp: tuple[object, ...]) -> dict[str, Any]:
        """Everything the list and the items need, read from the run (assigned by :meth:`_apply`)."""
        try:
            made = export(self.root, allow_incomplete=True)
            scores = read_scores(self.root, error=ViewError) if (self.root / SCORES_FILE).is_file() else None
            stale = stale_scores(self.root, scores) if scores is not None else None
        except OmnivchatError as err:
            raise ViewError(f"{self.root}: {err}") from None
        if stale is not None:  # never shown as the run's scores: its items say why they have none
            scores = None
        records = with_unsent(made.records, scores)
        rows = build_rows(records, scores, {}, stale)  # questions: read on the first text search (with_questions)
        manifest = made.manifest
        route = manifest.get("route") if isinstance(manifest.get("route"), dict) else {}
        return {
            "_stamp": stamp,
            "_rows": rows,
            "_by_key": {(r.task, r.id): n for n, r in enumerate(rows)},
            "_records": {(r.task, r.id): r for r in records},
            "_scores": scores,
            "_results": {(r.task, r.key): r for r in scores.items} if scores else {},
            "_questions_read": False,
            "info": {
                "label": self.label,
                "path": str(self.root),
                "benchmark": made.benchmark,
                "model": (route or {}).get("model") or manifest.get("model"),
                "condition": manifest.get("condition") or "both",
                "status": made.status,
                "scored": scores is not None,
                "stale": stale,
                "complete": None if scores is None else scores.complete,
                "incomplete": None if scores is None else scores.incomplete,
                "items": len(rows),
                "unnamed_not_run": max(0, sum(c.declared for c in made.counts.values()) - len(rows)),
                "partial": False,
            },
        }

    def _apply(self, built: dict[str, Any]) -> None:
        for name, value in built.items():
            setattr(self, name, value)
        self._full.set()

    def wait_full(self, timeout: float | None = None) -> bool:
        """Block until the replies, attempts and costs are read (at once when they are)."""
        return self._full.wait(timeout)

    def rows(self) -> list[Row]:
        self.refresh()
        return self._rows

    def record(self, task: str, item_id: str) -> tuple[Row, TaskRecord] | None:
        self.refresh()
        self._full.wait()
        self.refresh()  # raises what stopped a read in the background
        at = self._by_key.get((task, item_id))
        if at is None or (task, item_id) not in self._records:
            return None
        return self._rows[at], self._records[(task, item_id)]

    def result(self, task: str, item_id: str) -> ItemResult | None:
        return self._results.get((task, item_id))

    def description(self, task: str, item_id: str) -> dict[str, Any] | None:
        """What the item's request recorded (the sent clip's sha256, the text, the history)."""
        if not (self.root / STORE_FILE).is_file():
            return None
        with RunStore(self.root / STORE_FILE, read_only=True) as store:
            return store.descriptions(task, item_id).get(item_id)

    def with_questions(self) -> list[Row]:
        """The rows, their search text holding each request's question too (read once, on the first search:
        a large run's request bodies take a while to read)."""
        rows = self.rows()
        with self._lock:
            if self._questions_read or not (self.root / STORE_FILE).is_file():
                return rows
            with RunStore(self.root / STORE_FILE, read_only=True) as store:
                for task in {r.task for r in rows}:
                    asked_texts = {k: _question_text(v) for k, v in store.descriptions(task).items()}
                    for row in rows:
                        text = asked_texts.get(row.id) if row.task == task else None
                        if text:
                            row.search = f"{row.search}\n{text.casefold()}"
            self._questions_read = True
        return rows

    @property
    def scores(self) -> BenchmarkScores | None:
        return self._scores


MEDIA_SCHEME = "omnivchat-media:"  # how a stored request body names a clip it carried (by sha256)


def _walk(value: Any, texts: list[str], media: list[str]) -> None:
    """Texts and clip hashes of a stored request body in order (any route's shape), system messages left out."""
    if isinstance(value, dict):
        if value.get("role") == "system":
            return
        for key, inner in value.items():
            if key == "text" and isinstance(inner, str):
                texts.append(inner)
            elif key != "system":
                _walk(inner, texts, media)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, texts, media)
    elif isinstance(value, str) and value.startswith(MEDIA_SCHEME):
        media.append(value[len(MEDIA_SCHEME) :])


def asked(description: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(the last text the request asked, the sha256 of the last clip it sent) from its stored description: the
    simulated route's ``text``/``clip``, or an HTTP route's body (media named ``omnivchat-media:<sha256>``)."""
    if not description:
        return None, None
    texts: list[str] = []
    media: list[str] = []
    if "clip" in description or "oracle" in description:  # the simulated route's own description
        text, clip = description.get("text"), description.get("clip")
        return (text if isinstance(text, str) else None), (clip if isinstance(clip, str) else None)
    _walk(description, texts, media)
    return (texts[-1] if texts else None), (media[-1] if media else None)


def _question_text(description: dict[str, Any] | None) -> str:
    return asked(description)[0] or ""


def relative_label(path: Path, root: Path) -> str:
    """``path`` as shown to the user: relative to ``root`` when inside it."""
    try:
        return str(PurePosixPath(*path.relative_to(root).parts))
    except ValueError:
        return path.name
