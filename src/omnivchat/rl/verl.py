"""OmniVChat-RL in verl: a batch reward function for verl's ``batch`` reward manager.

verl's ``BatchRewardManager`` (``verl/workers/reward_manager/batch.py``) calls
``compute_score(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=..., **reward_kwargs)`` once
per training batch and takes one score per response. Enable it with ``reward_model.use_reward_loop=False
reward_model.reward_manager=batch custom_reward_function.path=pkg://omnivchat.rl.verl`` (the per-sample Reward
Loop cannot compute the group term e of Eq. 6). Every parquet row carries the bench instance as JSON text in
``extra_info["instance"]`` (or in ``reward_model.ground_truth``) and a prompt id in ``extra_info["index"]``: verl
reorders the batch (``trainer.balance_batch``) and does not pass its ``uid``, so the index groups the N replies.

Settings come from ``custom_reward_function.reward_kwargs`` (``judge``, ``judges_file``, ``weights``,
``group_size``, ``log_path``, ``cache_dir``, ``allow_partial_groups``...). verl needs numbers: a reply whose
grade failed gets its group's mean graded total, so its advantage is 0 and the others' baseline is unchanged,
and the failure is logged (see :func:`omnivchat.rl._adapt.totals_as_floats`). The config for Table 4 is in
docs/rl.md.
"""

from __future__ import annotations

import atexit
import json
import math
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omnivchat.bench import Instance
from omnivchat.judges import RULE_JUDGE
from omnivchat.rl._adapt import INSTANCE_COLUMN, completions_of, instance_json, make_service, totals_as_floats
from omnivchat.rl.recipe import (
    LM_EXCLUDE_REGEX,
    LM_PROJECTIONS,
    TABLE4_CHECKPOINT_EVERY,
    TABLE4_GENERATIONS,
    TABLE4_ITERATIONS,
    TABLE4_PROMPTS,
    RecipeError,
    positive_int,
    training_steps,
)
from omnivchat.rl.service import RewardError, RewardService

INDEX_KEY = "index"
"""The ``extra_info`` key that names a row's prompt (verl's data preparation scripts fill it with the row index)."""

__all__ = ["INDEX_KEY", "BatchScorer", "compute_score", "instance_json", "make_compute_score", "verl_recipe"]


class BatchScorer:
    """verl's batch ``compute_score`` over a :class:`RewardService` (see :func:`make_compute_score`)."""

    def __init__(self, service: RewardService) -> None:
        self.__name__ = "compute_score"
        self.service = service
        self._instances: dict[str, Instance] = {}

    def __call__(
        self,
        data_sources: Sequence[Any],
        solution_strs: Sequence[str],
        ground_truths: Sequence[Any],
        extra_infos: Sequence[Any] | None = None,
        **_: Any,
    ) -> list[float]:
        n = len(solution_strs)
        infos: list[Any] = list(extra_infos) if extra_infos is not None else [{}] * n
        truths = list(ground_truths)
        if len(infos) != n or len(truths) != n:
            raise RewardError(f"verl: {n} responses with {len(truths)} ground truths and {len(infos)} extra_infos")
        instances, keys = [], []
        for i, info in enumerate(infos):
            info = info if isinstance(info, Mapping) else {}
            raw = info.get(INSTANCE_COLUMN)
            instances.append(raw if raw is not None else truths[i])
            key = info.get(INDEX_KEY)
            if key is None:
                raise RewardError(
                    f"verl: response {i} has no extra_info[{INDEX_KEY!r}]; give every parquet row a prompt id there "
                    "(verl reorders the batch, so the index is what groups a prompt's replies for Eq. 6)"
                )
            keys.append(key)
        batch = completions_of([s or "" for s in solution_strs], instances, keys, self._instances)
        terms = self.service.score_sync(batch)
        return totals_as_floats(batch, terms, "verl")

    def close(self) -> None:
        self.service.close()


def make_compute_score(
    judge: str = RULE_JUDGE,
    *,
    judges_file: str | Path | None = None,
    weights: Sequence[float] | None = None,
    group_size: int | None = None,
    **service_options: Any,
) -> BatchScorer:
    """A verl batch ``compute_score`` with its own reward service (arguments as
    :func:`omnivchat.rl.trl.make_reward_function`: weights default to Table 4's, style 0 with the rule judge)."""
    return BatchScorer(make_service(judge, judges_file, weights, group_size, service_options))


_SCORERS: dict[str, BatchScorer] = {}
_LOCK = threading.Lock()


def _close_all() -> None:
    with _LOCK:
        scorers = list(_SCORERS.values())
        _SCORERS.clear()
    for scorer in scorers:
        scorer.close()


atexit.register(_close_all)


def compute_score(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **reward_kwargs: Any,
) -> list[float]:
    """The function verl's batch reward manager loads by name: R(y) of Eq. 4 for every response of the batch.

    ``reward_kwargs`` (from ``custom_reward_function.reward_kwargs``) are :func:`make_compute_score`'s arguments;
    one scorer (and service, with its verdict cache) is kept per distinct setting for the life of the process.
    """
    settings = {key: _plain(value) for key, value in reward_kwargs.items()}
    key = json.dumps(settings, sort_keys=True, default=str)
    with _LOCK:
        scorer = _SCORERS.get(key)
        if scorer is None:
            judge = str(settings.pop("judge", RULE_JUDGE))
            scorer = _SCORERS[key] = make_compute_score(judge, **settings)
    return scorer(data_sources, solution_strs, ground_truths, extra_infos)


def _plain(value: Any) -> Any:
    """A Hydra/OmegaConf list or dict from verl's config as a plain list or dict."""
    if isinstance(value, str | bytes) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) or (hasattr(value, "__iter__") and not isinstance(value, int | float | bool)):
        return [_plain(v) for v in value]
    return value


def verl_recipe(
    *,
    iterations: int = TABLE4_ITERATIONS,
    checkpoint_every: int = TABLE4_CHECKPOINT_EVERY,
    ppo_mini_batch_size: int = TABLE4_PROMPTS,
    train_prompts: int | None = None,
) -> dict[str, Any]:
    """Table 4's run length, learning-rate schedule and adapter as verl config keys (dotted, as Hydra overrides).

    verl's ``trainer.global_steps`` counts rollouts (one ``data.train_batch_size`` batch of prompts, n replies
    each, then ``ppo_epochs`` passes in minibatches of ``ppo_mini_batch_size`` prompts), so an iteration is one
    step: ``trainer.total_training_steps`` and ``trainer.save_freq`` are Table 4's numbers whatever the GPUs.
    ``ppo_mini_batch_size`` must divide the 32 prompts (32: one update per rollout). verl also stops at the end of
    ``trainer.total_epochs`` (default 30) passes over the data: give ``train_prompts`` (the training set's size) to
    set enough epochs, ceil(iterations / floor(train_prompts / 32)) (verl drops the last partial batch).
    """
    iterations = positive_int("iterations", iterations)
    mini = positive_int("ppo_mini_batch_size", ppo_mini_batch_size)
    if TABLE4_PROMPTS % mini:
        raise RecipeError(f"ppo_mini_batch_size {mini} does not divide the {TABLE4_PROMPTS} prompts of an iteration")
    total, save = training_steps(iterations, checkpoint_every, 1)
    recipe: dict[str, Any] = {
        "data.train_batch_size": TABLE4_PROMPTS,
        "actor_rollout_ref.rollout.n": TABLE4_GENERATIONS,
        "actor_rollout_ref.actor.ppo_mini_batch_size": mini,
        "actor_rollout_ref.actor.ppo_epochs": 1,
        "actor_rollout_ref.actor.optim.lr": 1e-6,
        "actor_rollout_ref.actor.optim.lr_scheduler_type": "constant",
        "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 0.0,
        "actor_rollout_ref.actor.optim.weight_decay": 0.01,
        "actor_rollout_ref.model.lora_rank": 64,
        "actor_rollout_ref.model.lora_alpha": 256,
        # leaf names plus an exclusion: verl writes target_modules into the saved adapter with list(), which would
        # split a regex string into characters
        "actor_rollout_ref.model.target_modules": list(LM_PROJECTIONS),
        "actor_rollout_ref.model.exclude_modules": LM_EXCLUDE_REGEX,
        "trainer.total_training_steps": total,
        "trainer.save_freq": save,
    }
    if train_prompts is not None:
        batches = positive_int("train_prompts", train_prompts) // TABLE4_PROMPTS
        if batches == 0:
            raise RecipeError(f"{train_prompts} training prompts do not fill one batch of {TABLE4_PROMPTS}")
        recipe["trainer.total_epochs"] = math.ceil(iterations / batches)
    return recipe
