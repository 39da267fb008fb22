"""Subcategory configurations (paper, Section 2.1 and Appendix C.2.1): one YAML file per subcategory with its
attributes (values, target probabilities, one-line descriptions), soft preference rules and exclusions, an
optional extra-requirement pool, the Validator's rules and the rendering prompt fragments.

The 17 shipped files are in ``omnivchat/bench/subcategories/``: the bench layer reads their leading taxonomy keys
(code, name, category, group, turns, summary, extends, order), so a new file is a new subcategory with no code
change, and this module the rest. :func:`load_config` takes a subcategory code (the shipped file) or a path to a
YAML file of the same schema (docs/studio.md, "Subcategory configuration"); loading a file checks its taxonomy
keys against the taxonomy (a new code is checked, not added: the Studio runs only known subcategories).

Lists the files share (the domains, cameras, interference levels, common fragments and phrase rules, ...) are
written once in ``_pools.yaml`` beside them; ``{$pool: NAME}`` anywhere in a file stands for the pool NAME,
resolved on load, so a loaded configuration is the same as if the list were written in place."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from omnivchat.bench import SUBCATEGORY_DIR, TAXONOMY_KEYS, TaxonomyError, subcategory_entry
from omnivchat.errors import OmnivchatError

SHIPPED_DIR = SUBCATEGORY_DIR
POOLS_FILE = SHIPPED_DIR / "_pools.yaml"
"""The lists the configurations share, each once; ``{$pool: NAME}`` in a configuration stands for the list NAME."""
POOL_KEY = "$pool"
# Taxonomy keys that only the bench layer reads; code, name, category and turns are the configuration's too.
_TAXONOMY_ONLY = tuple(k for k in TAXONOMY_KEYS if k not in ("code", "name", "category", "turns"))

Match = dict[str, str | list[str]]
"""A predicate over an assignment, written as data: every listed attribute must hold the value (or one of the
values) given. ``{}`` matches every assignment."""


class ConfigError(OmnivchatError, ValueError):
    """A subcategory configuration that cannot be read or breaks the schema (the message names the file)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Value(_Strict):
    probability: float = Field(ge=0, le=1, description="Target probability before preferences and exclusions.")
    description: str = Field(min_length=1, description="One line: what this value asks the Director to stage.")


class Attribute(_Strict):
    description: str = Field(min_length=1)
    values: dict[str, Value] = Field(min_length=1)

    @field_validator("values")
    @classmethod
    def _sums_to_one(cls, values: dict[str, Value]) -> dict[str, Value]:
        total = sum(v.probability for v in values.values())
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"value probabilities sum to {total:.6g}, not 1")
        return values


class Preference(_Strict):
    """A soft preference rule: an assignment it matches has its weight multiplied by ``multiplier`` (Eq. 7)."""

    when: Match = Field(min_length=1)
    multiplier: float = Field(ge=0)
    why: str = ""


class Exclusion(_Strict):
    """An assignment this matches is never sampled (w(a) = 0 in Eq. 7)."""

    when: Match = Field(min_length=1)
    why: str = ""


class ExtraRequirements(_Strict):
    """Rare edge cases added on top of the base assignment: with ``probability``, one option, equally likely."""

    probability: float = Field(ge=0, le=1)
    options: list[str] = Field(min_length=1)


class PhraseRule(_Strict):
    """Words or phrases a script must not contain (they would reveal the subcategory under test), optionally only
    for assignments matching ``when`` and only in ``language``."""

    phrases: list[str] = Field(min_length=1)
    when: Match = Field(default_factory=dict)
    language: str | None = None
    why: str = ""


class TurnFields(_Strict):
    required: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)


class ValidatorRules(_Strict):
    """The Validator's deterministic rules (module 4 / m). The same rules go into the script-generation prompt."""

    max_speaking_rate: dict[str, float] = Field(
        default_factory=lambda: {"en": 3.2, "zh": 5.5},
        description="Per language: words per second (en) or characters per second (zh) at most, per speech segment.",
    )
    min_speaking_rate: dict[str, float] = Field(default_factory=lambda: {"en": 0.8, "zh": 1.5})
    duration_s: tuple[float, float] = Field((3.0, 20.0), description="A clip's (turn's) duration bounds.")
    final_silence_s: float | None = Field(
        0.8,
        description="Completion cue: the user's last words end at least this long before the clip's end (a "
        "silent wait); null where the subcategory wants the clip to end mid-sentence.",
    )
    forbidden_phrases: list[PhraseRule] = Field(default_factory=list)
    required_segments: list[str] = Field(
        default_factory=lambda: ["speech"], description="Segment kinds each turn's script must contain."
    )
    turn_fields: dict[Literal["first", "middle", "final", "any"], TurnFields] = Field(
        default_factory=dict, description="Script fields required or forbidden at a turn position (multi-turn)."
    )
    max_references: int = Field(2, ge=0, description="Multi-turn: earlier media a turn may use (reference budget).")


class Fragment(_Strict):
    """A rendering prompt fragment (module 7): shared instructions selected when compatible with the scene."""

    id: str
    text: str
    conflicts: list[Match] = Field(default_factory=list, description="Assignments the fragment conflicts with.")


class RepairBudgets(_Strict):
    """Repair limits for this subcategory's runs (Appendix C.2.2), each one optional: what is left out keeps the
    run's limit (``omnivchat.studio.engine.Budgets``); ``studio run --repair-budget`` overrides these."""

    render: int | None = Field(None, ge=0, description="Re-seeds (renders again with the script fixed).")
    rewrite: int | None = Field(None, ge=0, description="Rewrites of a script or a turn's prompt.")
    plan: int | None = Field(None, ge=0, description="Multi-turn: plan revisions and updates.")
    qa: int | None = Field(None, ge=0, description="Focused Q-A rounds per clip.")
    refine: int | None = Field(None, ge=0, description="Refinements per reply (reaching it continues).")
    total: int | None = Field(None, ge=0, description="All render, rewrite and plan repairs of one run together.")


class SubcategoryConfig(_Strict):
    code: str = Field(pattern=r"^[A-Z]{2,5}$")
    name: str
    category: str
    turns: Literal["single", "multi"]
    definition: str = Field(min_length=1, description="What the subcategory tests, in a few sentences.")
    attributes: dict[str, Attribute]
    preferences: list[Preference] = Field(default_factory=list)
    exclusions: list[Exclusion] = Field(default_factory=list)
    extra_requirements: ExtraRequirements | None = None
    validator: ValidatorRules = Field(default_factory=ValidatorRules)
    fragments: list[Fragment] = Field(default_factory=list)
    reply_requirements: list[str] = Field(default_factory=list, description="What a good reply must do.")
    budgets: RepairBudgets = Field(default_factory=RepairBudgets, description="Repair limits for this subcategory.")

    @model_validator(mode="after")
    def _rules_name_known_values(self) -> SubcategoryConfig:
        if "language" not in self.attributes:
            raise ValueError("an attribute 'language' is required")
        if self.turns == "multi" and "turns" not in self.attributes:
            raise ValueError("a multi-turn subcategory needs an attribute 'turns'")
        for where, match in self._matches():
            for name, wanted in match.items():
                if name not in self.attributes:
                    raise ValueError(f"{where} names an unknown attribute {name!r}")
                for value in [wanted] if isinstance(wanted, str) else wanted:
                    if value not in self.attributes[name].values:
                        raise ValueError(f"{where} names an unknown value {value!r} of {name!r}")
        return self

    def _matches(self) -> list[tuple[str, Match]]:
        out = [(f"preference {i + 1}", p.when) for i, p in enumerate(self.preferences)]
        out += [(f"exclusion {i + 1}", e.when) for i, e in enumerate(self.exclusions)]
        out += [(f"forbidden phrase rule {i + 1}", r.when) for i, r in enumerate(self.validator.forbidden_phrases)]
        out += [(f"fragment {f.id!r}", m) for f in self.fragments for m in f.conflicts]
        return out

    def probabilities(self) -> dict[str, dict[str, float]]:
        """The attributes as the sampler takes them: name -> value -> probability."""
        return {name: {v: val.probability for v, val in a.values.items()} for name, a in self.attributes.items()}

    def preference_rules(self) -> list[tuple[Callable[[Mapping[str, str]], bool], float]]:
        return [(predicate(p.when), p.multiplier) for p in self.preferences]

    def exclusion_rules(self) -> list[Callable[[Mapping[str, str]], bool]]:
        return [predicate(e.when) for e in self.exclusions]

    def compatible_fragments(self, assignment: Mapping[str, str]) -> list[Fragment]:
        return [f for f in self.fragments if not any(matches(m, assignment) for m in f.conflicts)]


def matches(match: Match, assignment: Mapping[str, str]) -> bool:
    """Whether ``assignment`` holds, for every attribute in ``match``, the value (or one of the values) named."""
    for name, wanted in match.items():
        value = assignment.get(name)
        if value is None or (value != wanted if isinstance(wanted, str) else value not in wanted):
            return False
    return True


def predicate(match: Match) -> Callable[[Mapping[str, str]], bool]:
    """``match`` as a predicate over an assignment (what the sampler's preferences and exclusions take)."""
    frozen = dict(match)
    return lambda assignment: matches(frozen, assignment)


def shipped_codes() -> list[str]:
    """The codes of the shipped configurations, in file-name order."""
    return sorted(p.stem.upper() for p in SHIPPED_DIR.glob("[!_]*.yaml"))


def load_config(code_or_path: str | Path) -> SubcategoryConfig:
    """The configuration of a subcategory code (the shipped file) or of a YAML file; ConfigError naming the file
    when it cannot be read or breaks the schema."""
    path = Path(code_or_path)
    if not path.suffix and str(code_or_path).upper() in shipped_codes():
        path = SHIPPED_DIR / f"{str(code_or_path).lower()}.yaml"
    elif not path.is_file():
        known = ", ".join(shipped_codes())
        what = "no such file" if path.suffix else f"not a shipped subcategory ({known})"
        raise ConfigError(f"{code_or_path}: {what}; give a subcategory code or a YAML file")
    return _parse(path)


def _read_yaml(path: Path) -> Any:
    import yaml

    from omnivchat._files import loads_yaml

    try:
        return loads_yaml(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as err:
        mark, context = err.problem_mark, err.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        started = f" ({err.context} at line {context.line + 1})" if err.context and context is not None else ""
        raise ConfigError(f"{where}: not valid YAML: {err.problem}{started}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ConfigError(f"{path}: cannot read the configuration: {reason}") from None


@functools.cache
def _pools() -> dict[str, Any]:
    data = _read_yaml(POOLS_FILE)
    if not isinstance(data, dict):
        raise ConfigError(f"{POOLS_FILE}: the pools are a mapping of name to value, got {type(data).__name__}")
    return data


def _resolve(node: Any, where: Path, seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``{$pool: NAME}`` replaced by the pool NAME (itself resolved); new containers, so a
    caller may change what it gets without changing the pools."""
    if isinstance(node, dict):
        if set(node) == {POOL_KEY}:
            name = node[POOL_KEY]
            if not isinstance(name, str) or name not in _pools():
                raise ConfigError(f"{where}: unknown pool {name!r}; the pools are the names in {POOLS_FILE}")
            if name in seen:
                raise ConfigError(f"{POOLS_FILE}: pool {name!r} uses itself ({' -> '.join((*seen, name))})")
            return _resolve(_pools()[name], where, (*seen, name))
        return {key: _resolve(value, where, seen) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(value, where, seen) for value in node]
    return node


def read_config_data(path: Path) -> dict[str, Any]:
    """A configuration file's mapping with its pool references resolved: what the schema validates. ConfigError
    naming the file (and the line of a YAML error) when it cannot be read or is not a mapping."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a configuration is a mapping, got {type(data).__name__}")
    resolved: dict[str, Any] = _resolve(data, path)
    return resolved


def _parse(path: Path) -> SubcategoryConfig:
    data = read_config_data(path)
    taxonomy = {k: data[k] for k in TAXONOMY_KEYS if k in data}
    try:
        config = SubcategoryConfig.model_validate({k: v for k, v in data.items() if k not in _TAXONOMY_ONLY})
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']} ({err.error_count()} error(s))") from None
    try:
        subcategory_entry(taxonomy, str(path))
    except TaxonomyError as err:
        raise ConfigError(str(err)) from None
    return config


def load_all() -> list[SubcategoryConfig]:
    return [load_config(code) for code in shipped_codes()]
