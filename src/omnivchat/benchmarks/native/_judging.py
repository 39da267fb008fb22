"""Judging a run: rubric and style requests through the same routes and store as the run (cached, resumable),
and panel scores assembled from what is stored. A partial panel never yields a number."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from omnivchat._blocking import blocking
from omnivchat._canonical import sha256_json, sha256_text
from omnivchat.bench import (
    INSPECTION_FILE,
    Bench,
    Instance,
    inspection_history,
    load_bench,
    rejected_over_time,
)
from omnivchat.benchmarks.native._files import load_manifest
from omnivchat.judges import (
    NOT_JUDGED,
    RULE_JUDGE,
    STYLE_REQUIREMENTS,
    Aggregate,
    Job,
    JudgePrompts,
    JudgesConfig,
    JudgeSpec,
    VerdictTask,
    aliases_for,
    ask,
    check_judges_priced,
    estimate_jobs,
    hits_schema,
    parse_verdict,
    rubric_request,
    rule_verdict,
    stored_verdict,
    style_request,
)
from omnivchat.routes import (
    ChatRequest,
)
from omnivchat.runs import (
    CANDIDATE,
    STORE_FILE,
    Budget,
    DryRun,
    RetryPolicy,
    RunError,
    RunStore,
    RunSummary,
    manifest_shard,
    tally,
    writes_run_dir,
)
from omnivchat.scoring import ScoredReply, is_empty_reply, rubric_score

JUDGES_FILE = "judges.json"


def rubric_kind(judge: str) -> str:
    return f"rubric:{judge}"


def _not_asked(item_id: str, spec: JudgeSpec) -> ChatRequest:
    raise RunError(f"item {item_id}: this verdict task only reads stored verdicts")


def rubric_task(
    instances: Mapping[str, Instance], request: Callable[[str, JudgeSpec], ChatRequest] = _not_asked
) -> VerdictTask[list[int]]:
    """Rubric verdicts (Eq. 1 hits): criteria 1..K of each instance, strict JSON, schema per instance."""
    return VerdictTask(
        kind="rubric",
        request=request,
        parse=lambda item_id, text: parse_verdict(text, len(instances[item_id].rubric)),
        schema=lambda item_id: hits_schema(len(instances[item_id].rubric)),
        unparseable="rubric verdict does not parse",
    )


def style_task(request: Callable[[str, JudgeSpec], ChatRequest] = _not_asked) -> VerdictTask[list[int]]:
    """Style checklist verdicts (Section 4.2): requirements 1..7 met."""
    return VerdictTask(
        kind="style",
        request=request,
        parse=lambda _item_id, text: parse_verdict(text, STYLE_REQUIREMENTS),
        schema=lambda _item_id: hits_schema(STYLE_REQUIREMENTS),
        unparseable="style verdict does not parse",
    )


def run_bench(run_dir: Path, bench_dir: Path | None, *, delivered_only: bool = False, whole: bool = False) -> Bench:
    """The bench of a run: the one given, or the one recorded at its last invocation that names one; checked
    against the manifest so that verdicts always refer to the instances that were run. A shard's bench holds its
    own instances only (``shard.items`` in its manifest): it is scored and judged against these, never the whole
    bench.

    A human-inspection decision made after the run changes the delivered set, so the run's own instances are
    found in the bench's decision history (inspection.jsonl is append-only): the returned bench holds them, and
    ``rejected`` lists those since rejected. ``delivered_only`` leaves these out of ``instances`` (their replies
    are not scored). ``whole`` returns the whole bench of a shard's run (what a file about the bench, such as
    human labels, may name)."""
    bench = _whole_bench(run_dir, bench_dir, delivered_only=delivered_only)
    return bench if whole else shard_part(run_dir, bench)


def shard_part(run_dir: Path, bench: Bench) -> Bench:
    """``bench`` as a run declares it: a shard's own instances (its manifest's ``shard.items``), in bench order;
    the whole bench for an unsharded run."""
    shard = manifest_shard(load_manifest(run_dir))
    if shard is None:
        return bench
    own = set(shard.items.get(CANDIDATE, []))
    return replace(bench, instances=[i for i in bench.instances if i.id in own])


def _whole_bench(run_dir: Path, bench_dir: Path | None, *, delivered_only: bool) -> Bench:
    if bench_dir is None:
        bench_dir = recorded_bench(Path(run_dir))
    bench = load_bench(bench_dir)
    identity = load_manifest(run_dir).bench
    expected = identity.instances_sha256
    if _instances_sha256([_row(i) for i in bench.instances]) == expected:
        return replace(bench, rejected={})  # nothing the run holds was rejected since
    history = inspection_history(bench_dir)
    if history:
        everything = load_bench(bench_dir, include_rejected=True)
        rows = {i.id: _row(i) for i in everything.instances}
        for rejected in rejected_over_time(history):
            ran = [i for i in everything.instances if i.id not in rejected]
            if len(ran) != identity.n_instances:  # cheap: most of a long history is passed over here
                continue
            if _instances_sha256([rows[i.id] for i in ran]) == expected:
                since = {i.id: everything.rejected[i.id] for i in ran if i.id in everything.rejected}
                kept = [i for i in ran if i.id not in since] if delivered_only else ran
                return replace(everything, instances=kept, rejected=since)
        raise RunError(
            f"{bench_dir} is not the bench {run_dir} was run on (instances differ, and no state of its "
            f"{INSPECTION_FILE} gives the run's instances: the bench was edited otherwise)"
        )
    raise RunError(f"{bench_dir} is not the bench {run_dir} was run on (instances differ)")


def recorded_bench(run_dir: Path) -> Path:
    """The bench named by the run's last invocation that names one (a ``runs merge`` line, or a later line of
    another kind, may name none); RunError when no invocation names one or the log is not JSON lines."""
    log = run_dir / "invocations.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.is_file() else []
    for number, line in reversed(list(enumerate(lines, 1))):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise RunError(
                f"{log}: line {number} is not JSON; the run directory is damaged (or pass --bench)"
            ) from None
        if isinstance(entry, dict) and isinstance(entry.get("bench"), str):
            return Path(entry["bench"])
    raise RunError(f"{run_dir}: no bench recorded; pass --bench")


def _row(instance: Instance) -> Any:
    return json.loads(instance.model_dump_json())


def _instances_sha256(rows: list[Any]) -> str:
    """The run manifest's ``bench.instances_sha256`` of these instances' rows (see ``bench_identity``), without
    hashing their clips."""
    return sha256_json(rows)


def candidate_replies(store: RunStore) -> dict[str, str | None]:
    """Item id -> the model's reply (None when its request failed)."""
    return {item_id: reply for item_id, (reply, _) in candidate_outcomes(store).items()}


def candidate_outcomes(store: RunStore) -> dict[str, tuple[str | None, str]]:
    """Item id -> (the model's reply, or None when its request failed; "kind: message" of that failure)."""
    outcomes: dict[str, tuple[str | None, str]] = {}
    for item in store.items(CANDIDATE):
        result = store.result(item["key"]) if item["status"] == "done" and item["key"] else None
        error = "" if result else f"{item['error_kind'] or 'failed'}: {item['error'] or 'no result stored'}"
        outcomes[item["item_id"]] = (result.text if result else None, error)
    return outcomes


STYLE_PROMPT_LABEL = "style_prompt"
"""The key of a judge's entry in RUN/judges.json that says which style prompt it was given (prompt_label)."""


def style_prompt_label(run_dir: Path, style_judge: str | None) -> str | None:
    """Which style prompt the style judge of a run was given, from RUN/judges.json: its label, "not recorded
    (sha256 ...)" for a judge recorded before labels were kept, None when no judge grades style (or none is
    recorded: the rule judge has no prompt)."""
    path = Path(run_dir) / JUDGES_FILE
    if style_judge is None or not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text(encoding="utf-8")).get(style_judge)
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(entry, dict):
        return None
    label = entry.get(STYLE_PROMPT_LABEL)
    return str(label) if label else f"not recorded (sha256 {str(entry.get('style_prompt_sha256', '?'))[:12]})"


def _record_identities(run_dir: Path, specs: list[JudgeSpec], prompts: JudgePrompts) -> None:
    """Refuse a judge name that already graded this run with other settings or prompts."""
    path = Path(run_dir) / JUDGES_FILE
    known: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for spec in specs:
        identity = {
            **spec.identity(),
            "rubric_prompt_sha256": sha256_text(prompts.rubric_system + prompts.rubric_user),
            "style_prompt_sha256": sha256_text(prompts.style_system + prompts.style_user),
        }
        # compared without the label, which follows from the hash (a file written before labels were kept resumes)
        stored = {k: v for k, v in known.get(spec.name, {}).items() if k != STYLE_PROMPT_LABEL}
        if spec.name in known and stored != identity:
            changed = sorted(k for k in identity if stored.get(k) != identity[k])
            raise RunError(
                f"judge {spec.name!r} already graded {run_dir} with other settings ({', '.join(changed)}); "
                "give the new settings another judge name"
            )
        known[spec.name] = {**identity, STYLE_PROMPT_LABEL: prompts.style_prompt}
    path.write_text(json.dumps(known, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


@dataclass
class JudgeReport:
    """What one `judge` invocation did, per judge and task ("rubric:NAME", "style:NAME")."""

    summaries: dict[str, RunSummary] = field(default_factory=dict)
    empty_replies: int = 0
    failed_candidates: int = 0
    not_run: int = 0  # bench items the run never ran: nothing to judge, and the run is incomplete


def _specs(config: JudgesConfig, judges: list[str], style_judge: str | None) -> tuple[list[str], list[JudgeSpec]]:
    names = [j for j in judges if j != RULE_JUDGE]
    unknown = [j for j in [*names, *([style_judge] if style_judge else [])] if j not in config.judges]
    if unknown:
        raise RunError(f"judges not in the judges file: {', '.join(unknown)}")
    return names, [config.judges[n] for n in dict.fromkeys([*names, *([style_judge] if style_judge else [])])]


def _jobs(
    store: RunStore,
    model_id: str,
    bench: Bench,
    names: list[str],
    specs: list[JudgeSpec],
    report: JudgeReport,
    *,
    prompts: JudgePrompts,
    style_judge: str | None,
    aliases: list[str] | None,
) -> list[Job]:
    """The verdict jobs for the run's non-empty replies; counts what is not judged in ``report``."""
    by_id = {i.id: i for i in bench.instances}
    replies = candidate_replies(store)
    report.not_run = sum(1 for i in bench.instances if i.id not in replies)
    todo: list[tuple[Instance, str]] = []
    for item_id, reply in replies.items():
        if reply is None:
            report.failed_candidates += 1
        elif is_empty_reply(reply):
            report.empty_replies += 1  # scored 0 without being judged
        else:
            todo.append((by_id[item_id], reply))
    model_aliases = aliases_for(model_id, aliases)
    replies_of = {i.id: r for i, r in todo}
    ids = [i.id for i, _ in todo]

    def rubric_for(item_id: str, spec: JudgeSpec) -> ChatRequest:
        instance = by_id[item_id]
        reply = replies_of[item_id]
        return rubric_request(instance, reply, model_id=model_id, aliases=model_aliases, prompts=prompts, spec=spec)

    def style_for(item_id: str, spec: JudgeSpec) -> ChatRequest:
        return style_request(by_id[item_id], replies_of[item_id], prompts=prompts, spec=spec)

    rubric, style = rubric_task(by_id, rubric_for), style_task(style_for)
    jobs = [Job(spec, rubric, ids) for spec in specs if spec.name in names]
    jobs += [Job(spec, style, ids) for spec in specs if spec.name == style_judge]
    return jobs


@writes_run_dir("run_dir", "judge")  # verdicts and judges.json go into the run directory: one writer at a time
async def judge_run_async(
    run_dir: str | Path,
    bench: Bench,
    config: JudgesConfig,
    judges: list[str],
    *,
    prompts: JudgePrompts | None = None,
    style_judge: str | None = None,
    aliases: list[str] | None = None,
    max_attempts: int = RetryPolicy.max_attempts,  # the same default as a model request
    progress: bool = True,
    budget_usd: float | None = None,
) -> JudgeReport:
    """Send every missing rubric verdict (and style check) for the run's non-empty replies; reuse stored ones.

    An unparseable verdict is retried up to ``max_attempts`` times, then left failed: "unscored" downstream.
    ``budget_usd``: the run directory's total spending limit (the model's requests and every judge's count).
    """
    run_dir = Path(run_dir)
    prompts = prompts or JudgePrompts()
    manifest = load_manifest(run_dir)
    names, specs = _specs(config, judges, style_judge)
    if budget_usd is not None:
        Budget(budget_usd)  # a positive amount
        check_judges_priced(specs)  # before judges.json changes
    report = JudgeReport()
    store = RunStore(run_dir / STORE_FILE)  # a damaged store stops here, before judges.json changes
    try:
        _record_identities(run_dir, specs, prompts)
        jobs = _jobs(
            store, manifest.route.model, bench, names, specs, report,
            prompts=prompts, style_judge=style_judge, aliases=aliases,
        )  # fmt: skip
        report.summaries = await ask(
            store, jobs, run_dir=run_dir, max_attempts=max_attempts, progress=progress, budget_usd=budget_usd
        )
    finally:
        store.close()
    return report


async def estimate_judging_async(
    run_dir: str | Path,
    bench: Bench,
    config: JudgesConfig,
    judges: list[str],
    *,
    prompts: JudgePrompts | None = None,
    style_judge: str | None = None,
    aliases: list[str] | None = None,
) -> tuple[JudgeReport, DryRun]:
    """The dry run of :func:`judge_run_async`: the verdict requests it would send and their estimated cost (each
    judge at its price); nothing is sent, and nothing is written (the store is read read-only)."""
    run_dir = Path(run_dir)
    prompts = prompts or JudgePrompts()
    manifest = load_manifest(run_dir)
    names, specs = _specs(config, judges, style_judge)
    report = JudgeReport()
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        jobs = _jobs(
            store, manifest.route.model, bench, names, specs, report,
            prompts=prompts, style_judge=style_judge, aliases=aliases,
        )  # fmt: skip
        dry = await estimate_jobs(store, jobs)
        dry.spent = tally(store.cost_rows())
    return report, dry


estimate_judging = blocking(estimate_judging_async, "Synchronous :func:`estimate_judging_async`. (its parameters).")


judge_run = blocking(judge_run_async, "Synchronous :func:`judge_run_async`. (its parameters).")


@dataclass
class ItemScore:
    """One instance's outcome under a panel; ``score`` None means unscored, with ``reason``."""

    item_id: str
    subcategory: str
    source: str
    reply: str | None
    score: float | None
    style: float | None
    reason: str
    per_judge: dict[str, float | None] = field(default_factory=dict)
    ran: bool = True
    failure: str | None = None  # why unscored, as a kind to group by: "not run", "request: media", "verdict: ..."

    def scored_reply(self) -> ScoredReply:
        return ScoredReply(
            subcategory=self.subcategory,
            source=self.source,
            score=self.score,
            reply=self.reply,
            style=self.style,
            ran=self.ran,
        )


def _verdict_failure(why: str) -> str:
    """A judge's reason for a missing verdict as a kind to group by ("verdict: unparseable", ...)."""
    if why == NOT_JUDGED:
        return "verdict: not judged"
    if "carry no machine check" in why:
        return "verdict: no machine check"
    return f"verdict: {why.split(':', 1)[0]}"


def panel_hits_majority(verdicts: list[list[int]], n: int) -> list[int]:
    """Per-criterion majority: a criterion is met when more than half of the judges found it met (ties: not)."""
    return [c for c in range(1, n + 1) if 2 * sum(c in v for v in verdicts) > len(verdicts)]


def collect_scores(
    run_dir: str | Path,
    bench: Bench,
    panel: list[str],
    *,
    aggregate: Aggregate = "mean",
    style_judge: str | None = None,
) -> list[ItemScore]:
    """Panel scores for every instance of the bench, from stored verdicts only (no request is sent).

    An instance the run never ran is there too, unscored with ``ran`` False: a partial run is counted against the
    bench, never as a smaller bench.

    Empty replies (no counted word) score 0 without verdicts, and style 0 when ``style_judge`` grades style. A
    reply with any panel judge missing or unparseable is unscored: its score is None and the reason says which
    judge and why.
    """
    if not panel:
        raise ValueError("a panel needs at least one judge")
    run_dir = Path(run_dir)
    by_id = {i.id: i for i in bench.instances}
    rubric = rubric_task(by_id)
    scores: list[ItemScore] = []
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        outcomes = candidate_outcomes(store)
        unknown = sorted(set(outcomes) - set(by_id) - set(bench.rejected))  # rejected since: left out
        if unknown:
            raise RunError(f"{run_dir}: items {', '.join(unknown[:5])} are not in the bench {bench.root}")
        for instance in bench.instances:
            item_id = instance.id
            base = ItemScore(
                item_id, instance.subcategory, instance.source, reply=None, score=None, style=None, reason=""
            )
            if item_id not in outcomes:
                scores.append(replace(base, reason="not run", ran=False, failure="not run"))
                continue
            reply, error = outcomes[item_id]
            if reply is None:
                kind = f"request: {error.split(':', 1)[0]}"
                scores.append(replace(base, reason=f"request failed: {error}", failure=kind))
                continue
            base = replace(base, reply=reply)
            if is_empty_reply(reply):
                empty_style = 0.0 if style_judge is not None else None  # Style exists only where it was graded
                scores.append(replace(base, score=0.0, style=empty_style, reason="empty reply (0, not judged)"))
                continue
            n = len(instance.rubric)
            verdicts: dict[str, list[int] | None] = {}
            reasons = []
            failure = None
            for judge in panel:
                if judge == RULE_JUDGE:
                    hits, why = rule_verdict(instance, reply)
                else:
                    stored, why = stored_verdict(store, rubric, judge, item_id)
                    hits = stored
                verdicts[judge] = hits
                if hits is None:
                    reasons.append(f"{judge}: {why}")
                    failure = failure or _verdict_failure(why)
            per_judge = {j: (None if h is None else rubric_score(instance.tiers, h)) for j, h in verdicts.items()}
            score: float | None = None
            if not reasons:
                valid = [h for h in verdicts.values() if h is not None]
                if aggregate == "majority":
                    score = rubric_score(instance.tiers, panel_hits_majority(valid, n))
                else:
                    score = sum(v for v in per_judge.values() if v is not None) / len(panel)
            style = None
            if style_judge is not None:
                checked, _ = stored_verdict(store, style_task(), style_judge, item_id)
                style = None if checked is None else float(len(checked) == STYLE_REQUIREMENTS)
            reason = "; ".join(reasons) if reasons else f"panel {aggregate} of {len(panel)}"
            scores.append(replace(base, score=score, style=style, reason=reason, per_judge=per_judge, failure=failure))
    return scores


def judged_replies(run_dir: str | Path) -> dict[str, str]:
    """Item id -> the run's reply, for the replies judges grade (a failed request or an empty reply has none)."""
    with RunStore(Path(run_dir) / STORE_FILE, read_only=True) as store:
        replies = candidate_replies(store)
    return {item_id: reply for item_id, reply in replies.items() if reply and not is_empty_reply(reply)}


def collect_judgments(run_dir: str | Path, bench: Bench, judges: list[str]) -> list[Any]:
    """Every stored rubric verdict of ``judges`` on the run's non-empty replies, as agreement-study input.

    An unusable verdict (the request failed, the reply did not parse) becomes ``hits=None`` (unscored); a reply the
    judge never graded (judged before the run grew, say) has no Judgment, so it is counted as missing (not graded),
    never as unscored. A judge declared ``repeat_of`` another in judges.json is reported as that judge's repeat run.
    """
    from omnivchat.judges import Judgment

    run_dir = Path(run_dir)
    path = run_dir / JUDGES_FILE
    identities: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    by_id = {i.id: i for i in bench.instances}
    rubric = rubric_task(by_id)
    judgments = []
    with RunStore(run_dir / STORE_FILE, read_only=True) as store:
        replies = candidate_replies(store)
        for judge in judges:
            if judge != RULE_JUDGE and not store.items(rubric_kind(judge)):
                raise RunError(f"judge {judge!r} has no verdicts in {run_dir}: run `omnivchat judge` with it first")
            base = identities.get(judge, {}).get("repeat_of")
            for item_id, reply in replies.items():
                if not reply or is_empty_reply(reply):
                    continue
                instance = by_id[item_id]
                if judge == RULE_JUDGE:
                    hits, _ = rule_verdict(instance, reply)
                else:
                    hits, why = stored_verdict(store, rubric, judge, item_id)
                    if why == NOT_JUDGED:
                        continue
                judgments.append(
                    Judgment(
                        item_id=item_id,
                        subcategory=instance.subcategory,
                        judge=base or judge,
                        tiers=tuple(instance.tiers),
                        hits=None if hits is None else frozenset(hits),
                        repeat=1 if base else 0,
                    )
                )
    return judgments
