"""The SocialOmni protocol on omnivchat's runner: Who / When / How generation, the three-judge panel for How,
rescoring of archived answers, and exports. Requests go through the shared routes and the SQLite store, so
completed answers are reused on resume, failures retried, and every attempt kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, cast

from omnivchat._canonical import sha256_json
from omnivchat._files import write_model, write_text_atomic
from omnivchat.judges import (
    Job,
    JudgeSpec,
    VerdictTask,
    ask,
    check_judges_priced,
    estimate_jobs,
    load_judges,
    stored_verdict,
)
from omnivchat.routes import (
    ChatRequest,
    Route,
    RouteError,
    Sampling,
    media_failure,
)
from omnivchat.runs import (
    Budget,
    DryRun,
    Pending,
    RetryPolicy,
    RunError,
    RunStore,
    RunSummary,
    TaskWork,
    run_tasks,
    source_hash,
    tally,
    write_or_check_manifest,
    writes_run_dir,
)
from omnivchat.runs import read_manifest as read_run_manifest
from omnivchat.socialomni._cards import PromptCards, how_text, when_text, who_text
from omnivchat.socialomni._data import (
    HOW_COUNT,
    WHEN_COUNT,
    WHO_COUNT,
    WhenItem,
    WhoItem,
    file_sha256,
    how_items,
    load_when,
    load_who,
)
from omnivchat.socialomni._errors import SocialOmniError
from omnivchat.socialomni._files import (
    ClassificationMetrics,
    ExportMetrics,
    HowGeneration,
    JudgeScores,
    JudgingSummary,
    Provenance,
    RescoredModel,
    RescoredRecord,
    RescoreInput,
    RescoreInputModel,
    RescoreRecord,
    RescoreResults,
    SocialOmniJudgingManifest,
    SocialOmniManifest,
    SocialOmniSummary,
    TaskCompleteness,
    WhenDecision,
    read_judge_scores,
    rescore_input,
)
from omnivchat.socialomni._metrics import HowMetrics, classification_metrics, how_metrics
from omnivchat.socialomni._panel import JUDGE_SAMPLING, check_panel, judge_text, parse_judge_score
from omnivchat.socialomni._parse import parse_how, parse_when, parse_when_lenient, parse_who, parse_who_lenient
from omnivchat.socialomni._prefix import PREFIX_ENCODING, make_prefix
from omnivchat.socialomni._time import WHO_CUTOFF_RULE


class ExportFigures(NamedTuple):
    """What a SocialOmni run's export adds to the shared one (omnivchat.benchmarks.export): its ``status``
    (``complete``, ``scored_with_request_failures`` or ``incomplete``) and the ``reasons``; per (task, key) a
    record's ``meta``; the run-level ``extra``."""

    status: str
    reasons: list[str]
    meta: dict[tuple[str, str], dict[str, Any]]
    extra: dict[str, Any]


PROTOCOL = "omnivchat-socialomni-v1"
TASK_ORDER = ("when", "how", "who")
STORE = "store.sqlite"
GENERATION = {"temperature": 0.3, "top_p": 1.0}
# The code beyond the shared request path that shapes a SocialOmni request or reads its reply (cards, cut-offs,
# parsing, the How panel and the judge engine): its hash is part of the run's identity (seed 003, section 4).
HARNESS_SOURCES = ("socialomni", "benchmarks/socialomni.py", "judges")
LEVEL1 = Path("level_1") / "dataset.json"
LEVEL2 = Path("level_2") / "annotations_200.json"
#: Items per task in the release: the fixed denominators (a declared --limit lowers them for a smoke run).
RELEASE_COUNTS = {"who": WHO_COUNT, "when": WHEN_COUNT, "how": HOW_COUNT}


def annotation_files(annotations: Path) -> tuple[Path, Path]:
    """level_1/dataset.json and level_2/annotations_200.json under ``annotations`` (or its data/ folder)."""
    for root in (annotations, annotations / "data"):
        if (root / LEVEL1).is_file() or (root / LEVEL2).is_file():
            return root / LEVEL1, root / LEVEL2
    raise SocialOmniError(f"{annotations}: no {LEVEL1} or {LEVEL2} found")


def load_tasks(
    annotations: Path, media_root: Path, tasks: Sequence[str], limit: int | None
) -> tuple[list[WhoItem], list[WhenItem], list[WhenItem]]:
    """Every item of the chosen tasks, fully validated before any request is made."""
    level1, level2 = annotation_files(annotations)
    who = load_who(level1, media_root, limit=limit) if "who" in tasks else []
    # How takes the first gold-YES items, which a --limit smoke run may find past the first When items: read all
    # When items (a limit skips only the 200/128 count check) and validate them all before any request.
    when_all = load_when(level2, media_root, limit=None if limit is None else 10**9)
    when = when_all[:limit] if limit else when_all
    how = how_items(when_all, limit=limit) if "how" in tasks else []
    return who, (when if "when" in tasks else []), how


def read_manifest(run: Path) -> SocialOmniManifest:
    """The run's manifest.json; RunError naming the file when it is absent, unreadable or not a SocialOmni run's."""
    path = run / "manifest.json"
    if not path.is_file():
        raise RunError(f"{path}: not found; {run} is not a socialomni run directory")
    manifest = read_run_manifest(run, SocialOmniManifest)
    assert isinstance(manifest, SocialOmniManifest)
    if manifest.protocol != PROTOCOL:
        raise RunError(f"{path}: a manifest of {manifest.protocol!r}, not of a socialomni run ({PROTOCOL})")
    return manifest


def read_judging_manifest(judging: Path) -> SocialOmniJudgingManifest:
    """A judging directory's manifest.json; RunError naming the file when it cannot be used."""
    manifest = read_run_manifest(judging, SocialOmniJudgingManifest)
    assert isinstance(manifest, SocialOmniJudgingManifest)
    return manifest


def judge_scores_for(
    judging: Path, manifest: SocialOmniManifest
) -> tuple[SocialOmniJudgingManifest | None, JudgeScores]:
    """The judging directory's manifest and scores for the run of ``manifest`` (None and no scores when there is
    no judging directory); scores made for another candidate run are refused, never mixed in."""
    if not (judging / "manifest.json").is_file():
        return None, JudgeScores({})
    judge_manifest = read_judging_manifest(judging)
    if judge_manifest.candidate_manifest_sha256 != manifest.sha256():
        raise RunError(f"{judging}: these judge scores were made for another candidate run; refusing to mix them")
    path = judging / "scores.json"
    return judge_manifest, read_judge_scores(path) if path.is_file() else JudgeScores({})


def expected_items(run: Path, manifest: SocialOmniManifest | None = None) -> dict[str, list[str]]:
    """task -> the ids of every item the run declared, sorted; [] for a task not requested.

    The list is the release as loaded and validated before the first request (the manifest's
    ``source_media_sha256`` keys ``<task>-<id>``), never the records stored since: it has the release count of
    each requested task (2,000 Who, 200 When, 128 How), or at most the declared ``--limit``. Raises RunError for
    a manifest without that list or with other counts.
    """
    manifest = read_manifest(run) if manifest is None else manifest
    tasks, declared, limit = manifest.tasks, manifest.source_media_sha256, manifest.limit
    if tasks is None or declared is None:
        raise RunError(
            f"{run / 'manifest.json'}: no 'tasks' and 'source_media_sha256' (the run's item list), so which items "
            "are missing cannot be known; evaluate again into a new --output directory"
        )
    expected: dict[str, list[str]] = {}
    for task in TASK_ORDER:
        ids = sorted(k.split("-", 1)[1] for k in declared if k.split("-", 1)[0] == task) if task in tasks else []
        wanted = RELEASE_COUNTS[task]
        if task in tasks and (len(ids) != wanted if limit is None else len(ids) > min(limit, wanted)):
            bound = f"{wanted} (the release)" if limit is None else f"at most {min(limit, wanted)} (--limit {limit})"
            raise RunError(f"{run / 'manifest.json'}: declares {len(ids)} {task} items; expected {bound}")
        expected[task] = ids
    return expected


# ------------------------------------------------------------------------------------------------ evaluate


def _label(task: str, item_id: str) -> str:
    return f"{task}-{item_id}"


def item_request(
    task: str,
    item: Any,
    cards: PromptCards,
    prefixes: Path,
    sampling: Sampling,
    meta: dict[str, Any],
    transform: Callable[[Path], Path | None] | None = None,
) -> ChatRequest:
    """The request of one item: the prefix clip (cut at the cut-off before encoding) first, then the card text; no
    system prompt, no transcript. Records the prefix's sha256 in ``meta``; a clip ffmpeg cannot cut raises a media
    RouteError, and a cut-off that cannot be read an ``input`` one (that item fails, the others go on)."""
    cutoff = item.cutoff if task == "who" else item.timestamp
    if item.problem is not None or cutoff is None:  # this item fails alone, before anything is cut or sent
        raise RouteError("input", f"item {_label(task, item.id)}: {item.problem or 'no cut-off'}")
    try:
        clip, clip_sha = make_prefix(item.video, cutoff, prefixes)
    except Exception as err:
        raise media_failure(err, "" if str(item.video) in str(err) else f"{item.video}: ") from None
    meta["media_sha256"] = clip_sha
    cards_of: dict[str, Callable[[PromptCards, Any], str]] = {"who": who_text, "when": when_text, "how": how_text}
    text = cards_of[task](cards, item)
    sent = transform(clip) if transform is not None else clip  # an ablation condition, applied to the prefix
    return ChatRequest(item_id=_label(task, item.id), clip=sent, text=text, sampling=sampling)


def item_meta(task: str, item: Any) -> dict[str, Any]:
    """What the store keeps with an item: its task, label, gold answer (not for How) and cut-off."""
    cutoff = item.cutoff if task == "who" else item.timestamp
    return {"task": task, "id": _label(task, item.id), "gold": item.gold if task != "how" else None, "cutoff": cutoff}


def run_manifest(
    annotations: Path,
    route: Route,
    items_by_task: dict[str, list[Any]],
    tasks: Sequence[str],
    cards: PromptCards,
    generation: dict[str, Any],
    max_tokens: int,
    limit: int | None,
    condition: str | None = None,
) -> SocialOmniManifest:
    """The manifest of a SocialOmni run (the hosted runner's manifest, section 4 of its README): model and route
    settings, source and media hashes, prompt cards, sampling, prefix encoding and the Who cut-off rule, tasks and
    limit, harness hash; and the ablation ``condition`` when the clips are not sent as they are."""
    level1, level2 = annotation_files(annotations)
    fields: dict[str, Any] = {
        "protocol": PROTOCOL,
        "benchmark": "socialomni",
        "model": route.model_id,
        "endpoint": route.endpoint,
        "route": route.settings.model_dump(mode="json", exclude={"base_url"}),
        "source_sha256": {
            "level1": file_sha256(level1) if level1.is_file() else None,
            "level2": file_sha256(level2) if level2.is_file() else None,
        },
        "source_media_sha256": {_label(t, i.id): file_sha256(i.video) for t in tasks for i in items_by_task[t]},
        "prompts": cards.hashes(),
        "prompt_labels": cards.labels(),
        **generation,  # the sampling the run fixes (temperature, top_p): kept as written, among the extra fields
        "max_tokens": max_tokens,
        "prefix_encoding": PREFIX_ENCODING,
        "who_cutoff_rule": WHO_CUTOFF_RULE,
        "tasks": list(tasks),
        "limit": limit,
        "harness_sha256": source_hash(*HARNESS_SOURCES),
    }
    if condition is not None:
        fields["condition"] = condition
    return SocialOmniManifest.model_validate(fields)


@writes_run_dir("out", "socialomni evaluate")  # one writer per directory, before its manifest or store
def evaluate(
    annotations: Path,
    media_root: Path,
    out: Path,
    route: Route,
    *,
    cards: PromptCards,
    tasks: Sequence[str] = TASK_ORDER,
    limit: int | None = None,
    max_tokens: int = 8192,
    concurrency: int = 8,
    progress: bool = True,
    generation: dict[str, Any] | None = None,
) -> SocialOmniSummary:
    """Generate answers for the chosen tasks into ``out`` (resumable); returns and writes summary.json."""
    tasks = [t for t in TASK_ORDER if t in tasks]
    # The protocol's sampling (temperature 0.3, top_p 1) unless the user set other values, which the manifest records.
    generation = {**GENERATION, **(generation or {})}
    who, when, how = load_tasks(annotations, media_root, tasks, limit)
    items_by_task: dict[str, list[Any]] = {"who": who, "when": when, "how": how}
    manifest = run_manifest(annotations, route, items_by_task, tasks, cards, generation, max_tokens, limit)
    sampling = Sampling(max_tokens=max_tokens, **generation)

    def pending(task: str, item: Any) -> Pending:
        meta = item_meta(task, item)
        build = functools.partial(item_request, task, item, cards, out / "prefixes", sampling, meta)
        return Pending(_label(task, item.id), build, meta)

    work = [TaskWork(task, [pending(task, i) for i in items_by_task[task]]) for task in tasks]
    try:
        run_tasks(
            route,
            out,
            manifest,
            work,
            concurrency=concurrency,
            progress=progress,
            invocation={"annotations": str(Path(annotations).resolve()), "limit": limit},
            after_task=lambda _task: write_summary(out),  # a stopped run still says what is missing
        )
    except BaseException:
        with contextlib.suppress(Exception):
            write_summary(out)  # an interrupted run: the items without a record are counted as missing
        raise
    return write_summary(out)


def write_summary(run: Path) -> SocialOmniSummary:
    """:func:`summarize` the run and write it to summary.json; returns it."""
    result = summarize(run)
    write_model(run / "summary.json", result)
    return result


def candidate_records(run: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """task -> item id -> {prediction, text, gold, request_failed, error, media_sha256, redacted}."""
    records: dict[str, dict[str, dict[str, Any]]] = {}
    parsers = {"who": parse_who, "when": parse_when, "how": parse_how}
    with RunStore(run / STORE, read_only=True) as store:
        for task in TASK_ORDER:
            rows = {}
            for item in store.items(task):
                item_id = item["item_id"].split("-", 1)[1]
                result = store.result(item["key"]) if item["status"] == "done" and item["key"] else None
                text = result.text if result else None
                rows[item_id] = {
                    "prediction": parsers[task](text) if text is not None else None,
                    "text": text,
                    "gold": item["meta"].get("gold"),
                    "request_failed": result is None,
                    "error": None if result else f"{item['error_kind']}: {item['error']}",
                    "media_sha256": item["meta"].get("media_sha256"),
                    "redacted": bool(result and result.redacted),
                }
            records[task] = rows
    return records


def summarize(run: Path, records: dict[str, dict[str, dict[str, Any]]] | None = None) -> SocialOmniSummary:
    """Who and When accuracy and macro-F1 over every item the run declared (fixed denominators: the release
    counts or the declared limit), with request failures, parse failures and missing items (no record) apart;
    and the How generation counts over the same fixed list. ``records``: :func:`candidate_records` of the run,
    when already read."""
    expected = expected_items(run)
    records = candidate_records(run) if records is None else records
    summary: dict[str, Any] = {}  # the fields of SocialOmniSummary, task by task
    lenient_parsers = {"who": parse_who_lenient, "when": parse_when_lenient}
    for task, labels in (("who", ("A", "B", "C", "D")), ("when", ("YES", "NO"))):
        if not expected[task]:
            continue
        rows = records.get(task) or {}
        gold = {k: r["gold"] for k, r in rows.items()}
        failed = {k for k, r in rows.items() if r["request_failed"]}
        predictions = {k: r["prediction"] for k, r in rows.items()}
        strict = classification_metrics(predictions, gold, labels, failed, expected=expected[task])
        summary[task] = ClassificationMetrics.model_validate(strict)
        # A separate, clearly labelled metric: never the headline number of the protocol.
        lenient = {k: lenient_parsers[task](r["text"]) if r["text"] is not None else None for k, r in rows.items()}
        loose = classification_metrics(lenient, gold, labels, failed, expected=expected[task])
        summary[f"{task}_lenient"] = ClassificationMetrics.model_validate(loose)
    how = records.get("how") or {}
    if extra := sorted(set(how) - set(expected["how"])):
        raise RunError(f"{run}: How records for items outside the run's item list: {', '.join(extra[:8])}")
    missing = [k for k in expected["how"] if k not in how]
    failures = sum(1 for r in how.values() if r["request_failed"])
    summary["how_generation"] = HowGeneration(
        n=len(expected["how"]),
        completed=sum(1 for r in how.values() if not r["request_failed"]),
        empty=sum(1 for r in how.values() if not r["request_failed"] and not (r["text"] or "").strip()),
        request_failures=failures,
        n_missing=len(missing),
        missing=missing,
        complete=not missing and not failures,
    )
    return SocialOmniSummary(**summary)


# ------------------------------------------------------------------------------------------------- judging


def load_contexts(path: Path) -> dict[str, dict[str, str]]:
    """judge-contexts.json: item id -> {context, target_question, reference}."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SocialOmniError(f"{path}: cannot read judge contexts ({err})") from None
    missing = [
        k
        for k, v in data.items()
        if not isinstance(v, dict) or not {"context", "target_question", "reference"} <= set(v)
    ]
    if missing:
        raise SocialOmniError(f"{path}: entries without context/target_question/reference: {', '.join(missing[:5])}")
    return cast("dict[str, dict[str, str]]", data)


def load_judge_config(path: Path, panel: str, *, no_key: bool = False) -> list[dict[str, Any]]:
    """The judges of a judges file (the one format: TOML or JSON, ``judges`` as a list or a table), whose names
    must equal the panel's set exactly; each judge as its file entry (what the judging manifest records, keys
    aside). ``no_key``: every judge sends no key (``--no-key``)."""
    config = load_judges(path, no_key=no_key)
    check_panel(panel, list(config.judges))
    return [config.entries[name] for name in config.judges]


def how_task(records: list[dict[str, Any]], template: str) -> VerdictTask[int]:
    """SocialOmni's How verdict: the five-level 0-100 score of one candidate continuation, as bare text (the
    protocol's format: no JSON schema is sent), at the protocol's judge sampling."""
    by_key = {r["key"]: r for r in records}
    sampling = Sampling(**JUDGE_SAMPLING)

    def request(key: str, _spec: JudgeSpec) -> ChatRequest:
        r = by_key[key]
        text = judge_text(template, r["context"], r["target_question"], r["reference"], r["candidate"])
        return ChatRequest(item_id=key, text=text, sampling=sampling, require_text=True)

    return VerdictTask(
        kind="judge",
        request=request,
        parse=lambda _key, text: parse_judge_score(text),
        unparseable="judge score is not one of 0/25/50/75/100",
    )


def how_jobs(
    records: list[dict[str, Any]], judges: list[dict[str, Any]], *, template: str, only_judge: str | None = None
) -> tuple[VerdictTask[int], list[JudgeSpec], list[Job]]:
    """The How verdict task, the panel's specs, and the engine's jobs: one per judge asked (all, or
    ``only_judge``) over the non-empty candidates (a failed generation, with its `error`, is never judged)."""
    specs = [JudgeSpec.model_validate(j) for j in judges]
    chosen = [s for s in specs if only_judge is None or s.name == only_judge]
    if only_judge is not None and not chosen:
        raise SocialOmniError(f"--only-judge {only_judge}: not in the judges file")
    task = how_task(records, template)
    keys = [r["key"] for r in records if (r["candidate"] or "").strip() and not r.get("error")]
    return task, specs, [Job(spec, task, keys) for spec in chosen]


def judge_records(
    records: list[dict[str, Any]],
    judges: list[dict[str, Any]],
    store_path: Path,
    *,
    template: str,
    only_judge: str | None = None,
    max_attempts: int = RetryPolicy.max_attempts,  # the same default as a model request
    progress: bool = True,
    budget_usd: float | None = None,
) -> tuple[dict[str, dict[str, int | None]], dict[str, RunSummary]]:
    """Ask the judge engine for every missing verdict of the non-empty candidates; return key -> judge -> score
    (None: none yet) and the engine's summary per judge.

    ``records`` hold `key`, `context`, `target_question`, `reference`, `candidate` (and `error` for a failed
    generation). Verdicts are cached in the store, so a second pass sends nothing; an unparseable score is asked
    again, then left missing. ``budget_usd``: the store's total spending limit (verdicts past it are not asked).
    """
    task, specs, jobs = how_jobs(records, judges, template=template, only_judge=only_judge)
    store = RunStore(store_path)
    try:
        # The protocol fixes its judge requests: a judge's thinking switch is sent only when the file sets it.
        engine = ask(
            store, jobs, run_dir=store_path.parent, max_attempts=max_attempts, progress=progress,
            thinking_off_by_default=False, budget_usd=budget_usd,
        )  # fmt: skip
        summaries = asyncio.run(engine)
        scores = {r["key"]: {s.name: stored_verdict(store, task, s.name, r["key"])[0] for s in specs} for r in records}
        return scores, summaries
    finally:
        store.close()


def quality_metrics(
    records: list[dict[str, Any]],
    scores: dict[str, dict[str, int | None]],
    judges: list[str],
    predicted_yes: dict[str, bool],
    *,
    n_gold: int,
    full_gold: bool,
    expected: list[str] | None = None,
) -> Any:
    """QGold, QEns, Cov+, QEns_joint over the records, via how_metrics (null on any incomplete panel).

    A record with an `error` (or no candidate at all) is a failed generation, never an empty reply.
    ``predicted_yes`` holds only the items with a When decision: an item left out of it is never a "NO".
    ``expected`` lists every item that must be there: one without a record is missing (see how_metrics).
    """
    qualities: dict[str, list[int] | None] = {}
    empty: dict[str, bool] = {}
    failed: set[str] = set()
    for r in records:
        key = r["key"]
        if r.get("error") or r.get("candidate") is None:
            failed.add(key)
            continue
        empty[key] = not r["candidate"].strip()
        got = [scores.get(key, {}).get(j) for j in judges]
        qualities[key] = None if empty[key] or any(s is None for s in got) else [int(s) for s in got]  # type: ignore[arg-type]  # no None in got here: the condition's first half took that case
    known = set(expected) if expected is not None else {r["key"] for r in records}
    yes = {k: v for k, v in predicted_yes.items() if k in known}
    return how_metrics(
        qualities, yes, empty, n_gold=n_gold, full_gold=full_gold, expected=expected, generation_failed=failed
    )


def _when_decisions(when: dict[str, dict[str, Any]]) -> dict[str, bool]:
    """item -> its When prediction is YES, for the items with a When decision (a parse failure is not YES); an
    item without a record or with a failed request has no decision and is left out (never a "NO")."""
    return {k: r["prediction"] == "YES" for k, r in when.items() if not r["request_failed"]}


def _missing_lines(expected: dict[str, list[str]], records: dict[str, dict[str, Any]], tasks: Sequence[str]) -> str:
    parts = []
    for task in tasks:
        missing = [k for k in expected[task] if k not in (records.get(task) or {})]
        if missing:
            parts.append(
                f"{task}: {len(missing)} of {len(expected[task])} missing ({', '.join(missing[:5])}"
                + (", ..." if len(missing) > 5 else "")
                + ")"
            )
    return "; ".join(parts)


@dataclass(frozen=True)
class HowJudging:
    """A judging pass over a run's How answers, every input checked, nothing written or sent yet."""

    manifest: SocialOmniJudgingManifest
    judges: list[dict[str, Any]]  # the panel's entries in the judges file
    rows: list[dict[str, Any]]  # the How answers with their contexts (``judge_records``' records)
    expected: list[str]  # the declared How items
    when: dict[str, dict[str, Any]]  # the run's When records


@dataclass(frozen=True)
class JudgingPass:
    """What ``judge_run`` did: the summary it wrote, and the judge engine's summary per judge."""

    summary: JudgingSummary
    summaries: dict[str, RunSummary]


def prepare_judging(
    run: Path,
    contexts_path: Path,
    judges_path: Path,
    panel: str,
    *,
    template_sha: str,
    no_key: bool = False,
) -> HowJudging:
    """Check that ``run`` is complete for judging (every When and How record there and done) and that every How
    item has its context; the judging manifest and the rows to judge."""
    judges = load_judge_config(judges_path, panel, no_key=no_key)
    contexts = load_contexts(contexts_path)
    manifest = read_manifest(run)
    expected = expected_items(run, manifest)
    if not expected["when"] or not expected["how"]:
        has = ", ".join(manifest.tasks or [])
        raise RunError(f"{run}: judging needs a run with the when and how tasks (it has {has})")
    records = candidate_records(run)
    when, how = records.get("when") or {}, records.get("how") or {}
    failed = [f"when-{k}" for k, r in when.items() if r["request_failed"]] + [
        f"how-{k}" for k, r in how.items() if r["request_failed"]
    ]
    absent = _missing_lines(expected, records, ("when", "how"))
    if failed or absent:
        reasons = [f"{absent} (no record: resume with the same `socialomni evaluate` command)"] if absent else []
        reasons += [f"{len(failed)} failed: {', '.join(failed[:8])}"] if failed else []
        raise RunError(f"{run}: judging needs every When and How record completed; {'; '.join(reasons)}")
    missing = [k for k in expected["how"] if k not in contexts]
    if missing:
        raise SocialOmniError(f"{contexts_path}: no context for {', '.join(missing[:8])}")
    judge_manifest = SocialOmniJudgingManifest(
        protocol=PROTOCOL + "-judging",
        panel=panel,
        candidate_manifest_sha256=manifest.sha256(),
        candidate_rows_sha256=sha256_json({k: r["text"] for k, r in sorted(how.items())}),
        contexts_sha256=file_sha256(contexts_path),
        rubric_sha256=template_sha,
        judges=[{k: v for k, v in j.items() if k not in ("api_key_env", "no_key")} for j in judges],
        sampling=JUDGE_SAMPLING,
        harness_sha256=source_hash(*HARNESS_SOURCES),
    )
    rows = [
        {"key": k, **{f: contexts[k][f] for f in ("context", "target_question", "reference")}, "candidate": r["text"]}
        for k, r in sorted(how.items())
    ]
    return HowJudging(judge_manifest, judges, rows, expected["how"], when)


@writes_run_dir("out", "socialomni judge")  # one writer per directory, before its manifest or store
def judge_run(
    run: Path,
    contexts_path: Path,
    judges_path: Path,
    panel: str,
    out: Path,
    *,
    template: str,
    template_sha: str,
    only_judge: str | None = None,
    progress: bool = True,
    no_key: bool = False,
    max_attempts: int = RetryPolicy.max_attempts,
    budget_usd: float | None = None,
) -> JudgingPass:
    """Judge a complete hosted run's How answers with the panel through the judge engine (verdicts stored in
    ``out`` are reused); writes scores.json and summary.json in ``out``, whose quality stays null while a panel
    is partial (``no_key``: the judges send no key). ``budget_usd``: the judging directory's total spending limit
    (verdicts past it are not asked; a rerun with a larger one resumes)."""
    prepared = prepare_judging(run, contexts_path, judges_path, panel, template_sha=template_sha, no_key=no_key)
    if budget_usd is not None:  # refused before the judging directory is written
        Budget(budget_usd)  # a positive amount
        _, _, jobs = how_jobs(prepared.rows, prepared.judges, template=template, only_judge=only_judge)
        check_judges_priced([job.spec for job in jobs])
    write_or_check_manifest(out, prepared.manifest)
    scores, summaries = judge_records(
        prepared.rows, prepared.judges, out / STORE, template=template, only_judge=only_judge, progress=progress,
        max_attempts=max_attempts, budget_usd=budget_usd,
    )  # fmt: skip
    names = [j["name"] for j in prepared.judges]
    metrics = quality_metrics(
        prepared.rows,
        scores,
        names,
        _when_decisions(prepared.when),
        n_gold=len(prepared.expected),
        full_gold=True,
        expected=prepared.expected,
    )
    write_text_atomic(out / "scores.json", JudgeScores(scores).to_json())
    summary = JudgingSummary(panel=panel, judges=names, metrics=metrics, time=time.time())
    write_model(out / "summary.json", summary, ensure_ascii=True)
    return JudgingPass(summary, summaries)


def estimate_judging(
    run: Path,
    contexts_path: Path,
    judges_path: Path,
    panel: str,
    out: Path,
    *,
    template: str,
    template_sha: str,
    only_judge: str | None = None,
) -> DryRun:
    """The dry run of :func:`judge_run`: the verdict requests it would send (those stored in ``out`` left out)
    and their estimated cost, each judge at its price. Nothing is sent or written, and no key is needed."""
    prepared = prepare_judging(run, contexts_path, judges_path, panel, template_sha=template_sha, no_key=True)
    write_or_check_manifest(out, prepared.manifest, write=False)  # a judging directory of another pass: refused
    _, _, jobs = how_jobs(prepared.rows, prepared.judges, template=template, only_judge=only_judge)
    if not (out / STORE).is_file():
        return asyncio.run(estimate_jobs(None, jobs, thinking_off_by_default=False))
    with RunStore(out / STORE, read_only=True) as store:
        dry = asyncio.run(estimate_jobs(store, jobs, thinking_off_by_default=False))
        dry.spent = tally(store.cost_rows())
    return dry


# ----------------------------------------------------------------------------------------------- rescoring


def prepare_from_run(run: Path, contexts_path: Path, model: str) -> RescoreInput:
    """Normalised rescoring input from a hosted run (full_gold): its declared How items
    (``expected_response_ids``, the release's 128 or the declared limit), a record for each stored one (a
    failed generation keeps its `error` and is never an empty reply), and the stored When decisions (an item
    without a When record has no entry, so it is never a "NO")."""
    contexts = load_contexts(contexts_path)
    manifest = read_manifest(run)
    expected = expected_items(run, manifest)
    if not expected["how"]:
        raise RunError(f"{run}: rescoring a hosted run needs its how task (it has {', '.join(manifest.tasks or [])})")
    records = candidate_records(run)
    how, when = records.get("how") or {}, records.get("when") or {}
    missing = [k for k in expected["how"] if k not in contexts]
    if missing:
        raise SocialOmniError(f"{contexts_path}: no context for {', '.join(missing[:8])}")
    rows = []
    for k in expected["how"]:
        if k not in how:
            continue  # no record: missing (named by expected_response_ids), never an empty reply
        r = how[k]
        rows.append(
            RescoreRecord(
                model=model,
                item_id=k,
                **{f: contexts[k][f] for f in ("context", "target_question", "reference")},
                candidate=r["text"],
                error=r["error"] if r["request_failed"] else None,
            )
        )
    decisions = [
        WhenDecision(item_id=k, gold=r["gold"], prediction=r["prediction"], request_failed=r["request_failed"])
        for k, r in sorted(when.items())
    ]
    hosted = RescoreInputModel(
        model=model,
        source="hosted-run",
        full_gold=True,
        limit=manifest.limit,
        expected_response_ids=expected["how"],
        when=decisions,
    )
    return RescoreInput(
        schema_version=1, source=str(run), source_sha256=manifest.sha256(), models=[hosted], records=rows
    )


_TRUE = frozenset({"true", "1", "yes"})


def _archive_failure(row: dict[str, Any]) -> str | None:
    """Why an archived answer is a failed generation (no candidate cell, an `error`, or `request_failed` true), or
    None for a completed answer (an empty candidate is a completed empty answer)."""
    if row.get("candidate") is None:
        return "no candidate in the archive row"
    if error := (row.get("error") or "").strip():
        return error
    if (row.get("request_failed") or "").strip().lower() in _TRUE:
        return "request_failed"
    return None


def prepare_from_archive(csv_path: Path) -> RescoreInput:
    """Normalised rescoring input from archived paper answers (ensemble_response_scores.csv): only items gold YES
    and predicted YES exist there, so QGold stays null (full_gold false). A row whose generation failed (no
    candidate cell, a non-empty `error` column, or a true `request_failed` column) keeps its `error`: it is
    never judged and makes its model's result incomplete, never an empty answer worth 0."""
    try:
        with Path(csv_path).open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as err:
        raise SocialOmniError(f"{csv_path}: cannot read ({err.strerror})") from None
    needed = ("model", "item_id", "context", "target_question", "reference", "candidate")
    if not rows or not set(needed) <= set(rows[0]):
        raise SocialOmniError(f"{csv_path}: expected columns {', '.join(sorted(needed))}")
    seen: set[tuple[str, str]] = set()
    records = []
    for number, row in enumerate(rows, start=2):
        pair = (row["model"], row["item_id"])
        if pair in seen:
            raise SocialOmniError(f"{csv_path}:{number}: duplicate item {row['item_id']} for model {row['model']}")
        seen.add(pair)
        if absent := [k for k in needed[:5] if row.get(k) is None]:
            raise SocialOmniError(f"{csv_path}:{number}: no {', '.join(absent)} cell (a truncated row)")
        records.append(RescoreRecord(**{k: row[k] for k in needed}, error=_archive_failure(row)))
    models = sorted({r["model"] for r in rows})
    return RescoreInput(
        schema_version=1,
        source=str(csv_path),
        source_sha256=file_sha256(Path(csv_path)),
        models=[RescoreInputModel(model=m, source="paper-archive", full_gold=False) for m in models],
        records=records,
    )


def record_key(model: str, item_id: str) -> str:
    return sha256_json([model, item_id])[:16]


def _expected_responses(
    model: RescoreInputModel, mine: list[dict[str, Any]], n_gold: int
) -> tuple[list[str] | None, int]:
    """(the record keys a model must have, or None; its denominator). A model's ``expected_response_ids`` name
    them (a hosted run: every declared How item, ``n_gold`` of them unless it declares a ``limit``); without
    them a full_gold model expects ``n_gold`` items and an archive the answers it holds."""
    ids = model.expected_response_ids
    if ids is None:
        return None, n_gold
    if len(set(ids)) != len(ids):
        raise SocialOmniError(f"model {model.model}: expected_response_ids must be a list of distinct ids")
    expected = [record_key(model.model, i) for i in ids]
    if extra := sorted({r["item_id"] for r in mine if r["key"] not in set(expected)}):
        raise SocialOmniError(f"model {model.model}: answers for items not expected: {', '.join(extra[:8])}")
    if not model.full_gold:
        return expected, n_gold
    limit = model.limit
    if (len(ids) != n_gold) if limit is None else not 0 < len(ids) <= min(limit, n_gold):
        bound = f"{n_gold}" if limit is None else f"1 to {min(limit, n_gold)} (limit {limit})"
        raise SocialOmniError(f"model {model.model}: {len(ids)} expected How items; expected {bound}")
    return expected, len(ids)


@writes_run_dir("out", "socialomni rescore")  # one writer per directory, before its manifest or store
def rescore(
    data: RescoreInput | dict[str, Any],
    judges_path: Path,
    panel: str,
    out: Path,
    *,
    template: str,
    only_judge: str | None = None,
    n_gold: int = 128,
    progress: bool = True,
    no_key: bool = False,
) -> RescoreResults:
    """Run the panel over normalised rescoring input (:class:`RescoreInput`, or its dict); writes results.json with
    per-model metrics (``no_key``: the judges send no key)."""
    data = rescore_input(data)
    judges = load_judge_config(judges_path, panel, no_key=no_key)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{**r.dump(), "key": record_key(r.model, r.item_id)} for r in data.records]
    scores, _ = judge_records(rows, judges, out / STORE, template=template, only_judge=only_judge, progress=progress)
    names = [j["name"] for j in judges]
    models = []
    for model in data.models:
        mine = [r for r in rows if r["model"] == model.model]
        expected, model_gold = _expected_responses(model, mine, n_gold)
        if model.full_gold:  # only items with a When decision: a failed or absent When record is never a "NO"
            yes = {
                record_key(model.model, w.item_id): w.prediction == "YES"
                for w in model.when or []
                if not w.request_failed
            }
        else:  # archives hold only answers to items the model predicted YES
            yes = {r["key"]: True for r in mine}
        metrics = quality_metrics(
            mine, scores, names, yes, n_gold=model_gold, full_gold=model.full_gold, expected=expected
        )
        models.append(RescoredModel(model=model.model, full_gold=model.full_gold, metrics=metrics))
    result = RescoreResults(
        schema_version=1,
        complete=all(m.metrics.complete for m in models),
        provenance=Provenance(source=data.source, source_sha256=data.source_sha256, panel=panel, judges=names),
        models=models,
        records=[
            RescoredRecord(
                model=r["model"],
                item_id=r["item_id"],
                candidate=r["candidate"],
                error=r.get("error") or None,
                judge_scores=scores.get(r["key"], {}),
            )
            for r in rows
        ],
    )
    write_model(out / "results.json", result)
    return result


# ------------------------------------------------------------------------------------------------- export


def completeness(
    run: Path,
    manifest: SocialOmniManifest | None = None,
    records: dict[str, dict[str, dict[str, Any]]] | None = None,
) -> dict[str, TaskCompleteness]:
    """task -> {n, n_missing, missing, request_failures} for each requested task: ``n`` is the declared item count
    (the release's, or the declared limit), ``missing`` the declared items with no record, sorted."""
    manifest = read_manifest(run) if manifest is None else manifest
    expected = expected_items(run, manifest)
    records = candidate_records(run) if records is None else records
    result = {}
    for task in TASK_ORDER:
        if task not in (manifest.tasks or []):
            continue
        rows = records.get(task) or {}
        missing = [k for k in expected[task] if k not in rows]
        result[task] = TaskCompleteness(
            n=len(expected[task]),
            n_missing=len(missing),
            missing=missing,
            request_failures=sum(1 for r in rows.values() if r["request_failed"]),
        )
    return result


def export_figures(run: Path, judging: Path | None) -> ExportFigures:
    """What the shared export of a SocialOmni run adds: its status and why it is incomplete, per record its parsed
    prediction (How: its judge scores), and the metrics, completeness, quality and judging; refuses judge scores
    made for another candidate run.

    ``status`` is ``complete`` only when every declared item of every requested task (the release counts, or the
    declared limit) has an answer and, with the how task, every non-empty How answer a full panel;
    ``scored_with_request_failures`` when all that holds but some Who requests failed; ``incomplete`` otherwise.
    How quality is computed here from the judge scores and the run's records (never taken from a stored summary),
    over the declared How items.
    """
    manifest = read_manifest(run)
    expected = expected_items(run, manifest)
    tasks = [t for t in TASK_ORDER if t in (manifest.tasks or [])]
    records = candidate_records(run)
    summary = summarize(run, records)
    judge_manifest, judged = judge_scores_for(judging, manifest) if judging is not None else (None, JudgeScores({}))
    scores = judged.root
    judge_names = judge_manifest.judge_names if judge_manifest is not None else []
    panel = judge_manifest.panel if judge_manifest is not None else None
    state = completeness(run, manifest, records)
    quality: HowMetrics | None = None
    if "how" in tasks and expected["how"]:
        how = records.get("how") or {}
        rows = [
            {"key": k, "candidate": r["text"], **({"error": r["error"]} if r["request_failed"] else {})}
            for k, r in how.items()
        ]
        quality = quality_metrics(
            rows,
            scores,
            judge_names,
            _when_decisions(records.get("when") or {}),
            n_gold=len(expected["how"]),
            full_gold=True,
            expected=expected["how"],
        )
        state["how"].n_unjudged = quality.n_unjudged
        state["how"].n_when_missing = quality.n_when_missing
    reasons = []
    for task in tasks:
        c = state[task]
        if c.n_missing:
            reasons.append(f"{task}: {c.n_missing} of {c.n} items missing (no record)")
        if task != "who" and c.request_failures:
            reasons.append(f"{task}: {c.request_failures} request failures")
    if quality is not None and not quality.complete:
        if quality.n_unjudged:
            how_to = "run `socialomni judge`" if panel else "no judge scores: run `socialomni judge`"
            reasons.append(f"how: {quality.n_unjudged} answers without a full judge panel ({how_to})")
        if quality.n_when_missing and "when" not in tasks:
            reasons.append(f"how: {quality.n_when_missing} items without a When decision (the run has no when task)")
        if not reasons:
            reasons.append("how: quality incomplete")
    if reasons:
        status = "incomplete"
    elif "who" in state and state["who"].request_failures:
        status = "scored_with_request_failures"
    else:
        status = "complete"
    headline = ("qgold", "qens", "cov_plus", "qens_joint")
    metrics = ExportMetrics(
        who=summary.who, when=summary.when, **{k: getattr(quality, k) if quality else None for k in headline}
    )
    meta: dict[tuple[str, str], dict[str, Any]] = {}
    for task in TASK_ORDER:
        for item_id, r in (records.get(task) or {}).items():
            scores_of = {"judge_scores": judged.of(item_id)} if task == "how" else {}
            meta[(task, _label(task, item_id))] = {"prediction": r["prediction"], **scores_of}
    extra = {
        "model": manifest.model,
        "protocol": manifest.protocol,
        "judge_panel": panel,
        "judges": judge_names,
        "judge_substitution": None,  # panels are strict: a judge is never replaced
        "metrics": metrics.dump(),
        "completeness": {t: c.dump() for t, c in state.items()},
        "quality": quality.model_dump(mode="json") if quality is not None else None,
        "manifest_sha256": manifest.sha256(),
    }
    return ExportFigures(status, reasons, meta, extra)
