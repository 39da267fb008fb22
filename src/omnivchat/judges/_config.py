"""Judges and panels: a judges file (TOML or JSON) naming each judge's model and endpoint, and named panels."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, model_validator

from omnivchat._files import InputError, loads_json, read_text
from omnivchat.errors import OmnivchatError
from omnivchat.routes import ModelSpec

RULE_JUDGE = "rule"  # the offline rule judge: always available, needs no file entry


_LATER_FIELDS = ("include_modalities", "reasoning_effort", "structured_output")
_IDENTITY_ORDER = {
    name: i
    for i, name in enumerate(
        ("name", "model", "temperature", "max_tokens", "thinking", *_LATER_FIELDS, "response_format", "extra")
    )
}


class JudgeSpec(ModelSpec):
    """One LLM judge (``routes.ModelSpec`` with a judge's fields and defaults) and the key it sends
    (`judges.judge_key`): the variable ``api_key_env`` names; none when the entry has its own ``base_url`` and no
    ``api_key_env`` (a server of your own) or says ``no_key``; else the model's default variable (gpt-*
    OPENAI_API_KEY, qwen* DASHSCOPE_API_KEY, gemini-* GEMINI_API_KEY)."""

    name: str = Field(min_length=1)
    max_concurrency: int = Field(default=2, gt=0)
    temperature: float = 0.0
    max_tokens: int = Field(default=2048, gt=0)
    thinking: bool | None = Field(
        default=False,
        validation_alias=AliasChoices("thinking", "enable_thinking"),
        description="enable_thinking (also spelt so in the file); off where the route supports it.",
    )
    include_modalities: bool | None = Field(default=None, description='Send modalities=["text"] (None: default).')
    reasoning_effort: str | None = Field(default=None, description="reasoning_effort, where the judge takes it.")
    response_format: dict[str, Any] | None = Field(default=None, description='e.g. {"type": "json_object"}.')
    repeat_of: str | None = Field(
        default=None,
        description="This judge re-grades as judge NAME did (give it e.g. a seed in extra): the "
        "agreement study reports it as NAME's repeat run.",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds one verdict request may take (None: the model's route default)."
    )

    def identity(self) -> dict[str, Any]:
        """What decides this judge's verdicts (endpoint, key variable, concurrency and price excluded). Fields added
        later are left out at their defaults, so a run judged before they existed keeps its judge."""
        data = self.model_dump(exclude={"base_url", "api_key_env", "no_key", "max_concurrency", "price", "timeout_s"})
        for name in _LATER_FIELDS:
            if data[name] == type(self).model_fields[name].default:
                del data[name]
        # in the order the judges file of earlier versions wrote (name first), whatever ModelSpec's field order
        return {k: data[k] for k in sorted(data, key=lambda k: _IDENTITY_ORDER.get(k, len(_IDENTITY_ORDER)))}


class JudgesConfig(BaseModel):
    """The judges file: ``judges`` (a list, or a table keyed by name) and ``panels`` (name -> judge names)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judges: dict[str, JudgeSpec] = Field(default_factory=dict)
    panels: dict[str, list[str]] = Field(default_factory=dict)
    # Each judge as the file wrote it (what a protocol's manifest records), not part of the configuration.
    entries: dict[str, dict[str, Any]] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _judges_by_name(cls, data: Any) -> Any:
        if isinstance(data, dict):
            judges = data.get("judges", {})
            if isinstance(judges, list):
                judges = {j.get("name"): j for j in judges if isinstance(j, dict)}
            elif isinstance(judges, dict):
                judges = {
                    name: {"name": name, **spec} if isinstance(spec, dict) else spec for name, spec in judges.items()
                }
            entries = {k: dict(v) for k, v in judges.items() if isinstance(v, dict)} if isinstance(judges, dict) else {}
            data = {**data, "judges": judges, "entries": entries}
        return data

    @model_validator(mode="after")
    def _panels_name_known_judges(self) -> JudgesConfig:
        for panel, members in self.panels.items():
            unknown = [m for m in members if m not in self.judges and m != RULE_JUDGE]
            if unknown:
                raise ValueError(f"panel {panel!r} names judges not in the file: {', '.join(unknown)}")
            if len(set(members)) != len(members) or not members:
                raise ValueError(f"panel {panel!r} must list distinct judges, at least one")
        return self

    @model_validator(mode="after")
    def _no_key_or_a_key(self) -> JudgesConfig:
        both = [n for n, j in self.judges.items() if j.no_key and j.api_key_env]
        if both:
            raise ValueError(f"judge {both[0]!r}: no_key and api_key_env contradict each other: give one")
        return self

    def with_timeout(self, seconds: float) -> JudgesConfig:
        """The same judges, each verdict request allowed ``seconds`` (``judge --timeout``; not their identity)."""
        judges = {n: j.model_copy(update={"timeout_s": seconds}) for n, j in self.judges.items()}
        return self.model_copy(update={"judges": judges})

    def keyless(self) -> JudgesConfig:
        """The same judges sending no key (``--no-key``): for judges served where no key is needed."""
        judges = {n: j.model_copy(update={"no_key": True, "api_key_env": None}) for n, j in self.judges.items()}
        entries = {
            n: {**{k: v for k, v in e.items() if k != "api_key_env"}, "no_key": True} for n, e in self.entries.items()
        }
        return self.model_copy(update={"judges": judges, "entries": entries})

    def panel(self, name: str | None) -> list[str]:
        """Judge names of panel ``name``; with None, the panel called 'default', else every judge in the file."""
        if name is None:
            return self.panels.get("default") or list(self.judges)
        if name not in self.panels:
            raise JudgesFileError(f"no panel {name!r}; the file defines: {', '.join(self.panels) or 'none'}")
        return self.panels[name]


class JudgesFileError(OmnivchatError, ValueError):
    """The judges file cannot be read; the message names the file and the problem."""


def load_judges(path: str | Path | None, *, no_key: bool = False) -> JudgesConfig:
    """Read a judges file (TOML or JSON). Without a file only the offline rule judge exists. ``no_key``: every
    judge sends no key (`JudgesConfig.keyless`)."""
    if path is None:
        return JudgesConfig()
    if no_key:
        return load_judges(path).keyless()
    path = Path(path)
    try:
        text = read_text(path, "judges file")
        data = tomllib.loads(text) if path.suffix == ".toml" else loads_json(text)
    except InputError as err:
        raise JudgesFileError(str(err)) from None
    except (ValueError, tomllib.TOMLDecodeError, RecursionError) as err:
        raise JudgesFileError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'} ({err})") from None
    try:
        return JudgesConfig.model_validate(data)
    except ValidationError as err:
        details = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg'].removeprefix('Value error, ')}" for e in err.errors()
        )
        raise JudgesFileError(f"{path}: {details}") from None


Aggregate = Literal["mean", "majority"]
