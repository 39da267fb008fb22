"""Running a bench directory: the request of an instance (earlier turns as history, then its final clip), the
manifest of a native run (the bench's identity: hashes of its instances and clips), and :func:`run_eval`, which
runs a bench through one route with the shared run loop (``omnivchat.runs.run_tasks_async``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omnivchat._blocking import blocking
from omnivchat._canonical import sha256_json, sha256_text
from omnivchat.bench import Bench, Instance, Turn
from omnivchat.benchmarks.native._files import NATIVE_BENCHMARK, BenchIdentity, RunManifest
from omnivchat.prompts import prompt_label
from omnivchat.routes import ChatRequest, HistoryTurn, RetryPolicy, Route, Sampling, SimOracle, clip_sha256
from omnivchat.runs import (
    CANDIDATE,
    PROTOCOL,
    PackageRecord,
    Pending,
    PromptRecord,
    RunSummary,
    TaskWork,
    package_record,
    route_identity,
    run_tasks_async,
    writes_run_dir,
)


def bench_identity(bench: Bench, instances: list[Instance]) -> BenchIdentity:
    """Hashes of the instances used and of every clip they reference."""
    clips: dict[str, str] = {}
    for instance in instances:
        for turn in instance.turns:
            if turn.video not in clips:
                path = bench.media_path(turn)
                # Remembered for the run's requests, which hash the same clips (one thread: small clips hashed on a
                # pool cost more in hand-offs than they gain, measured at 2000 clips of 30 kB).
                clips[turn.video] = clip_sha256(path) if path.is_file() else "missing"
    rows = [json.loads(i.model_dump_json()) for i in instances]
    return BenchIdentity(
        name=bench.info.name,
        version=bench.info.version,
        instances_sha256=sha256_json(rows),
        n_instances=len(instances),
        clips=clips,
    )


def build_manifest(
    *,
    bench: Bench,
    instances: list[Instance],
    route: Route,
    system_prompt: str,
    system_prompt_label: str,
    sampling: dict[str, Any],
    condition: str,
    extra: dict[str, Any] | None = None,
) -> RunManifest:
    """The manifest of a native run: its bench, system prompt, route, sampling and condition (its identity) and
    the code that made it; ``extra`` fields (what a caller adds, e.g. the ablation grid) are kept as given."""
    fields: dict[str, Any] = {
        "protocol": PROTOCOL,
        "benchmark": NATIVE_BENCHMARK,
        "bench": bench_identity(bench, instances),
        "prompts": {"system": PromptRecord(sha256=sha256_text(system_prompt), source=system_prompt_label)},
        "prompt_labels": {"system": prompt_label(system_prompt, "system", system_prompt_label)},
        "route": route_identity(route),
        "sampling": sampling,
        "condition": condition,
        "simulated": route.settings.route == "sim",
        "package": PackageRecord.model_validate(package_record()),
    }
    return RunManifest.model_validate({**fields, **(extra or {})})


def build_request(
    bench: Bench,
    instance: Instance,
    *,
    system_prompt: str | None,
    sampling: Sampling,
    simulated: bool,
    clip_transform: Callable[[Path], Path | None] | None = None,
) -> ChatRequest:
    """The request for one instance: earlier turns with their reference replies as history, then the final clip.

    ``clip_transform`` maps every clip, history included, to the one sent (an ablation condition); None drops
    the clip altogether.
    """
    *earlier, final = instance.turns

    def clip(turn: Turn) -> Path | None:
        path = bench.media_path(turn)
        return clip_transform(path) if clip_transform is not None else path

    history = tuple(HistoryTurn(clip=clip(t), reply=t.reply or "", text=t.text) for t in earlier)
    oracle = None
    if simulated:  # only a simulated model is told the answer; real routes never see this field
        oracle = SimOracle(
            reference=instance.reference,
            language=instance.language,
            requires=tuple(instance.requires) if instance.requires else None,
        )
    return ChatRequest(
        item_id=instance.id,
        system_prompt=system_prompt,
        history=history,
        clip=clip(final),
        text=final.text,
        sampling=sampling,
        oracle=oracle,
    )


@writes_run_dir("run_dir", "eval")  # taken before the manifest is built (the grid re-takes it: reentrant)
async def run_eval_async(
    bench: Bench,
    route: Route,
    run_dir: str | Path,
    *,
    system_prompt: str | None,
    system_prompt_label: str = "omnivchat:spoken_assistant.txt",
    sampling: Sampling | None = None,
    concurrency: int | None = None,
    limit: int | None = None,
    retry: RetryPolicy | None = None,
    condition: str = "both",
    clip_transform: Callable[[Path], Path | None] | None = None,
    progress: bool = True,
    manifest_extra: dict[str, Any] | None = None,
) -> RunSummary:
    """Run every instance (or the first ``limit``) of a native ``bench`` through ``route`` into ``run_dir``.

    A new directory gets a manifest; an existing one is resumed only when its manifest is identical: completed
    results are reused, failed items retried, old attempts kept. ``clip_transform(path) -> Path | None`` changes
    every clip sent (ablation conditions); name what it does in ``condition``, which the manifest records.
    """
    sampling = sampling or Sampling()
    instances = bench.instances[:limit] if limit else list(bench.instances)
    simulated = route.settings.route == "sim"
    manifest = build_manifest(
        bench=bench,
        instances=bench.instances,  # the identity covers the whole bench, so --limit can grow on resume
        route=route,
        system_prompt=system_prompt or "",
        system_prompt_label=system_prompt_label,
        sampling=sampling.model_dump(),
        condition=condition,
        extra=manifest_extra,
    )

    def pending(instance: Instance) -> Pending:
        def build() -> ChatRequest:
            return build_request(
                bench,
                instance,
                system_prompt=system_prompt,
                sampling=sampling,
                simulated=simulated,
                clip_transform=clip_transform,
            )

        meta = {"subcategory": instance.subcategory, "language": instance.language, "source": instance.source}
        return Pending(instance.id, build, meta)

    work = TaskWork(CANDIDATE, [pending(i) for i in instances], label=f"{route.model_id} [{condition}]")
    # Condition transforms run ffmpeg (cached): build requests on a few threads, not one by one.
    return await run_tasks_async(
        route,
        run_dir,
        manifest,
        [work],
        concurrency=concurrency,
        retry=retry,
        progress=progress,
        invocation={"bench": str(bench.root.resolve()), "limit": limit},
        build_workers=4 if clip_transform is not None else 1,
    )


run_eval = blocking(run_eval_async, "Synchronous :func:`run_eval_async` (its parameters).")
