"""Benchmarks: the :class:`Benchmark` protocol, the registry, and running any registered benchmark.

A benchmark is one module behind the protocol (load and validate items; build the request of an item; parse a
reply; score; aggregate into its metrics; declare its chance level), registered by name with :func:`register`.
omnivchat ships ``omnivchat`` (the native bench format, :mod:`omnivchat.benchmarks.native`), ``socialomni``
(:mod:`omnivchat.benchmarks.socialomni`) and ``byo`` (bring-your-own JSON, :mod:`omnivchat.benchmarks.byo`). The
run loop, the store, the judge engine, the writer lock, status and export are shared.
"""

# The benchmarks omnivchat ships register themselves when their modules load.
from omnivchat.benchmarks import byo, native, socialomni
from omnivchat.benchmarks._generic import BenchmarkExport, TaskRecord, task_export, task_status
from omnivchat.benchmarks._protocol import (
    Benchmark,
    Item,
    ItemResult,
    JudgeOptions,
    JudgeOutcome,
    RunOptions,
    ScoreOptions,
    Scores,
    Source,
)
from omnivchat.benchmarks._registry import (
    UnknownBenchmark,
    benchmark_of,
    get_benchmark,
    read_run_manifest,
    register,
    registered,
)
from omnivchat.benchmarks._run import evaluate

__all__ = [
    "Benchmark",
    "BenchmarkExport",
    "Item",
    "ItemResult",
    "JudgeOptions",
    "JudgeOutcome",
    "RunOptions",
    "ScoreOptions",
    "Scores",
    "Source",
    "TaskRecord",
    "UnknownBenchmark",
    "benchmark_of",
    "byo",
    "evaluate",
    "get_benchmark",
    "native",
    "read_run_manifest",
    "register",
    "registered",
    "socialomni",
    "task_export",
    "task_status",
]
