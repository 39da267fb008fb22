"""Running any registered benchmark: its items through the shared run loop, into a resumable run directory."""

from __future__ import annotations

import contextlib
from pathlib import Path

from omnivchat.benchmarks._protocol import Benchmark, Item, RunOptions, Source
from omnivchat.routes import ChatRequest, Route, Sampling
from omnivchat.runs import ManifestMismatch, Pending, RetryPolicy, RunSummary, TaskWork, run_tasks, writes_run_dir


@writes_run_dir("run_dir", "eval")  # one writer per run directory, before its manifest is read or written
def evaluate(
    benchmark: Benchmark,
    dataset: object,
    source: Source,
    route: Route,
    run_dir: Path,
    options: RunOptions,
    *,
    retry: RetryPolicy | None = None,
    progress: bool = True,
) -> RunSummary:
    """Send every item of ``dataset`` through ``route`` into ``run_dir``, task after task, with the benchmark's
    manifest (resuming an identical run: completed replies reused, failures retried, attempts kept)."""
    run_dir = Path(run_dir)
    options.simulated = route.settings.route == "sim"
    # The benchmark's protocol sampling, with what the user set on top (the manifest records the result).
    given = options.sampling.model_dump(exclude_none=True)
    options.sampling = Sampling(**{**benchmark.default_sampling(), **given})
    manifest = benchmark.manifest(dataset, route, options)

    def pending(item: Item) -> Pending:
        meta = benchmark.item_meta(item)

        def build() -> ChatRequest:
            return benchmark.request(dataset, item, options, run_dir, meta)

        return Pending(item.key, build, meta)

    tasks: dict[str, list[Pending]] = {}
    for item in benchmark.items(dataset, options):
        tasks.setdefault(item.task, []).append(pending(item))
    label = f"{route.model_id} [{options.condition}]"
    work = [
        TaskWork(task, items, label=f"{label} {task}" if len(tasks) > 1 else label) for task, items in tasks.items()
    ]
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
            after_task=lambda task: benchmark.after_task(run_dir, task),
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
        if (run_dir / "manifest.json").is_file():
            with contextlib.suppress(Exception):  # an interrupted run still says what is missing
                benchmark.after_task(run_dir, "")
        raise
