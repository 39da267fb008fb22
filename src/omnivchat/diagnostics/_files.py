"""The typed files of the diagnostics: an ablation directory's ablation.json (with the harness self-check record)
and the audio-track route check's result (its --output file, and each line of the route-checks.jsonl registry).

Older files load: an ablation.json written before benchmarks were named was the native bench's; a self-check
record written when it ran one broken model (``no_fusion_flagged``, ``healthy_flagged``) reads as the two models it
checked (sim:no-fusion and sim:healthy), its old keys kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from omnivchat._files import FileModel, InputError, read_model
from omnivchat.diagnostics.ablation import Diagnosis

ABLATION_FILE = "ablation.json"
ABLATION_SCHEMA = "omnivchat-ablation-v1"
ROUTE_CHECK_SCHEMA = "omnivchat-route-check-v1"
ROUTE_CHECKS_FILE = "route-checks.jsonl"
SELF_CHECK_DIR = "self-check"
"""The folder of an ablation directory that holds the self-check's grids, one per simulated model."""


def self_check_grid_dir(self_check_dir: Path, model: str) -> Path:
    """Where the self-check ran ``model``'s grid (its four condition runs): in the self-check's folder (an ablation
    directory's SELF_CHECK_DIR)."""
    return self_check_dir / model.replace(":", "-")


# ------------------------------------------------------------------------------------------------- ablation.json


class SelfCheckModel(FileModel):
    """One simulated model of the harness self-check: what was expected of it, and what the grid said."""

    expected: str
    """``flagged`` (a broken model) or ``not flagged`` (sim:healthy)."""
    flagged: bool | None = None
    """The grid flagged it (None: unknown, in a record that did not say)."""
    diagnosis: Diagnosis | None = None


class SelfCheckRecord(FileModel):
    """The harness self-check of an ablation: skipped (``--skip-self-check``), or each simulated model with what
    was expected of it and whether the check passed."""

    skipped: bool = False
    passed: bool | None = None
    """Every model as expected (None: skipped)."""
    models: dict[str, SelfCheckModel] | None = None
    """Each simulated model checked (None: skipped)."""

    omit_when_none = ("passed", "models")

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, data: Any) -> Any:
        """A record written when the check ran sim:no-fusion and sim:healthy, in flat keys."""
        if not isinstance(data, dict) or "models" in data or data.get("skipped"):
            return data
        if "no_fusion_flagged" not in data and "healthy_flagged" not in data:
            return data
        models = {
            "sim:no-fusion": {
                "expected": "flagged",
                "flagged": data.get("no_fusion_flagged"),
                "diagnosis": data.get("no_fusion") if isinstance(data.get("no_fusion"), dict) else None,
            },
            "sim:healthy": {
                "expected": "not flagged",
                "flagged": data.get("healthy_flagged"),
                "diagnosis": data.get("healthy") if isinstance(data.get("healthy"), dict) else None,
            },
        }
        return {**data, "models": models}


class ConditionEntry(FileModel):
    """One condition of the grid: its run directory (relative to the ablation's) and what it scored."""

    run_dir: str | None = None
    n_done: int | None = None
    """Items with a reply (None: the grid did not run the condition in this invocation)."""
    n_unscored: int | None = None
    mean: float | None = None
    """Mean over every scored item (None: nothing scored)."""


class AblationData(FileModel):
    """The data the grid ran on: its name, version and item count."""

    name: str | None = None
    version: str | None = None
    n_instances: int | None = None


class AblationFile(FileModel):
    """OUT/ablation.json (schema omnivchat-ablation-v1): the conditions, the diagnosis overall, per category
    (ability category, or a benchmark's own group) and per task, and the self-check record."""

    schema_: str = Field(ABLATION_SCHEMA, alias="schema")
    model: str = "?"
    simulated: bool = False
    benchmark: str = "omnivchat"
    """The registered benchmark it ran (files written before benchmarks were named: the native bench)."""
    bench: AblationData = Field(default_factory=AblationData)
    panel: list[str] = Field(default_factory=list)
    aggregate: str | None = None
    neither_mode: str | None = None
    conditions: dict[str, ConditionEntry]
    n_items_used: int | None = None
    diagnosis: Diagnosis
    categories: dict[str, Diagnosis | None] = Field(default_factory=dict)
    tasks: dict[str, Diagnosis | None] = Field(default_factory=dict)
    """Each task's diagnosis, for data with several multiple-choice tasks (None: too few items); ``diagnosis`` then
    pools them, its chance the mean of the items' chances (1/K each). Empty: one task, and ``diagnosis`` is its."""
    self_check: SelfCheckRecord | None = None


def read_ablation(path: Path, *, error: type[Exception] = InputError) -> AblationFile:
    """An ablation.json (or the ablation directory holding it); ``error`` names the file on one line."""
    path = Path(path)
    if path.is_dir():
        path = path / ABLATION_FILE
    return read_model(path, AblationFile, "ablation file", error=error)


# ---------------------------------------------------------------------------------------------------- route check


class Recovered(BaseModel):
    """What an answer recovered: the spoken password, the spoken number, and whether it claims speech it did not
    hear."""

    password: bool = False
    number: bool = False
    claims_speech: bool = False


class RouteCheckRecord(FileModel):
    """One clip of the route check (``audible`` or ``silent``): what was sent and what came back."""

    control: str
    media_sha256: str | None = None
    request_sha256: str | None = None
    http_status: int | None = None
    error_kind: str | None = None
    error: str | None = None
    response_model: str | None = None
    system_fingerprint: str | None = None
    """The server's system_fingerprint, when it sent one."""
    replica: str | None = None
    """The replica that answered, for a replica set."""
    delivered: dict[str, Any] | None = None
    """What the route delivered (``audio``: the clip's audio track went with the request)."""
    answer: str | None = None
    """The model's answer (None: the request failed)."""
    recovered: Recovered | None = None
    media_items: dict[str, int] | None = None
    """The media items of the request per modality, as vLLM counts them (an OpenAI-compatible route)."""

    omit_when_none = (
        "media_items",
        "request_sha256",
        "error_kind",
        "error",
        "response_model",
        "system_fingerprint",
        "replica",
        "delivered",
        "recovered",
    )


class ExpectedAudio(FileModel):
    password: str
    number: int
    spoken: str


class RouteCheck(FileModel):
    """The result of an audio-track route check (schema omnivchat-route-check-v1): the route, its settings and
    their hash, both clips' records, and whether the route passed with the reasons it did not."""

    schema_: str = Field(ROUTE_CHECK_SCHEMA, alias="schema")
    time: float = 0.0
    model: str | None = None
    route: str | None = None
    endpoint: str | None = None
    settings_sha256: str | None = None
    """The hash of the route's resolved settings (no base URL): what a passing check on record is matched by."""
    settings: dict[str, Any] = Field(default_factory=dict)
    audio_delivery: str | None = None
    """How the clip's audio was sent (``in-video (mm_processor_kwargs.use_audio_in_video)``, ``separate (input_audio
    WAV part)``...): what a pass proves works for this server (None in checks made before it was recorded)."""
    expected_audio: ExpectedAudio | None = None
    prompt: str | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    records: list[RouteCheckRecord] = Field(default_factory=list)
    server: dict[str, Any] | None = None
    """What serves the model, as it said of itself (kind, version) and what omnivchat changed for it (None: not
    known, or a hosted route)."""
    bench_media_items: dict[str, int] | None = None
    """With --bench: the most media items of each modality one of its requests holds (the ``capacity`` record
    checked that the server takes that many)."""
    passed: bool = False
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    """What does not fail the route but a user should know (a silent answer that invents speech)."""

    omit_when_none = ("server", "bench_media_items")


def read_route_check(path: Path) -> RouteCheck:
    """A route check's --output file."""
    return read_model(path, RouteCheck, "route check")
