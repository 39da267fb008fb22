"""The typed files of SocialOmni: a run's summary.json, a judging directory's scores.json and summary.json, the
rescoring input.json and results.json, the export, and the run and judging manifests (:class:`SocialOmniManifest`,
:class:`SocialOmniJudgingManifest`, registered with ``omnivchat.runs.register_manifest`` so that a run directory's
manifest reads as its model wherever it is read).

These files keep the formats of SocialOmni's hosted runner (its README, section 4): a run's summary.json is keyed by
task, a judging scores.json is ``{item id: {judge: score}}``, the rescoring files carry ``schema_version`` 1 and the
export its ``schema``. So the summaries and the judging scores have no version field of their own; their version is
the constant beside each model, and the manifest of their directory says which protocol made them. Files written by
earlier versions load: a classification summary without ``n_missing``/``missing``/``complete`` counted only the
records it had (none missing), a How summary without them likewise (complete unless a request failed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, RootModel, ValidationError, model_validator

from omnivchat._files import FileModel, read_model, validation_problem
from omnivchat.runs import Manifest, register_manifest
from omnivchat.socialomni._errors import SocialOmniError
from omnivchat.socialomni._metrics import HowMetrics

SUMMARY_VERSION = "omnivchat-socialomni-summary-v1"
"""The run summary.json written by this version (the file carries no version field: the hosted runner's format)."""
JUDGING_SUMMARY_VERSION = "omnivchat-socialomni-judging-summary-v1"
JUDGE_SCORES_VERSION = "omnivchat-socialomni-judge-scores-v1"
RESCORE_SCHEMA_VERSION = 1
"""``schema_version`` of the rescoring input.json and results.json."""
SOCIALOMNI_PROTOCOL = "omnivchat-socialomni-v1"
"""The protocol of a SocialOmni run's manifest."""
SOCIALOMNI_JUDGING_PROTOCOL = SOCIALOMNI_PROTOCOL + "-judging"
"""The protocol of a SocialOmni judging directory's manifest."""

__all__ = [
    "JUDGE_SCORES_VERSION",
    "JUDGING_SUMMARY_VERSION",
    "RESCORE_SCHEMA_VERSION",
    "SOCIALOMNI_JUDGING_PROTOCOL",
    "SOCIALOMNI_PROTOCOL",
    "SUMMARY_VERSION",
    "ClassCounts",
    "ClassificationMetrics",
    "ExportMetrics",
    "HowGeneration",
    "JudgeScores",
    "JudgingSummary",
    "Provenance",
    "RescoreInput",
    "RescoreInputModel",
    "RescoreRecord",
    "RescoreResults",
    "RescoredModel",
    "RescoredRecord",
    "SocialOmniJudgingManifest",
    "SocialOmniManifest",
    "SocialOmniSummary",
    "TaskCompleteness",
    "WhenDecision",
    "read_judge_scores",
    "read_judging_summary",
    "read_rescore_input",
    "read_rescore_results",
    "read_summary",
    "rescore_input",
]


class SocialOmniManifest(Manifest):
    """manifest.json of a SocialOmni run (protocol omnivchat-socialomni-v1, the hosted runner's manifest): written
    by ``omnivchat.socialomni`` exactly as that runner's format has it. The sampling the run fixed (``temperature``,
    ``top_p``) is kept as written, among the extra fields."""

    protocol: str = SOCIALOMNI_PROTOCOL
    benchmark: str | None = "socialomni"
    model: str = "?"
    endpoint: str | None = None
    route: dict[str, Any] = Field(default_factory=dict, description="The resolved route settings, no base URL.")
    source_sha256: dict[str, str | None] = Field(default_factory=dict, description="level1, level2 -> sha256.")
    source_media_sha256: dict[str, str] | None = None
    """``<task>-<id>`` -> sha256 of each declared item's clip: the run's item list (None: an unusable manifest)."""
    prompts: dict[str, str] = Field(default_factory=dict, description="Prompt card hashes by task.")
    prompt_labels: dict[str, str] | None = None
    """Task -> which prompt card ran, said plainly ("omnivchat card", or the user file); older manifests have none."""
    max_tokens: int | None = None
    prefix_encoding: dict[str, Any] = Field(default_factory=dict)
    who_cutoff_rule: str | None = None
    tasks: list[str] | None = None
    limit: int | None = None
    harness_sha256: str | None = None
    condition: str | None = None
    """An ablation condition (absent: the clips as they are)."""

    omit_when_none = ("benchmark", "condition", "prompt_labels")


class SocialOmniJudgingManifest(Manifest):
    """manifest.json of a SocialOmni judging directory (protocol omnivchat-socialomni-v1-judging): the panel, its
    judges and what they judged (hashes of the candidate run's manifest and replies, the contexts, the rubric)."""

    protocol: str = SOCIALOMNI_JUDGING_PROTOCOL
    panel: str = "?"
    candidate_manifest_sha256: str | None = None
    candidate_rows_sha256: str | None = None
    contexts_sha256: str | None = None
    rubric_sha256: str | None = None
    judges: list[dict[str, Any]] = Field(default_factory=list, description="Each judge's file entry, no key.")
    sampling: dict[str, Any] = Field(default_factory=dict)
    harness_sha256: str | None = None

    @property
    def judge_names(self) -> list[str]:
        return [str(j.get("name", "?")) for j in self.judges]


register_manifest(SOCIALOMNI_PROTOCOL, SocialOmniManifest)
register_manifest(SOCIALOMNI_JUDGING_PROTOCOL, SocialOmniJudgingManifest)


# --------------------------------------------------------------------------------------------- run summary.json


class ClassCounts(BaseModel):
    """One label's true positives, false positives and false negatives."""

    tp: int = 0
    fp: int = 0
    fn: int = 0


class ClassificationMetrics(FileModel):
    """Who or When accuracy and macro-F1 over every declared item (see
    :func:`omnivchat.socialomni.classification_metrics`); None while any item is missing."""

    n: int
    """The fixed denominator: the release's item count, or the declared --limit."""
    correct: int = 0
    accuracy: float | None = None
    macro_f1: float | None = None
    class_counts: dict[str, ClassCounts] = Field(default_factory=dict)
    request_failures: int = 0
    parse_failures: int = 0
    n_missing: int = 0
    """Declared items with no record (0 in a summary written before missing items were counted)."""
    missing: list[str] = Field(default_factory=list)
    complete: bool = True


class HowGeneration(FileModel):
    """How generation over the declared How items: answered, empty, failed, and missing (no record)."""

    n: int = 0
    completed: int = 0
    empty: int = 0
    request_failures: int = 0
    n_missing: int = 0
    missing: list[str] = Field(default_factory=list)
    complete: bool = True

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A summary written before missing items were counted: complete unless a request failed."""
        if isinstance(data, dict) and "complete" not in data:
            data = {**data, "complete": not data.get("request_failures")}
        return data


class SocialOmniSummary(FileModel):
    """RUN/summary.json of a SocialOmni run (rewritten after each task): Who and When metrics (strict, and the
    lenient parse apart) for the tasks the run has, and How generation counts."""

    who: ClassificationMetrics | None = None
    who_lenient: ClassificationMetrics | None = None
    """A separate, clearly labelled metric: never the headline number of the protocol."""
    when: ClassificationMetrics | None = None
    when_lenient: ClassificationMetrics | None = None
    how_generation: HowGeneration = Field(default_factory=HowGeneration)

    omit_when_none = ("who", "when", "who_lenient", "when_lenient")

    def task(self, name: str) -> ClassificationMetrics | None:
        """The metrics of ``who`` or ``when`` (None: the run has no such task)."""
        value = getattr(self, name, None)
        return value if isinstance(value, ClassificationMetrics) else None


def read_summary(path: Path) -> SocialOmniSummary:
    """A run's summary.json (RUN/summary.json, or the file itself)."""
    path = Path(path)
    return read_model(path / "summary.json" if path.is_dir() else path, SocialOmniSummary, "SocialOmni summary")


# ------------------------------------------------------------------------------------------------------- judging


class JudgeScores(RootModel[dict[str, dict[str, int | None]]]):
    """JUDGING/scores.json: item id -> judge -> score (0/25/50/75/100; None: not scored yet)."""

    def of(self, item_id: str) -> dict[str, int | None]:
        return self.root.get(item_id, {})

    def to_json(self) -> str:
        return json.dumps(self.root, indent=2, sort_keys=True) + "\n"


def read_judge_scores(path: Path) -> JudgeScores:
    return read_model(path, JudgeScores, "SocialOmni judge scores file", error=SocialOmniError)


class JudgingSummary(FileModel):
    """JUDGING/summary.json: the panel, its judges and the How quality metrics, and when they were computed."""

    panel: str
    judges: list[str]
    metrics: HowMetrics
    time: float = 0.0


def read_judging_summary(path: Path) -> JudgingSummary:
    return read_model(path, JudgingSummary, "SocialOmni judging summary", error=SocialOmniError)


# ----------------------------------------------------------------------------------------------------- rescoring


class WhenDecision(FileModel):
    """A hosted run's When decision on one item."""

    item_id: str
    gold: str | None = None
    prediction: str | None = None
    request_failed: bool = False


class RescoreInputModel(FileModel):
    """One model of the rescoring input: where its answers come from and which items it must have."""

    model: str
    source: str = "?"
    """``hosted-run`` or ``paper-archive``."""
    full_gold: bool = False
    """Forced replies on every gold item (a hosted run): QGold is defined."""
    limit: int | None = None
    expected_response_ids: list[str] | None = None
    """The declared How items (a hosted run); absent for an archive (the answers it holds)."""
    when: list[WhenDecision] | None = None

    omit_when_none = ("limit", "expected_response_ids", "when")


class RescoreRecord(FileModel):
    """One answer to rescore, with what the judges see."""

    model: str
    item_id: str
    context: str
    target_question: str
    reference: str
    candidate: str | None = None
    error: str | None = None
    """Why the generation failed (never judged, never an empty answer worth 0)."""

    omit_when_none = ("error",)


class RescoreInput(FileModel):
    """RESCORE/input.json: the normalised rescoring input (schema_version 1), from a hosted run or an archive."""

    schema_version: int = RESCORE_SCHEMA_VERSION
    source: str | None = None
    source_sha256: str | None = None
    models: list[RescoreInputModel] = Field(default_factory=list)
    records: list[RescoreRecord] = Field(default_factory=list)


def rescore_input(data: RescoreInput | dict[str, Any]) -> RescoreInput:
    """``data`` as rescoring input; SocialOmniError when it is not schema_version 1 with a records list, or a
    field is wrong (one line)."""
    if isinstance(data, RescoreInput):
        return data
    if not isinstance(data, dict) or data.get("schema_version") != 1 or not isinstance(data.get("records"), list):
        raise SocialOmniError("rescoring input must have schema_version 1 and a records list")
    try:
        return RescoreInput.model_validate(data)
    except ValidationError as err:
        raise SocialOmniError(f"rescoring input: {validation_problem(err)}") from None


def read_rescore_input(path: Path) -> RescoreInput:
    return read_model(path, RescoreInput, "rescoring input", error=SocialOmniError)


class Provenance(FileModel):
    source: str | None = None
    source_sha256: str | None = None
    panel: str = "?"
    judges: list[str] = Field(default_factory=list)


class RescoredModel(FileModel):
    model: str
    full_gold: bool = False
    metrics: HowMetrics


class RescoredRecord(FileModel):
    model: str
    item_id: str
    candidate: str | None = None
    error: str | None = None
    judge_scores: dict[str, int | None] = Field(default_factory=dict)

    omit_when_none = ("error",)


class RescoreResults(FileModel):
    """RESCORE/results.json (schema_version 1): per-model How quality and every record's judge scores."""

    schema_version: int = RESCORE_SCHEMA_VERSION
    complete: bool
    provenance: Provenance = Field(default_factory=Provenance)
    models: list[RescoredModel] = Field(default_factory=list)
    records: list[RescoredRecord] = Field(default_factory=list)


def read_rescore_results(path: Path) -> RescoreResults:
    return read_model(path, RescoreResults, "rescoring results", error=SocialOmniError)


# -------------------------------------------------------------------------------------------------------- export


class TaskCompleteness(FileModel):
    """One task of a run in its export: declared items, missing ones, request failures (How: and the answers
    without a full panel or a When decision)."""

    n: int
    n_missing: int = 0
    missing: list[str] = Field(default_factory=list)
    request_failures: int = 0
    n_unjudged: int | None = None
    n_when_missing: int | None = None

    omit_when_none = ("n_unjudged", "n_when_missing")


class ExportMetrics(FileModel):
    """The headline metrics: Who and When (None: not in the run), How quality (None while incomplete)."""

    who: ClassificationMetrics | None = None
    when: ClassificationMetrics | None = None
    qgold: float | None = None
    qens: float | None = None
    cov_plus: float | None = None
    qens_joint: float | None = None
