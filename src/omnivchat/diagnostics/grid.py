"""Running the ablation grid: four conditions made by real media transforms, judged, scored and diagnosed;
and the harness self-check that must catch a broken simulated model before a real one is trusted."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from omnivchat._files import write_model
from omnivchat.bench import CATEGORIES
from omnivchat.benchmarks import (
    Benchmark,
    ItemResult,
    Judged,
    JudgeOptions,
    RunOptions,
    ScoreOptions,
    Source,
    evaluate,
    get_benchmark,
    save_scores,
)
from omnivchat.diagnostics._files import (
    ABLATION_FILE,
    AblationData,
    AblationFile,
    ConditionEntry,
    SelfCheckModel,
    SelfCheckRecord,
    self_check_grid_dir,
)
from omnivchat.diagnostics.ablation import CONDITIONS, Diagnosis, diagnose
from omnivchat.errors import OmnivchatError
from omnivchat.judges import RULE_JUDGE, JudgesConfig, judge_key
from omnivchat.routes import Route, Sampling, get_route
from omnivchat.runs import RunError, RunSummary, run_lock

NeitherMode = Literal["blank", "none"]
VideoOnlyMode = Literal["mute", "strip"]
# The harness note's broken model ignores the video (video skill 0, hence no fusion); its audio twin is checked
# too. A model with both single-stream skills but no fusion is not used: on a bench with video-only and audio-only
# items it gains from the second stream, so the grid is right not to call it "no fusion".
MUST_BE_CAUGHT = {"sim:video-blind": "video_ignored", "sim:audio-blind": "audio_ignored"}
MUST_PASS = "sim:healthy"
SELF_CHECK_MODELS = (*MUST_BE_CAUGHT, MUST_PASS)
MIN_CATEGORY_ITEMS = 4  # fewer items than this in a category: no per-category diagnosis (intervals meaningless)


class SelfCheckFailed(OmnivchatError, RuntimeError):
    """The grid could not tell a broken simulated model from a healthy one: its numbers cannot be trusted."""


def condition_transform(
    condition: str, *, neither: NeitherMode = "blank", video_only: VideoOnlyMode = "mute"
) -> Callable[[Path], Path | None] | None:
    """The media transform of a condition, applied to every clip of a dialogue (cached by the media package).

    video_only mutes the audio (a silent track of the same length) or strips it; audio_only blanks the video
    (black frames, audio kept); neither is a black, silent clip ("blank") or no media at all ("none").
    """
    from omnivchat import media

    if condition == "both":
        return None
    if condition == "video_only":
        return media.mute_audio if video_only == "mute" else media.strip_audio
    if condition == "audio_only":
        return media.blank_video
    if condition == "neither":
        if neither == "none":
            return lambda _clip: None
        return lambda clip: media.mute_audio(media.blank_video(clip))
    raise ValueError(f"unknown condition {condition!r}; expected one of {', '.join(CONDITIONS)}")


CONDITION_WORDS = {
    "both": "both (the clips as they are)",
    "video_only": "video_only (audio removed)",
    "audio_only": "audio_only (video blanked)",
    "neither": "neither (no usable media)",
}


def condition_label(condition: str, neither: NeitherMode, video_only: VideoOnlyMode) -> str:
    if condition == "neither":
        return f"neither:{neither}"
    if condition == "video_only":
        return f"video_only:{video_only}"
    return condition


@dataclass
class GridResult:
    """One model's grid: per-condition item scores, the diagnosis overall and per group (ability category), and
    per task for a benchmark with several (the overall diagnosis then pools them, chance taken item by item)."""

    model: str
    out_dir: Path
    scores: dict[str, list[ItemResult]]
    diagnosis: Diagnosis | None
    categories: dict[str, Diagnosis | None]
    n_items_used: int
    problem: str | None = None
    runs: dict[str, RunSummary] = field(default_factory=dict)  # what each condition's run did (sent, reused)
    data: dict[str, Any] = field(default_factory=dict)  # which benchmark and data: name, version, item count
    tasks: dict[str, Diagnosis | None] = field(default_factory=dict)  # several tasks: each one's (None: too few)

    def reuse_line(self) -> str:
        """What the four runs took from their stores and what they sent: a resumed grid says what it reused."""
        total = sum(s.total for s in self.runs.values())
        reused = sum(s.reused for s in self.runs.values())
        sent = sum(s.attempts for s in self.runs.values())
        return f"{self.model}: {reused} of {total} replies reused from {self.out_dir}, {sent} requests sent"

    @property
    def flagged(self) -> bool:
        return self.diagnosis is not None and bool(self.diagnosis.flags)


ItemKey = tuple[str, str]  # (task, key): a key is unique within its task only


def _aligned(scores: dict[str, list[ItemResult]]) -> tuple[list[ItemKey], dict[str, list[float]]]:
    """Items scored in all four conditions, in the benchmark's order, and their scores per condition."""
    by_condition = {c: {(s.task, s.key): s.score for s in items} for c, items in scores.items()}
    ids = [
        (s.task, s.key)
        for s in scores["both"]
        if all(by_condition[c].get((s.task, s.key)) is not None for c in CONDITIONS)
    ]
    return ids, {c: [float(by_condition[c][i]) for i in ids] for c in CONDITIONS}  # type: ignore[arg-type]  # the filter above keeps only ids scored under every condition


def _data_info(benchmark: Benchmark[Any], dataset: Any, n_items: int) -> dict[str, Any]:
    info = getattr(dataset, "info", None)  # a native bench names itself
    name = getattr(info, "name", benchmark.name)
    return {"benchmark": benchmark.name, "name": name, "version": getattr(info, "version", ""), "n_instances": n_items}


def grid_tasks(
    benchmark: Benchmark[Any], dataset: Any, *, task: str | None = None, chance: float | None = None
) -> dict[str, float]:
    """The tasks the grid diagnoses, in the data's order, each with its chance level: checked right after loading,
    before any request is sent. Several tasks are pooled only when all are multiple choice (every chance above 0:
    accuracies on one scale); otherwise, or with ``chance`` set (one level for one task), one must be chosen."""
    order: dict[str, None] = {}
    for item in benchmark.items(dataset, RunOptions()):
        order.setdefault(item.task, None)
    tasks = list(order)
    where = f"{benchmark.name}: "
    if task is not None:
        if task not in order:
            raise OmnivchatError(f"{where}no items of task {task!r} (tasks here: {', '.join(tasks) or 'none'})")
        tasks = [task]
    if not tasks:
        raise OmnivchatError(f"{where}no items to run the grid on")
    if len(tasks) == 1:
        return {tasks[0]: benchmark.chance(tasks[0]) if chance is None else chance}
    listed = ", ".join(tasks)
    if chance is not None:
        raise OmnivchatError(
            f"{where}--chance sets the chance level of one task, and this data has several ({listed}), each item's "
            "chance being its own: choose one with --task, or leave --chance out"
        )
    chances = {t: benchmark.chance(t) for t in tasks}
    unpooled = [t for t, c in chances.items() if c <= 0]
    if unpooled:
        raise OmnivchatError(
            f"{where}several tasks ({listed}), and {', '.join(unpooled)} is not multiple choice, so their scores "
            "cannot be pooled: choose one with --task"
        )
    return chances


def check_judges(config: JudgesConfig, members: list[str]) -> None:
    """Every judge of the panel is in the judges file and has its key: checked before the first condition runs,
    not when its judging pass comes after a condition's paid requests."""
    unknown = [m for m in members if m not in config.judges]
    if unknown:
        raise OmnivchatError(f"no judge {', '.join(map(repr, unknown))} in the judges file (--judges)")
    for name in members:
        judge_key(config.judges[name])


def run_grid(
    dataset: Any,
    make_route: Callable[[], Route],
    out_dir: str | Path,
    *,
    panel: list[str],
    config: JudgesConfig | None = None,
    aggregate: Literal["mean", "majority"] = "mean",
    benchmark: Benchmark[Any] | None = None,
    source: Source | None = None,
    task: str | None = None,
    system_prompt: Path | None = None,
    sampling: Sampling | None = None,
    neither: NeitherMode = "blank",
    video_only: VideoOnlyMode = "mute",
    concurrency: int | None = None,
    chance: float | None = None,
    floor_margin: float = 0.10,
    progress: bool = True,
    manifest_extra: dict[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
) -> GridResult:
    """Run, judge and score the four conditions of any registered benchmark into ``out_dir/<condition>``, then
    diagnose. ``dataset`` is what ``benchmark.load`` gave (a native Bench by default, whose root is the source).

    ``make_route`` gives a fresh route per condition (a run closes its route). ``task``: the task to diagnose,
    for a benchmark with several; without it several multiple-choice tasks are diagnosed each and pooled, every
    item measured against its own chance level (1/K), the pooled chance being the mean of the items' (see
    :func:`grid_tasks`, checked before anything is sent). ``chance`` overrides one task's level. Items unscored in
    any condition are left out of the diagnosis (counted in ``n_items_used``); every run directory gets its
    scores.json.
    """
    benchmark = benchmark or get_benchmark("omnivchat")
    chances = grid_tasks(benchmark, dataset, task=task, chance=chance)
    members = [j for j in panel if j != RULE_JUDGE]
    check_judges(config or JudgesConfig(), members)
    source = source or Source(data=Path(dataset.root))
    out_dir = Path(out_dir)
    scores: dict[str, list[ItemResult]] = {}
    summaries: dict[str, RunSummary] = {}
    model = ""
    for number, condition in enumerate(CONDITIONS, start=1):
        route = make_route()
        model = route.model_id
        run_dir = out_dir / condition
        if say is not None:
            say(f"{model}: condition {number} of {len(CONDITIONS)}, {CONDITION_WORDS[condition]}")
        options = RunOptions(
            sampling=sampling or Sampling(),
            system_prompt=system_prompt,
            condition=condition_label(condition, neither, video_only),
            transform=condition_transform(condition, neither=neither, video_only=video_only),
            concurrency=concurrency,
            manifest_extra=dict(manifest_extra or {}),
        )
        with run_lock(run_dir, "ablate"):  # one writer from the run through its judging to its scores.json
            summaries[condition] = evaluate(benchmark, dataset, source, route, run_dir, options, progress=progress)
            if members and isinstance(benchmark, Judged):
                judging = JudgeOptions(config=config or JudgesConfig(), members=members, progress=progress)
                benchmark.judge(dataset, run_dir, judging)
            scored = benchmark.score(
                dataset, run_dir, ScoreOptions(config=config or JudgesConfig(), panel=panel, aggregate=aggregate)
            )
            save_scores(run_dir, scored)
        scores[condition] = [i for i in scored.items if i.task in chances]
    data = _data_info(benchmark, dataset, len(scores["both"]))
    ids, aligned = _aligned(scores)
    if not ids:
        problem = "no item was scored in all four conditions"
        return GridResult(model, out_dir, scores, None, {}, 0, problem=problem, runs=summaries, data=data)

    def diagnose_items(keep: list[int]) -> Diagnosis:
        # Each item against its own chance: the mean of the items' chances is the reference of their mean.
        level = sum(chances[ids[k][0]] for k in keep) / len(keep)
        picked = {c: [aligned[c][k] for k in keep] for c in CONDITIONS}
        return diagnose(picked, chance=level, floor_margin=floor_margin)

    overall = diagnose_items(list(range(len(ids))))
    per_task: dict[str, Diagnosis | None] = {}
    if len(chances) > 1:
        for name in chances:
            keep = [k for k, (t, _) in enumerate(ids) if t == name]
            per_task[name] = diagnose_items(keep) if len(keep) >= MIN_CATEGORY_ITEMS else None
    group_of = {(i.task, i.key): i.group for i in scores["both"]}
    order = list(CATEGORIES)  # the taxonomy's order for ability categories; any other group after them
    in_order = {g: order.index(g) if g in order else len(order) for g in group_of.values() if g}
    groups = sorted(in_order, key=lambda g: (in_order[g], g))
    categories: dict[str, Diagnosis | None] = {}
    for code in groups:
        keep = [k for k, i in enumerate(ids) if group_of[i] == code]
        if len(keep) >= MIN_CATEGORY_ITEMS:
            categories[code] = diagnose_items(keep)
        elif keep:
            categories[code] = None
    return GridResult(model, out_dir, scores, overall, categories, len(ids), runs=summaries, data=data, tasks=per_task)


def caught(grid: GridResult, stream_flag: str) -> bool:
    """A stream-ignoring model is caught when the grid flags no fusion or names the ignored stream."""
    return grid.diagnosis is not None and bool({"no_fusion", stream_flag} & grid.diagnosis.flags)


def self_check(
    dataset: Any,
    out_dir: str | Path,
    *,
    panel: list[str],
    config: JudgesConfig | None = None,
    progress: bool = True,
    **grid_options: Any,
) -> SelfCheckRecord:
    """Run sim:video-blind and sim:audio-blind (each must be flagged) and sim:healthy (must not be) through the
    same grid and judges (the harness note, section 2: a broken model is caught and a healthy one is not falsely
    flagged).

    Raises SelfCheckFailed when any check fails: a grid that cannot catch a known-broken model proves nothing
    about a real one.
    """
    out_dir = Path(out_dir)
    say = grid_options.get("say")
    results = {}
    for model in SELF_CHECK_MODELS:
        results[model] = run_grid(
            dataset,
            functools.partial(get_route, model),
            self_check_grid_dir(out_dir, model),
            panel=panel,
            config=config,
            progress=progress,
            **grid_options,
        )
        if say is not None:
            say(results[model].reuse_line())
    healthy = results[MUST_PASS]
    models: dict[str, SelfCheckModel] = {}
    why = []
    for model, stream_flag in MUST_BE_CAUGHT.items():
        grid = results[model]
        flagged = caught(grid, stream_flag)
        models[model] = SelfCheckModel(expected="flagged", flagged=flagged, diagnosis=grid.diagnosis)
        if not flagged:
            shown = grid.problem or (grid.diagnosis.verdict if grid.diagnosis else "no diagnosis")
            why.append(f"{model} was not flagged ({shown})")
    healthy_flagged = healthy.diagnosis is None or healthy.flagged
    models[MUST_PASS] = SelfCheckModel(expected="not flagged", flagged=healthy_flagged, diagnosis=healthy.diagnosis)
    if healthy_flagged:
        flags = sorted(healthy.diagnosis.flags) if healthy.diagnosis else [healthy.problem]
        why.append(f"{MUST_PASS} was flagged ({', '.join(map(str, flags))})")
    record = SelfCheckRecord(skipped=False, models=models, passed=not why)
    if why:
        raise SelfCheckFailed(
            "harness self-check failed: " + "; ".join(why) + ". The grid cannot tell broken from healthy on this "
            "bench with these judges (do its rubrics score the reference reply? are `requires` set? is the prior "
            "floor high?). Use --skip-self-check only if you know why."
        )
    return record


def write_ablation(
    out_dir: Path,
    grid: GridResult,
    *,
    panel: list[str],
    aggregate: str,
    neither: str,
    self_check_record: SelfCheckRecord | dict[str, Any] | None,
    simulated: bool,
) -> Path:
    """OUT/ablation.json: conditions, diagnosis overall and per category, and the self-check record."""
    if grid.diagnosis is None:
        raise RunError(f"{out_dir}: {grid.problem}")
    conditions = {}
    for condition, items in grid.scores.items():
        scored = [s.score for s in items if s.score is not None]
        run = grid.runs.get(condition)
        conditions[condition] = ConditionEntry(
            run_dir=condition,
            n_done=run.done if run is not None else None,
            n_unscored=sum(1 for s in items if s.score is None),
            mean=sum(scored) / len(scored) if scored else None,
        )
    if isinstance(self_check_record, dict):
        self_check_record = SelfCheckRecord.model_validate(self_check_record)
    data = AblationFile(
        model=grid.model,
        simulated=simulated,
        benchmark=grid.data.get("benchmark", "omnivchat"),
        bench=AblationData(**{k: grid.data.get(k) for k in ("name", "version", "n_instances")}),
        panel=panel,
        aggregate=aggregate,
        neither_mode=neither,
        conditions=conditions,
        n_items_used=grid.n_items_used,
        diagnosis=grid.diagnosis,
        categories=dict(grid.categories),
        tasks=dict(grid.tasks),
        self_check=self_check_record,
    )
    return write_model(out_dir / ABLATION_FILE, data)
