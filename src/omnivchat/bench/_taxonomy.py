"""The 5 ability categories and 17 subcategories of OmniVChat-Bench (paper Section 3, Appendix D.4-D.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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

# The paper spells out every name except PLA, AOR and FGC; those three names are ours, from their definitions.
_SUBCATEGORIES: tuple[Subcategory, ...] = (
    Subcategory(
        "ICC",
        "Initial Connectivity Confirmation",
        "DSLP",
        "VCC",
        "single",
        "Answers an opening connection check (can you hear / see me?).",
    ),
    Subcategory(
        "MDCC",
        "Mid-Dialogue Connectivity Confirmation",
        "DSLP",
        "VCC",
        "multi",
        "Confirms the connection when asked later in a dialogue, consistent with the earlier turns.",
    ),
    Subcategory(
        "UPC",
        "User Paused but not Completed",
        "DSLP",
        "VTT",
        "single",
        "Waits or briefly acknowledges when the user pauses before finishing a request.",
    ),
    Subcategory(
        "UCR",
        "User Completed Request",
        "DSLP",
        "VTT",
        "single",
        "Answers a completed request despite visual distraction.",
    ),
    Subcategory(
        "SVMR",
        "Single-turn Visual Mode Recognition",
        "DSLP",
        "VDMC",
        "single",
        "Maps user-relative left and right under the current camera view (mirrored when facing the user).",
    ),
    Subcategory(
        "MVMS",
        "Multi-turn Visual Mode Switching",
        "DSLP",
        "VDMC",
        "multi",
        "Updates the left-right mapping after the camera changes between turns.",
    ),
    Subcategory(
        "AR",
        "Anaphoric Reference",
        "MEA",
        "RC",
        "single",
        "Resolves pronouns and pointing gestures to the intended visible object.",
    ),
    Subcategory(
        "DR",
        "Descriptive Reference",
        "MEA",
        "RC",
        "single",
        "Resolves a spoken description to the intended visible object.",
    ),
    Subcategory(
        "MRR",
        "Multi-turn Reference Retrieval",
        "MEA",
        "RC",
        "multi",
        "Recalls an object shown earlier that has since left the view.",
    ),
    Subcategory(
        "SPSD",
        "Single-turn Primary Speaker Disambiguation",
        "MEA",
        "SDI",
        "single",
        "Identifies and answers the main user among competing voices.",
    ),
    Subcategory(
        "MIST",
        "Multi-turn Interactor Shift Tracking",
        "MEA",
        "SDI",
        "multi",
        "Follows a change of the active user and addresses the person who takes over.",
    ),
    Subcategory(
        "STIC",
        "Single-turn Identity Consistency",
        "MSA",
        "IC",
        "single",
        "States the model's true identity when asked in one turn.",
    ),
    Subcategory(
        "MTIC",
        "Multi-turn Identity Consistency",
        "MSA",
        "IC",
        "multi",
        "Keeps its true identity across turns despite misleading user claims.",
    ),
    Subcategory(
        "PLA",
        "Physical Limitation Awareness",
        "MSA",
        None,
        "single",
        "Does not claim it can act physically; explains what the user can do instead.",
    ),
    Subcategory(
        "AOR",
        "Absent Object Recognition",
        "AH",
        None,
        "single",
        "Says when an object the user asks about or describes is not in view.",
    ),
    Subcategory(
        "FGC",
        "False Given-Claim Correction",
        "AH",
        None,
        "single",
        "Corrects a false description of a visible object, such as its colour.",
    ),
    Subcategory(
        "ER",
        "Emotion Recognition",
        "ER",
        None,
        "single",
        "Addresses both the user's visible and audible emotion and the request.",
    ),
)

SUBCATEGORIES: dict[str, Subcategory] = {s.code: s for s in _SUBCATEGORIES}

# Appendix D.4: each multi-turn subcategory extends one or two single-turn ones.
MULTI_TURN_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "MDCC": ("ICC",),
    "MVMS": ("SVMR",),
    "MRR": ("AR", "DR"),
    "MIST": ("SPSD",),
    "MTIC": ("STIC",),
}

_BY_PATH: dict[str, Subcategory] = {s.path: s for s in _SUBCATEGORIES}


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
