"""OmniVChat-RL in TRL: a reward function for ``GRPOTrainer`` and the Table 4 training recipe (GSPO, Eq. 3).

- :func:`make_reward_function` returns a named callable with TRL's reward signature ``(prompts, completions,
  **kwargs)``. TRL passes every dataset column but ``prompt`` as a keyword argument, one value per completion: the
  rows carry ``instance`` (the bench instance as JSON text, :func:`instance_json`) and optionally ``prompt_id``
  (default: the instance id). It returns R(y) of Eq. 4 per completion, or None where the grade failed; TRL
  turns None into NaN, leaves that completion out of its group's mean and gives it advantage 0.
- :func:`grpo_recipe` / :func:`grpo_config` and :func:`lora_recipe` / :func:`lora_config`: Table 4 as plain dicts
  and as ``trl.GRPOConfig`` / ``peft.LoraConfig`` (those two need the ``rl`` extra; nothing here imports them at
  start-up).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnivchat.bench import Instance
from omnivchat.judges import RULE_JUDGE
from omnivchat.rl._adapt import (
    INSTANCE_COLUMN,
    PROMPT_ID_COLUMN,
    column,
    completions_of,
    instance_json,
    make_service,
    reply_text,
)
from omnivchat.rl.gspo import EPS_HIGH, EPS_LOW
from omnivchat.rl.service import Completion, RewardError, RewardService, RewardTerms

if TYPE_CHECKING:
    from peft import LoraConfig
    from trl import GRPOConfig

REWARD_NAME = "omnivchat_reward"
"""The reward function's ``__name__``: TRL logs its mean as ``rewards/omnivchat_reward/mean``."""

BatchHook = Callable[[list[Completion], list[RewardTerms]], None]

__all__ = [
    "INSTANCE_COLUMN",
    "PROMPT_ID_COLUMN",
    "REWARD_NAME",
    "RewardFunction",
    "grpo_config",
    "grpo_recipe",
    "instance_json",
    "lora_config",
    "lora_recipe",
    "make_reward_function",
]


class RewardFunction:
    """A TRL reward function over a :class:`RewardService` (see :func:`make_reward_function`).

    ``__name__`` is what TRL shows; ``service`` is the reward service (its ``stats``, ``close()``); ``steps``
    counts the batches scored.
    """

    def __init__(
        self,
        service: RewardService,
        *,
        name: str = REWARD_NAME,
        instance_column: str = INSTANCE_COLUMN,
        prompt_id_column: str = PROMPT_ID_COLUMN,
        on_batch: BatchHook | None = None,
    ) -> None:
        self.__name__ = name
        self.service = service
        self.instance_column = instance_column
        self.prompt_id_column = prompt_id_column
        self.on_batch = on_batch
        self.steps = 0
        self._instances: dict[str, Instance] = {}

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
        n = len(completions)
        if len(prompts) != n:
            raise RewardError(f"TRL: {len(prompts)} prompts for {n} completions")
        instances = column(kwargs, self.instance_column, n, "TRL")
        keys = column(kwargs, self.prompt_id_column, n, "TRL") if self.prompt_id_column in kwargs else None
        batch = completions_of([reply_text(c) for c in completions], instances, keys, self._instances)
        terms = self.service.score_sync(batch)
        self.steps += 1
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for name in ("r", "f", "e", "s"):
                known = [v for v in (getattr(t, name) for t in terms) if v is not None]
                if known:  # TRL gathers the union of the keys of every rank, so a term may be missing here
                    log_metric(f"omnivchat/{name}", math.fsum(known) / len(known))
            log_metric("omnivchat/unscored", sum(t.total is None for t in terms) / max(n, 1))
        if self.on_batch is not None:
            self.on_batch(batch, terms)
        return [t.total for t in terms]

    def close(self) -> None:
        """Close the service (its event-loop thread and the judges' connections)."""
        self.service.close()


def make_reward_function(
    judge: str = RULE_JUDGE,
    *,
    judges_file: str | Path | None = None,
    weights: Sequence[float] | None = None,
    group_size: int | None = None,
    name: str = REWARD_NAME,
    instance_column: str = INSTANCE_COLUMN,
    prompt_id_column: str = PROMPT_ID_COLUMN,
    on_batch: BatchHook | None = None,
    **service_options: Any,
) -> RewardFunction:
    """R(y) of Eq. 4 as a TRL reward function: pass it as ``GRPOTrainer(reward_funcs=[...])``, alone (it already
    sums the four terms with ``weights``; leave ``GRPOConfig.reward_weights`` unset).

    ``judge``: "rule" (machine checks, offline) or a judge or panel of ``judges_file``; ``weights``: (w_r, w_f,
    w_e, w_s), by default Table 4's 1 / 0.5 / 0.1 / 0.5, with w_s = 0 for the rule judge, which cannot grade
    style; ``group_size``: the N of ``num_generations``, so that a group split across processes (TRL can split
    one when ``per_device_train_batch_size × steps_per_generation`` is not a multiple of N) is an error rather
    than a different Eq. 6. Other keyword arguments go to :class:`RewardService` (``cache_dir``, ``log_path``,
    ``concurrency``, ``allow_partial_groups``, ``style_judge``, ``policy_model``...). ``on_batch(batch, terms)``
    is called after each scored batch. The service is made here, so a bad judge or key fails before training.
    """
    service = make_service(judge, judges_file, weights, group_size, service_options)
    return RewardFunction(
        service, name=name, instance_column=instance_column, prompt_id_column=prompt_id_column, on_batch=on_batch
    )


# ---------------------------------------------------------------------------------------------- Table 4 recipe

TABLE4_GRPO: dict[str, Any] = {
    # Objective: GSPO (Eq. 3). The length-normalised sequence ratio q_i is TRL's sequence-level importance
    # sampling; "grpo" averages each reply's loss over its tokens, then over replies: 1/N Σ_i of Eq. 3 (TRL warns
    # that dapo/bnpo/dr_grpo weight sequences by length at sequence level, and its default is "dapo").
    "importance_sampling_level": "sequence",
    "loss_type": "grpo",
    "epsilon": EPS_LOW,  # clip range (2, 4) × 10⁻⁴ (lo, hi)
    "epsilon_high": EPS_HIGH,
    "scale_rewards": "none",  # A_i = R(y_i) - μ_G, no std normalisation (Section 4.1)
    "beta": 0.0,  # no KL penalty (no reference model is loaded)
    "entropy_coef": 1e-5,
    # Rollout: 32 prompts × N = 4 samples = 128 completions per iteration
    "num_generations": 4,
    "generation_batch_size": 128,
    "temperature": 1.0,
    "top_k": 20,
    "top_p": 1.0,
    "max_completion_length": 1024,  # reply budget (the 11,072-token prompt budget is the dataset's to enforce)
    # Optimisation: 1,000 iterations, a checkpoint every 20
    "learning_rate": 1e-6,
    "weight_decay": 0.01,
    "max_steps": 1000,
    "save_strategy": "steps",
    "save_steps": 20,
    "remove_unused_columns": False,  # the reward function reads the `instance` and `prompt_id` columns
}
"""Table 4 in ``trl.GRPOConfig``'s argument names (TRL >= 1.8)."""

TABLE4_LORA: dict[str, Any] = {
    "r": 64,
    "lora_alpha": 256,
    "lora_dropout": 0.0,
    # attention and MoE expert projections of the thinker (Qwen naming); the router (`mlp.gate`) is not matched
    "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    # the vision and audio towers stay frozen
    "exclude_modules": r".*(audio_tower|visual|vision_tower).*",
    "task_type": "CAUSAL_LM",
}
"""Table 4's adapter in ``peft.LoraConfig``'s argument names: rank 64, α 256, dropout 0."""


def grpo_recipe(**overrides: Any) -> dict[str, Any]:
    """Table 4 as ``GRPOConfig`` keyword arguments (a new dict), with ``overrides`` applied (e.g. ``output_dir``,
    ``per_device_train_batch_size``, ``bf16``)."""
    return {**TABLE4_GRPO, **overrides}


def grpo_config(**overrides: Any) -> GRPOConfig:
    """Table 4 as a ``trl.GRPOConfig`` (needs the ``rl`` extra). An override TRL does not know is its TypeError."""
    try:
        from trl import GRPOConfig
    except ImportError as err:
        raise RewardError(f"trl is not installed ({err}): install the `rl` extra (see docs/rl.md)") from None
    return GRPOConfig(**grpo_recipe(**overrides))


def lora_recipe(**overrides: Any) -> dict[str, Any]:
    """Table 4's LoRA adapter as ``peft.LoraConfig`` keyword arguments (a new dict), with ``overrides``."""
    return {**TABLE4_LORA, **overrides}


def lora_config(**overrides: Any) -> LoraConfig:
    """Table 4's LoRA adapter as a ``peft.LoraConfig`` (needs the ``rl`` extra), for ``GRPOTrainer(peft_config=)``."""
    try:
        from peft import LoraConfig
    except ImportError as err:
        raise RewardError(f"peft is not installed ({err}): install the `rl` extra (see docs/rl.md)") from None
    return LoraConfig(**lora_recipe(**overrides))
