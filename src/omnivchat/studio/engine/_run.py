"""A synthesis run: sample the instances of each subcategory (module 0), run each through its state machine, keep
the accepted ones as a bench directory (after tail repair) and every trace, accepted or discarded.

Layout of the output directory::

    bench.yaml, instances.jsonl, media/<id>/turnN.mp4     the bench (``omnivchat validate`` passes)
    studio/manifest.json                                   what was asked (a rerun must ask the same)
    studio/calls.sqlite                                    every agent call (the run store: replayed on resume)
    studio/traces/<id>.json                                each ended instance, accepted or discarded
    studio/accepted/<id>.json                              the bench record of each accepted instance
    studio/work/<id>/                                      every candidate clip and the media a turn extracted

Resumable: an instance with a trace is done (accepted or discarded) and is not run again; one without continues,
its calls answered from the store. Repeating a finished command adds nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field, ValidationError

from omnivchat._files import OutputError, check_output_dir, write_text_atomic
from omnivchat.errors import Interrupted, OmnivchatError
from omnivchat.studio.config import RepairBudgets, SubcategoryConfig
from omnivchat.studio.engine._agents import Agents
from omnivchat.studio.engine._calls import CALLS_FILE, AgentCallError, AgentCalls, BudgetReached, Stopped
from omnivchat.studio.engine._pipeline import (
    BUDGET_KINDS,
    Budgets,
    Job,
    Result,
    Synthesis,
    copy_clip,
    effective_budgets,
)
from omnivchat.studio.engine._trace import ClipStamp, Trace
from omnivchat.studio.engine._types import Passage

if TYPE_CHECKING:
    from omnivchat.runs import Shard

STUDIO_DIR = "studio"
MANIFEST = "manifest.json"
DEFAULT_CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "default.jsonl"


class StudioError(OmnivchatError, ValueError):
    """A synthesis that cannot start: a bad corpus, an output that is not this synthesis's, other settings."""


class StudioManifest(BaseModel):
    """What a synthesis was asked: a rerun in the same directory must ask the same."""

    version: int = 1
    configs: dict[str, str] = Field(description="Subcategory code -> sha256 of its configuration.")
    n: int
    counts: dict[str, int] = Field(
        default_factory=dict, description="Subcategory code -> instances, where it is not n (--n-per, --counts)."
    )
    seed: int
    backend: str
    defect_rate: float
    corpus: str = Field(description="sha256 of the corpus file.")
    budgets: dict[str, int]
    agents: dict[str, str] = Field(default_factory=dict, description="Director, Renderer and Reviewer (name, version).")
    shard: str | None = Field(default=None, description="I/N: only the instances whose id hashes to shard I of N.")


@dataclass
class Summary:
    """How a synthesis went (this invocation and the whole run)."""

    accepted: int = 0
    discarded: Counter[str] = field(default_factory=Counter)
    repairs: Counter[str] = field(default_factory=Counter)
    already_done: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    calls_made: int = 0
    calls_replayed: int = 0
    seconds: float = 0.0
    ran: int = 0
    bench: Path | None = None
    tail_repaired: int = 0
    restored: list[str] = field(default_factory=list)  # bench clips a rerun found changed or missing and restored
    cost_usd: float = 0.0
    unpriced_renders: int = 0
    calls_by_agent: Counter[str] = field(default_factory=Counter)
    not_run: list[str] = field(default_factory=list)  # instances a --budget stopped before they ended
    call_cost: Any = None  # omnivchat.runs.CostTotals: this invocation's agent calls and what they cost
    budget: Any = None  # omnivchat.runs.Budget, when one was given


def load_corpus(path: Path) -> list[Passage]:
    """A corpus JSONL file: one passage a line ({"id", "language", "text", "topic"?}); StudioError naming the file
    and line of the first bad one."""
    from omnivchat._files import read_json_lines

    passages: list[Passage] = []
    seen: set[str] = set()
    try:
        data = path.read_bytes()
    except OSError as err:
        raise StudioError(f"{path}: cannot read the corpus: {err.strerror or err}") from None
    problems: list[str] = []
    for number, raw in read_json_lines(data, str(path), problems, not_json="not JSON", not_object=None):
        if problems:  # a line before this one is not JSON: the first bad line is the error
            break
        try:
            passage = Passage.model_validate(raw)
        except ValidationError as err:
            first = err.errors()[0]
            field_name = ".".join(str(p) for p in first["loc"]) or "(the line)"
            raise StudioError(f"{path}:{number}: not a passage: {field_name}: {first['msg']}") from None
        if passage.id in seen:
            raise StudioError(f"{path}:{number}: passage id {passage.id!r} repeats")
        seen.add(passage.id)
        passages.append(passage)
    if problems:
        raise StudioError(problems[0])
    if len(passages) < 3:
        raise StudioError(
            f"{path}: a corpus needs at least 3 passages (three are drawn per instance), got {len(passages)}"
        )
    return passages


def plan_jobs(
    configs: Sequence[SubcategoryConfig],
    passages: Sequence[Passage],
    *,
    n: int,
    seed: int,
    counts: Mapping[str, int] | None = None,
) -> list[Job]:
    """Module 0 for every instance: n assignments per subcategory (``counts[code]`` where given) by Eq. 7, an
    extra requirement drawn independently at its probability, three passages balanced across the corpus's
    languages."""
    from omnivchat.studio.sampling import sample_assignments, sample_passages

    jobs = []
    for config in configs:
        assignments = sample_assignments(
            config.probabilities(),
            (counts or {}).get(config.code, n),
            preferences=config.preference_rules(),
            exclusions=config.exclusion_rules(),
            seed=_int_seed(seed, config.code, "attributes"),
        )
        for i, assignment in enumerate(assignments):
            rng = random.Random(f"omnivchat-studio:{seed}:{config.code}:{i}")
            extra = None
            pool = config.extra_requirements
            if pool is not None and rng.random() < pool.probability:
                extra = rng.choice(pool.options)
            chosen = sample_passages(list(passages), 3, language_of=lambda p: p.language, rng=rng)
            jobs.append(
                Job(
                    instance_id(seed, config.code, i),
                    config,
                    dict(assignment),
                    extra,
                    tuple(chosen),
                    _int_seed(seed, config.code, i),
                )
            )
    return jobs


def instance_id(seed: int, code: str, i: int) -> str:
    """The id of the ``i``-th instance (from 0) of subcategory ``code`` in a synthesis seeded ``seed``: the same for
    every corpus, backend and shard (what a shard is chosen by, and what a merge checks coverage with)."""
    return f"{code.lower()}-{hashlib.sha256(f'{seed}:{code}:{i}'.encode()).hexdigest()[:8]}"


def planned_ids(manifest: StudioManifest) -> list[str]:
    """Every instance id a synthesis plans (all its shards), in plan order, from its manifest alone."""
    return [
        instance_id(manifest.seed, code, i)
        for code in manifest.configs
        for i in range(manifest.counts.get(code, manifest.n))
    ]


def studio_run(
    configs: Sequence[SubcategoryConfig],
    output: Path,
    agents: Agents,
    *,
    n: int,
    seed: int = 0,
    corpus: Path | None = None,
    backend: str = "offline",
    defect_rate: float = 0.0,
    concurrency: int = 2,
    budgets: Budgets | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_done: Callable[[Trace], None] | None = None,
    budget_usd: float | None = None,
    repairs: Mapping[str, int] | None = None,
    counts: Mapping[str, int] | None = None,
    shard: Shard | None = None,
) -> Summary:
    """Synthesize ``n`` instances of each configuration (``counts[code]`` for a code it names) into the bench
    directory ``output`` (see the module docstring). ``on_start(total, already_done)`` and ``on_done(trace)``
    report progress.

    ``budget_usd``: the synthesis's total spending limit (agent calls and renders; what its store spent before
    counts): an instance whose next call would pass it stops, not run, and a rerun with a larger budget resumes
    it. Refused when an agent has no price.

    ``repairs``: repair limits by kind (``Budgets``' fields) that override ``budgets`` and each configuration's
    own ``budgets``.

    ``counts``: instances by subcategory code (Figure 3's are not one n for all); a code not among ``configs`` or
    a count below 1 raises CountsError. Recorded in the manifest: a rerun with other counts is refused, as with
    another ``n``.

    ``shard``: only the instances whose id hashes to it (recorded in the manifest; ``merge_benches`` joins the
    shards)."""
    from omnivchat.bench import check_subcategory
    from omnivchat.runs import Budget, run_lock
    from omnivchat.studio.engine._counts import instance_counts

    if n < 1:
        raise StudioError(f"--n must be at least 1, got {n}")
    if budget_usd is not None:
        Budget(budget_usd)  # a positive amount
        _check_priced(agents)
    for config in configs:  # before any agent call: a configuration the taxonomy refuses would fail every instance
        check_subcategory(config.code, config.category, config.turns, f"configuration {config.code}")
    codes = [c.code for c in configs]
    repeated = sorted({c for c in codes if codes.count(c) > 1})
    if repeated:
        raise StudioError(f"subcategory {', '.join(repeated)} given more than once: give each configuration once")
    per_code = instance_counts(configs, n, counts)
    repairs = parse_repair_budgets([f"{k}={v}" for k, v in (repairs or {}).items()])
    budgets = replace(budgets or Budgets(), **repairs)
    corpus_path = corpus or DEFAULT_CORPUS
    passages = load_corpus(corpus_path)
    manifest = StudioManifest(
        configs={c.code: _config_hash(c) for c in configs},
        n=n,
        counts={code: count for code, count in sorted(per_code.items()) if count != n},
        seed=seed,
        backend=backend,
        defect_rate=defect_rate,
        corpus=_file_hash(corpus_path),
        budgets={k: getattr(budgets, k) for k in BUDGET_KINDS},  # a configuration's own are in its hash
        agents=agents.names(),
        shard=None if shard is None else shard.label,
    )
    from omnivchat.runs import lock_holder

    # A folder a live writer holds is ours too: the lock then names it (it may not have written its manifest yet).
    check_output_dir(
        output,
        ours=lambda d: (d / STUDIO_DIR / MANIFEST).is_file() or lock_holder(d) is not None,
        kind="a Studio synthesis",
    )
    output.mkdir(parents=True, exist_ok=True)
    with run_lock(output, "studio run"):
        _check_manifest(output, manifest)
        return _synthesize(
            configs, output, agents, passages, manifest, budgets, concurrency, on_start, on_done, budget_usd, repairs
        )


def parse_repair_budgets(items: Sequence[str]) -> dict[str, int]:
    """``KIND=N`` items (``studio run --repair-budget``) as repair limits by kind; StudioError naming the item
    that is not one."""
    out: dict[str, int] = {}
    for item in items:
        kind, _, count = item.partition("=")
        if kind.strip() not in BUDGET_KINDS:
            raise StudioError(f"--repair-budget {item!r}: give KIND=N with KIND one of {', '.join(BUDGET_KINDS)}")
        if not count.strip().isdigit():
            raise StudioError(f"--repair-budget {item!r}: N is a count of at least 0")
        out[kind.strip()] = int(count)
    return out


def _check_priced(agents: Agents) -> None:
    """A budget needs every paid agent's price: the hosted Director's and Reviewer's routes, the renderer's."""
    from omnivchat.runs import BudgetError, check_priced

    for role, agent in (("Director", agents.director), ("Reviewer", agents.reviewer)):
        route = getattr(agent, "route", None)  # hosted agents: offline ones make no paid request
        if route is not None:
            check_priced(route, f" (the {role}: give it a price in the agents file)")
    if getattr(agents.renderer, "priced", True) is False:
        raise BudgetError(
            f"--budget needs the renderer's price, and {agents.renderer.name} has none: set price_per_s in the "
            "agents file's [renderer] table"
        )


def _synthesize(
    configs: Sequence[SubcategoryConfig],
    output: Path,
    agents: Agents,
    passages: list[Passage],
    manifest: StudioManifest,
    budgets: Budgets,
    concurrency: int,
    on_start: Callable[[int, int], None] | None,
    on_done: Callable[[Trace], None] | None,
    budget_usd: float | None = None,
    repairs: Mapping[str, int] | None = None,
) -> Summary:
    studio = output / STUDIO_DIR
    jobs = plan_jobs(configs, passages, n=manifest.n, seed=manifest.seed, counts=manifest.counts)
    if manifest.shard is not None:  # this shard's instances only, by their ids
        from omnivchat.runs import Shard

        part = Shard.parse(manifest.shard)
        jobs = [job for job in jobs if part.holds(job.id)]
    summary = Summary()
    started = time.monotonic()
    _preload_signal_processing()
    todo = []
    for job in jobs:
        if _trace_path(output, job.id).is_file() and _check_delivered(output, job.id, summary):
            summary.already_done += 1
        else:
            todo.append(job)
    if on_start is not None:
        on_start(len(jobs), summary.already_done)
    calls = AgentCalls(studio / CALLS_FILE, budget_usd=budget_usd)
    summary.budget = calls.budget

    def one(job: Job) -> tuple[Result, int]:
        limits = effective_budgets(budgets, job.config, repairs)  # the command line's over the config's
        result = Synthesis(job, agents, calls, studio / "work" / job.id, limits).run()
        return result, _keep(output, job, result)  # written at once: a kill loses only instances in flight

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    try:
        # Multi-turn instances first (stable otherwise): the longest ones start early, so the pool's last
        # minutes are not one long dialogue on one worker while the others are idle. The bench keeps plan order.
        ordered = sorted(todo, key=lambda job: job.config.turns != "multi")
        futures = {pool.submit(one, job): job for job in ordered}
        collected: set[Future[tuple[Result, int]]] = set()
        try:
            for future in as_completed(futures):
                collected.add(future)
                _collect(future, futures[future], summary, on_done)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM as the command line maps it
            _stop({f: j for f, j in futures.items() if f not in collected}, calls, agents, summary, on_done)
            _tally(output, jobs, summary)
            ended = summary.accepted + sum(summary.discarded.values())
            raise Interrupted(
                f"interrupted: {summary.accepted} accepted, {sum(summary.discarded.values())} discarded, "
                f"{len(jobs) - ended} not finished of {len(jobs)} instances; rerun the same command to resume"
            ) from None
    except BaseException:  # an error, or a second interrupt while stopping: start nothing more, drop requests
        calls.stop()
        agents.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        summary.calls_made, summary.calls_replayed = calls.made, calls.replayed
        summary.call_cost = calls.cost
        calls.close()
    _tally(output, jobs, summary)
    summary.bench = write_bench(output, manifest, [job.id for job in jobs])
    summary.seconds = time.monotonic() - started
    return summary


def _preload_signal_processing() -> None:
    """Import scipy.signal (about 1 s; the tail repair of the first clip delivered needs it) on a thread of its
    own while the first instances start, which wait on their renders more than on this process's CPU."""
    import threading

    def load() -> None:
        with contextlib.suppress(ImportError):
            import scipy.signal  # noqa: F401

    threading.Thread(target=load, name="omnivchat-preload", daemon=True).start()


GRACE_S = 3.0
"""After an interrupt, how long agent calls in flight may take to finish (their answers are kept and replayed on
the rerun) before they are cancelled."""


def _collect(
    future: Future[tuple[Result, int]], job: Job, summary: Summary, on_done: Callable[[Trace], None] | None
) -> None:
    """Count one instance's outcome: ended (its trace written), stopped by the budget or an interrupt, or failed."""
    try:
        result, repaired = future.result()
    except BudgetReached:
        summary.not_run.append(job.id)
        return
    except Stopped:  # interrupted: no trace, the rerun resumes it
        return
    except (AgentCallError, OmnivchatError, OSError) as err:
        summary.failed[job.id] = str(err)
        return
    summary.ran += 1
    summary.tail_repaired += repaired
    if on_done is not None:
        on_done(result.trace)


def _stop(
    futures: Mapping[Future[tuple[Result, int]], Job],
    calls: AgentCalls,
    agents: Agents,
    summary: Summary,
    on_done: Callable[[Trace], None] | None,
) -> None:
    """An interrupt: no agent call starts from now on and no queued instance starts; the instances in flight stop
    at their next call (unfinished, no trace) or end, calls in flight get :data:`GRACE_S` seconds and are then
    cancelled. An instance that ends meanwhile is written as usual."""
    calls.stop()
    running = [f for f in futures if not f.cancel()]  # cancel() is False for one already running or done
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: cancel at once
        wait(running, timeout=GRACE_S)
    agents.cancel()
    wait(running)
    for future in running:
        _collect(future, futures[future], summary, on_done)


def _keep(output: Path, job: Job, result: Result) -> int:
    """Write an ended instance: its trace, and when accepted its clips (tail-repaired) and bench record.
    The trace is written last: it marks the instance done."""
    from omnivchat.bench import Instance

    studio = output / STUDIO_DIR
    repaired = 0
    if result.trace.status == "accepted":
        turns: list[dict[str, str]] = []
        turn_meta: list[dict[str, Any]] = []
        for number, turn in enumerate(result.turns, start=1):
            video = f"media/{job.id}/turn{number}.mp4"
            source = f"{STUDIO_DIR}/work/{job.id}/{turn.clip.path}"
            result.trace.delivered[video] = source
            repaired += _deliver(output, video, source)
            result.trace.clips[video] = _stamp(output / video)
            final = number == len(result.turns)
            turns.append({"video": video, **({} if final else {"reply": turn.reply.reply})})
            turn_meta.append(
                {
                    "question": turn.script.question,
                    "transcript": turn.caption.transcript,
                    "duration_s": turn.clip.duration_s,
                    "caption": turn.caption.text,
                }
            )
        instance = Instance(
            id=job.id,
            subcategory=job.config.code,
            language=job.assignment.get("language", "en"),
            source="synthetic",
            turns=turns,
            reference=result.reference,
            rubric=result.rubric,
            requires=result.requires,
            meta={
                "transcript": " / ".join(t["transcript"] for t in turn_meta),
                "turns": turn_meta,
                "assignment": job.assignment,
                "extra_requirement": job.extra,
                "passages": [p.id for p in job.passages],
                "generator": {"name": "omnivchat.studio", "trace": f"{STUDIO_DIR}/traces/{job.id}.json"},
            },
        )
        write_text_atomic(studio / "accepted" / f"{job.id}.json", instance.model_dump_json(exclude_none=True))
    write_text_atomic(_trace_path(output, job.id), result.trace.model_dump_json(indent=1))
    return repaired


def _deliver(output: Path, video: str, source: str) -> int:
    """Copy an accepted clip into the bench and repair its audio tail (Appendix D.1.2); 1 when repaired. The
    original stays in the work folder, so the repair's backup beside the bench clip is dropped."""
    from omnivchat.synth import ORIG_SUFFIX, repair_clip

    target = output / video
    copy_clip(output / source, target)
    outcome = repair_clip(target, bench_dir=output, label=video)
    target.with_name(target.name.removesuffix(".mp4") + ORIG_SUFFIX).unlink(missing_ok=True)
    return int(outcome.status == "repaired")


def _check_delivered(output: Path, instance_id: str, summary: Summary) -> bool:
    """Resume checks what it trusts: each bench clip of a done instance against the stamp recorded when it was
    delivered (size and mtime first, the sha256 only when they differ). A changed or missing clip is restored from
    its work clip (the render the run store keeps) and listed in ``summary.restored``. When the work clip cannot
    give the recorded bytes, the instance's trace and record are removed and False returned: it is synthesized
    again, its calls answered from the store and its render made again (the store checks the work clip's hash).
    A trace written before stamps were recorded gets them, each clip checked against a fresh delivery."""
    path = _trace_path(output, instance_id)
    trace = read_trace(path)
    stamps: dict[str, ClipStamp] = {}
    for video, source in trace.delivered.items():
        stamp, restored = _check_clip(output, video, source, trace.clips.get(video))
        if restored:
            summary.restored.append(video)
        if stamp is None:
            path.unlink()
            (output / STUDIO_DIR / "accepted" / f"{instance_id}.json").unlink(missing_ok=True)
            return False
        stamps[video] = stamp
    if stamps != trace.clips:
        write_text_atomic(path, trace.model_copy(update={"clips": stamps}).model_dump_json(indent=1))
    return True


def _check_clip(output: Path, video: str, source: str, stamp: ClipStamp | None) -> tuple[ClipStamp | None, bool]:
    """(the clip's stamp, whether it was restored); the stamp is None when the work clip cannot restore it."""
    target = output / video
    if stamp is not None and target.is_file():
        st = target.stat()
        if (st.st_size, st.st_mtime_ns) == (stamp.size, stamp.mtime_ns):
            return stamp, False  # the fast path: nothing read
        digest = _clip_sha256(target)
        if digest == stamp.sha256:
            return _stamp(target, digest), False  # touched, not changed
    if not (output / source).is_file():
        return None, True
    if stamp is None and target.is_file():
        # No stamp (a bench from before they were recorded): the clip must be what its work clip delivers now.
        check = f"{STUDIO_DIR}/check/{video}"
        try:
            _deliver(output, check, source)
            fresh = _clip_sha256(output / check)
        finally:
            shutil.rmtree(output / STUDIO_DIR / "check", ignore_errors=True)
        digest = _clip_sha256(target)
        if digest == fresh:
            return _stamp(target, digest), False
    _deliver(output, video, source)  # its tail repair was counted when the clip was first delivered
    digest = _clip_sha256(target)
    if stamp is not None and digest != stamp.sha256:
        return None, True  # the work clip changed too: render again
    return _stamp(target, digest), True


def _stamp(path: Path, digest: str | None = None) -> ClipStamp:
    st = path.stat()
    return ClipStamp(sha256=digest or _clip_sha256(path), size=st.st_size, mtime_ns=st.st_mtime_ns)


def _clip_sha256(path: Path) -> str:
    """The sha256 of a bench clip (one function, so a test can count the clips a rerun reads)."""
    from omnivchat._canonical import sha256_file

    return sha256_file(path)


def _tally(output: Path, jobs: Sequence[Job], summary: Summary) -> None:
    """Accepted, discarded (by reason) and repairs over every ended instance of the run."""
    for job in jobs:
        path = _trace_path(output, job.id)
        if not path.is_file():
            continue
        trace = read_trace(path)
        summary.cost_usd += trace.cost_usd()
        summary.unpriced_renders += trace.unpriced_renders()
        summary.calls_by_agent.update(trace.agent_calls())
        if trace.status == "accepted":
            summary.accepted += 1
        else:
            summary.discarded[trace.discard_kind or trace.reason.split(":")[0] or "unknown"] += 1
        summary.repairs.update(trace.repairs)


def write_bench(output: Path, manifest: StudioManifest, ids: Sequence[str]) -> Path | None:
    """bench.yaml and instances.jsonl from the accepted records of this run's instances; None (nothing written)
    when none was accepted. A record that is missing or damaged is an error naming it: the bench is never written
    without an instance that was accepted."""
    from omnivchat.bench import Bench, BenchInfo, Instance, load_bench, save_bench

    instances = []
    for job_id in ids:
        trace_path = _trace_path(output, job_id)
        if not trace_path.is_file() or read_trace(trace_path).status != "accepted":
            continue
        record = output / STUDIO_DIR / "accepted" / f"{job_id}.json"
        redo = f"delete {trace_path} to synthesize {job_id} again (its calls are replayed)"
        try:
            instances.append(Instance.model_validate_json(record.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise StudioError(f"{record} is missing although {job_id} was accepted: {redo}") from None
        except (OSError, UnicodeDecodeError, ValidationError) as err:
            first = str(err).splitlines()[0]
            raise StudioError(f"{record}: not a bench record ({first}): {redo}") from None
    if not instances:
        return None
    info = BenchInfo(
        name="omnivchat-studio",
        version="1",
        description=(
            f"Synthesized by omnivchat studio ({manifest.backend} backend, seed {manifest.seed}, {manifest.n} per "
            f"subcategory{_other_counts(manifest.counts)}, defect rate {manifest.defect_rate:g}); traces under "
            f"{STUDIO_DIR}/traces."
        ),
    )
    save_bench(Bench(root=output, info=info, instances=sorted(instances, key=lambda i: i.id)))
    load_bench(output)
    return output


def _other_counts(counts: Mapping[str, int]) -> str:
    return f" ({', '.join(f'{code} {count}' for code, count in counts.items())})" if counts else ""


def _check_manifest(output: Path, manifest: StudioManifest) -> None:
    path = output / STUDIO_DIR / MANIFEST
    if not path.is_file() and ((output / "bench.yaml").exists() or (output / "instances.jsonl").exists()):
        raise OutputError(f"{output} holds a bench that omnivchat studio did not make; choose a new directory")
    keep_settings(path, manifest, error=StudioError, what="a synthesis")


M = TypeVar("M", bound=BaseModel)


def keep_settings(path: Path, settings: M, *, error: type[OmnivchatError], what: str) -> None:
    """Write ``settings`` at ``path``, or check that the ones there are the same: a rerun must ask what the first
    run asked (the error names what differs)."""
    if not path.is_file():
        write_text_atomic(path, settings.model_dump_json(indent=1))
        return
    try:
        old = type(settings).model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, UnicodeDecodeError) as err:
        raise error(f"{path}: not the settings of {what} ({str(err).splitlines()[0]})") from None
    if old != settings:
        diff = [k for k in type(settings).model_fields if getattr(old, k) != getattr(settings, k)]
        raise error(
            f"{path.parent.parent} holds {what} made with other settings ({', '.join(diff)} differ); rerun with the "
            "same settings to resume, or choose a new directory"
        )


def read_trace(path: Path) -> Trace:
    try:
        return Trace.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, UnicodeDecodeError) as err:
        raise StudioError(f"{path}: not a Studio trace ({str(err).splitlines()[0]})") from None


def find_trace(bench: Path, instance_id: str) -> Trace:
    """The trace of ``instance_id`` in the synthesis at ``bench`` (StudioError listing a few known ids)."""
    if not (bench / STUDIO_DIR / MANIFEST).is_file():
        raise StudioError(f"{bench} is not a Studio synthesis (no {STUDIO_DIR}/{MANIFEST})")
    path = _trace_path(bench, instance_id)
    if not _ID.fullmatch(instance_id) or not path.is_file():
        known = sorted(p.stem for p in (bench / STUDIO_DIR / "traces").glob("*.json"))
        hint = f"; known: {', '.join(known[:8])}{' ...' if len(known) > 8 else ''}" if known else ""
        raise StudioError(f"{bench}: no trace for {instance_id!r}{hint}")
    return read_trace(path)


_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def _trace_path(output: Path, instance_id: str) -> Path:
    return output / STUDIO_DIR / "traces" / f"{instance_id}.json"


def _int_seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big") >> 1


def _config_hash(config: SubcategoryConfig) -> str:
    # A configuration that sets no budgets hashes as it did before they could be set (its benches still resume).
    unset = {"budgets"} if config.budgets == RepairBudgets() else None
    return hashlib.sha256(config.model_dump_json(exclude=unset).encode()).hexdigest()


def _file_hash(path: Path) -> str:
    from omnivchat._canonical import sha256_file

    return sha256_file(path)
