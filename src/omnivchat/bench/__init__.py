"""Benchmark data model, taxonomy and bench directories."""

from omnivchat.bench._hits import HitsError, HitsRecord, load_hits
from omnivchat.bench._inspection import INSPECTION_FILE, InspectionDecision, rejected_over_time
from omnivchat.bench._io import (
    BENCH_FILE,
    INSTANCES_FILE,
    Bench,
    BenchError,
    BenchInfo,
    MediaCheck,
    inspection_decisions,
    inspection_history,
    load_bench,
    save_bench,
)
from omnivchat.bench._model import Check, Criterion, Instance, Turn
from omnivchat.bench._taxonomy import (
    CATEGORIES,
    GROUPS,
    MULTI_TURN_EXTENSIONS,
    SUBCATEGORIES,
    Category,
    Group,
    Subcategory,
    resolve_subcategory,
)

__all__ = [
    "BENCH_FILE",
    "CATEGORIES",
    "GROUPS",
    "INSPECTION_FILE",
    "INSTANCES_FILE",
    "MULTI_TURN_EXTENSIONS",
    "SUBCATEGORIES",
    "Bench",
    "BenchError",
    "BenchInfo",
    "Category",
    "Check",
    "Criterion",
    "Group",
    "HitsError",
    "HitsRecord",
    "InspectionDecision",
    "Instance",
    "MediaCheck",
    "Subcategory",
    "Turn",
    "inspection_decisions",
    "inspection_history",
    "load_bench",
    "load_hits",
    "rejected_over_time",
    "resolve_subcategory",
    "save_bench",
]
