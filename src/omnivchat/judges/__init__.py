"""Judges: rubric and style grading with LLM judges and panels, the offline rule judge, verdict parsing."""

from omnivchat.judges._agreement import AgreementReport, Judgment, agreement_report, render_agreement
from omnivchat.judges._config import RULE_JUDGE, JudgesConfig, JudgesFileError, JudgeSpec, load_judges
from omnivchat.judges._engine import Job, VerdictTask, ask, hits_schema, judge_route, response_format, stored_verdict
from omnivchat.judges._requests import STYLE_REQUIREMENTS, JudgePrompts, aliases_for, rubric_request, style_request
from omnivchat.judges._rule import rule_verdict
from omnivchat.judges._run import (
    ItemScore,
    JudgeReport,
    collect_judgments,
    collect_scores,
    judge_run,
    judge_run_async,
    panel_hits_majority,
    run_bench,
)
from omnivchat.judges._scores import (
    BENCHMARK_SCORES_SCHEMA,
    SCORES_FILE,
    item_records,
    write_benchmark_scores,
    write_scores,
    write_scores_file,
)
from omnivchat.judges._verdict import parse_verdict

__all__ = [
    "BENCHMARK_SCORES_SCHEMA",
    "RULE_JUDGE",
    "SCORES_FILE",
    "STYLE_REQUIREMENTS",
    "AgreementReport",
    "ItemScore",
    "Job",
    "JudgePrompts",
    "JudgeReport",
    "JudgeSpec",
    "JudgesConfig",
    "JudgesFileError",
    "Judgment",
    "VerdictTask",
    "agreement_report",
    "aliases_for",
    "ask",
    "collect_judgments",
    "collect_scores",
    "hits_schema",
    "item_records",
    "judge_route",
    "judge_run",
    "judge_run_async",
    "load_judges",
    "panel_hits_majority",
    "parse_verdict",
    "render_agreement",
    "response_format",
    "rubric_request",
    "rule_verdict",
    "run_bench",
    "stored_verdict",
    "style_request",
    "write_benchmark_scores",
    "write_scores",
    "write_scores_file",
]
