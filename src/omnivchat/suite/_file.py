"""The suite file (TOML): models, benchmarks, the judge panel and a total budget; and the suite manifest that
a suite directory keeps, so that a rerun resumes only the same suite."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from omnivchat._canonical import canonical_json
from omnivchat._files import FileModel, loads_toml, read_model, read_text, validation_problem, write_model
from omnivchat.errors import OmnivchatError
from omnivchat.routes import ModelSpec

SUITE_MANIFEST = "suite.json"
SUITE_SCHEMA = "omnivchat-suite-v1"
# A model's or benchmark's name is a folder of the suite directory: one path part, nothing a shell or a URL mangles.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class SuiteError(OmnivchatError, ValueError):
    """A suite file or suite directory that cannot be used; the message names the file and the key."""


class SuiteChanged(SuiteError):
    """The suite directory holds another suite: the message names what changed."""


class SuiteModel(ModelSpec):
    """A model of the suite: a judges-file-style entry (``model``, ``base_url``, ``api_key_env``, ``price``...)
    with the requests it may have in flight at most (``concurrency``: shared by every pair on its server)."""

    concurrency: int | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _cascade_takes_its_settings_from_its_file(self) -> SuiteModel:
        # A cascade's stages name their servers, keys and settings in its FILE: what it would ignore is refused.
        ignored = sorted(self.model_fields_set - {"model", "temperature", "max_tokens", "concurrency"})
        if self.model.startswith("cascade:") and ignored:
            raise ValueError(
                f"{', '.join(ignored)} cannot be set for a cascade: each stage's base_url, key and settings go in "
                f"{self.model.removeprefix('cascade:')}"
            )
        return self


class SuiteBenchmark(BaseModel):
    """A benchmark of the suite: the registered benchmark, its data, and what the suite does with it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    benchmark: str = Field(min_length=1, description="A registered benchmark: omnivchat, byo, hf, socialomni...")
    data: Path
    media: Path | None = None
    tasks: tuple[str, ...] | None = None
    limit: int | None = Field(default=None, gt=0)
    prompts: Path | None = None
    media_roots: tuple[Path, ...] = ()
    options: dict[str, Any] = Field(default_factory=dict, description="The benchmark's own (hf: columns, split).")
    ablate: bool = False


class SuiteJudges(BaseModel):
    """The judge panel: ``rule`` (offline), or a panel (or one judge) of a judges file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Path | None = None
    panel: str | None = None
    aggregate: Literal["mean", "majority"] = "mean"


class Suite(BaseModel):
    """A parsed suite file; relative paths are resolved against the file's folder."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, SuiteModel] = Field(min_length=1)
    benchmarks: dict[str, SuiteBenchmark] = Field(min_length=1)
    judges: SuiteJudges = Field(default_factory=SuiteJudges)
    budget_usd: float | None = Field(default=None, gt=0)
    max_attempts: int = Field(default=4, gt=0, description="Attempts per request, retries included.")

    @field_validator("models", "benchmarks", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name in value:
                if not _NAME.match(str(name)):
                    raise ValueError(
                        f"{name!r} is not a usable name (letters, digits, '.', '_', '-'; it names a folder)"
                    )
        return value

    @field_validator("models", mode="before")
    @classmethod
    def _short_models(cls, value: Any) -> Any:
        # `name = "sim:healthy"` is short for `[models.name] model = "sim:healthy"`.
        if isinstance(value, dict):
            return {k: {"model": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    def identity(self) -> dict[str, Any]:
        """What a suite directory is made of: everything but the budget, the attempts and the models' concurrency
        (a rerun may raise the budget, retry more or send faster, as a run may)."""
        skip: dict[str, Any] = {"budget_usd": True, "max_attempts": True, "models": {"__all__": {"concurrency"}}}
        return self.model_dump(mode="json", exclude=skip)


def _resolve(base: Path, value: Path | None) -> Path | None:
    return None if value is None else (value if value.is_absolute() else base / value)


def load_suite(path: Path) -> Suite:
    """Read and check a suite file: one line naming the file and the key when it is not valid TOML or not a suite."""
    path = Path(path)
    text = read_text(path, "suite file")
    try:
        data = loads_toml(text)
    except ValueError as err:
        raise SuiteError(f"{path}: not valid TOML ({err})") from None
    try:
        suite = Suite.model_validate(data)
    except ValidationError as err:
        raise SuiteError(f"{path}: not a valid suite file ({validation_problem(err)})") from None
    base = path.resolve().parent
    models = {}
    for name, spec in suite.models.items():
        model = spec.model
        if model.startswith("cascade:") and not Path(model.removeprefix("cascade:")).is_absolute():
            model = "cascade:" + str(base / model.removeprefix("cascade:"))  # a cascade file beside the suite
        models[name] = spec.model_copy(update={"model": model})
    benchmarks = {
        name: b.model_copy(
            update={
                "data": _resolve(base, b.data),
                "media": _resolve(base, b.media),
                "prompts": _resolve(base, b.prompts),
                "media_roots": tuple(base / r if not r.is_absolute() else r for r in b.media_roots),
            }
        )
        for name, b in suite.benchmarks.items()
    }
    judges = suite.judges.model_copy(update={"file": _resolve(base, suite.judges.file)})
    if judges.file is None and judges.panel not in (None, "rule"):
        raise SuiteError(f"{path}: judges.panel {judges.panel!r} needs judges.file (the judges file naming it)")
    if suite.budget_usd is not None:
        ablated = [n for n, b in benchmarks.items() if b.ablate]
        if ablated:  # the grid's runs take no budget: a cap that would not hold is refused, not pretended
            raise SuiteError(
                f"{path}: budget_usd cannot cap the ablation grids (benchmarks.{ablated[0]}.ablate = true): run the "
                "grids in a suite without a budget"
            )
    return suite.model_copy(update={"models": models, "benchmarks": benchmarks, "judges": judges})


class SuiteManifest(FileModel):
    """DIR/suite.json: the suite a suite directory holds (and its shard), checked on every rerun."""

    schema_: str = Field(SUITE_SCHEMA, alias="schema")
    suite: dict[str, Any]
    shard: str | None = None


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def suite_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The keys that differ between two suites, as ``key: old -> new`` (``added``, ``removed``)."""
    a, b = _flatten(old), _flatten(new)
    lines = []
    for key in sorted(set(a) | set(b)):
        if key not in a:
            lines.append(f"{key} added")
        elif key not in b:
            lines.append(f"{key} removed")
        elif canonical_json(a[key]) != canonical_json(b[key]):
            lines.append(f"{key}: {canonical_json(a[key])[:60]} -> {canonical_json(b[key])[:60]}")
    return lines


def is_suite_dir(path: Path) -> bool:
    return (Path(path) / SUITE_MANIFEST).is_file()


def read_suite_manifest(out_dir: Path) -> SuiteManifest:
    path = Path(out_dir) / SUITE_MANIFEST
    if not path.is_file():
        raise SuiteError(f"{out_dir} is not a suite directory (no {SUITE_MANIFEST}): run `omnivchat suite run` first")
    return read_model(path, SuiteManifest, "suite manifest", error=SuiteError)


def write_or_check_suite_manifest(out_dir: Path, suite: Suite, shard: str | None) -> bool:
    """Write DIR/suite.json, or check that the one there is this suite's (True: resumed); a changed suite is
    refused naming each change."""
    new = SuiteManifest(suite=suite.identity(), shard=shard)
    path = Path(out_dir) / SUITE_MANIFEST
    if path.is_file():
        old = read_model(path, SuiteManifest, "suite manifest", error=SuiteError)
        changes = suite_changes({"suite": old.suite, "shard": old.shard}, {"suite": new.suite, "shard": shard})
        if changes:
            raise SuiteChanged(
                f"{out_dir} holds another suite ({'; '.join(changes)}): run the changed suite into a new directory, "
                "or restore the suite file"
            )
        return True
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_model(path, new)
    return False
