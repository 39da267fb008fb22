"""OmniVChat-RL rewards (paper Section 4, Eq. 4-6) as pieces for existing RL engines (TRL, verl, ms-swift).

- :mod:`omnivchat.rl.rewards`: the pure reward terms: ``format_reward`` f(y), ``efficiency_rewards`` e(y) over one
  prompt's group (Eq. 5-6), ``style_reward`` s(y), ``total_reward`` R(y) (Eq. 4).
- :mod:`omnivchat.rl.service`: ``RewardService``, which grades batches of ``Completion``s (rubric r(y) of Eq. 1 and
  style) concurrently with the judge engine, caches verdicts, and returns ``RewardTerms`` per completion.

Importing this package loads neither the judges nor any HTTP client: the service's names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnivchat._lazy import lazy_names
from omnivchat.rl.rewards import (
    DEFAULT_WEIGHTS,
    efficiency_rewards,
    format_reward,
    has_thinking_tags,
    raw_efficiency,
    style_reward,
    total_reward,
)

if TYPE_CHECKING:
    from omnivchat.rl.service import Completion, RewardError, RewardService, RewardStats, RewardTerms

_LAZY = {name: "service" for name in ("Completion", "RewardError", "RewardService", "RewardStats", "RewardTerms")}

__all__ = [
    "DEFAULT_WEIGHTS",
    "Completion",
    "RewardError",
    "RewardService",
    "RewardStats",
    "RewardTerms",
    "efficiency_rewards",
    "format_reward",
    "has_thinking_tags",
    "raw_efficiency",
    "style_reward",
    "total_reward",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
