"""Running a suite: every (model, benchmark) pair through the commands' own library code (evaluate, the
benchmark's judging pass, its score, the ablation grid, the report) into DIR/<model>/<benchmark>/."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat._files import check_output_dir, write_text_atomic
from omnivchat.benchmarks import (
    Benchmark,
    Judged,
    JudgeOptions,
    RunOptions,
    ScoreOptions,
    ScoreSummary,
    Source,
    check_source,
    evaluate,
    get_benchmark,
    save_scores,
)
from omnivchat.diagnostics import SelfCheckRecord
from omnivchat.diagnostics.grid import check_judges, grid_tasks, run_grid, write_ablation
from omnivchat.errors import Interrupted, OmnivchatError
from omnivchat.judges import RULE_JUDGE, JudgesConfig, check_judges_priced, load_judges
from omnivchat.report import build_report
from omnivchat.routes import Route, Sampling, get_route
from omnivchat.runs import RetryPolicy, RunSummary, Shard, check_priced, run_cost, run_lock
from omnivchat.suite._file import Suite, SuiteError, SuiteModel, is_suite_dir, write_or_check_suite_manifest

ENDS = ("done", "failed", "stopped")
STOPPED = "stopped"
RUN = "run"  # DIR/<model>/<benchmark>/run: the pair's run directory
ABLATION = "ablation"  # DIR/<model>/<benchmark>/ablation: its ablation grid, where asked
REPORT = "report.html"  # DIR/<model>/<benchmark>/report.html: its report
STATUS_FILE = "suite-status.json"  # what the last `suite run` did to each pair, with its reason when it failed


@dataclass
class PairState:
    """One pair as the progress view shows it: its step, its requests sent by this invocation, and why it failed."""

    model: str
    benchmark: str
    step: str = "waiting"  # waiting, eval, judge, score, ablate, report, done, failed
    detail: str = ""
    requests: int = 0
    reason: str | None = None

    @property
    def label(self) -> str:
        return f"{self.model}/{self.benchmark}"


class _Stopped(Exception):
    """The suite was asked to stop (Ctrl-C): the pair takes no further step."""


@dataclass
class SuiteOutcome:
    """What ``suite run`` did: every pair, whether the directory was resumed, and notes for the user."""

    out_dir: Path
    pairs: list[PairState]
    resumed: bool
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[PairState]:
        return [p for p in self.pairs if p.reason is not None]

    @property
    def stopped(self) -> list[PairState]:
        return [p for p in self.pairs if p.step == STOPPED]

    @property
    def requests(self) -> int:
        return sum(p.requests for p in self.pairs)


def panel_of(suite: Suite) -> tuple[JudgesConfig, list[str]]:
    """The judges file's config and the panel's judges (the offline rule judge when none is named)."""
    judges = suite.judges
    config = load_judges(judges.file)
    if judges.panel == RULE_JUDGE or (judges.file is None and judges.panel is None):
        return config, [RULE_JUDGE]
    if judges.panel is not None and judges.panel in config.judges:
        return config, [judges.panel]
    return config, config.panel(judges.panel)


def model_route(name: str, spec: SuiteModel) -> Route:
    """The route of a suite's model entry (its key read as a judges-file entry's is, never stored)."""
    key = spec.key(f"model {name!r}", "suite file")
    route: Route = get_route(
        spec.model,
        api_key=key,
        no_key=key is None,
        thinking=spec.thinking,
        timeout_s=spec.timeout_s,
        **spec.settings_overrides(),
    )
    return route


def model_sampling(spec: SuiteModel) -> Sampling:
    """Only what the entry sets: the benchmark's protocol sampling stays as `eval` would send it."""
    given = {f: getattr(spec, f) for f in ("temperature", "max_tokens") if f in spec.model_fields_set}
    return Sampling(**given)


def ablated_task(tasks: tuple[str, ...] | None) -> str | None:
    """The task an ablation grid diagnoses: the benchmark's one task when the suite names one, else all, pooled."""
    return tasks[0] if tasks is not None and len(tasks) == 1 else None


def server_of(route: Route) -> str:
    """Which server a route sends to: pairs on one server run one after another, so they share its limit."""
    base = getattr(route.settings, "base_url", None)
    return str(base).rstrip("/") if base else f"{route.settings.route}:{route.model_id}"


def _spent(directory: Path) -> float:
    """What a run directory (or each condition run below an ablation directory) has cost, unknown costs counted
    at their estimates, as a budget counts them."""
    total = 0.0
    for store in directory.glob("**/store.sqlite") if directory.is_dir() else []:
        cost = run_cost(store.parent).total
        total += cost.spent_usd + cost.unknown_estimate_usd
    return total


def _failure(summary: RunSummary, what: str) -> str | None:
    """Why a run or judging pass is not complete, in one line; None when it is."""
    if summary.budget is not None and summary.budget.stopped and summary.not_sent:
        return f"budget reached: {summary.not_sent} {what} not sent"
    if summary.complete:
        return None
    kind = max(summary.failures, key=lambda k: summary.failures[k]) if summary.failures else None
    first = f" ({kind}: {summary.first_errors.get(kind, '')[:200]})" if kind else ""
    return f"{summary.failed} of {summary.total} {what} failed{first}"


@dataclass
class _Suite:
    """The checked suite, ready to run."""

    suite: Suite
    out_dir: Path
    shard: Shard | None
    benchmarks: dict[str, tuple[Benchmark[Any], Any, Source]]
    config: JudgesConfig
    members: list[str]
    on_change: Callable[[PairState], None]
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)  # set: no pair starts another step

    def budget_for(self, directory: Path) -> float | None:
        """The whole suite's budget as this directory's own limit: what it has spent plus what the suite has left."""
        if self.suite.budget_usd is None:
            return None
        left = self.suite.budget_usd - _spent(self.out_dir)
        return _spent(directory) + max(0.0, left)

    def show(self, pair: PairState, step: str, detail: str = "") -> None:
        if step not in ENDS and self.stop.is_set():
            raise _Stopped
        with self.lock:
            pair.step, pair.detail = step, detail
        self.on_change(pair)

    def run_pair(self, pair: PairState) -> None:
        spec = self.suite.models[pair.model]
        benchmark, dataset, source = self.benchmarks[pair.benchmark]
        entry = self.suite.benchmarks[pair.benchmark]
        pair_dir = self.out_dir / pair.model / pair.benchmark
        run_dir = pair_dir / RUN
        problems: list[str] = []
        retry = RetryPolicy(max_attempts=self.suite.max_attempts)
        try:
            self.show(pair, "eval")
            options = RunOptions(
                sampling=model_sampling(spec),
                system_prompt=entry.prompts,
                concurrency=spec.concurrency,
                limit=entry.limit,
                shard=self.shard,
            )
            summary = evaluate(
                benchmark,
                dataset,
                source,
                model_route(pair.model, spec),
                run_dir,
                options,
                retry=retry,
                progress=False,
                budget_usd=self.budget_for(run_dir),
            )
            pair.requests += summary.attempts
            if (problem := _failure(summary, "items")) is not None:
                problems.append(problem)
            asked = [m for m in self.members if m != RULE_JUDGE]
            if isinstance(benchmark, Judged) and asked and summary.done:
                self.show(pair, "judge", f"{summary.done}/{summary.total} replies")
                judged = benchmark.judge(
                    None,
                    run_dir,
                    JudgeOptions(
                        config=self.config,
                        judges_file=self.suite.judges.file,
                        members=asked,
                        max_attempts=self.suite.max_attempts,
                        progress=False,
                        budget_usd=self.budget_for(run_dir),
                    ),
                )
                for kind, s in judged.summaries.items():
                    pair.requests += s.attempts
                    if (problem := _failure(s, f"{kind} verdicts")) is not None:
                        problems.append(problem)
            self.show(pair, "score")
            scoring = ScoreOptions(config=self.config, panel=self.members, aggregate=self.suite.judges.aggregate)
            if isinstance(benchmark, ScoreSummary):  # its own scores.json (the native Table 1 row), as `score` writes
                benchmark.score_summary(run_dir, scoring)
            else:
                save_scores(run_dir, benchmark.score(None, run_dir, scoring))
            reported = [run_dir]
            if entry.ablate and self.shard is None:
                self.show(pair, "ablate")
                try:
                    reported.append(self._ablate(pair, spec, benchmark, dataset, source, pair_dir / ABLATION))
                except OmnivchatError as err:  # the run's own report is still made
                    problems.append("ablation: " + " ".join(str(err).split()))
            self.show(pair, "report")
            build_report(reported, pair_dir / REPORT)
        except OmnivchatError as err:  # this pair stops here; the others run on
            problems.append(" ".join(str(err).split()))  # one line in the list of failed pairs
        except _Stopped:  # asked to stop: what is done is kept, a rerun resumes the rest
            self.show(pair, STOPPED, "stopped before its next step: rerun to resume")
            return
        with self.lock:
            pair.reason = "; ".join(problems) if problems else None
        self.show(pair, "failed" if problems else "done", f"{pair.requests} requests sent")

    def _ablate(
        self, pair: PairState, spec: SuiteModel, benchmark: Benchmark[Any], dataset: Any, source: Source, out: Path
    ) -> Path:
        """The pair's ablation grid, as `omnivchat ablate --skip-self-check` runs it (resumed on a rerun)."""
        grid = run_grid(
            dataset,
            lambda: model_route(pair.model, spec),
            out,
            panel=self.members,
            config=self.config,
            aggregate=self.suite.judges.aggregate,
            benchmark=benchmark,
            source=source,
            task=ablated_task(self.suite.benchmarks[pair.benchmark].tasks),
            system_prompt=source.prompts,
            sampling=model_sampling(spec),
            concurrency=spec.concurrency,
            progress=False,
            manifest_extra={"ablation": {"self_check": "skipped"}},
        )
        pair.requests += sum(run.attempts for run in grid.runs.values() if run is not None)
        write_ablation(
            out,
            grid,
            panel=self.members,
            aggregate=self.suite.judges.aggregate,
            neither="blank",
            self_check_record=SelfCheckRecord(skipped=True),
            simulated=model_route(pair.model, spec).settings.route == "sim",
        )
        return out


def prepare_suite(
    suite: Suite, out_dir: Path, *, shard: Shard | None = None, on_change: Callable[[PairState], None] | None = None
) -> _Suite:
    """Everything checked before anything is written or sent: the output directory, every benchmark's data, every
    model's route and key, the judges and, with a budget, every price."""
    out_dir = Path(out_dir)
    check_output_dir(out_dir, ours=is_suite_dir, kind="a suite directory")
    loaded = {}
    for name, entry in suite.benchmarks.items():
        benchmark = get_benchmark(entry.benchmark)
        source = Source(
            data=entry.data,
            media=entry.media,
            tasks=entry.tasks,
            limit=entry.limit,
            prompts=entry.prompts,
            media_roots=entry.media_roots,
            options=dict(entry.options),
        )
        check_source(benchmark, source)
        dataset = benchmark.load(source)
        if entry.ablate:  # the grid's tasks are checked before anything is sent
            try:
                grid_tasks(benchmark, dataset, task=ablated_task(entry.tasks))
            except OmnivchatError as err:
                raise SuiteError(
                    f'benchmarks.{name}: {err} (in the suite: tasks = ["TASK"] names the one task to ablate)'
                ) from None
        loaded[name] = (benchmark, dataset, source)
    for name, spec in suite.models.items():
        route = model_route(name, spec)
        if suite.budget_usd is not None:
            check_priced(route, f" (model {name!r} of the suite)")
    config, members = panel_of(suite)
    asked = [m for m in members if m != RULE_JUDGE]
    check_judges(config, asked)
    if suite.budget_usd is not None and asked:
        check_judges_priced([config.judges[m] for m in asked])
    return _Suite(suite, out_dir, shard, loaded, config, members, on_change or (lambda _pair: None))


def run_suite(
    suite: Suite,
    out_dir: Path,
    *,
    shard: Shard | None = None,
    on_change: Callable[[PairState], None] | None = None,
    stop: threading.Event | None = None,
) -> SuiteOutcome:
    """Run every (model, benchmark) pair of ``suite`` into ``out_dir``, resuming what is done. Pairs on one server
    run one after another (its concurrency limit is shared); servers run side by side, except under a budget
    (then one pair at a time, so that the budget holds). A pair that fails is recorded with its reason and the
    others run on. A changed suite is refused naming what changed (:class:`SuiteChanged`);
    a second run on the same ``out_dir`` while this one runs fails at once naming it (:class:`RunLocked`).

    ``stop`` set (or Ctrl-C): no pair starts another step; the steps in flight finish (their stores keep every
    attempt), the pairs left are marked stopped, and a rerun resumes them. Ctrl-C then raises
    :class:`omnivchat.errors.Interrupted`."""
    ready = prepare_suite(suite, out_dir, shard=shard, on_change=on_change)
    if stop is not None:
        ready.stop = stop
    # One suite run per directory: a second would run every pair again beside the first and both would write
    # suite-status.json. Taken after the checks (nothing written yet), before the manifest.
    with run_lock(ready.out_dir, "suite run"):
        return _run_pairs(ready, suite, shard)


def _run_pairs(ready: _Suite, suite: Suite, shard: Shard | None) -> SuiteOutcome:
    resumed = write_or_check_suite_manifest(ready.out_dir, suite, shard.label if shard is not None else None)
    pairs = [PairState(m, b) for m in suite.models for b in suite.benchmarks]
    groups: dict[str, list[PairState]] = {}
    for pair in pairs:
        server = server_of(model_route(pair.model, suite.models[pair.model]))
        groups.setdefault(server, []).append(pair)
    for pair in pairs:
        ready.on_change(pair)

    def run_group(group: list[PairState]) -> None:
        for pair in group:
            if ready.stop.is_set():
                ready.show(pair, STOPPED, "not started: rerun to resume")
            else:
                ready.run_pair(pair)

    workers = 1 if suite.budget_usd is not None else min(len(groups), 8)
    interrupted = False
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="suite") as pool:
        futures = [pool.submit(run_group, g) for g in groups.values()]
        try:
            for future in futures:
                future.result()  # anything but a user-facing error is a bug: it keeps its traceback
        except KeyboardInterrupt:  # the worker threads never see it: they are told to stop
            ready.stop.set()
            interrupted = True
            for future in futures:
                future.result()
    notes: list[str] = []
    if shard is not None and any(b.ablate for b in suite.benchmarks.values()):
        notes.append("ablation grids are not run on a shard: merge the shards (`omnivchat runs merge`) and ablate that")
    outcome = SuiteOutcome(ready.out_dir, pairs, resumed, notes)
    write_status(outcome)
    if interrupted:
        done = sum(p.step == "done" for p in pairs)
        raise Interrupted(
            f"interrupted: {done} of {len(pairs)} pairs done, {len(outcome.stopped)} stopped (every attempt kept); "
            "rerun the same command to resume"
        )
    return outcome


def write_status(outcome: SuiteOutcome) -> Path:
    """DIR/suite-status.json: each pair's last step and, when it failed, why."""
    import json

    rows = [{"model": p.model, "benchmark": p.benchmark, "step": p.step, "reason": p.reason} for p in outcome.pairs]
    return write_text_atomic(outcome.out_dir / STATUS_FILE, json.dumps({"pairs": rows}, indent=2) + "\n")
