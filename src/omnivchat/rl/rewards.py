"""OmniVChat-RL reward terms (paper Section 4.2, Eq. 4-6): pure functions of replies and rubric scores.

R(y) = r(y) + λ_fmt f(y) + λ_eff e(y) + λ_sty s(y)   (Eq. 4, weights 1 / 0.5 / 0.1 / 0.5, so R lies in [0, 2.1])

- r(y): the gated rubric score of Eq. 1 (:func:`omnivchat.scoring.rubric_score` of the grader's hits).
- f(y): 1 for a non-empty reply with no thinking tags, else 0 (:func:`format_reward`).
- e(y): the reply's raw efficiency ρ(y) = r(y) / max(w(y), 1) (Eq. 5) min-max normalised within the N replies
  sampled for one prompt, 1/2 for all when they are equal (Eq. 6; :func:`efficiency_rewards`).
- s(y): 1 when the style grader confirms all seven requirements, else 0 (:func:`style_reward`).

Grading is not done here: these functions take what the graders returned (see :mod:`omnivchat.rl.service`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from omnivchat.scoring import is_empty_reply, word_count

DEFAULT_WEIGHTS: tuple[float, float, float, float] = (1.0, 0.5, 0.1, 0.5)
"""(1, λ_fmt, λ_eff, λ_sty) of Eq. 4, as in the paper's Table 4."""

STYLE_REQUIREMENTS = 7
"""The style checklist's length: s(y) = 1 only when all of them hold (Section 4.2)."""

# A thinking tag in any of the forms policies emit: <think>, </think>, <think/>, < think >, <THINK>, and the
# <thinking> spelling; the word must end there, so "<thinker>" is not one.
_THINK_TAG = re.compile(r"<\s*/?\s*think(?:ing)?\b[^<>]*>", re.IGNORECASE)


def has_thinking_tags(reply: str) -> bool:
    """Whether ``reply`` holds a thinking tag: a ``<think>...</think>`` block or a stray opening or closing tag."""
    return _THINK_TAG.search(reply) is not None


def format_reward(reply: str) -> float:
    """f(y) of Eq. 4: 1.0 for a non-empty reply (``scoring.is_empty_reply`` false) with no thinking tags, else 0.0."""
    return 0.0 if is_empty_reply(reply) or has_thinking_tags(reply) else 1.0


def _check_unit(name: str, value: float) -> None:
    # NaN fails both comparisons: a missing score must never slip into a min or a max as a number
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")


def raw_efficiency(score: float, reply: str) -> float:
    """ρ(y) = r(y) / max(w(y), 1) of Eq. 5: rubric credit per counted unit of the reply (w = ``word_count``).

    A reply with zero rubric credit has zero raw efficiency whatever its length.
    """
    _check_unit("a rubric score r(y)", score)
    return score / max(word_count(reply), 1)


def efficiency_rewards(scores: Sequence[float], replies: Sequence[str]) -> list[float]:
    """e(y_i) of Eq. 6 for the N replies sampled for one prompt, from their rubric scores r (Eq. 1) and texts.

    e_i = (ρ_i - min_j ρ_j) / (max_j ρ_j - min_j ρ_j) with ρ of Eq. 5, when the ρ differ; otherwise every reply
    gets 1/2 (a group of one included). The least efficient reply gets 0 and the most efficient 1.

    Raises ValueError when the lengths differ or a score lies outside [0, 1] (NaN included): a missing score has
    no place in a group's min and max.
    """
    if len(scores) != len(replies):
        raise ValueError(f"{len(scores)} rubric scores for {len(replies)} replies")
    rho = [raw_efficiency(score, reply) for score, reply in zip(scores, replies, strict=True)]
    if not rho:
        return []
    low, high = min(rho), max(rho)
    if high <= low:
        return [0.5] * len(rho)
    return [(value - low) / (high - low) for value in rho]


def style_reward(satisfied: Iterable[int]) -> float:
    """s(y) of Eq. 4 from the numbers of the style requirements the grader found satisfied: 1.0 when all seven
    (1..7) are, else 0.0."""
    return 1.0 if set(range(1, STYLE_REQUIREMENTS + 1)) <= set(satisfied) else 0.0


def total_reward(r: float, f: float, e: float, s: float, weights: Sequence[float] = DEFAULT_WEIGHTS) -> float:
    """R(y) = w_r r + w_f f + w_e e + w_s s of Eq. 4 (default weights 1 / 0.5 / 0.1 / 0.5, so R lies in [0, 2.1]).

    Every term must lie in [0, 1] and every weight be a finite number >= 0 (ValueError otherwise).
    """
    check_weights(weights)
    for name, value in zip("rfes", (r, f, e, s), strict=True):
        _check_unit(f"reward term {name}", value)
    return math.fsum(w * t for w, t in zip(weights, (r, f, e, s), strict=True))


def check_weights(weights: Sequence[float]) -> tuple[float, float, float, float]:
    """``weights`` as the 4-tuple (w_r, w_f, w_e, w_s) of Eq. 4; ValueError unless four finite numbers >= 0."""
    values = tuple(float(w) for w in weights)
    if len(values) != 4:
        raise ValueError(f"weights are (rubric, format, efficiency, style): 4 numbers, got {len(values)}")
    if not all(math.isfinite(w) and w >= 0 for w in values):
        raise ValueError(f"weights must be finite and >= 0, got {values}")
    return values[0], values[1], values[2], values[3]
