"""The async runner: every item of a run through one route, resumable, with retries and a progress bar."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import TextColumn

from omnivchat._blocking import blocking
from omnivchat._progress import progress_bar
from omnivchat.errors import Interrupted
from omnivchat.media import MediaError, media_timeout_s
from omnivchat.routes import (
    IN_FLIGHT,
    AdaptiveLimiter,
    AttemptCost,
    AttemptHooks,
    ChatRequest,
    ChatResponse,
    Delivered,
    Prepared,
    RetryPolicy,
    Route,
    RouteError,
    StagedRoute,
    estimate_prepared,
    media_failure,
    send_with_retries,
)
from omnivchat.runs._budget import Budget, check_priced
from omnivchat.runs._cost import STAGED, CostTotals, tally
from omnivchat.runs._files import Manifest
from omnivchat.runs._lock import writes_run_dir
from omnivchat.runs._manifest import package_record, write_or_check_manifest
from omnivchat.runs._progress import BACKOFF, RETRY_AFTER, RunProgress
from omnivchat.runs._store import RunStore

STORE_FILE = "store.sqlite"
CANDIDATE = "candidate"


@dataclass
class RunSummary:
    """What one invocation did."""

    run_dir: Path
    total: int
    done: int = 0
    failed: int = 0
    reused: int = 0
    attempts: int = 0
    resumed: bool = False
    failures: dict[str, int] = field(default_factory=dict)
    first_errors: dict[str, str] = field(default_factory=dict)  # failure kind -> its first message, to show
    notes: list[str] = field(default_factory=list)  # warnings for the user (the run was made by other code)
    elapsed_s: float = 0.0
    not_sent: int = 0  # items a budget kept from being sent: "not run", neither done nor failed
    cost: CostTotals = field(default_factory=CostTotals)  # this invocation's attempts and what they cost
    budget: Budget | None = None

    @property
    def complete(self) -> bool:
        return self.done == self.total


class Runner:
    """Sends prepared requests through a route with bounded, adaptive concurrency and bounded retries,
    recording every attempt in the store and reusing completed results."""

    line_interval_s = 10.0
    """Without a terminal (a log, CI), progress is a whole line this often instead of a bar."""
    wait_notice_s = 30.0
    """With --no-progress, nothing finished for this long (a hung server, drained replicas) prints one line."""

    def __init__(
        self,
        route: Route,
        store: RunStore,
        *,
        concurrency: int,
        retry: RetryPolicy,
        kind: str,
        accept: Callable[[ChatRequest, ChatResponse], str | None] | None = None,
        budget: Budget | None = None,
        build_workers: int = 4,
    ) -> None:
        """``accept(request, response)`` may return a reason to refuse a complete answer (e.g. a verdict that does not
        parse): the attempt is then recorded as failed ("unparseable") and retried, and no result is stored.

        ``budget``: reserve each attempt's estimated cost first, and send nothing more once it would be passed
        (the item stays not run). ``state`` is what the progress bar shows (:class:`RunProgress`).

        ``build_workers``: the threads that build the :class:`Pending` items of :meth:`run_all` (media work)."""
        self.accept = accept
        self.budget = budget
        self.state = RunProgress(concurrency=concurrency, max_concurrency=concurrency)
        self.route = route
        self.store = store
        self.kind = kind
        self.retry = retry
        self.limiter = AdaptiveLimiter(concurrency)
        # Media preparation runs ffmpeg and hashing in threads: bound it separately from network concurrency.
        self.prepare_slots = asyncio.Semaphore(max(2, min(concurrency, 8)))
        self.build_workers = max(1, build_workers)
        # Items built, prepared or sending at once: twice what may be in flight keeps the next ones ready without
        # building the whole bench in the first seconds, when the threads' media work competed with the event
        # loop for the GIL (every store write and socket send hands it over): eval 1.113 -> 1.089 of a bare client.
        self.lookahead = 2 * max(1, concurrency)
        self.stages: StoredStages | None = None
        if isinstance(route, StagedRoute):  # a cascade: its stage requests go through this run's store too
            self.stages = StoredStages(self)
            route.bind_stages(self.stages)

    async def prepare(self, request: ChatRequest) -> Prepared:
        if request.clip is None and all(turn.clip is None for turn in request.history):
            return self.route.prepare(request)  # nothing to decode: no thread hop
        async with self.prepare_slots:
            return await asyncio.to_thread(self.route.prepare, request)

    async def run_item(self, request: ChatRequest, summary: RunSummary, meta: dict[str, Any] | None = None) -> None:
        """Complete one item: reuse a stored result, or send until done, a final failure or no attempts left."""
        try:
            prepared = await self.prepare(request)
        except RouteError as err:
            self.store.set_item(request.item_id, self.kind, None, err, meta)
            self._failed(summary, err, request.item_id)
            return
        key = prepared.key
        self.store.add_request(key, self.kind, self.route.model_id, self.route.endpoint, prepared.description)
        if self.store.result(key) is not None:
            self.store.set_item(request.item_id, self.kind, key, None, meta)
            summary.done += 1
            summary.reused += 1
            return
        estimate = None
        if self.budget is not None:
            try:
                estimate = await self._estimate(prepared)
            except RouteError as err:
                self.store.set_item(request.item_id, self.kind, key, err, meta)
                self._failed(summary, err, request.item_id)
                return
        hooks = _RunAttempts(self, key, request.item_id, estimate, summary)

        def accept(response: ChatResponse) -> str | None:
            return self.accept(request, response) if self.accept is not None else None

        sent = await send_with_retries(
            self.route, prepared, self.retry, limiter=self.limiter, accept=accept, hooks=hooks
        )
        self.state.concurrency = self.limiter.limit
        if sent.error is not None:
            self.store.set_item(request.item_id, self.kind, key, sent.error, meta)
            self._failed(summary, sent.error, request.item_id)
        elif sent.response is not None:
            self.store.set_item(request.item_id, self.kind, key, None, meta)
            summary.done += 1
        # neither: a budget kept it from being sent; the item keeps the record it had (none: not run)

    async def _estimate(self, prepared: Prepared) -> float:
        """The attempt's estimated cost in USD (media preparing did not probe are probed on a thread);
        RouteError("media") if unreadable."""
        media = prepared.media
        unprobed = any(not isinstance(s, bytes) and s not in media.probed for s, _ in media.files.values())
        try:
            if unprobed:
                async with self.prepare_slots:
                    found = await asyncio.to_thread(estimate_prepared, prepared, self.route.settings)
            else:
                found = estimate_prepared(prepared, self.route.settings)
        except MediaError as err:
            raise media_failure(err) from None
        return found.usd or 0.0

    def _settle(
        self,
        attempt_id: int,
        cost: AttemptCost,
        outcome: RouteError | None,
        estimate: float | None,
        token: int | None,
        summary: RunSummary,
    ) -> None:
        """Record an ended attempt's cost (the sender's, from the server's usage and the price) and count it
        everywhere. A cascade's own attempt is counted nowhere: its stages' attempts carry the cost."""
        if self.stages is not None:
            self.store.record_cost(attempt_id, 0.0, STAGED, estimate=estimate)
            if outcome is not None:
                self.state.attempt_failures[outcome.kind] += 1
            return
        self.store.record_cost(attempt_id, cost.usd, cost.note, estimate=estimate)
        summary.cost.add(cost, estimate)
        self.state.attempt_ended(cost, outcome.kind if outcome is not None else None, estimate)
        if self.budget is not None and token is not None:
            self.budget.settle(token, cost)
            left = self.budget.limit_usd - self.budget.spent_total_usd - self.budget.reserved_usd
            self.state.budget_left_usd = left

    @staticmethod
    def _failed(summary: RunSummary, error: RouteError, request_id: str = "") -> None:
        summary.failed += 1
        summary.failures[error.kind] = summary.failures.get(error.kind, 0) + 1
        summary.first_errors.setdefault(error.kind, f"{request_id}: {error}" if request_id else str(error))

    async def _build(self, pending: Pending, pool: ThreadPoolExecutor, summary: RunSummary) -> ChatRequest | None:
        """Build a pending item on ``pool``; None when it cannot be built (stored and counted as that item's
        failure: the others go on)."""
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, pending.build)
        except (RouteError, MediaError) as err:  # a clip that cannot be read or transformed: this item fails alone
            error = media_failure(err) if isinstance(err, MediaError) else err
            self.store.set_item(pending.key, self.kind, None, error, pending.meta)
            self._failed(summary, error, pending.key)
            return None

    async def run_all(
        self,
        work: Sequence[tuple[ChatRequest, dict[str, Any]] | Pending],
        summary: RunSummary,
        *,
        progress: bool,
        label: str,
    ) -> None:
        """Run every (request, item metadata) pair concurrently, with a progress bar on stderr (its status line is
        :meth:`RunProgress.line` of ``self.state``, refreshed twice a second, so waits count down). A
        :class:`Pending` item is built on one of ``build_workers`` threads, in order, while the first ones are
        already sent (building every item first delayed the first send by the whole bench's media work), at most
        ``lookahead`` items at a time."""
        console = Console(stderr=True)
        columns = (
            TextColumn("{task.fields[rate]:.1f}/s"),
            TextColumn("[red]{task.fields[failed]} failed"),
            TextColumn("{task.fields[status]}", markup=False),
        )
        started = time.perf_counter()
        self.state.total = len(work)
        # A bar only on a terminal: elsewhere it renders as a cut line ("━━ 1…"), so whole lines are printed.
        lines = progress and not console.is_terminal

        def count() -> int:
            return summary.done + summary.failed + self.state.not_sent

        before, failed_before = count(), summary.failed  # the summary may hold a run's earlier tasks

        def finished() -> int:
            return count() - before

        def status() -> str:
            self.state.done, self.state.failed = summary.done, summary.failed
            text = self.state.line()
            note = getattr(getattr(self.route, "replicas", None), "note", None)  # all replicas drained: waiting
            return f"{text} · {note}" if note else text

        def say(line: str) -> None:
            console.print(line, markup=False, highlight=False, soft_wrap=True)

        def progress_line() -> str:
            rate = finished() / max(time.perf_counter() - started, 1e-9)
            failed = summary.failed - failed_before
            return f"{label}: {finished()}/{len(work)} ({failed} failed), {rate:.1f}/s · {status()}"

        with progress_bar(*columns, console=console, disable=not progress or lines) as bar:
            task = bar.add_task(label, total=len(work), rate=0.0, failed=0, status="")

            def refresh() -> None:
                if not progress or lines:
                    return
                elapsed = max(time.perf_counter() - started, 1e-9)
                done = finished()
                bar.update(task, completed=done, rate=done / elapsed, failed=summary.failed, status=status())

            ahead = asyncio.Semaphore(self.lookahead)  # first come, first served: items start in order

            async def one(item: tuple[ChatRequest, dict[str, Any]] | Pending, pool: ThreadPoolExecutor) -> None:
                async with ahead:
                    if isinstance(item, Pending):
                        request, meta = await self._build(item, pool, summary), item.meta
                    else:
                        request, meta = item
                    if request is not None:
                        await self.run_item(request, summary, meta)
                refresh()

            async def tick() -> None:
                last_done, since, told, last_line = -1, time.monotonic(), False, time.monotonic()
                period = min(0.5, self.wait_notice_s / 4, self.line_interval_s / 4)
                while True:
                    refresh()
                    await asyncio.sleep(period)
                    now, done = time.monotonic(), finished()
                    if done != last_done:
                        last_done, since, told = done, now, False
                    if lines and now - last_line >= self.line_interval_s:
                        say(progress_line())
                        last_line = now
                    elif not progress and not told and done < len(work) and now - since >= self.wait_notice_s:
                        told = True  # once per stall: the next item finished resets it
                        say(
                            f"{label}: nothing has finished for {now - since:.0f} s ({done}/{len(work)} finished); "
                            f"waiting on {status()}"
                        )

            ticker = asyncio.create_task(tick()) if work else None
            pool = ThreadPoolExecutor(max_workers=self.build_workers, thread_name_prefix="omnivchat-build")
            try:
                await asyncio.gather(*(one(item, pool) for item in work))
            except asyncio.CancelledError:  # Ctrl-C: every finished item is already in the store
                raise Interrupted(
                    f"interrupted: {summary.done} done, {summary.failed} failed, "
                    f"{summary.total - summary.done - summary.failed} not finished of {summary.total} ({label}); "
                    "rerun the same command to resume"
                ) from None
            finally:
                pool.shutdown(wait=False, cancel_futures=True)  # an interrupted run builds nothing more
                if ticker is not None:
                    ticker.cancel()
                if self.stages is not None:
                    self.stages.fold_into(summary)
            if lines and work:
                say(progress_line())


class _RunAttempts(AttemptHooks):
    """The runner's side of each attempt of one item: the budget, the store's attempt and cost rows, the progress
    bar's counts and waits."""

    def __init__(self, runner: Runner, key: str, item_id: str, estimate: float | None, summary: RunSummary) -> None:
        self.runner, self.key, self.item_id, self.estimate, self.summary = runner, key, item_id, estimate, summary
        self.token: int | None = None
        self.attempt_id = 0

    async def start(self, attempt: int) -> bool:
        runner = self.runner
        if runner.budget is not None:
            self.token = await runner.budget.reserve_when_settled(self.estimate or 0.0)
            if self.token is None:  # not sent
                self.summary.not_sent += 1
                runner.state.not_sent += 1
                return False
        self.attempt_id = runner.store.start_attempt(self.key, self.item_id)
        if self.estimate is not None:  # kept: a budget counts an attempt of unknown cost at its estimate
            runner.store.record_cost(self.attempt_id, None, IN_FLIGHT, estimate=self.estimate)
        if runner.stages is None:  # a cascade's requests are its stages' (counted with them)
            self.summary.attempts += 1
        runner.state.in_flight += 1
        return True

    def ended(self, outcome: ChatResponse | RouteError, cost: AttemptCost) -> None:
        runner = self.runner
        runner.store.finish_attempt(self.attempt_id, self.key, outcome)
        runner.state.in_flight -= 1
        failure = outcome if isinstance(outcome, RouteError) else None
        runner._settle(self.attempt_id, cost, failure, self.estimate, self.token, self.summary)

    def abandoned(self) -> None:
        self.runner.state.in_flight -= 1

    async def wait(self, error: RouteError, delay: float) -> None:
        state = self.runner.state
        state.concurrency = self.runner.limiter.limit
        waiting = state.wait_started(RETRY_AFTER if error.retry_after is not None else BACKOFF, delay)
        try:
            await asyncio.sleep(delay)
        finally:
            state.wait_ended(waiting)


def _capacity(route: Route) -> int:
    """Requests a route can have in flight by default: a replica set's replicas together, else the model's."""
    capacity = getattr(route, "capacity", None)
    return capacity if isinstance(capacity, int) else route.settings.max_concurrency


@dataclass
class Pending:
    """One model request of a run, not built yet: ``build()`` makes it (reading and transforming media, which may
    raise MediaError or RouteError: the item then fails alone); ``meta`` is stored with the item."""

    key: str
    build: Callable[[], ChatRequest]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class TaskWork:
    """The requests of one task of a run (one store kind: "candidate", or a benchmark's own task names)."""

    task: str
    pending: list[Pending]
    label: str = ""


@writes_run_dir("run_dir", "eval")  # one writer per run directory: taken before the manifest is read or written
async def run_tasks_async(
    route: Route,
    run_dir: str | Path,
    manifest: Manifest | dict[str, Any],
    tasks: list[TaskWork],
    *,
    concurrency: int | None = None,
    retry: RetryPolicy | None = None,
    progress: bool = True,
    invocation: dict[str, Any] | None = None,
    build_workers: int = 4,
    after_task: Callable[[str], object] | None = None,
    budget_usd: float | None = None,
) -> RunSummary:
    """Send every task's requests through ``route`` into ``run_dir``: the shared loop of every benchmark.

    The manifest is written, or checked against the stored one (resuming only an identical run: completed
    results are reused, failures retried, old attempts kept); each invocation is logged with its code version;
    requests are built on ``build_workers`` threads (media work) as the first ones are sent, task after task.
    ``after_task(task)`` runs after each task (a benchmark that keeps a summary file up to date). Closes the route.

    ``budget_usd``: the run's total spending limit (:mod:`omnivchat.runs._budget`; what the store spent before
    counts): once the next attempt would pass it, nothing more is sent and ``summary.not_sent`` counts the items
    left not run. Refused (BudgetError) before anything is written when the model has no price.
    """
    run_dir = Path(run_dir)
    media_timeout_s()  # an unusable bound is one error before anything is written, not every item failing with it
    budget = None
    if budget_usd is not None:
        budget = Budget(budget_usd)
        check_priced(route)
    written = manifest.dump() if isinstance(manifest, Manifest) else manifest
    replicas = getattr(route, "replicas", None)
    if replicas is not None:  # where the run is served: recorded, never part of its identity
        written = {**written, "replicas": replicas.record()}
    server = getattr(route, "server", None)
    if server is not None:  # what served it, and what was changed for it: recorded, never part of its identity
        written = {**written, "server": server.model_dump(mode="json")}
    check = write_or_check_manifest(run_dir, written)
    store = RunStore(run_dir / STORE_FILE)  # a damaged store stops here, before this invocation is logged
    if budget is not None:
        budget.before = tally(store.cost_rows()).total
    with (run_dir / "invocations.jsonl").open("a", encoding="utf-8") as log:
        entry = {"time": time.time(), **(invocation or {}), "concurrency": concurrency}
        entry["package"] = written.get("package") or package_record()  # a resumed run may span versions
        if replicas is not None:  # each invocation's servers (a resumed run may use others)
            entry["replicas"] = replicas.record()
        if server is not None:
            entry["server"] = server.model_dump(mode="json")
        log.write(json.dumps(entry) + "\n")
    summary = RunSummary(
        run_dir=run_dir, total=sum(len(t.pending) for t in tasks), resumed=check.resumed, budget=budget
    )
    if check.code_changed:
        summary.notes.append(check.code_changed)
    started = time.perf_counter()

    try:
        for work in tasks:
            runner = Runner(
                route,
                store,
                concurrency=concurrency or _capacity(route),
                retry=retry or RetryPolicy(),
                kind=work.task,
                budget=budget,
                build_workers=build_workers,
            )
            label = work.label or f"{route.model_id} {work.task}"
            await runner.run_all(work.pending, summary, progress=progress, label=label)
            if after_task is not None:
                after_task(work.task)
    finally:
        store.close()
        await route.aclose()
    summary.elapsed_s = time.perf_counter() - started
    return summary


run_tasks = blocking(run_tasks_async, "Synchronous :func:`run_tasks_async` (its parameters).")


# ---------------------------------------------------------------------------------------- cascade stages
# The stage requests of a cascade model (routes.CascadeRoute) go through the run store: each stage is its own store
# kind (`<task>/<stage>`: `candidate/asr`, `candidate/llm`) run by a Runner of its own, so every stage request is
# stored, its attempts kept and priced, its reply redacted, and a resumed run re-sends nothing already answered.


def stage_kind(task: str, stage: str) -> str:
    """The store kind of a cascade stage's requests in ``task``."""
    return f"{task}/{stage}"


class StoredStages:
    """A cascade's StageSender bound to a run's store: one Runner per stage, sharing the run's retry policy."""

    def __init__(self, parent: Runner) -> None:
        self.parent = parent
        self.runners: dict[str, Runner] = {}
        self.summaries: dict[str, RunSummary] = {}
        self.in_flight: dict[tuple[str, str], asyncio.Future[ChatResponse]] = {}

    def _runner(self, stage: str, route: Route) -> tuple[Runner, RunSummary]:
        if stage not in self.runners:
            parent = self.parent
            # One request per stage per item at most, so the run's concurrency bounds every stage too.
            concurrency = parent.limiter.maximum
            kind = stage_kind(parent.kind, stage)
            self.runners[stage] = Runner(route, parent.store, concurrency=concurrency, retry=parent.retry, kind=kind)
            self.runners[stage].state.cost = parent.state.cost  # the run's progress line shows what the stages spend
            self.summaries[stage] = RunSummary(run_dir=Path(parent.store.path).parent, total=0)
        return self.runners[stage], self.summaries[stage]

    def fold_into(self, summary: RunSummary) -> None:
        """Count the stages' requests and costs in the invocation's summary (once: they are reset here)."""
        for part in self.summaries.values():
            summary.attempts += part.attempts
            summary.cost.merge(part.cost)
            part.attempts, part.cost = 0, CostTotals()

    async def __call__(self, stage: str, route: Route, request: ChatRequest) -> ChatResponse:
        # Items on the same clip ask a stage the same thing at once: the first sends, the others wait for it.
        same = (stage, request.model_dump_json(exclude={"item_id"}))
        if same not in self.in_flight:
            self.in_flight[same] = asyncio.ensure_future(self._send(stage, route, request))
            self.in_flight[same].add_done_callback(lambda _: self.in_flight.pop(same, None))
        return await asyncio.shield(self.in_flight[same])

    async def _send(self, stage: str, route: Route, request: ChatRequest) -> ChatResponse:
        runner, summary = self._runner(stage, route)
        summary.total += 1
        await runner.run_item(request, summary)
        store: RunStore = runner.store
        row = store.item(request.item_id, runner.kind)
        if row is None:
            raise RouteError("input", f"item {request.item_id}: the {stage} stage was not sent")
        if row["status"] != "done":
            raise RouteError(row["error_kind"] or "input", row["error"] or "failed")
        result = store.result(row["key"])
        if result is None:  # a done item always has its result; a store edited by hand may not
            raise RouteError("input", f"item {request.item_id}: the {stage} stage's stored result is missing")
        return ChatResponse(
            text=result.text,
            reasoning=result.reasoning,
            finish_reason=result.finish_reason,
            usage=result.usage,
            latency_s=result.latency or 0.0,
            model=result.model,
            delivered=Delivered.model_validate(result.delivered),
            system_fingerprint=result.system_fingerprint,
            redacted=result.redacted,
        )
