"""byo: bring your own benchmark, a JSON list of questions about clips (the harness note, section 6).

Dataset: one JSON file, a list of items ``{"qid", "question", "answer", "requires", "category", "video"}``;
``video`` is a path relative to the JSON file (an audio-only item gives ``"audio"`` instead) and ``requires``
lists the streams an answer needs ("video", "audio"). Media stay inside the JSON file's folder: a path that leaves
it (absolute, ``..``, or a symlink to a file elsewhere) is refused, naming the item, unless it lies in a folder
allowed with ``--media-root`` (recorded in the manifest); a dataset never makes omnivchat send another file.
Known categories are ``cross-modal``, ``video-only`` and ``audio-only``; any other category (or none) counts as
``cross-modal`` on purpose: mislabelling a cross-modal question as single-modality inflates the single-stream scores
and hides the missing fusion gain. How many items were relabelled is in the scores.

Answers: an item with an ``options`` list, or whose answer is a single letter A-E, is multiple choice; the rest
are open answers scored by the spoken-answer matcher (numbers, negation, hedges: :mod:`omnivchat.scoring.spoken`).
A multiple-choice reply is parsed strictly: it must state exactly one option, by its letter as a standalone token
("Based on the video, B." is B; "Based" is never B) or by its text. A lenient parse (an "answer is X" phrase, else
the first letter token, else the first option text) is reported apart, never as the headline. A reply that does
not parse is unparsed: in the denominator, wrong, and counted.

Tasks (store kinds): ``mcK`` for multiple choice with K options (K = 5 for a bare letter answer: A-E), ``open``
for open answers. Chance levels: 1/K for ``mcK``; 0 for ``open`` (no guess states a right open answer).
Scores: accuracy with a seeded percentile-bootstrap 95% interval, overall and per category.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel

from omnivchat._files import PathOutside, confine, loads_json
from omnivchat.benchmarks._choice import (
    LETTERS,
    accuracy,
    parse_lenient,
    parse_strict,
)
from omnivchat.benchmarks._generic import manifest_tasks, scores_of
from omnivchat.benchmarks._options import Phase, read_options
from omnivchat.benchmarks._protocol import (
    Item,
    ItemResult,
    RunOptions,
    ScoreOptions,
    Scores,
    Source,
)
from omnivchat.benchmarks._registry import register
from omnivchat.benchmarks._spoken import SPOKEN_METRIC, SpokenScoreOptions, SpokenScoring
from omnivchat.errors import OmnivchatError
from omnivchat.routes import ChatRequest, Route, SimOracle
from omnivchat.runs import STORE_FILE, RunStore, package_record, route_identity
from omnivchat.scoring.spoken import normalize, score_spoken
from omnivchat.scoring.statistics import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

PROTOCOL = "byo-run-v1"
CROSS_MODAL = "cross-modal"
CATEGORIES = (CROSS_MODAL, "video-only", "audio-only")
"""The known categories; any other counts as cross-modal (the conservative direction: it keeps the gain honest)."""
STREAMS = ("video", "audio")
BARE_LETTERS = "ABCDE"
"""A bare answer letter without an options list makes an item multiple choice over A-E."""
OPEN = "open"


class ByoError(OmnivchatError):
    """A bring-your-own benchmark file that cannot be run: every problem, one line each, naming file and item."""


@dataclass(frozen=True)
class ByoItem:
    """One validated item: its media resolved, its category as scored (and as given), its options if any."""

    qid: str
    question: str
    answer: str
    requires: tuple[str, ...]
    category: str
    given_category: str | None
    media: Path
    media_kind: str  # "video" or "audio"
    options: tuple[str, ...] | None
    gold: str | None  # the gold option letter of a multiple-choice item

    @property
    def letters(self) -> str:
        """The option letters of a multiple-choice item ("" for an open answer)."""
        if self.gold is None:
            return ""
        return LETTERS[: len(self.options)] if self.options else BARE_LETTERS

    @property
    def task(self) -> str:
        return f"mc{len(self.letters)}" if self.gold is not None else OPEN

    @property
    def relabelled(self) -> bool:
        return self.category != self.given_category


@dataclass(frozen=True)
class ByoData:
    """The validated items of a file, with the file's path and sha256 (what a run records)."""

    path: Path
    sha256: str
    items: tuple[ByoItem, ...]
    media_roots: tuple[Path, ...] = ()  # the folders --media-root allows besides the data's own


# --- loading -------------------------------------------------------------------------------------------------


def load_byo(
    path: Path,
    *,
    tasks: tuple[str, ...] | None = None,
    limit: int | None = None,
    media_roots: tuple[Path, ...] = (),
) -> ByoData:
    """Read and validate a byo JSON file; every problem is listed, one line each, naming the file and the item
    (its index from 0 and its qid). ``tasks`` keeps only those tasks (``mc4``, ``open``...); ``limit`` the first
    N items kept; media may lie in the file's folder or in ``media_roots``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ByoError(f"{path}: cannot read the benchmark file ({err.strerror})") from None
    try:
        rows = loads_json(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise ByoError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(rows, list):
        raise ByoError(f"{path}: expected a JSON list of items, got {type(rows).__name__}")
    if not rows:
        raise ByoError(f"{path}: the list of items is empty")
    items, problems = items_from_rows(rows, path.parent, lambda index: (str(path), f"item {index}"), media_roots)
    if problems:
        raise ByoError("\n".join(problems))
    return ByoData(
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        items=select_items(items, tasks, limit, path),
        media_roots=tuple(media_roots),
    )


def items_from_rows(
    rows: Sequence[Any], root: Path, where: Callable[[int], tuple[str, str]], roots: Sequence[Path] = ()
) -> tuple[list[ByoItem], list[str]]:
    """Validate rows (dicts with byo's fields) from any source: the valid items, and every problem, one line each,
    as ``FILE: ROW (qid Q): problem``. ``where(index)`` names a row's file and the row in it (``item 3``, ``row 3``).
    A media path (a string) is relative to ``root`` and must lead, symlinks resolved, inside ``root`` or one of
    ``roots``; a media value that is a Path is a file the loader wrote itself (hf's embedded media in the media
    cache) and is taken as it is."""
    problems: list[str] = []
    items: list[ByoItem] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        file, label = where(index)
        here = f"{file}: {label}"
        if not isinstance(row, dict):
            problems.append(f"{here}: expected an object, got {type(row).__name__}")
            continue
        qid = row.get("qid")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid.strip():
            problems.append(f"{here}: missing or empty 'qid' (a string)")
            continue
        here = f"{here} (qid {qid!r})"
        if qid in seen:
            first_file, first = where(seen[qid])
            problems.append(f"{here}: duplicate qid (also {first if first_file == file else f'{first_file}: {first}'})")
            continue
        seen[qid] = index
        item, found = _item(root, row, qid, roots)
        problems.extend(f"{here}: {p}" for p in found)
        if item is not None:
            items.append(item)
    return items, problems


def select_items(
    items: Sequence[ByoItem], tasks: tuple[str, ...] | None, limit: int | None, where: Path | str
) -> tuple[ByoItem, ...]:
    """The items of ``tasks`` (all when None; a task with no items is an error naming ``where``), the first
    ``limit`` of them."""
    kept = list(items)
    if tasks:
        known = {i.task for i in kept}
        unknown = sorted(set(tasks) - known)
        if unknown:
            raise ByoError(f"{where}: no items of task {', '.join(unknown)} (tasks here: {', '.join(sorted(known))})")
        kept = [i for i in kept if i.task in tasks]
    if limit:
        kept = kept[:limit]
    return tuple(kept)


def _text(row: dict[str, Any], name: str, problems: list[str]) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"missing or empty {name!r} (a string)")
        return ""
    return value.strip()


def _item(root: Path, row: dict[str, Any], qid: str, roots: Sequence[Path]) -> tuple[ByoItem | None, list[str]]:
    problems: list[str] = []
    question = _text(row, "question", problems)
    answer = _text(row, "answer", problems)
    requires = row.get("requires")
    if not isinstance(requires, list) or not requires:
        problems.append("missing or empty 'requires' (a list of 'video' and/or 'audio')")
        requires = []
    else:
        bad = [r for r in requires if r not in STREAMS]
        if bad:
            problems.append(f"'requires' may hold only 'video' and 'audio' (got {', '.join(map(repr, bad))})")
        elif len(set(requires)) != len(requires):
            problems.append(f"'requires' repeats a stream ({requires})")
    category = row.get("category")
    if category is not None and not isinstance(category, str):
        problems.append(f"'category' must be a string (got {type(category).__name__})")
        category = None
    media_kinds = [k for k in STREAMS if k in row]
    media: Path | None = None
    if len(media_kinds) != 1:
        problems.append("give exactly one of 'video' (a clip) or 'audio' (an audio-only item), a path")
    else:
        kind = media_kinds[0]
        value = row[kind]
        if isinstance(value, Path):  # written by the loader itself (hf: media a table embeds)
            media = value
        elif not isinstance(value, str) or not value.strip():
            problems.append(f"{kind!r} must be a path (relative to the JSON file or the dataset)")
        else:
            try:
                confine(root, value, roots)
            except PathOutside as err:
                problems.append(f"{kind} {err}: media must stay in the dataset's folder (allow one with --media-root)")
            else:
                media = root / value
                if not media.is_file():
                    problems.append(f"{kind} {value!r} does not exist ({media})")
        if kind == "audio" and "video" in (requires or []):
            problems.append("an audio-only item cannot require 'video'")
    options, gold = _choices(row.get("options"), answer, problems) if answer else (None, None)
    if answer and gold is None and not normalize(answer):
        problems.append(f"answer {answer!r} has no words to match")
    if problems or media is None:
        return None, problems
    known = category in CATEGORIES
    item = ByoItem(
        qid=qid,
        question=question,
        answer=answer,
        requires=tuple(requires),
        category=category if known and category is not None else CROSS_MODAL,
        given_category=category,
        media=media,
        media_kind=media_kinds[0],
        options=options,
        gold=gold,
    )
    return item, []


def _choices(options: Any, answer: str, problems: list[str]) -> tuple[tuple[str, ...] | None, str | None]:
    """The options and gold letter of a multiple-choice item; (None, None) for an open answer."""
    if options is None:
        return (None, answer) if len(answer) == 1 and answer in BARE_LETTERS else (None, None)
    if (
        not isinstance(options, list)
        or not 2 <= len(options) <= len(LETTERS)
        or not all(isinstance(o, str) and o.strip() for o in options)
    ):
        problems.append(f"'options' must be a list of 2 to {len(LETTERS)} non-empty strings")
        return None, None
    texts = tuple(o.strip() for o in options)
    letters = LETTERS[: len(texts)]
    if len(answer) == 1 and answer in letters:
        return texts, answer
    matching = [letters[k] for k, t in enumerate(texts) if t.casefold() == answer.casefold()]
    if len(matching) != 1:
        problems.append(f"answer {answer!r} is neither an option letter ({letters[0]}-{letters[-1]}) nor one option")
        return None, None
    return texts, matching[0]


# --- metrics -------------------------------------------------------------------------------------------------


class Relabelled(BaseModel):
    """Items whose category was unknown (or missing) and is scored as cross-modal."""

    count: int
    to: str = CROSS_MODAL
    given: str = ""


# --- the benchmark -------------------------------------------------------------------------------------------


class ByoBench:
    """A bring-your-own JSON benchmark, implementing :class:`omnivchat.benchmarks.Benchmark`."""

    name = "byo"
    title = "Bring your own: a JSON list of questions on clips (requires, category), spoken or multiple-choice answers"
    protocols: tuple[str, ...] = (PROTOCOL,)
    sampling: Mapping[str, Any] = MappingProxyType({"temperature": 0.0})
    scores_spoken_replies: Literal[True] = True
    """Its scores read a spoken reply's ASR transcript (eval --reply-audio; :mod:`omnivchat.benchmarks._spoken`)."""
    takes_media_roots: Literal[True] = True
    """Its items' media stay in the data's folder unless ``Source.media_roots`` (--media-root) allows another."""
    reads_source: frozenset[str] = frozenset({"tasks"})
    """--tasks, not --media (:class:`omnivchat.benchmarks.ReadsSource`): its media paths are relative to the file."""
    option_models: Mapping[Phase, type[BaseModel]] = MappingProxyType({"score": SpokenScoreOptions})
    """Its own options (:class:`omnivchat.benchmarks.OwnOptions`): ``score --asr``, ``--asr-wer``."""

    def chance(self, task: str) -> float:
        if task.startswith("mc") and task[2:].isdigit() and int(task[2:]) > 0:
            return 1.0 / int(task[2:])
        return 0.0  # an open answer: no guess states it

    def load(self, source: Source) -> ByoData:
        return load_byo(source.data, tasks=source.tasks, limit=source.limit, media_roots=source.media_roots)

    def items(self, dataset: ByoData, options: RunOptions) -> list[Item]:
        rows = dataset.items[: options.limit] if options.limit else dataset.items
        return [Item(i.qid, i.task, i, _meta(i)) for i in rows]

    def manifest(self, dataset: ByoData, route: Route, options: RunOptions) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL,
            "benchmark": self.name,
            "data": str(dataset.path.resolve()),
            "data_sha256": dataset.sha256,
            "items": {i.qid: i.task for i in dataset.items},
            "media_sha256": {i.qid: _sha256(i.media) for i in dataset.items},
            "route": route_identity(route).model_dump(),  # another server or other settings: another run
            "sampling": options.sampling.model_dump(),
            "system_prompt_sha256": _sha256(options.system_prompt) if options.system_prompt else None,
            "condition": options.condition,
            "simulated": options.simulated,
            "package": package_record(),
            # Only when given, so that a run made before the option resumes.
            **({"media_roots": [str(r.resolve()) for r in dataset.media_roots]} if dataset.media_roots else {}),
            **options.manifest_extra,
        }

    def request(
        self, dataset: ByoData, item: Item, options: RunOptions, work_dir: Path, meta: dict[str, Any]
    ) -> ChatRequest:
        i: ByoItem = item.record
        clip: Path | None = options.transform(i.media) if options.transform else i.media
        text = i.question
        if i.options:
            text += "\n" + "\n".join(f"{letter}. {o}" for letter, o in zip(i.letters, i.options, strict=True))
        if i.gold is not None:
            text += "\nAnswer with the letter of one option."
        system = options.system_prompt.read_text(encoding="utf-8") if options.system_prompt else None
        oracle = None
        if options.simulated:  # only a simulated model is told the answer (the harness self-check runs on it)
            reference = f"The answer is {i.gold}." if i.gold is not None else i.answer
            wrong = None
            if i.gold is not None:
                wrong = f"The answer is {next(c for c in i.letters if c != i.gold)}."
            oracle = SimOracle(reference=reference, language="en", requires=i.requires, wrong_reply=wrong)
        return ChatRequest(
            item_id=i.qid, system_prompt=system, clip=clip, text=text, sampling=options.sampling, oracle=oracle
        )

    def score(self, dataset: Any, run_dir: Path, options: ScoreOptions) -> Scores:
        """Every item: 1 right, 0 wrong or unparsed, None for a failed request or an item never run (counted
        apart, the run incomplete). Metrics: accuracy with its bootstrap interval overall and per category, the
        lenient multiple-choice accuracy apart, and how many categories were relabelled cross-modal. A spoken reply
        is scored from its ASR transcript, with the ASR error band beside the accuracy (see
        :mod:`omnivchat.benchmarks._spoken`); one without a transcript is "not transcribed": unscored, counted, the
        run incomplete."""
        own = read_options(self, "score", options.options, SpokenScoreOptions)  # before the store is opened
        run_dir = Path(run_dir)
        results: list[ItemResult] = []
        lenient: list[float] = []
        lenient_unparsed = 0
        path = run_dir / STORE_FILE
        with RunStore(path, read_only=True) as store:
            spoken = SpokenScoring.open(run_dir, store, own)
            for task, keys in manifest_tasks(run_dir).items():
                for key in keys:
                    row = store.item(key, task)
                    if row is None:
                        results.append(ItemResult(key=key, task=task, score=None, reason="not run", ran=False))
                        continue
                    meta = row["meta"] or {}
                    group = meta.get("category", CROSS_MODAL)
                    result = store.result(row["key"]) if row["status"] == "done" and row["key"] else None
                    if result is None:
                        reason = f"request failed: {row['error']}" if row["status"] == "failed" else "no reply"
                        results.append(ItemResult(key=key, task=task, score=None, reason=reason, group=group))
                        continue
                    text, heard = spoken.text(row["key"], result.text)
                    if text is None:  # a spoken reply with no transcript: unscored, never wrong
                        results.append(spoken.unscored(key, task, group, heard))
                        continue
                    item_result, loose = _score_reply(key, task, text, meta)
                    if heard:  # a spoken reply: its transcript kept with it, and counted for the band
                        reference = meta["answer"] if meta.get("gold") is None else None
                        item_result = spoken.scored(item_result, text, heard, reference)
                    results.append(item_result)
                    if loose is not None:
                        lenient.append(loose)
                        lenient_unparsed += loose < 0
        lenient_scores = [max(v, 0.0) for v in lenient]
        scored = [r for r in results if r.score is not None]
        metrics: dict[str, Any] = {
            "overall": accuracy([r.score for r in scored if r.score is not None], _unparsed(scored)).model_dump()
        }
        if lenient:
            metrics["lenient (multiple choice, not the headline)"] = accuracy(
                lenient_scores, lenient_unparsed
            ).model_dump()
        groups = sorted({r.group or CROSS_MODAL for r in scored}, key=_category_order)
        for group in groups:
            mine = [r for r in scored if (r.group or CROSS_MODAL) == group]
            metrics[f"category {group}"] = accuracy(
                [r.score for r in mine if r.score is not None], _unparsed(mine)
            ).model_dump()
        given = sorted({str(r.detail.get("given_category")) for r in results if r.detail.get("relabelled")})
        metrics["relabelled"] = Relabelled(
            count=sum(1 for r in results if r.detail.get("relabelled")), given=", ".join(given)
        ).model_dump()
        metrics["bootstrap"] = {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "level": BOOTSTRAP_LEVEL}
        spoken_metrics = spoken.metrics()
        if spoken_metrics is not None:
            metrics[SPOKEN_METRIC] = spoken_metrics
        failed = [r for r in results if r.ran and r.score is None and not r.detail.get("spoken")]
        return scores_of(self.name, results, metrics, failed, not_transcribed=spoken.missing)


def _meta(i: ByoItem) -> dict[str, Any]:
    """What the store keeps with an item: what its scoring reads (answer or gold, options, category)."""
    return {
        "answer": i.answer,
        "gold": i.gold,
        "options": list(i.options) if i.options else None,
        "letters": i.letters,
        "category": i.category,
        "given_category": i.given_category,
        "requires": list(i.requires),
    }


def _score_reply(key: str, task: str, reply: str, meta: dict[str, Any]) -> tuple[ItemResult, float | None]:
    """The item's result and, for multiple choice, its lenient score (-1: the lenient parse failed too)."""
    category = meta.get("category", CROSS_MODAL)
    given = meta.get("given_category")
    detail: dict[str, Any] = {"category": category, "given_category": given, "relabelled": category != given}
    gold = meta.get("gold")
    if gold is None:
        if not reply.strip():
            detail.update(kind="open", unparsed=True)
            return ItemResult(
                key=key, task=task, score=0.0, reason="empty reply (unparsed, wrong)", group=category, detail=detail
            ), None
        right = bool(score_spoken([reply], [meta["answer"]]).matches[0])
        detail.update(kind="open", unparsed=False, answer=meta["answer"])
        return ItemResult(
            key=key,
            task=task,
            score=float(right),
            reason="matched" if right else "not matched",
            group=category,
            detail=detail,
        ), None
    letters, options = meta.get("letters") or BARE_LETTERS, meta.get("options")
    texts = tuple(options) if options else None
    strict = parse_strict(reply, letters, texts)
    loose = parse_lenient(reply, letters, texts)
    detail.update(kind="multiple choice", gold=gold, strict=strict, lenient=loose, unparsed=strict is None)
    reason = "unparsed (counts as wrong)" if strict is None else "parsed"
    result = ItemResult(key=key, task=task, score=float(strict == gold), reason=reason, group=category, detail=detail)
    return result, (-1.0 if loose is None else float(loose == gold))


def _unparsed(results: list[ItemResult]) -> int:
    return sum(1 for r in results if r.detail.get("unparsed"))


def _category_order(group: str) -> tuple[int, str]:
    return (CATEGORIES.index(group) if group in CATEGORIES else len(CATEGORIES), group)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


BYO = register(ByoBench())
