"""Diagnostics: the modality ablation grid, the harness self-check and audio-track route checks, the paired
comparison of two runs, and their typed files (ablation.json, route-check results, comparison.json)."""

from omnivchat.diagnostics._files import (
    ABLATION_FILE,
    ABLATION_SCHEMA,
    ROUTE_CHECK_SCHEMA,
    SELF_CHECK_DIR,
    AblationFile,
    ConditionEntry,
    RouteCheck,
    RouteCheckRecord,
    SelfCheckModel,
    SelfCheckRecord,
    read_ablation,
    read_route_check,
    self_check_grid_dir,
)
from omnivchat.diagnostics.ablation import CONDITIONS, FLAGS, METRICS, Diagnosis, diagnose
from omnivchat.diagnostics.compare import (
    COMPARISON_FILE,
    COMPARISON_SCHEMA,
    CompareError,
    ComparisonFile,
    compare_runs,
    read_comparison,
    write_comparison,
)

__all__ = [
    "ABLATION_FILE",
    "ABLATION_SCHEMA",
    "COMPARISON_FILE",
    "COMPARISON_SCHEMA",
    "CONDITIONS",
    "FLAGS",
    "METRICS",
    "ROUTE_CHECK_SCHEMA",
    "SELF_CHECK_DIR",
    "AblationFile",
    "CompareError",
    "ComparisonFile",
    "ConditionEntry",
    "Diagnosis",
    "RouteCheck",
    "RouteCheckRecord",
    "SelfCheckModel",
    "SelfCheckRecord",
    "compare_runs",
    "diagnose",
    "read_ablation",
    "read_comparison",
    "read_route_check",
    "self_check_grid_dir",
    "write_comparison",
]
