"""The SocialOmni protocol on omnivchat's runner: Who / When / How generation, the three-judge panel for How,
rescoring of archived answers, and exports. Requests go through the shared routes and the SQLite store, so
completed answers are reused on resume, failures retried, and every attempt kept.
"""

from __future__ import annotations

import asyncio
import csv
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from omnivchat._canonical import sha256_json
from omnivchat.routes import ChatRequest, ChatResponse, Route, RouteError, Sampling, get_route, resolve_api_key
from omnivchat.runs import RetryPolicy, RunError, Runner, RunStore, RunSummary
from omnivchat.runs._manifest import source_hash, write_or_check_manifest
from omnivchat.socialomni._cards import PromptCards, how_text, when_text, who_text
from omnivchat.socialomni._data import SocialOmniError, WhenItem, WhoItem, file_sha256, how_items, load_when, load_who
from omnivchat.socialomni._metrics import classification_metrics, how_metrics
from omnivchat.socialomni._panel import JUDGE_SAMPLING, check_panel, judge_text, parse_judge_score
from omnivchat.socialomni._parse import parse_how, parse_when, parse_when_lenient, parse_who, parse_who_lenient
from omnivchat.socialomni._prefix import PREFIX_ENCODING, make_prefix
from omnivchat.socialomni._time import WHO_CUTOFF_RULE

PROTOCOL = "omnivchat-socialomni-v1"
TASK_ORDER = ("when", "how", "who")
STORE = "store.sqlite"
GENERATION = {"temperature": 0.3, "top_p": 1.0}
LEVEL1 = Path("level_1") / "dataset.json"
LEVEL2 = Path("level_2") / "annotations_200.json"


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


# ------------------------------------------------------------------------------------------------ evaluate


def _label(task: str, item_id: str) -> str:
    return f"{task}-{item_id}"


def _requests(
    task: str, items: Sequence[Any], cards: PromptCards, prefixes: Path, sampling: Sampling
) -> list[tuple[ChatRequest, dict[str, Any]] | tuple[RouteError, dict[str, Any]]]:
    """One request per item: the prefix clip first, then the card text; no system prompt, no transcript."""

    def build(item: Any) -> tuple[ChatRequest | RouteError, dict[str, Any]]:
        cutoff = item.cutoff if task == "who" else item.timestamp
        meta = {
            "task": task,
            "id": _label(task, item.id),
            "gold": item.gold if task != "how" else None,
            "cutoff": cutoff,
        }
        try:
            clip, clip_sha = make_prefix(item.video, cutoff, prefixes)
        except Exception as err:  # a clip ffmpeg cannot cut: this item fails, the others go on
            message = str(err) if str(item.video) in str(err) else f"{item.video}: {err}"
            return RouteError("media", message), meta
        text = {"who": who_text, "when": when_text, "how": how_text}[task](cards, item)
        meta["media_sha256"] = clip_sha
        return ChatRequest(item_id=_label(task, item.id), clip=clip, text=text, sampling=sampling), meta

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(build, items))  # type: ignore[arg-type]


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
) -> dict[str, Any]:
    """Generate answers for the chosen tasks into ``out`` (resumable); returns and writes summary.json."""
    tasks = [t for t in TASK_ORDER if t in tasks]
    who, when, how = load_tasks(annotations, media_root, tasks, limit)
    level1, level2 = annotation_files(annotations)
    items_by_task = {"who": who, "when": when, "how": how}
    manifest = {
        "protocol": PROTOCOL,
        "model": route.model_id,
        "endpoint": route.endpoint,
        "route": route.settings.model_dump(mode="json", exclude={"base_url"}),
        "source_sha256": {
            "level1": file_sha256(level1) if level1.is_file() else None,
            "level2": file_sha256(level2) if level2.is_file() else None,
        },
        "source_media_sha256": {_label(t, i.id): file_sha256(i.video) for t in tasks for i in items_by_task[t]},
        "prompts": cards.hashes(),
        **GENERATION,
        "max_tokens": max_tokens,
        "prefix_encoding": PREFIX_ENCODING,
        "who_cutoff_rule": WHO_CUTOFF_RULE,
        "tasks": tasks,
        "limit": limit,
        "harness_sha256": source_hash(),
    }
    write_or_check_manifest(out, manifest)
    sampling = Sampling(max_tokens=max_tokens, **GENERATION)
    store = RunStore(out / STORE)

    async def run_tasks() -> None:  # one event loop for every task: the route's HTTP session lives in it
        try:
            for task in tasks:
                built = _requests(task, items_by_task[task], cards, out / "prefixes", sampling)
                summary = RunSummary(run_dir=out, total=len(built))
                work = []
                for request, meta in built:
                    if isinstance(request, RouteError):
                        store.set_item(meta["id"], task, None, request, meta)
                        Runner._failed(summary, request)
                    else:
                        work.append((request, meta))
                runner = Runner(route, store, concurrency=concurrency, retry=RetryPolicy(max_attempts=3), kind=task)
                await runner.run_all(work, summary, progress=progress, label=f"{route.model_id} {task}")
        finally:
            await route.aclose()

    try:
        asyncio.run(run_tasks())
    finally:
        store.close()
    result = summarize(out)
    (out / "summary.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


def candidate_records(run: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """task -> item id -> {prediction, text, gold, request_failed, error}."""
    records: dict[str, dict[str, dict[str, Any]]] = {}
    parsers = {"who": parse_who, "when": parse_when, "how": parse_how}
    with RunStore(run / STORE) as store:
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
                }
            records[task] = rows
    return records


def summarize(run: Path) -> dict[str, Any]:
    """Who and When accuracy and macro-F1 (fixed denominators; request and parse failures apart)."""
    records = candidate_records(run)
    summary: dict[str, Any] = {}
    lenient_parsers = {"who": parse_who_lenient, "when": parse_when_lenient}
    for task, labels in (("who", ("A", "B", "C", "D")), ("when", ("YES", "NO"))):
        rows = records.get(task) or {}
        if rows:
            gold = {k: r["gold"] for k, r in rows.items()}
            failed = {k for k, r in rows.items() if r["request_failed"]}
            summary[task] = classification_metrics({k: r["prediction"] for k, r in rows.items()}, gold, labels, failed)
            # A separate, clearly labelled metric: never the headline number of the protocol.
            lenient = {k: lenient_parsers[task](r["text"]) if r["text"] is not None else None for k, r in rows.items()}
            summary[f"{task}_lenient"] = classification_metrics(lenient, gold, labels, failed)
    how = records.get("how") or {}
    summary["how_generation"] = {
        "n": len(how),
        "completed": sum(1 for r in how.values() if not r["request_failed"]),
        "empty": sum(1 for r in how.values() if not r["request_failed"] and not (r["text"] or "").strip()),
        "request_failures": sum(1 for r in how.values() if r["request_failed"]),
    }
    return summary


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
    return data


def _judge_route(spec: dict[str, Any]) -> Route:
    overrides = {"base_url": spec.get("base_url"), "media_input": "none", "extra_body": spec.get("extra") or None}
    if spec.get("enable_thinking") is not None:
        overrides["thinking"] = spec["enable_thinking"]
    if spec.get("include_modalities") is not None:
        overrides["include_modalities"] = spec["include_modalities"]
    if spec.get("reasoning_effort") is not None:
        overrides["reasoning_effort"] = spec["reasoning_effort"]
    return get_route(spec["model"], api_key=resolve_api_key(spec.get("api_key_env")), **overrides)


def load_judge_config(path: Path, panel: str) -> list[dict[str, Any]]:
    """The judges file `{"judges": [{name, model, base_url, api_key_env, max_concurrency, ...}]}`, whose judge
    names must equal the panel's set exactly."""
    try:
        judges = json.loads(Path(path).read_text(encoding="utf-8"))["judges"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SocialOmniError(f"{path}: not a judges file with a 'judges' list ({err})") from None
    check_panel(panel, [j["name"] for j in judges])
    return judges


def judge_records(
    records: list[dict[str, Any]],
    judges: list[dict[str, Any]],
    store_path: Path,
    *,
    template: str,
    only_judge: str | None = None,
    max_attempts: int = 3,
    progress: bool = True,
) -> dict[str, dict[str, int | None]]:
    """Send every missing judge request for the non-empty candidates; return key -> judge -> score (None: none yet).

    ``records`` hold `key`, `context`, `target_question`, `reference`, `candidate`. Requests are cached in the store
    by payload, so a second pass sends nothing; an unparseable score is asked again, then left missing.
    """
    chosen = [j for j in judges if only_judge is None or j["name"] == only_judge]
    if only_judge is not None and not chosen:
        raise SocialOmniError(f"--only-judge {only_judge}: not in the judges file")
    store = RunStore(store_path)
    sampling = Sampling(**JUDGE_SAMPLING)

    def ok(_request: ChatRequest, response: ChatResponse) -> str | None:
        return None if parse_judge_score(response.text) is not None else "judge score is not one of 0/25/50/75/100"

    async def run_all() -> None:
        jobs = []
        for spec in chosen:
            route = _judge_route(spec)
            work = [
                (
                    ChatRequest(
                        item_id=r["key"],
                        text=judge_text(template, r["context"], r["target_question"], r["reference"], r["candidate"]),
                        sampling=sampling,
                        require_text=True,
                    ),
                    {},
                )
                for r in records
                if (r["candidate"] or "").strip()
            ]
            runner = Runner(
                route,
                store,
                concurrency=spec.get("max_concurrency", 2),
                retry=RetryPolicy(max_attempts),
                kind=f"judge:{spec['name']}",
                accept=ok,
            )
            jobs.append((runner, work, RunSummary(run_dir=store_path.parent, total=len(work)), spec["name"], route))

        async def one(runner: Runner, work: list, summary: RunSummary, name: str, route: Route) -> None:
            try:
                await runner.run_all(work, summary, progress=progress, label=f"judge {name}")
            finally:
                await route.aclose()

        await asyncio.gather(*(one(*job) for job in jobs))

    try:
        asyncio.run(run_all())
        scores: dict[str, dict[str, int | None]] = {r["key"]: {} for r in records}
        for spec in judges:
            done = {i["item_id"]: i for i in store.items(f"judge:{spec['name']}")}
            for r in records:
                row = done.get(r["key"])
                result = store.result(row["key"]) if row and row["status"] == "done" and row["key"] else None
                scores[r["key"]][spec["name"]] = parse_judge_score(result.text) if result else None
    finally:
        store.close()
    return scores


def quality_metrics(
    records: list[dict[str, Any]],
    scores: dict[str, dict[str, int | None]],
    judges: list[str],
    predicted_yes: dict[str, bool],
    *,
    n_gold: int,
    full_gold: bool,
) -> Any:
    """QGold, QEns, Cov+, QEns_joint over the records, via how_metrics (null on any incomplete panel)."""
    qualities: dict[str, list[int] | None] = {}
    empty: dict[str, bool] = {}
    for r in records:
        key = r["key"]
        empty[key] = not (r["candidate"] or "").strip()
        got = [scores.get(key, {}).get(j) for j in judges]
        qualities[key] = None if empty[key] or any(s is None for s in got) else [int(s) for s in got]  # type: ignore[arg-type]
    yes = {r["key"]: predicted_yes.get(r["key"], False) for r in records}
    return how_metrics(qualities, yes, empty, n_gold=n_gold, full_gold=full_gold)


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
) -> dict[str, Any]:
    """Judge a complete hosted run's How answers with the panel; writes scores.json and summary.json in ``out``."""
    judges = load_judge_config(judges_path, panel)
    contexts = load_contexts(contexts_path)
    records = candidate_records(run)
    when, how = records.get("when") or {}, records.get("how") or {}
    failed = [f"when-{k}" for k, r in when.items() if r["request_failed"]] + [
        f"how-{k}" for k, r in how.items() if r["request_failed"]
    ]
    if not when or not how or failed:
        raise RunError(
            f"{run}: judging needs every When and How record completed; "
            + (f"failed: {', '.join(failed[:8])}" if failed else "the run has no When or How records")
        )
    missing = [k for k in how if k not in contexts]
    if missing:
        raise SocialOmniError(f"{contexts_path}: no context for {', '.join(missing[:8])}")
    manifest_sha = sha256_json(json.loads((run / "manifest.json").read_text(encoding="utf-8")))
    judge_manifest = {
        "protocol": PROTOCOL + "-judging",
        "panel": panel,
        "candidate_manifest_sha256": manifest_sha,
        "candidate_rows_sha256": sha256_json({k: r["text"] for k, r in sorted(how.items())}),
        "contexts_sha256": file_sha256(contexts_path),
        "rubric_sha256": template_sha,
        "judges": [{k: v for k, v in j.items() if k != "api_key_env"} for j in judges],
        "sampling": JUDGE_SAMPLING,
        "harness_sha256": source_hash(),
    }
    write_or_check_manifest(out, judge_manifest)
    rows = [
        {"key": k, **{f: contexts[k][f] for f in ("context", "target_question", "reference")}, "candidate": r["text"]}
        for k, r in sorted(how.items())
    ]
    scores = judge_records(rows, judges, out / STORE, template=template, only_judge=only_judge, progress=progress)
    names = [j["name"] for j in judges]
    yes = {k: when.get(k, {}).get("prediction") == "YES" for k in how}
    metrics = quality_metrics(rows, scores, names, yes, n_gold=len(how), full_gold=True)
    (out / "scores.json").write_text(json.dumps(scores, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    summary = {"panel": panel, "judges": names, "metrics": metrics.model_dump(), "time": time.time()}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


# ----------------------------------------------------------------------------------------------- rescoring


def prepare_from_run(run: Path, contexts_path: Path, model: str) -> dict[str, Any]:
    """Normalised rescoring input from a hosted run: every How item (full_gold) with its When decision."""
    contexts = load_contexts(contexts_path)
    records = candidate_records(run)
    how, when = records.get("how") or {}, records.get("when") or {}
    missing = [k for k in how if k not in contexts]
    if missing:
        raise SocialOmniError(f"{contexts_path}: no context for {', '.join(missing[:8])}")
    return {
        "schema_version": 1,
        "source": str(run),
        "source_sha256": sha256_json(json.loads((run / "manifest.json").read_text(encoding="utf-8"))),
        "models": [
            {
                "model": model,
                "source": "hosted-run",
                "full_gold": True,
                "when": [
                    {
                        "item_id": k,
                        "gold": r["gold"],
                        "prediction": r["prediction"],
                        "request_failed": r["request_failed"],
                    }
                    for k, r in sorted(when.items())
                ],
            }
        ],
        "records": [
            {
                "model": model,
                "item_id": k,
                **{f: contexts[k][f] for f in ("context", "target_question", "reference")},
                "candidate": r["text"] or "",
            }
            for k, r in sorted(how.items())
            if not r["request_failed"]
        ],
    }


def prepare_from_archive(csv_path: Path) -> dict[str, Any]:
    """Normalised rescoring input from archived paper answers (ensemble_response_scores.csv): only items gold YES
    and predicted YES exist there, so QGold stays null (full_gold false)."""
    try:
        with Path(csv_path).open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as err:
        raise SocialOmniError(f"{csv_path}: cannot read ({err.strerror})") from None
    needed = {"model", "item_id", "context", "target_question", "reference", "candidate"}
    if not rows or not needed <= set(rows[0]):
        raise SocialOmniError(f"{csv_path}: expected columns {', '.join(sorted(needed))}")
    seen: set[tuple[str, str]] = set()
    for number, row in enumerate(rows, start=2):
        pair = (row["model"], row["item_id"])
        if pair in seen:
            raise SocialOmniError(f"{csv_path}:{number}: duplicate item {row['item_id']} for model {row['model']}")
        seen.add(pair)
    models = sorted({r["model"] for r in rows})
    return {
        "schema_version": 1,
        "source": str(csv_path),
        "source_sha256": file_sha256(Path(csv_path)),
        "models": [{"model": m, "source": "paper-archive", "full_gold": False} for m in models],
        "records": [{k: r[k] for k in needed} for r in rows],
    }


def record_key(model: str, item_id: str) -> str:
    return sha256_json([model, item_id])[:16]


def rescore(
    data: dict[str, Any],
    judges_path: Path,
    panel: str,
    out: Path,
    *,
    template: str,
    only_judge: str | None = None,
    n_gold: int = 128,
    progress: bool = True,
) -> dict[str, Any]:
    """Run the panel over normalised rescoring input; writes results.json with per-model metrics."""
    if data.get("schema_version") != 1 or not isinstance(data.get("records"), list):
        raise SocialOmniError("rescoring input must have schema_version 1 and a records list")
    judges = load_judge_config(judges_path, panel)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{**r, "key": record_key(r["model"], r["item_id"])} for r in data["records"]]
    scores = judge_records(rows, judges, out / STORE, template=template, only_judge=only_judge, progress=progress)
    names = [j["name"] for j in judges]
    models = []
    for model in data["models"]:
        mine = [r for r in rows if r["model"] == model["model"]]
        if model.get("full_gold"):
            yes = {record_key(model["model"], w["item_id"]): w["prediction"] == "YES" for w in model.get("when", [])}
        else:  # archives hold only answers to items the model predicted YES
            yes = {r["key"]: True for r in mine}
        metrics = quality_metrics(mine, scores, names, yes, n_gold=n_gold, full_gold=bool(model.get("full_gold")))
        models.append(
            {"model": model["model"], "full_gold": bool(model.get("full_gold")), "metrics": metrics.model_dump()}
        )
    complete = all(m["metrics"]["complete"] for m in models)
    result = {
        "schema_version": 1,
        "complete": complete,
        "provenance": {
            "source": data.get("source"),
            "source_sha256": data.get("source_sha256"),
            "panel": panel,
            "judges": names,
        },
        "models": models,
        "records": [
            {
                "model": r["model"],
                "item_id": r["item_id"],
                "candidate": r["candidate"],
                "judge_scores": scores.get(r["key"], {}),
            }
            for r in rows
        ],
    }
    (out / "results.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


# ------------------------------------------------------------------------------------------------- export


def export(run: Path, judging: Path | None, *, allow_incomplete: bool = False) -> dict[str, Any]:
    """Per-item predictions and scores with the status; refuses an incomplete evaluation unless allowed, and judge
    scores made for another candidate run. No endpoint, key or key variable is written."""
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    records = candidate_records(run)
    summary = summarize(run)
    judge_summary, scores, judge_names, panel = None, {}, [], None
    if judging is not None and (judging / "manifest.json").is_file():
        judge_manifest = json.loads((judging / "manifest.json").read_text(encoding="utf-8"))
        if judge_manifest.get("candidate_manifest_sha256") != sha256_json(manifest):
            raise RunError(f"{judging}: these judge scores were made for another candidate run; refusing to mix them")
        scores = json.loads((judging / "scores.json").read_text(encoding="utf-8"))
        judge_summary = json.loads((judging / "summary.json").read_text(encoding="utf-8"))
        judge_names, panel = judge_summary["judges"], judge_summary["panel"]
    how_failed = any(r["request_failed"] for r in (records.get("how") or {}).values())
    when_failed = any(r["request_failed"] for r in (records.get("when") or {}).values())
    quality_complete = bool(judge_summary and judge_summary["metrics"]["complete"])
    missing_tasks = [t for t in manifest["tasks"] if not records.get(t)]
    if missing_tasks or how_failed or when_failed or not quality_complete:
        status = "incomplete"
    elif any(r["request_failed"] for r in (records.get("who") or {}).values()):
        status = "scored_with_request_failures"
    else:
        status = "complete"
    if status == "incomplete" and not allow_incomplete:
        reasons = [f"no {t} records" for t in missing_tasks]
        reasons += ["How generation failures"] * how_failed + ["When request failures"] * when_failed
        reasons += [] if quality_complete else ["the judge panel is not complete (run `socialomni judge`)"]
        raise RunError(
            f"{run}: evaluation incomplete ({'; '.join(reasons)}); pass --allow-incomplete to export progress"
        )
    metrics = {"who": summary.get("who"), "when": summary.get("when")}
    quality = (judge_summary or {}).get("metrics") or {}
    metrics.update({k: quality.get(k) for k in ("qgold", "qens", "cov_plus", "qens_joint")})
    items = []
    for task in TASK_ORDER:
        for item_id, r in sorted((records.get(task) or {}).items()):
            entry = {
                "task": task,
                "item_id": item_id,
                "prediction": r["prediction"],
                "gold": r["gold"],
                "request_success": not r["request_failed"],
                "text": r["text"],
            }
            if task == "how":
                entry["judge_scores"] = scores.get(item_id, {})
            items.append(entry)
    return {
        "schema": "omnivchat-socialomni-export-v1",
        "status": status,
        "model": manifest["model"],
        "protocol": manifest["protocol"],
        "judge_panel": panel,
        "judges": judge_names,
        "judge_substitution": None,  # panels are strict: a judge is never replaced
        "metrics": metrics,
        "manifest_sha256": sha256_json(manifest),
        "items": items,
    }
