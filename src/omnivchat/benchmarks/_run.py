"""Running any registered benchmark: its items through the shared run loop, into a resumable run directory."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from omnivchat.benchmarks._options import check_options
from omnivchat.benchmarks._protocol import Benchmark, Item, RunOptions, Source, SpokenReplies, TaskSummary
from omnivchat.benchmarks._registry import registered
from omnivchat.benchmarks._spoken import SpokenError
from omnivchat.routes import ChatRequest, Route, Sampling
from omnivchat.runs import (
    DryRun,
    Manifest,
    ManifestMismatch,
    Pending,
    RetryPolicy,
    RunSummary,
    ShardRecord,
    TaskWork,
    estimate_tasks,
    run_tasks,
    writes_run_dir,
)


def _work(
    benchmark: Benchmark[Any], dataset: object, route: Route, work_dir: Path, options: RunOptions
) -> tuple[Manifest | dict[str, Any], list[TaskWork]]:
    """The run's manifest and its requests, task by task (built later, on threads; media work goes in
    ``work_dir``)."""
    if options.reply_audio is not None and not isinstance(benchmark, SpokenReplies):
        # Refused, not run: its scoring would read the text a server sent beside the audio (often none at all).
        able = ", ".join(n for n, b in registered().items() if isinstance(b, SpokenReplies))
        raise SpokenError(f"benchmark {benchmark.name} scores text replies only; spoken replies are scored by: {able}")
    options.simulated = route.settings.route == "sim"
    # The benchmark's protocol sampling, with what the user set on top (the manifest records the result).
    given = options.sampling.model_dump(exclude_none=True)
    options.sampling = Sampling(**{**benchmark.sampling, **given})
    if options.reply_audio is not None:  # recorded only then: a text-only run keeps the manifest it always had
        options.manifest_extra = {**options.manifest_extra, "reply_audio": options.reply_audio.model_dump()}
    manifest = benchmark.manifest(dataset, route, options)

    def pending(item: Item) -> Pending:
        meta = dict(item.meta)  # the request may add to it (what it learnt): the item's own stays as it was

        def build() -> ChatRequest:
            request = benchmark.request(dataset, item, options, work_dir, meta)
            if options.reply_audio is not None:  # any benchmark's requests, asked for a spoken reply too
                request = request.model_copy(update={"reply_audio": options.reply_audio})
            return request

        return Pending(item.key, build, meta)

    items = benchmark.items(dataset, options)
    if options.shard is not None:  # a part of the items, chosen by their keys; the manifest says which
        shard = options.shard
        # It declares its whole part (as a native run declares its whole bench): --limit runs fewer of them.
        whole = benchmark.items(dataset, dataclasses.replace(options, limit=None)) if options.limit else items
        keys: dict[str, list[str]] = {}
        for item in whole:
            if shard.holds(item.key):
                keys.setdefault(item.task, []).append(item.key)
        record = ShardRecord(index=shard.index, count=shard.count, items=keys)
        manifest = {**(manifest.dump() if isinstance(manifest, Manifest) else manifest), "shard": record.dump()}
        items = [item for item in items if shard.holds(item.key)]
    tasks: dict[str, list[Pending]] = {}
    for item in items:
        tasks.setdefault(item.task, []).append(pending(item))
    label = f"{route.model_id} [{options.condition}]"
    work = [
        TaskWork(task, items, label=f"{label} {task}" if len(tasks) > 1 else label) for task, items in tasks.items()
    ]
    return manifest, work


def estimate(benchmark: Benchmark[Any], dataset: object, route: Route, run_dir: Path, options: RunOptions) -> DryRun:
    """The dry run of :func:`evaluate`: every request built and prepared as the run would, counted and its cost
    estimated; nothing is sent and nothing is written into ``run_dir`` (media a benchmark cuts go to a temporary
    folder, removed after). An existing ``run_dir`` must hold this run; its answered requests are left out."""
    with tempfile.TemporaryDirectory(prefix="omnivchat-dry-run-") as scratch:
        manifest, work = _work(benchmark, dataset, route, Path(scratch), options)
        return estimate_tasks(route, Path(run_dir), manifest, work)


@writes_run_dir("run_dir", "eval")  # one writer per run directory, before its manifest is read or written
def evaluate(
    benchmark: Benchmark[Any],
    dataset: object,
    source: Source,
    route: Route,
    run_dir: Path,
    options: RunOptions,
    *,
    retry: RetryPolicy | None = None,
    progress: bool = True,
    budget_usd: float | None = None,
) -> RunSummary:
    """Send every item of ``dataset`` through ``route`` into ``run_dir``, task after task, with the benchmark's
    manifest (resuming an identical run: completed replies reused, failures retried, attempts kept).
    ``budget_usd``: the run's total spending limit (see :func:`omnivchat.runs.run_tasks_async`)."""
    check_options(benchmark, "load", source.options)  # an option it does not take: refused before any request
    run_dir = Path(run_dir)
    manifest, work = _work(benchmark, dataset, route, run_dir, options)
    summary = benchmark if isinstance(benchmark, TaskSummary) else None
    invocation = {"benchmark": benchmark.name, "bench": str(source.data.resolve()), "limit": options.limit}
    try:
        return run_tasks(
            route,
            run_dir,
            manifest,
            work,
            concurrency=options.concurrency,
            retry=retry,
            progress=progress,
            invocation=invocation,
            # Conditions and cut clips run ffmpeg (cached): build requests on a few threads, not one by one.
            build_workers=4,
            after_task=None if summary is None else lambda task: summary.after_task(run_dir, task),
            budget_usd=budget_usd,
        )
    except ManifestMismatch as err:
        rejected = getattr(dataset, "rejected", None)
        if rejected:  # the likeliest change: a person rejected instances since (inspection.jsonl)
            raise ManifestMismatch(
                f"{err}\nThe bench now leaves out {len(rejected)} instance(s) rejected by human inspection "
                "(inspection.jsonl): run the delivered set into a new output directory."
            ) from None
        raise
    except BaseException:
        if summary is not None and (run_dir / "manifest.json").is_file():
            with contextlib.suppress(Exception):  # an interrupted run still says what is missing
                summary.after_task(run_dir, "")
        raise
