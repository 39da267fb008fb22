"""OmniVChat-RL in TRL: a reward function for ``GRPOTrainer`` and the Table 4 training recipe (GSPO, Eq. 3).

- :func:`make_reward_function` returns a named callable with TRL's reward signature ``(prompts, completions,
  **kwargs)``. TRL passes every dataset column but ``prompt`` as a keyword argument, one value per completion: the
  rows carry ``instance`` (the bench instance as JSON text, :func:`instance_json`) and optionally ``prompt_id``
  (default: the instance id). It returns R(y) of Eq. 4 per completion, or None where the grade failed; TRL
  turns None into NaN, leaves that completion out of its group's mean and gives it advantage 0.
- :func:`grpo_recipe` / :func:`grpo_config` and :func:`lora_recipe` / :func:`lora_config`: Table 4 as plain dicts
  and as ``trl.GRPOConfig`` / ``peft.LoraConfig`` (those two need the ``rl`` extra; nothing here imports them at
  start-up). Table 4's 1,000 iterations are rollouts: ``max_steps`` and ``save_steps`` are derived from the batch
  geometry (:func:`omnivchat.rl.recipe.optimizer_steps_per_iteration`), and the adapter covers the thinker's
  language model only (:data:`omnivchat.rl.recipe.LM_EXCLUDE_REGEX`).
"""

from __future__ import annotations

import math
import os
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
from omnivchat.rl.recipe import (
    LM_ATTENTION,
    LM_EXCLUDE_REGEX,
    LM_PROJECTIONS,
    TABLE4_CHECKPOINT_EVERY,
    TABLE4_GENERATIONS,
    TABLE4_ITERATIONS,
    TABLE4_ROLLOUT,
    RecipeError,
    describe_adapter,
    expert_parameters,
    optimizer_steps_per_iteration,
    training_steps,
)
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
    "RecipeError",
    "RewardFunction",
    "adapter_size_callback",
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
    "num_generations": TABLE4_GENERATIONS,
    "generation_batch_size": TABLE4_ROLLOUT,
    "temperature": 1.0,
    "top_k": 20,
    "top_p": 1.0,
    "max_completion_length": 1024,  # reply budget (the 11,072-token prompt budget is the dataset's to enforce)
    # Optimisation: a flat learning rate (TRL's default "linear" decays it to 0); 1,000 iterations with a checkpoint
    # every 20 are rollouts, turned into max_steps / save_steps by grpo_recipe
    "learning_rate": 1e-6,
    "lr_scheduler_type": "constant",
    "weight_decay": 0.01,
    "save_strategy": "steps",
    "remove_unused_columns": False,  # the reward function reads the `instance` and `prompt_id` columns
}
"""Table 4 in ``trl.GRPOConfig``'s argument names (TRL >= 1.8)."""

TABLE4_LORA: dict[str, Any] = {
    "r": 64,
    "lora_alpha": 256,
    "lora_dropout": 0.0,
    # attention and MLP / MoE expert projections (Qwen naming); the router (`mlp.gate`) is not matched
    "target_modules": list(LM_PROJECTIONS),
    # ... of the thinker's language model only: the audio and vision towers, the talker and the vocoder stay frozen
    "exclude_modules": LM_EXCLUDE_REGEX,
    "task_type": "CAUSAL_LM",
}
"""Table 4's adapter in ``peft.LoraConfig``'s argument names: rank 64, α 256, dropout 0."""


TRAINING_ARGUMENTS_BATCH = 8
"""``transformers.TrainingArguments``' default ``per_device_train_batch_size``."""


def grpo_recipe(
    *,
    iterations: int = TABLE4_ITERATIONS,
    checkpoint_every: int = TABLE4_CHECKPOINT_EVERY,
    num_processes: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """Table 4 as ``GRPOConfig`` keyword arguments (a new dict), with ``overrides`` applied (e.g. ``output_dir``,
    ``per_device_train_batch_size``, ``bf16``).

    ``iterations`` rollouts, a checkpoint every ``checkpoint_every`` of them, on ``num_processes`` processes
    (the world size: GPUs over all nodes): ``max_steps`` and ``save_steps`` are those times the optimizer steps one
    rollout feeds. Giving ``max_steps`` or ``save_steps`` yourself is an error (they would count optimizer steps).
    With ``steps_per_generation`` overridden, ``generation_batch_size`` is left to TRL to derive.
    """
    given = sorted(set(overrides) & {"max_steps", "save_steps"})
    if given:
        raise RecipeError(
            f"{' and '.join(given)} count optimizer steps: give iterations= and checkpoint_every= (rollouts) instead"
        )
    recipe = {**TABLE4_GRPO, **overrides}
    if recipe.get("steps_per_generation") is not None and "generation_batch_size" not in overrides:
        del recipe["generation_batch_size"]
    per_iteration = optimizer_steps_per_iteration(
        generation_batch_size=recipe.get("generation_batch_size"),
        per_device_train_batch_size=recipe.get("per_device_train_batch_size", TRAINING_ARGUMENTS_BATCH),
        num_processes=num_processes,
        gradient_accumulation_steps=recipe.get("gradient_accumulation_steps", 1),
        steps_per_generation=recipe.get("steps_per_generation"),
        num_iterations=recipe.get("num_iterations", 1),
        num_generations=recipe["num_generations"],
    )
    recipe["max_steps"], recipe["save_steps"] = training_steps(iterations, checkpoint_every, per_iteration)
    return recipe


def grpo_config(
    *,
    iterations: int = TABLE4_ITERATIONS,
    checkpoint_every: int = TABLE4_CHECKPOINT_EVERY,
    num_processes: int | None = None,
    **overrides: Any,
) -> GRPOConfig:
    """Table 4 as a ``trl.GRPOConfig`` (needs the ``rl`` extra); arguments as :func:`grpo_recipe`. An override TRL
    does not know is its TypeError.

    ``num_processes`` defaults to the launcher's ``WORLD_SIZE`` (accelerate and torchrun set it; 1 without one);
    the config TRL builds is checked against it, so a mismatch is an error rather than a different run length.
    """
    try:
        from trl import GRPOConfig
    except ImportError as err:
        raise RewardError(f"trl is not installed ({err}): install the `rl` extra (see docs/rl.md)") from None
    if num_processes is None:
        num_processes = int(os.environ.get("WORLD_SIZE", "1"))
    recipe = grpo_recipe(
        iterations=iterations, checkpoint_every=checkpoint_every, num_processes=num_processes, **overrides
    )
    config = GRPOConfig(**recipe)
    # TRL resolved the geometry with its own world size: the run length must come out the same
    per_iteration = optimizer_steps_per_iteration(
        generation_batch_size=None,
        per_device_train_batch_size=config.per_device_train_batch_size,
        num_processes=config.world_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        steps_per_generation=config.steps_per_generation,
        num_iterations=config.num_iterations,
        num_generations=config.num_generations or TABLE4_GENERATIONS,
    )
    if (config.max_steps, config.save_steps) != training_steps(iterations, checkpoint_every, per_iteration):
        raise RecipeError(
            f"TRL runs on {config.world_size} process(es), the recipe was made for {num_processes}: "
            "pass num_processes= (or launch with accelerate/torchrun, which set WORLD_SIZE)"
        )
    return config


def lora_recipe(model: Any = None, **overrides: Any) -> dict[str, Any]:
    """Table 4's LoRA adapter as ``peft.LoraConfig`` keyword arguments (a new dict), with ``overrides``.

    Give the ``model`` when its MoE experts are fused parameters (Qwen3-Omni in transformers >= 5): their full names
    in the thinker's language model become ``target_parameters``, the only way peft reaches them, and
    ``target_modules`` keeps the attention projections. (peft >= 0.19 on transformers 5 rewrites a
    ``gate_proj``/``up_proj``/``down_proj`` target of such a model into the bare parameter names ``gate_up_proj`` and
    ``down_proj``, which it matches by suffix, so the talker's experts would be adapted too.)
    """
    recipe = {**TABLE4_LORA}
    if model is not None:
        experts = expert_parameters(model)
        if experts:
            recipe["target_modules"] = [name for name in LM_PROJECTIONS if name in LM_ATTENTION]
            recipe["target_parameters"] = experts
    return {**recipe, **overrides}


def lora_config(model: Any = None, **overrides: Any) -> LoraConfig:
    """Table 4's LoRA adapter as a ``peft.LoraConfig`` (needs the ``rl`` extra), for ``GRPOTrainer(peft_config=)``;
    arguments as :func:`lora_recipe`."""
    try:
        from peft import LoraConfig
    except ImportError as err:
        raise RewardError(f"peft is not installed ({err}): install the `rl` extra (see docs/rl.md)") from None
    return LoraConfig(**lora_recipe(model, **overrides))


def adapter_size_callback(say: Callable[[str], object] = print) -> Any:
    """A ``transformers.TrainerCallback`` for ``GRPOTrainer(callbacks=[...])`` that says, before the first step, how
    many parameters the adapter trains of how many (:func:`omnivchat.rl.recipe.describe_adapter`): Table 4's 325M
    is not what its modules at rank 64 give (docs/rl.md), so a run says what it trains."""
    try:
        from transformers import TrainerCallback
    except ImportError as err:
        raise RewardError(f"transformers is not installed ({err}): install the `rl` extra (see docs/rl.md)") from None

    class AdapterSize(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if model is not None and state.is_world_process_zero:
                say(describe_adapter(model))

    return AdapterSize()
