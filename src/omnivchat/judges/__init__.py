"""Judges: rubric and style grading with LLM judges and panels, the offline rule judge, verdict parsing; the
scores a benchmark computes and the scores.json files. The native benchmark's judging pass and Table 1 scores are
its own (:mod:`omnivchat.benchmarks.native`)."""

from typing import TYPE_CHECKING

from omnivchat.judges._calibration import CalibrationError, Director, calibrate, calibrate_async, wilson
from omnivchat.judges._config import RULE_JUDGE, Aggregate, JudgesConfig, JudgesFileError, JudgeSpec, load_judges
from omnivchat.judges._engine import (
    NOT_JUDGED,
    Job,
    VerdictTask,
    ask,
    check_judges_priced,
    estimate_jobs,
    hits_schema,
    judge_key,
    judge_route,
    response_format,
    stored_verdict,
)
from omnivchat.judges._files import (
    AGREEMENT_FILE,
    BENCHMARK_SCORES_SCHEMA,
    NATIVE_SCORES_V1_SCHEMA,
    SCORES_FILE,
    BenchmarkScores,
    BenchName,
    ItemResult,
    ScoreRecord,
    Scores,
    Table1Scores,
    has_table1,
    read_scores,
    read_table1_scores,
    record_result,
    run_store_state,
    scores_from_json,
    stale_scores,
    store_changed,
    table1_scores,
    write_benchmark_scores,
)
from omnivchat.judges._perturb import Perturbation, Target, change_numbers, director_targets, perturb, verify_proposal
from omnivchat.judges._requests import STYLE_REQUIREMENTS, JudgePrompts, aliases_for, rubric_request, style_request
from omnivchat.judges._rule import check_holds, rule_style_verdict, rule_verdict, written_form
from omnivchat.judges._verdict import parse_verdict

__all__ = [
    "AGREEMENT_FILE",
    "BENCHMARK_SCORES_SCHEMA",
    "NATIVE_SCORES_V1_SCHEMA",
    "NOT_JUDGED",
    "RULE_JUDGE",
    "SCORES_FILE",
    "STYLE_REQUIREMENTS",
    "TABLE2_CATEGORIES",
    "Aggregate",
    "AgreementReport",
    "BenchName",
    "BenchmarkScores",
    "CalibrationError",
    "Director",
    "HumanAgreement",
    "HumanLabelsError",
    "ItemResult",
    "Job",
    "JudgePrompts",
    "JudgeSpec",
    "JudgesConfig",
    "JudgesFileError",
    "Judgment",
    "Perturbation",
    "ScoreRecord",
    "Scores",
    "Table1Scores",
    "Target",
    "VerdictTask",
    "agreement_report",
    "aliases_for",
    "ask",
    "calibrate",
    "calibrate_async",
    "change_numbers",
    "check_holds",
    "check_judges_priced",
    "director_targets",
    "estimate_jobs",
    "has_table1",
    "hits_schema",
    "human_agreement",
    "is_agreement_file",
    "judge_key",
    "judge_route",
    "labels_sha256",
    "load_judges",
    "parse_verdict",
    "perturb",
    "read_human_labels",
    "read_scores",
    "read_table1_scores",
    "record_result",
    "render_agreement",
    "render_human_agreement",
    "response_format",
    "rubric_request",
    "rule_style_verdict",
    "rule_verdict",
    "run_store_state",
    "scores_from_json",
    "stale_scores",
    "store_changed",
    "stored_verdict",
    "style_request",
    "table1_scores",
    "verify_proposal",
    "wilson",
    "write_benchmark_scores",
    "written_form",
]

# The agreement study needs scipy (seconds to import): loaded when first used, not with every judge.
_AGREEMENT = (
    "TABLE2_CATEGORIES",
    "AgreementReport",
    "Judgment",
    "agreement_report",
    "is_agreement_file",
    "render_agreement",
)
_HUMAN = (
    "HumanAgreement",
    "HumanLabelsError",
    "human_agreement",
    "labels_sha256",
    "read_human_labels",
    "render_human_agreement",
)
if TYPE_CHECKING:
    from omnivchat.judges._agreement import (
        TABLE2_CATEGORIES,
        AgreementReport,
        Judgment,
        agreement_report,
        is_agreement_file,
        render_agreement,
    )
    from omnivchat.judges._human import (
        HumanAgreement,
        HumanLabelsError,
        human_agreement,
        labels_sha256,
        read_human_labels,
        render_human_agreement,
    )


def __getattr__(name: str) -> object:
    if name in _AGREEMENT or name in _HUMAN:
        from omnivchat.judges import _agreement, _human

        value = getattr(_agreement if name in _AGREEMENT else _human, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'omnivchat.judges' has no attribute {name!r}")
