"""Benchmarks: the :class:`Benchmark` protocol, the registry, and running any registered benchmark.

A benchmark is one module behind the protocol (load and validate items; build the request of an item; parse a
reply; score; aggregate into its metrics; declare its chance level), registered by name with :func:`register`.
omnivchat ships ``omnivchat`` (the native bench format, :mod:`omnivchat.benchmarks.native`), ``socialomni``
(:mod:`omnivchat.benchmarks.socialomni`), ``byo`` (bring-your-own JSON, :mod:`omnivchat.benchmarks.byo`), ``hf``
(a local Hugging Face dataset with a column mapping, :mod:`omnivchat.benchmarks.hf`), and the public omni
benchmarks ``worldsense``, ``dailyomni``, ``omnibench``, ``avodyssey``, ``videomme`` and ``lvomnibench`` (each a
reader of its release on :mod:`omnivchat.benchmarks.mcq`; docs/benchmarks.md). The run loop, the store, the
judge engine, the writer lock, status and export are shared. Other packages add benchmarks through the
entry-point group ``omnivchat.benchmarks`` (docs/benchmarks.md).
"""

# The benchmarks omnivchat ships register themselves when their modules load.
from omnivchat.benchmarks import (
    avodyssey,
    byo,
    dailyomni,
    hf,
    lvomnibench,
    native,
    omnibench,
    socialomni,
    videomme,
    worldsense,
)
from omnivchat.benchmarks._generic import (
    BenchmarkExport,
    TaskRecord,
    export,
    read_export,
    save_scores,
    status,
)
from omnivchat.benchmarks._options import (
    BenchmarkOptionError,
    OptionsModel,
    OwnOptions,
    check_options,
    check_source,
    read_options,
)
from omnivchat.benchmarks._protocol import (
    Benchmark,
    Declared,
    DeclaresItems,
    ExportExtras,
    ExportsMore,
    Item,
    ItemResult,
    Judged,
    JudgeOptions,
    JudgeOutcome,
    MediaRoots,
    OtherDirectories,
    ReadsSource,
    RunOptions,
    ScoreOptions,
    ScoreReport,
    Scores,
    ScoreSummary,
    ScoreTable,
    Source,
    SpokenReplies,
    StatedChance,
    TaskSummary,
)
from omnivchat.benchmarks._registry import (
    ENTRY_POINTS,
    BenchmarkPluginError,
    UnknownBenchmark,
    benchmark_of,
    get_benchmark,
    load_plugins,
    package_of,
    read_run_manifest,
    register,
    registered,
)
from omnivchat.benchmarks._run import estimate, evaluate
from omnivchat.benchmarks._shards import MergeError, MergeSummary, merge_runs
from omnivchat.benchmarks._spoken import SPOKEN_METRIC, SpokenScoring, TranscribeSummary, transcribe_run

__all__ = [
    "ENTRY_POINTS",
    "SPOKEN_METRIC",
    "Benchmark",
    "BenchmarkExport",
    "BenchmarkOptionError",
    "BenchmarkPluginError",
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
    "MergeError",
    "MergeSummary",
    "OptionsModel",
    "OtherDirectories",
    "OwnOptions",
    "ReadsSource",
    "RunOptions",
    "ScoreOptions",
    "ScoreReport",
    "ScoreSummary",
    "ScoreTable",
    "Scores",
    "Source",
    "SpokenReplies",
    "SpokenScoring",
    "StatedChance",
    "TaskRecord",
    "TaskSummary",
    "TranscribeSummary",
    "UnknownBenchmark",
    "avodyssey",
    "benchmark_of",
    "byo",
    "check_options",
    "check_source",
    "dailyomni",
    "estimate",
    "evaluate",
    "export",
    "get_benchmark",
    "hf",
    "load_plugins",
    "lvomnibench",
    "merge_runs",
    "native",
    "omnibench",
    "package_of",
    "read_export",
    "read_options",
    "read_run_manifest",
    "register",
    "registered",
    "save_scores",
    "socialomni",
    "status",
    "transcribe_run",
    "videomme",
    "worldsense",
]
