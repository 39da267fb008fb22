"""Suites: many models on many benchmarks in one resumable command (``omnivchat suite run``), and their
leaderboard (``omnivchat suite report``).

A suite file (TOML, :func:`load_suite`) names models, benchmarks, the judge panel and an optional total budget.
:func:`run_suite` runs every (model, benchmark) pair into DIR/<model>/<benchmark>/ through the commands' own
library code (evaluate, the benchmark's judging pass and score, the ablation grid, the report); DIR/suite.json
keeps the suite, so a rerun resumes only the same suite. The leaderboard reads the pairs' runs back.
"""

from omnivchat.suite._board import (
    LEADERBOARD_SCHEMA,
    METRIC,
    Cell,
    Leaderboard,
    ModelCost,
    Neighbour,
    build_leaderboard,
    render_csv,
    render_leaderboard,
    write_leaderboard,
)
from omnivchat.suite._file import (
    SUITE_MANIFEST,
    Suite,
    SuiteBenchmark,
    SuiteChanged,
    SuiteError,
    SuiteJudges,
    SuiteModel,
    is_suite_dir,
    load_suite,
    read_suite_manifest,
)
from omnivchat.suite._run import ABLATION, REPORT, RUN, STATUS_FILE, PairState, SuiteOutcome, prepare_suite, run_suite

__all__ = [
    "ABLATION",
    "LEADERBOARD_SCHEMA",
    "METRIC",
    "REPORT",
    "RUN",
    "STATUS_FILE",
    "SUITE_MANIFEST",
    "Cell",
    "Leaderboard",
    "ModelCost",
    "Neighbour",
    "PairState",
    "Suite",
    "SuiteBenchmark",
    "SuiteChanged",
    "SuiteError",
    "SuiteJudges",
    "SuiteModel",
    "SuiteOutcome",
    "build_leaderboard",
    "is_suite_dir",
    "load_suite",
    "prepare_suite",
    "read_suite_manifest",
    "render_csv",
    "render_leaderboard",
    "run_suite",
    "write_leaderboard",
]
