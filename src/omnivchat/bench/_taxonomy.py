"""The 5 ability categories and 17 subcategories of OmniVChat-Bench (paper Section 3, Appendix D.4-D.5).

The categories and groups are fixed by the paper and written here; the subcategories are read from their YAML
files in ``subcategories/`` (see ``SUBCATEGORY_DIR``)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from omnivchat.errors import OmnivchatError

Kind = Literal["single", "multi"]


@dataclass(frozen=True)
class Category:
    """One of the five ability categories."""

    code: str
    name: str
    description: str


@dataclass(frozen=True)
class Group:
    """A subcategory group inside a category (VCC, VTT, VDMC, RC, SDI, IC)."""

    code: str
    name: str
    category: str


@dataclass(frozen=True)
class Subcategory:
    """One of the 17 subcategories; `path` is the full code such as ``DSLP-VDMC-SVMR``."""

    code: str
    name: str
    category: str
    group: str | None
    kind: Kind
    description: str

    @property
    def path(self) -> str:
        # ER is its own category and subcategory: its path is plain "ER", not "ER-ER".
        parts = [self.category, self.group, None if self.code == self.category else self.code]
        return "-".join(p for p in parts if p)


CATEGORIES: dict[str, Category] = {
    c.code: c
    for c in (
        Category(
            "DSLP",
            "Dialogue-State & Link Perception",
            "Understands the current state of the dialogue: connection, turn boundaries, camera orientation.",
        ),
        Category(
            "MEA",
            "Multimodal Entity Alignment",
            "Connects speech with the right visible objects and speakers.",
        ),
        Category(
            "MSA",
            "Model Self-Awareness",
            "States its identity and physical limitations correctly.",
        ),
        Category(
            "AH",
            "Anti-Hallucination",
            "Keeps replies grounded in the available audio and visual evidence.",
        ),
        Category(
            "ER",
            "Emotion Recognition",
            "Uses facial and vocal emotion cues to address both the user's emotion and request.",
        ),
    )
}

GROUPS: dict[str, Group] = {
    g.code: g
    for g in (
        Group("VCC", "Voice-Connectivity Confirmation", "DSLP"),
        Group("VTT", "Voice Turn-Taking", "DSLP"),
        Group("VDMC", "Visual Dialogue-Mode Cognition", "DSLP"),
        Group("RC", "Reference Comprehension", "MEA"),
        Group("SDI", "Speaker Diarization & Identification", "MEA"),
        Group("IC", "Identity Consistency", "MSA"),
    )
}

# The 17 subcategories are data: one YAML file each in ``subcategories/`` (their Studio configuration too, read
# by omnivchat.studio.config). The taxonomy is the files' leading keys, so a new file is a new subcategory with
# no code change. The paper spells out every name except PLA, AOR and FGC; those three names are ours.
SUBCATEGORY_DIR = Path(__file__).with_name("subcategories")
TAXONOMY_KEYS = ("code", "name", "category", "group", "turns", "summary", "extends", "order")
"""The keys of a subcategory file that make its place in the taxonomy; they come first in the file."""
_CODE = re.compile(r"^[A-Z]{2,5}$")


class TaxonomyError(OmnivchatError, ValueError):
    """A subcategory file whose taxonomy keys are missing, wrong or contradict a known subcategory (names the file)."""


SUBCATEGORIES: dict[str, Subcategory] = {}
# Appendix D.4: each multi-turn subcategory extends one or two single-turn ones (a file's ``extends``).
MULTI_TURN_EXTENSIONS: dict[str, tuple[str, ...]] = {}
_BY_PATH: dict[str, Subcategory] = {}


def taxonomy_header(path: Path) -> dict[str, Any]:
    """The leading taxonomy keys of a subcategory file, read without parsing the rest (the Studio's part)."""
    import yaml

    from omnivchat._files import loads_yaml

    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        top = line[:1] not in ("", " ", "#", "-")
        if top and line.split(":", 1)[0].strip() not in TAXONOMY_KEYS:
            break
        lines.append(line)
    try:
        data = loads_yaml("\n".join(lines))
    except yaml.YAMLError as err:
        raise TaxonomyError(f"{path}: the taxonomy keys are not valid YAML: {str(err).splitlines()[0]}") from None
    return data if isinstance(data, dict) else {}


def _entry(data: Mapping[str, Any], where: str) -> tuple[Subcategory, tuple[str, ...]]:
    """The subcategory a file's taxonomy keys describe, and the single-turn codes it extends; TaxonomyError naming
    ``where`` and the key when one is missing or wrong."""

    def text(key: str, required: bool = True) -> str | None:
        value = data.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            raise TaxonomyError(f"{where}: {key}: give a non-empty text (a subcategory file's taxonomy key)")
        return value

    code = text("code") or ""
    if not _CODE.match(code):
        raise TaxonomyError(f"{where}: code: {code!r} is not 2-5 capital letters")
    category = text("category") or ""
    if category not in CATEGORIES:
        raise TaxonomyError(f"{where}: category: {category!r} is not one of {', '.join(CATEGORIES)}")
    group = text("group", required=False)
    if group is not None and (group not in GROUPS or GROUPS[group].category != category):
        known = ", ".join(g.code for g in GROUPS.values() if g.category == category) or "none"
        raise TaxonomyError(f"{where}: group: {group!r} is not a group of {category} (its groups: {known})")
    kind = data.get("turns")
    if kind not in ("single", "multi"):
        raise TaxonomyError(f"{where}: turns: {kind!r} is not 'single' or 'multi'")
    extends = data.get("extends") or []
    if not isinstance(extends, list) or not all(isinstance(c, str) for c in extends):
        raise TaxonomyError(f"{where}: extends: give a list of single-turn subcategory codes")
    if extends and kind != "multi":
        raise TaxonomyError(f"{where}: extends: only a multi-turn subcategory extends single-turn ones")
    if not isinstance(data.get("order", 0), int):
        raise TaxonomyError(f"{where}: order: give a whole number (the place in the paper's order)")
    sub = Subcategory(code, text("name") or "", category, group, kind, text("summary") or "")
    return sub, tuple(extends)


def subcategory_entry(data: Mapping[str, Any], where: str) -> Subcategory:
    """The subcategory of a file's taxonomy keys, checked and not added: a known code may be restated (a variant of
    a shipped configuration) but never moved to another category, group or number of turns; a new code must not
    take a known path, and what it extends must be known single-turn subcategories. TaxonomyError naming
    ``where`` otherwise."""
    code = data.get("code")
    known = SUBCATEGORIES.get(code) if isinstance(code, str) else None
    if known is not None:
        check_subcategory(known.code, data.get("category"), data.get("turns"), where)
        if "group" in data and data["group"] != known.group:
            raise TaxonomyError(f"{where}: group: {code} is in group {known.group}, not {data['group']!r}")
        return known
    sub, extends = _entry(data, where)
    if sub.path in _BY_PATH:
        raise TaxonomyError(f"{where}: code: {sub.path} is already subcategory {_BY_PATH[sub.path].code}")
    for single in extends:
        base = SUBCATEGORIES.get(single)
        if base is None or base.kind != "single":
            raise TaxonomyError(f"{where}: extends: {single!r} is not a single-turn subcategory")
    return sub


def add_subcategory(data: Mapping[str, Any], where: str) -> Subcategory:
    """Add the subcategory of a file's taxonomy keys (:func:`subcategory_entry`) to this process's taxonomy, so that
    ``Instance`` accepts its code. The shipped folder's files are added on import; this is for a file elsewhere."""
    sub = subcategory_entry(data, where)
    if sub.code not in SUBCATEGORIES:
        _, extends = _entry(data, where)
        SUBCATEGORIES[sub.code] = _BY_PATH[sub.path] = sub
        if extends:
            MULTI_TURN_EXTENSIONS[sub.code] = extends
    return sub


def check_subcategory(code: str, category: object, turns: object, where: str) -> Subcategory:
    """The known subcategory ``code``, checked to be in ``category`` with ``turns`` turns; TaxonomyError naming
    ``where`` otherwise. The Studio runs this before any agent call."""
    sub = SUBCATEGORIES.get(code)
    if sub is None:
        raise TaxonomyError(
            f"{where}: unknown subcategory {code!r}: add its YAML file (code, name, category, group, turns, "
            f"summary) to {SUBCATEGORY_DIR}"
        )
    if category != sub.category:
        raise TaxonomyError(f"{where}: category: {code} is in category {sub.category}, not {category!r}")
    if turns != sub.kind:
        raise TaxonomyError(f"{where}: turns: {code} is a {sub.kind}-turn subcategory, not {turns!r}")
    return sub


def _load_shipped() -> None:
    headers = [(taxonomy_header(p), p) for p in sorted(SUBCATEGORY_DIR.glob("[!_]*.yaml"))]
    # Single-turn files first, so that a multi-turn file's ``extends`` finds its codes; the tables then follow
    # the files' ``order`` (the paper's), a file without one after those with one.
    for data, path in sorted(headers, key=lambda hp: hp[0].get("turns") == "multi"):
        add_subcategory(data, str(path))
    rank = {str(d.get("code")): (d.get("order", math.inf), p.name) for d, p in headers}
    for code in sorted(SUBCATEGORIES, key=rank.__getitem__):
        SUBCATEGORIES[code] = SUBCATEGORIES.pop(code)
    for code in sorted(MULTI_TURN_EXTENSIONS, key=rank.__getitem__):
        MULTI_TURN_EXTENSIONS[code] = MULTI_TURN_EXTENSIONS.pop(code)


_load_shipped()


def resolve_subcategory(name: str) -> Subcategory:
    """Look up a subcategory by short code (``SVMR``) or full path (``DSLP-VDMC-SVMR``), case-insensitively."""
    key = name.strip().upper()
    found = SUBCATEGORIES.get(key) or _BY_PATH.get(key)
    if found is None:
        raise KeyError(
            f"unknown subcategory {name!r}; expected one of {', '.join(SUBCATEGORIES)} "
            "or a full path such as DSLP-VDMC-SVMR"
        )
    return found
