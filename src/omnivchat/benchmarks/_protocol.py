"""The Benchmark protocol: what a benchmark must say for the shared machinery (run loop, store, judge engine,
ablation grid, reports) to run it, and nothing more.

A benchmark loads and validates its items, builds the request of an item, scores its items and aggregates them
into its own metrics and table, and declares the chance level of its tasks for the ablation grid; a judged one
also hands the judge engine its verdict tasks. Everything else is shared: the manifest check and resume
(``runs.run_tasks``), the one writer lock, the judge engine (``judges.ask``), the status, export and scores.json
of a run directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from omnivchat.judges import Aggregate, ItemResult, JudgesConfig, Scores
from omnivchat.routes import ChatRequest, ReplyAudio, Route, Sampling
from omnivchat.runs import Manifest, RunStatus, Shard

__all__ = [
    "Benchmark",
    "Declared",
    "DeclaresItems",
    "ExportExtras",
    "ExportsMore",
    "Item",
    "ItemResult",
    "JudgeOptions",
    "JudgeOutcome",
    "Judged",
    "MediaRoots",
    "OtherDirectories",
    "RunOptions",
    "ScoreOptions",
    "ScoreReport",
    "ScoreSummary",
    "ScoreTable",
    "Scores",
    "Source",
    "SpokenReplies",
    "StatedChance",
    "TaskSummary",
]

D = TypeVar("D")
D_contra = TypeVar("D_contra", contravariant=True)


@dataclass(frozen=True)
class Source:
    """Where a benchmark's data is. ``data`` is what every benchmark takes (a bench directory, an annotations
    folder, a JSON file); the rest only where a benchmark reads it."""

    data: Path
    media: Path | None = None
    tasks: tuple[str, ...] | None = None
    limit: int | None = None
    prompts: Path | None = None  # the benchmark's prompt file(s): a system prompt, or prompt cards
    media_roots: tuple[Path, ...] = ()  # folders media may also come from, besides the data's own (byo, hf)
    options: dict[str, Any] = field(default_factory=dict)  # the benchmark's own (hf: columns, split): OwnOptions


@dataclass(frozen=True)
class Item:
    """One model request of a benchmark: ``key`` is its id in the run store, ``task`` the store kind, ``meta``
    what the store keeps with it besides its outcome."""

    key: str
    task: str
    record: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunOptions:
    """How a run is made: sampling, the media transform of an ablation condition, and what the manifest adds."""

    sampling: Sampling = field(default_factory=Sampling)
    system_prompt: Path | None = None
    condition: str = "both"
    transform: Callable[[Path], Path | None] | None = None
    concurrency: int | None = None
    limit: int | None = None
    manifest_extra: dict[str, Any] = field(default_factory=dict)
    simulated: bool = False  # set from the route: only a simulated model is told the answer (its oracle)
    reply_audio: ReplyAudio | None = None  # ask every request for a spoken reply too (recorded in the manifest)
    shard: Shard | None = None  # run only this part of the items, by their keys (recorded in the manifest)


@dataclass
class ScoreOptions:
    """How a run is scored: the judges (a file, or the offline rule judge), the panel and how it aggregates."""

    config: JudgesConfig = field(default_factory=JudgesConfig)
    panel: list[str] = field(default_factory=list)
    aggregate: Aggregate = "mean"
    data: Path | None = None  # the run's data, when not the one it recorded (``score --bench``)
    # The benchmark's own (SocialOmni: judging; byo, hf: asr, asr_wer; native: style_judge, delivered_only).
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScoreTable:
    """A table of figures for people: its title, columns and rows (as text), and a line under it."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    incomplete: bool = False  # the figures are not the whole benchmark's: the title says so


@dataclass
class ScoreReport:
    """What ``omnivchat score`` shows of a run of a :class:`ScoreSummary` benchmark, in order: its tables, its
    lines, where scores.json went (or why it did not), the unscored items by kind, its notes, and why it is
    incomplete."""

    name: str  # what the figures are of (the bench's name), written with ``values`` by ``score -o``
    values: dict[str, Any]
    tables: list[ScoreTable] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    written: Path | None = None
    not_written: str | None = None  # why RUN_DIR/scores.json could not be written (read-only storage)
    unscored: dict[str, int] = field(default_factory=dict)  # unscored items by kind
    first_unscored: dict[str, str] = field(default_factory=dict)  # kind -> its first item and reason
    notes: list[str] = field(default_factory=list)
    incomplete: str | None = None


@dataclass
class JudgeOptions:
    """What a judging pass uses: the judges and panel, the benchmark's judging inputs, and where verdicts go."""

    config: JudgesConfig = field(default_factory=JudgesConfig)
    data: Path | None = None  # the run's data, when not the one it recorded (``judge --data``)
    judges_file: Path | None = None
    panel: str | None = None
    members: list[str] | None = None  # the judges to ask, named one by one (instead of a panel's name)
    only_judge: str | None = None
    prompt: Path | None = None  # the judge's prompt, replaced (native, SocialOmni)
    max_attempts: int = 4
    progress: bool = True
    budget_usd: float | None = None  # the run directory's total spending limit (docs/costs.md)
    dry_run: bool = False  # send nothing: the outcome carries the estimate (``JudgeOutcome.dry_run``)
    no_key: bool = False  # every judge sends no key (``--no-key``); ``config`` is already keyless then
    # The benchmark's own (SocialOmni: contexts, output; native: style_judge, style_prompt, aliases).
    options: dict[str, Any] = field(default_factory=dict)


class JudgeOutcome(BaseModel):
    """What a judging pass did: per judge task the requests, with its failures counted apart."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    where: Path
    summaries: dict[str, Any] = Field(default_factory=dict, description="store kind -> RunSummary")
    notes: list[str] = Field(default_factory=list, description="What was not judged, and why.")
    complete: bool = True
    dry_run: Any = Field(default=None, description="A dry run's estimate (omnivchat.runs.DryRun); None otherwise.")


@runtime_checkable
class Benchmark(Protocol[D]):
    """A benchmark as the shared machinery sees it, generic over its data ``D`` (what ``load`` gives); one module
    implements it and registers it by name. What only some benchmarks do is an optional protocol of its own:
    :class:`Judged` (verdicts through the judge engine), :class:`TaskSummary` (a file kept up to date per task),
    :class:`ScoreSummary` (a table of its own for ``omnivchat score``), :class:`StatedChance`, :class:`MediaRoots`,
    :class:`SpokenReplies`, :class:`DeclaresItems`, :class:`ExportsMore`, :class:`OtherDirectories`,
    :class:`OwnOptions` (options of its own, validated by its pydantic model before any work; a
    benchmark without it takes none)."""

    name: str
    """The registry name, recorded in the manifest of every run (``omnivchat benchmarks`` lists them)."""
    title: str
    """One line for people: what it measures, and its source."""
    protocols: tuple[str, ...]
    """The manifest protocols of the directories it writes (its runs first): how a directory is recognised."""
    sampling: Mapping[str, Any]
    """The sampling its protocol fixes (a user's flags override it and the manifest records the result)."""

    def chance(self, task: str) -> float:
        """The score of guessing on ``task``: the prior-floor reference of the ablation grid."""
        ...

    def load(self, source: Source) -> D:
        """The benchmark's data, validated completely before any request (an OmnivchatError lists every
        problem with its file and line)."""
        ...

    def items(self, dataset: D, options: RunOptions) -> list[Item]:
        """The model requests of a run, in order (``options.limit`` for a smoke run), each with the metadata the
        store keeps beside its outcome (``Item.meta``: its subcategory, language, gold answer...)."""
        ...

    def manifest(self, dataset: D, route: Route, options: RunOptions) -> Manifest | dict[str, Any]:
        """The identity of a run: what, if changed, makes it another run (with ``benchmark`` set to its name);
        a :class:`omnivchat.runs.Manifest` (or its dict), written as manifest.json."""
        ...

    def request(self, dataset: D, item: Item, options: RunOptions, work_dir: Path, meta: dict[str, Any]) -> ChatRequest:
        """The request of one item: media read and transformed here (a MediaError fails that item alone);
        ``meta`` is stored with the item (the request may add what it learnt, e.g. the sha256 of a cut clip)."""
        ...

    def score(self, dataset: D | None, run_dir: Path, options: ScoreOptions) -> Scores:
        """Every item's score and the benchmark's metrics, from the run's store (no request is sent); ``dataset``
        None: the data the run recorded, where the benchmark needs it."""
        ...


@runtime_checkable
class Judged(Protocol[D_contra]):
    """A benchmark whose replies are graded by judges: it hands the judge engine its verdict tasks."""

    def judge(self, dataset: D_contra | None, run_dir: Path, options: JudgeOptions) -> JudgeOutcome:
        """Ask the judges for every missing verdict of the run through the judge engine (stored ones reused);
        ``dataset`` None: the data the run recorded (``options.data`` when given)."""
        ...


@runtime_checkable
class TaskSummary(Protocol):
    """A benchmark that keeps a summary file of a run up to date."""

    def after_task(self, run_dir: Path, task: str) -> None:
        """Called after each task of a run, and when a run stops (``task`` ""): a stopped run still says what is
        missing."""
        ...


@runtime_checkable
class SpokenReplies(Protocol):
    """A benchmark that scores a spoken reply (``eval --reply-audio``) from its ASR transcript, through
    :class:`omnivchat.benchmarks.SpokenScoring` (byo, hf); every other one is refused a spoken run."""

    scores_spoken_replies: Literal[True]


@runtime_checkable
class ScoreSummary(Protocol):
    """A benchmark whose scored run ``omnivchat score`` shows as a table of its own (the native one: its Table 1
    row under a judge panel, as the paper prints it) instead of its metrics in words."""

    def score_summary(self, run_dir: Path, options: ScoreOptions) -> ScoreReport:
        """Score the run (no request is sent), write RUN_DIR/scores.json, and say what to show."""
        ...


@runtime_checkable
class StatedChance(Protocol):
    """A benchmark that states its tasks' chance levels in words (``omnivchat benchmarks``), where ``chance`` of
    the shared task names (``mcK``, ``open``) would not say them."""

    chance_levels: str


@runtime_checkable
class MediaRoots(Protocol):
    """A benchmark that confines its items' media to its data's folder and the folders given (``--media-root``:
    byo, hf)."""

    takes_media_roots: Literal[True]


@runtime_checkable
class ReadsSource(Protocol):
    """A benchmark that reads only some of the shared :class:`Source` fields beside ``data`` (``media``: --media,
    ``tasks``: --tasks): one it does not read, given, is refused rather than silently ignored. A benchmark
    without it reads both."""

    reads_source: frozenset[str]


@dataclass
class Declared:
    """The items a run declared, by task (store kind): their keys, or how many there are (a run whose manifest
    lists no keys: the native one counts against its bench's instances, and its export holds the stored ones)."""

    tasks: dict[str, list[str] | int]
    status: dict[str, Any] = field(default_factory=dict)
    """:class:`omnivchat.runs.RunStatus` fields the benchmark states of itself (kind, bench, model, route, prompts,
    limit...); ``kind`` "run": the one task's counts are the status's ``instances`` (a native run)."""


@runtime_checkable
class DeclaresItems(Protocol):
    """A benchmark whose manifest does not list its items as ``items`` (key -> task): it says what the run
    declared (the shared status and export count against it)."""

    def declared(self, run_dir: Path) -> Declared:
        """The run's declared items and what its status says of itself; an error naming the directory when it is
        not one of this benchmark's runs."""
        ...


@dataclass
class ExportExtras:
    """What a benchmark adds to the shared export (schema omnivchat-benchmark-export-v1) of one of its runs."""

    status: str | None = None
    """Its own verdict (``complete``, ``incomplete``, ``scored_with_request_failures``); None: complete when every
    declared item has a reply."""
    reasons: list[str] = field(default_factory=list)
    """Why it is incomplete, said plainly (shown when the export is refused)."""
    meta: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(task, key) -> what the record's ``meta`` adds (a parsed prediction, judge scores)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Run-level figures of its own: the export's ``extra``."""


@runtime_checkable
class ExportsMore(Protocol):
    """A benchmark whose export carries more than its records' replies (a parsed prediction per record, its
    metrics), or decides its own completeness (SocialOmni: judged How answers)."""

    def export_extras(self, run_dir: Path, judging: Path | None) -> ExportExtras:
        """What the export of ``run_dir`` adds (``judging``: the separate judging directory given, if any)."""
        ...


@runtime_checkable
class OtherDirectories(Protocol):
    """A benchmark that writes directories that are not runs (SocialOmni's judging directory): their status is
    its own."""

    def directory_status(self, run_dir: Path) -> RunStatus | None:
        """The status of such a directory; None for a run directory (the shared status reads it)."""
        ...
