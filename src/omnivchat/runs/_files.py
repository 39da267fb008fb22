"""The typed files of a run directory: the manifest every run has, the registry of each benchmark's manifest model,
a run directory's status, and what every export has. Writers build these models and dump them; readers validate
them. Each benchmark defines its own manifest and export models (the native one's are
:mod:`omnivchat.benchmarks.native`'s) and registers its manifests with :func:`register_manifest`.

Old run directories still load: a field an older manifest lacks gets the default that says what it meant, a field
this version does not know is kept, and a manifest is written back exactly as its dict was (identity checks and
hashes compare the JSON, not the model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnivchat._canonical import sha256_json
from omnivchat._files import FileModel, read_model, validate_file
from omnivchat.runs._cost import RunCost
from omnivchat.runs._errors import RunError
from omnivchat.runs._lock import LockHolder

PROTOCOL = "omnivchat-run-v1"
"""The protocol of a manifest without a protocol field: the first manifests were native runs' (a bench directory
run by omnivchat), and had none."""
MANIFEST_FILE = "manifest.json"


# ------------------------------------------------------------------------------------------------------ manifests


class Manifest(FileModel):
    """Any run directory's manifest.json: what every benchmark's manifest has. The rest is the benchmark's own (kept
    as it was written; read it with :meth:`value`)."""

    protocol: str = PROTOCOL
    """How the directory was made (the first native manifests had no protocol field: the native one)."""
    benchmark: str | None = None
    """The registered benchmark that made the run; None in manifests made before names were recorded (then the
    protocol says which)."""

    omit_when_none: ClassVar[tuple[str, ...]] = ("benchmark",)

    def sha256(self) -> str:
        """The hash of the manifest as it was written (what a judging directory records of its candidate run)."""
        return sha256_json(self.dump(as_read=True))


class PromptRecord(FileModel):
    """A prompt a run used: the sha256 of its text and where it came from."""

    sha256: str
    source: str


class RouteIdentity(FileModel):
    """The route of a native run: model id, route kind, endpoint (no port, query or key), resolved settings."""

    model: str
    kind: str
    endpoint: str | None = None
    """Absent from exports (an export never locates a server)."""
    settings: dict[str, Any] = Field(default_factory=dict)


class PackageRecord(FileModel):
    """The code that made a run: omnivchat's version and the hash of the sources that shape requests."""

    version: str = "?"
    source_sha256: str = ""


_MANIFEST_MODELS: dict[str, type[Manifest]] = {}


def register_manifest(protocol: str, model: type[Manifest]) -> type[Manifest]:
    """Read manifests of ``protocol`` as ``model`` (a benchmark's package calls this when it loads); returns it."""
    _MANIFEST_MODELS[protocol] = model
    return model


def known_protocols() -> tuple[str, ...]:
    """The protocols whose manifest model is registered, sorted (whatever order their packages loaded in)."""
    return tuple(sorted(_MANIFEST_MODELS))


def manifest_model(protocol: str) -> type[Manifest]:
    """The registered model of a manifest of ``protocol`` (:class:`Manifest` for one not registered)."""
    return _MANIFEST_MODELS.get(protocol, Manifest)


def read_manifest(run_dir: Path, model: type[Manifest] | None = None) -> Manifest:
    """The manifest of a run directory as the model of its protocol (or as ``model``); RunError naming the file
    when it is absent, unreadable or not a valid manifest."""
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        raise RunError(f"{run_dir}: not a run directory (no {MANIFEST_FILE})")
    generic = read_model(path, Manifest, "manifest", error=RunError)
    chosen = model or manifest_model(generic.protocol)
    if chosen is Manifest:
        return generic
    return validate_file(chosen, generic.dump(as_read=True), path, f"{generic.protocol} manifest", error=RunError)


# ---------------------------------------------------------------------------------------------------------- status


class ItemCounts(BaseModel):
    """Items a run declared, and how many are done, failed and not run (no record)."""

    declared: int
    done: int = 0
    failed: int = 0
    not_run: int = 0


class JudgeCounts(BaseModel):
    """One judge's scores in a judging directory."""

    done: int = 0
    failed: int = 0


class ServedModel(BaseModel):
    """What a server said it served for some results of a run: the model name and system_fingerprint it reported
    (None: it sent none), how many results, and the times of the first and last."""

    model: str | None = None
    fingerprint: str | None = None
    replies: int = 0
    first: float | None = None
    last: float | None = None

    def describe(self) -> str:
        fp = f", fingerprint {self.fingerprint}" if self.fingerprint else ""
        return f"{self.model or '(no model name)'}{fp}: {self.replies} replies"


def served_changes(served: dict[str, list[ServedModel]]) -> list[str]:
    """One line per kind of request whose results were served by more than one model name or system_fingerprint
    (the server was swapped or rebuilt mid-run, or the replicas differ): each, in the order first seen."""
    lines = []
    for kind, entries in served.items():
        models = {e.model for e in entries}
        fingerprints = {e.fingerprint for e in entries}
        if len(models) > 1 or len(fingerprints) > 1:
            what = "model" if len(models) > 1 else "build (system_fingerprint)"
            lines.append(
                f"{kind}: the served {what} changed during the run: " + "; then ".join(e.describe() for e in entries)
            )
    return lines


class RunStatus(BaseModel):
    """What a run directory holds, read without changing anything (it may be being written, or read-only).

    Every kind has its protocol, the attempts by outcome, failed attempts by kind, tokens (and any cost the server
    reported) and the writer (the process writing it now, or None). A native run has ``instances`` (its bench's,
    counted) and ``failure_kinds``; a run of a benchmark with tasks has ``tasks``; a judging directory has
    ``panel`` and ``judges``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    protocol: str
    benchmark: str | None = None
    label: str | None = Field(default=None, description="How people name the benchmark (SocialOmni), if not so.")
    kind: Literal["run", "tasks", "judging"] = "run"
    """``run``: a native run (one bench); ``tasks``: a run of a benchmark with tasks; ``judging``: a judging
    directory."""
    model: str | None = None
    route: str | None = None
    simulated: bool = False
    condition: str = "both"
    bench: str | None = Field(default=None, description="A native run's bench: 'name vVERSION'.")
    instances: ItemCounts | None = Field(default=None, description="A native run's bench instances, counted.")
    failure_kinds: dict[str, int] = Field(default_factory=dict, description="Failed items by failure kind.")
    prompts: dict[str, str] = Field(
        default_factory=dict, description="Which prompts ran, said plainly: 'system', or each task's card."
    )
    tasks: dict[str, ItemCounts] | None = Field(default=None, description="Per task: its items, counted.")
    limit: int | None = Field(default=None, description="The declared --limit of a run with tasks.")
    shard: str | None = Field(default=None, description="I/N: the shard of a run made with eval --shard.")
    panel: str | None = Field(default=None, description="A judging directory's panel.")
    judges: dict[str, JudgeCounts] | None = Field(default=None, description="A judging directory's judges.")
    attempts: dict[str, int] = Field(default_factory=dict, description="Attempts by outcome (ok, failed, ...).")
    attempt_failures: dict[str, int] = Field(default_factory=dict, description="Failed attempts by kind.")
    tokens: dict[str, float] = Field(default_factory=dict, description="Token counts (and cost, when reported).")
    cost: RunCost | None = Field(default=None, description="What the attempts cost, in all and per kind of request.")
    writer: LockHolder | None = None
    replicas: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="Attempts per replica of a replica set, by outcome (ok, failed, ...)."
    )
    served: dict[str, list[ServedModel]] = Field(
        default_factory=dict, description="Per kind of request: the model names and fingerprints servers reported."
    )
    redacted: dict[str, int] = Field(
        default_factory=dict,
        description="Per kind of request: the replies that held the key and were masked (not what the model sent).",
    )


# ---------------------------------------------------------------------------------------------------------- export


class ExportFile(FileModel):
    """An export of a run: its schema and status, and its records (every kind of export has these)."""

    schema_: str = Field(alias="schema")
    status: str
    """``complete``, ``incomplete``, or a benchmark's own (``scored_with_request_failures``)."""

    @property
    def n_records(self) -> int:
        """How many item records the export holds."""
        for name in ("records", "items"):
            value = getattr(self, name, None)
            if isinstance(value, list):
                return len(value)
        return 0
