"""The native benchmark behind the Benchmark protocol (the package docstring says what it is)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel

from omnivchat.bench import Bench, load_bench
from omnivchat.benchmarks._options import Phase, read_options
from omnivchat.benchmarks._protocol import (
    Declared,
    ExportExtras,
    Item,
    JudgeOptions,
    JudgeOutcome,
    RunOptions,
    ScoreOptions,
    ScoreReport,
    Scores,
    Source,
)
from omnivchat.benchmarks._registry import register
from omnivchat.benchmarks.native._clips import instance_audio_problems
from omnivchat.benchmarks.native._files import NATIVE_BENCHMARK, RunManifest
from omnivchat.benchmarks.native._judging import (
    collect_scores,
    estimate_judging,
    judge_run,
    run_bench,
    shard_part,
)
from omnivchat.benchmarks.native._options import NativeJudgeOptions, NativeScoreOptions
from omnivchat.benchmarks.native._run import build_manifest, build_request
from omnivchat.benchmarks.native._scores import bench_name, native_scores
from omnivchat.benchmarks.native._status import declared, export_extras
from omnivchat.benchmarks.native._summary import score_summary
from omnivchat.judges import JudgePrompts
from omnivchat.prompts import load_prompt
from omnivchat.routes import ChatRequest, Route, RouteError
from omnivchat.runs import CANDIDATE, PROTOCOL
from omnivchat.scoring import table1_row


class OmniVChatBench:
    """The native bench format, implementing :class:`omnivchat.benchmarks.Benchmark`."""

    name = NATIVE_BENCHMARK
    title = "OmniVChat-Bench format: questions spoken in clips, tiered gated rubrics (Eq. 1-2), Table 1"
    protocols: tuple[str, ...] = (PROTOCOL,)
    sampling: Mapping[str, Any] = MappingProxyType({})  # the user's, as given
    option_models: Mapping[Phase, type[BaseModel]] = MappingProxyType(
        {"judge": NativeJudgeOptions, "score": NativeScoreOptions}
    )
    """Its own options (:class:`omnivchat.benchmarks.OwnOptions`): ``judge --style-judge``, ``--style-prompt``,
    ``--aliases``; ``score --style-judge``, ``--delivered-only``."""
    reads_source: frozenset[str] = frozenset()
    """Neither --media nor --tasks (:class:`omnivchat.benchmarks.ReadsSource`): a bench directory holds its clips,
    and its instances are the run's items."""

    def chance(self, task: str) -> float:
        return 0.0  # a guess meets no rubric tier

    def load(self, source: Source) -> Bench:
        return load_bench(source.data)

    def items(self, dataset: Bench, options: RunOptions) -> list[Item]:
        instances = dataset.instances[: options.limit] if options.limit else dataset.instances
        return [
            Item(i.id, CANDIDATE, i, {"subcategory": i.subcategory, "language": i.language, "source": i.source})
            for i in instances
        ]

    def manifest(self, dataset: Bench, route: Route, options: RunOptions) -> RunManifest:
        prompt, label = load_prompt(options.system_prompt)
        return build_manifest(
            bench=dataset,
            instances=dataset.instances,  # the identity covers the whole bench, so --limit can grow on resume
            route=route,
            system_prompt=prompt,
            system_prompt_label=label,
            sampling=options.sampling.model_dump(),
            condition=options.condition,
            extra=options.manifest_extra or None,
        )

    def request(
        self, dataset: Bench, item: Item, options: RunOptions, work_dir: Path, meta: dict[str, Any]
    ) -> ChatRequest:
        # validate's own check of the clips (one without audio for an instance that needs it): that item fails
        problems = instance_audio_problems(dataset, item.record)
        if problems:
            raise RouteError("media", "; ".join(problems))
        return build_request(
            dataset,
            item.record,
            system_prompt=load_prompt(options.system_prompt)[0],
            sampling=options.sampling,
            simulated=options.simulated,
            clip_transform=options.transform,
        )

    def score(self, dataset: Bench | None, run_dir: Path, options: ScoreOptions) -> Scores:
        own = read_options(self, "score", options.options, NativeScoreOptions)
        dataset = shard_part(run_dir, dataset) if dataset is not None else run_bench(run_dir, None)
        items = collect_scores(
            run_dir,
            dataset,
            options.panel or ["rule"],
            aggregate=options.aggregate,
            style_judge=own.style_judge,
        )
        row = table1_row([i.scored_reply() for i in items], style_graded=own.style_judge is not None)
        return native_scores(
            run_dir, bench_name(dataset), items, row, options.panel or ["rule"], options.aggregate, own.style_judge
        )

    def score_summary(self, run_dir: Path, options: ScoreOptions) -> ScoreReport:
        return score_summary(run_dir, options, read_options(self, "score", options.options, NativeScoreOptions))

    def judge(self, dataset: Bench | None, run_dir: Path, options: JudgeOptions) -> JudgeOutcome:
        own = read_options(self, "judge", options.options, NativeJudgeOptions)
        dataset = shard_part(run_dir, dataset) if dataset is not None else run_bench(run_dir, options.data)
        if options.only_judge:
            names = [options.only_judge]
        else:
            names = options.members if options.members is not None else options.config.panel(options.panel)
        prompts = JudgePrompts(rubric=options.prompt, style=own.style_prompt)
        chosen = [n for n in names if n != "rule"]
        if options.dry_run:
            _, dry = estimate_judging(
                run_dir, dataset, options.config, chosen,
                prompts=prompts, style_judge=own.style_judge, aliases=own.aliases,
            )  # fmt: skip
            return JudgeOutcome(where=run_dir / "store.sqlite", dry_run=dry)
        report = judge_run(
            run_dir,
            dataset,
            options.config,
            chosen,
            prompts=prompts,
            style_judge=own.style_judge,
            aliases=own.aliases,
            max_attempts=options.max_attempts,
            progress=options.progress,
            budget_usd=options.budget_usd,
        )
        notes = [
            f"not judged: {report.empty_replies} empty replies (score 0), {report.failed_candidates} failed "
            f"requests, {report.not_run} items never run"
        ]
        if report.failed_candidates or report.not_run:
            notes.append(
                f"incomplete: {report.failed_candidates + report.not_run} of {len(dataset.instances)} items have no "
                "reply; resume the run with `omnivchat eval` to complete it"
            )
        notes.append(f"judge settings in {run_dir / 'judges.json'}")
        complete = not any(s.failed for s in report.summaries.values())  # every verdict asked for parsed
        return JudgeOutcome(where=run_dir / "store.sqlite", summaries=report.summaries, notes=notes, complete=complete)

    def declared(self, run_dir: Path) -> Declared:
        return declared(run_dir)

    def export_extras(self, run_dir: Path, judging: Path | None) -> ExportExtras:
        return export_extras(run_dir)


OMNIVCHAT = register(OmniVChatBench())
