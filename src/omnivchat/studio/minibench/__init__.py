"""The procedural mini-bench: real instances of all 17 subcategories, rendered offline in seconds.

Name: omnivchat mini-bench. Languages: English and Mandarin. Source: the issue "diagnostics", item 4.

Every instance is staged with the procedural renderer (``omnivchat.synth.render_clip``): coloured shapes on a
table, a person-like figure, a front (selfie) or rear camera, and spoken questions with espeak-ng voices. The
scenes are drawn from small word lists by a seeded RNG, so the same seed gives the same bench, clip for clip.

Each instance carries a reference reply and a tiered rubric (tier 0: the language gate; tier 1: the core answer;
tiers 2-3: extras) in which *every* criterion has a machine check, so the offline rule judge
(``omnivchat.judges.rule_verdict``) can score any reply. Checks are written for the negation-aware matcher of
``omnivchat.scoring.spoken``: the key phrases of a reference never stand inside a negation ("it's red, not blue"
states red), and no tier-1 phrase occurs in the simulated models' generic non-answer, so that non-answer earns
nothing. Forbidden-word (none-of) checks sit in tiers 2-3, where a missed tier 1 blocks them.

Layout: one module of builders per ability category -- ``_dslp`` (ICC, MDCC, UPC, UCR, SVMR, MVMS), ``_mea``
(AR, DR, MRR, SPSD, MIST), ``_msa`` (STIC, MTIC, PLA), ``_ah`` (AOR, FGC), ``_er`` (ER) -- each builder named
``build_<code>``; ``_kit`` holds what they share (word lists, scene pieces, rubric helpers, :class:`Draft`);
``_core`` the registry (``BUILDERS``), :func:`plan`, rendering and writing the bench. Where a subcategory is
staged more narrowly than the paper describes (AR, MIST, STIC / MTIC), its category module says how.
"""

from omnivchat.studio.minibench._core import (
    BUILDERS,
    LANGUAGES,
    MADE_FILE,
    NOT_STAGED,
    STAGED,
    MiniBenchError,
    make_minibench,
    plan,
)
from omnivchat.studio.minibench._kit import (
    COLOURS,
    Builder,
    Draft,
    article,
)

__all__ = [
    "BUILDERS",
    "COLOURS",
    "LANGUAGES",
    "MADE_FILE",
    "NOT_STAGED",
    "STAGED",
    "Builder",
    "Draft",
    "MiniBenchError",
    "article",
    "make_minibench",
    "plan",
]
