"""socialomni: the SocialOmni benchmark (Level 1 Who, Level 2 When and How), run as its hosted runner does.

Dataset: ``level_1/dataset.json`` (2,000 Who items) and ``level_2/annotations_200.json`` (200 When items, of which
the 128 gold-YES ones are the How items) with their media; clips are cut at the query time before encoding.
Scores: Who and When accuracy and macro-F1 over fixed denominators (strict full-reply parsing; failures counted
apart), How quality (QGold, QEns, Cov+, QEns_joint) from a panel of exactly three judges. Chance levels: Who
1/4 (four options), When 1/2 (YES or NO), How 0. Language: English.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, Field

from omnivchat._files import check_output_dir
from omnivchat.benchmarks._generic import scores_of
from omnivchat.benchmarks._options import OptionsModel, Phase, read_options
from omnivchat.benchmarks._protocol import (
    Declared,
    ExportExtras,
    Item,
    ItemResult,
    JudgeOptions,
    JudgeOutcome,
    RunOptions,
    ScoreOptions,
    Scores,
    Source,
)
from omnivchat.benchmarks._registry import register
from omnivchat.routes import ChatRequest, Route, SimOracle
from omnivchat.runs import RunStatus
from omnivchat.socialomni import (
    DEFAULT_PANEL,
    GENERATION,
    PROTOCOL,
    TASK_ORDER,
    PromptCards,
    SocialOmniError,
    SocialOmniManifest,
    candidate_records,
    declared_items,
    estimate_judging,
    export_figures,
    item_meta,
    item_request,
    judge_run,
    judge_scores_for,
    judging_status,
    load_cards,
    load_judge_template,
    load_tasks,
    read_manifest,
    run_manifest,
    summarize,
    write_summary,
)

CHANCE = {"who": 0.25, "when": 0.5, "how": 0.0}
JUDGING = "judging"  # the default judging directory, inside the run


class SocialOmniJudgeOptions(OptionsModel):
    """SocialOmni's own judging options (``judge --contexts``, ``--output``)."""

    contexts: Path | None = Field(default=None, description="The judging inputs (judge-contexts.json).")
    output: Path | None = Field(default=None, description="The judging directory (default RUN/judging).")


class SocialOmniScoreOptions(OptionsModel):
    """SocialOmni's own scoring option (``score --judging``)."""

    judging: Path | None = Field(default=None, description="The judging directory (default RUN/judging).")


@dataclass(frozen=True)
class SocialOmniData:
    """The validated items of the chosen tasks, and what a run records of them."""

    annotations: Path
    tasks: tuple[str, ...]
    limit: int | None
    cards: PromptCards
    items: dict[str, list[Any]]


class SocialOmniBench:
    """SocialOmni, implementing :class:`omnivchat.benchmarks.Benchmark`."""

    name = "socialomni"
    title = "SocialOmni: Who (who speaks, 4-way), When (interrupt now?, YES/NO), How (what to say, judged 0-100)"
    protocols: tuple[str, ...] = (PROTOCOL, PROTOCOL + "-judging")
    option_models: Mapping[Phase, type[BaseModel]] = MappingProxyType(
        {"judge": SocialOmniJudgeOptions, "score": SocialOmniScoreOptions}
    )
    """Its own options (:class:`omnivchat.benchmarks.OwnOptions`): ``judge --contexts``, ``--output``; ``score
    --judging``."""
    sampling: Mapping[str, Any] = MappingProxyType({**GENERATION, "max_tokens": 8192})
    chance_levels = ", ".join(f"{task} {level:g}" for task, level in CHANCE.items()) + " (How is judged)"

    def chance(self, task: str) -> float:
        return CHANCE[task]

    def load(self, source: Source) -> SocialOmniData:
        if source.media is None:
            raise SocialOmniError("socialomni needs --media: the folder the annotations' clips are in")
        chosen = tuple(t for t in TASK_ORDER if t in (source.tasks or TASK_ORDER))
        unknown = sorted(set(source.tasks or ()) - set(TASK_ORDER))
        if unknown or not chosen:
            raise SocialOmniError(f"socialomni tasks are who, when and how (got {', '.join(unknown) or 'none'})")
        who, when, how = load_tasks(source.data, source.media, chosen, source.limit)
        items: dict[str, list[Any]] = {"who": who, "when": when, "how": how}
        return SocialOmniData(source.data, chosen, source.limit, load_cards(source.prompts), items)

    def items(self, dataset: SocialOmniData, options: RunOptions) -> list[Item]:
        return [Item(f"{t}-{i.id}", t, i, item_meta(t, i)) for t in dataset.tasks for i in dataset.items[t]]

    def manifest(self, dataset: SocialOmniData, route: Route, options: RunOptions) -> SocialOmniManifest:
        sampling = options.sampling.model_dump(exclude_none=True)
        max_tokens = sampling.pop("max_tokens", 8192)
        # An ablation condition changes every clip sent: another run (the clips as they are record none).
        condition = options.condition if options.condition != "both" else None
        manifest = run_manifest(
            dataset.annotations,
            route,
            dataset.items,
            dataset.tasks,
            dataset.cards,
            sampling,
            max_tokens,
            dataset.limit,
            condition,
        )
        if not options.manifest_extra:
            return manifest
        return SocialOmniManifest.model_validate({**manifest.dump(), **options.manifest_extra})

    def request(
        self, dataset: SocialOmniData, item: Item, options: RunOptions, work_dir: Path, meta: dict[str, Any]
    ) -> ChatRequest:
        request = item_request(
            item.task, item.record, dataset.cards, work_dir / "prefixes", options.sampling, meta, options.transform
        )
        if options.simulated:  # only a simulated model is told the answer (the harness self-check runs on it)
            answer = item.record.reference if item.task == "how" else item.record.gold
            oracle = SimOracle(reference=answer, language="en", requires=("video", "audio"))
            request = request.model_copy(update={"oracle": oracle})
        return request

    def after_task(self, run_dir: Path, task: str) -> None:
        write_summary(run_dir)  # a stopped run still says what is missing

    def score(self, dataset: Any, run_dir: Path, options: ScoreOptions) -> Scores:
        """Who and When: 1 for a right answer, 0 for a wrong or unparseable one, None for a failed request or an
        item with no record; How: the panel's mean quality / 100 where judged (from the judging directory)."""
        manifest = read_manifest(run_dir)
        records = candidate_records(run_dir)
        summary = summarize(run_dir, records)
        own = read_options(self, "score", options.options, SocialOmniScoreOptions)
        judged = _judge_scores(own.judging or run_dir / JUDGING, manifest)
        items: list[ItemResult] = []
        declared = list(manifest.source_media_sha256 or {})
        for key in declared:
            task, item_id = key.split("-", 1)
            record = (records.get(task) or {}).get(item_id)
            items.append(_item_result(task, key, item_id, record, judged))
        shown = summary.dump()  # the benchmark's own metrics, as summary.json has them
        metrics: dict[str, Any] = {task: shown[task] for task in ("who", "when") if task in shown}
        metrics["how_generation"] = shown["how_generation"]
        return scores_of(self.name, items, metrics, [i for i in items if i.ran and i.score is None and i.task != "how"])

    def judge(self, dataset: Any, run_dir: Path, options: JudgeOptions) -> JudgeOutcome:
        """The How panel's verdicts through the judge engine, into a judging directory (default RUN/judging):
        ``dry_run`` estimates and sends nothing, ``budget_usd`` caps the judging directory's spending, and
        verdicts stored there are reused. A partial panel leaves How quality null (``complete`` False)."""
        own = read_options(self, "judge", options.options, SocialOmniJudgeOptions)
        if own.contexts is None or options.judges_file is None:
            raise SocialOmniError("socialomni judging needs --contexts (judge-contexts.json) and --judges")
        out = own.output or run_dir / JUDGING
        check_output_dir(out, ours=lambda d: (d / "manifest.json").is_file(), kind="a SocialOmni judging directory")
        template, template_sha = load_judge_template(options.prompt)
        panel = options.panel or DEFAULT_PANEL
        inputs = (run_dir, own.contexts, options.judges_file, panel, out)
        if options.dry_run:
            dry = estimate_judging(*inputs, template=template, template_sha=template_sha, only_judge=options.only_judge)
            return JudgeOutcome(where=out, dry_run=dry)
        done = judge_run(
            *inputs,
            template=template,
            template_sha=template_sha,
            only_judge=options.only_judge,
            progress=options.progress,
            no_key=options.no_key,
            max_attempts=options.max_attempts,
            budget_usd=options.budget_usd,
        )
        metrics = done.summary.metrics
        notes = [
            f"panel {panel} ({', '.join(done.summary.judges)}): {metrics.quality_line()}",
            f"wrote {out / 'scores.json'} and {out / 'summary.json'}",
        ]
        if not metrics.complete:
            notes.append(metrics.gaps_line())
        return JudgeOutcome(where=out, summaries=done.summaries, notes=notes, complete=metrics.complete)

    def declared(self, run_dir: Path) -> Declared:
        tasks, fields = declared_items(run_dir)
        return Declared(dict(tasks), fields)

    def export_extras(self, run_dir: Path, judging: Path | None) -> ExportExtras:
        """Who and When predictions, How judge scores, the metrics, completeness and quality; the judging directory
        inside the run unless another is given."""
        figures = export_figures(run_dir, judging or run_dir / JUDGING)
        return ExportExtras(figures.status, figures.reasons, figures.meta, figures.extra)

    def directory_status(self, run_dir: Path) -> RunStatus | None:
        return judging_status(run_dir)


def _judge_scores(judging: Path, manifest: SocialOmniManifest) -> dict[str, dict[str, int | None]]:
    """The judging directory's scores of this run (empty when there is none); scores made for another run are
    refused, never mixed in."""
    return judge_scores_for(judging, manifest)[1].root


def _item_result(
    task: str, key: str, item_id: str, record: dict[str, Any] | None, judged: dict[str, dict[str, int | None]]
) -> ItemResult:
    if record is None:
        return ItemResult(key=key, task=task, score=None, reason="not run", ran=False)
    if record["request_failed"]:
        return ItemResult(key=key, task=task, score=None, reason=f"request failed: {record['error']}")
    if task != "how":
        right = record["prediction"] is not None and record["prediction"] == record["gold"]
        reason = "unparseable (counts as wrong)" if record["prediction"] is None else "parsed"
        return ItemResult(key=key, task=task, score=float(right), reason=reason)
    if not (record["text"] or "").strip():
        return ItemResult(key=key, task=task, score=0.0, reason="empty answer (0, not judged)")
    scores = judged.get(item_id) or {}
    if not scores or any(v is None for v in scores.values()):
        return ItemResult(key=key, task=task, score=None, reason="no full judge panel")
    values = [float(v) for v in scores.values() if v is not None]
    return ItemResult(key=key, task=task, score=sum(values) / len(values) / 100.0, reason="panel mean / 100")


SOCIALOMNI = register(SocialOmniBench())
