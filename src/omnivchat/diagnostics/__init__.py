"""Diagnostics: the modality ablation grid, the harness self-check and audio-track route checks, and their typed
files (ablation.json, route-check results)."""

from omnivchat.diagnostics._files import (
    ABLATION_FILE,
    ABLATION_SCHEMA,
    ROUTE_CHECK_SCHEMA,
    AblationFile,
    ConditionEntry,
    RouteCheck,
    RouteCheckRecord,
    SelfCheckModel,
    SelfCheckRecord,
    read_ablation,
    read_route_check,
)
from omnivchat.diagnostics.ablation import CONDITIONS, FLAGS, METRICS, Diagnosis, diagnose

__all__ = [
    "ABLATION_FILE",
    "ABLATION_SCHEMA",
    "CONDITIONS",
    "FLAGS",
    "METRICS",
    "ROUTE_CHECK_SCHEMA",
    "AblationFile",
    "ConditionEntry",
    "Diagnosis",
    "RouteCheck",
    "RouteCheckRecord",
    "SelfCheckModel",
    "SelfCheckRecord",
    "diagnose",
    "read_ablation",
    "read_route_check",
]
