"""OmniVChat-RL in ms-swift: an outcome reward model (ORM) plugin for ``swift rlhf --rlhf_type grpo``.

ms-swift instantiates each ``--reward_funcs`` name from its ``orms`` registry (``orms[name](args=args)``) and calls
it as ``orm(completions, **kwargs)``: ``completions`` are the reply strings, and the keyword arguments hold every
dataset column (one value per completion) plus ms-swift's own ``prompt_id`` (one id per distinct prompt of the
batch), ``messages`` and ``trainer_state``. Every dataset row carries ``instance``: the bench instance as JSON
text. The replies of one ``prompt_id`` form the group of Eq. 6.

Importing this module registers ``orms["omnivchat"]`` when ms-swift is importable (``swift.rewards`` in ms-swift
4, ``swift.plugin`` in 3.x) and does nothing otherwise. Pass the module as ``--external_plugins`` (its file path)
and configure it with environment variables, or write a two-line plugin calling :func:`register` with
settings. ms-swift sums a None reward as 0, so a failed grade is returned as its group's mean graded total
(advantage 0) and logged, as the verl adapter does.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from omnivchat.bench import Instance
from omnivchat.judges import RULE_JUDGE
from omnivchat.rl._adapt import (
    INSTANCE_COLUMN,
    PROMPT_ID_COLUMN,
    column,
    completions_of,
    make_service,
    totals_as_floats,
)
from omnivchat.rl.gspo import EPS_HIGH, EPS_LOW
from omnivchat.rl.recipe import (
    LM_TARGET_REGEX,
    TABLE4_CHECKPOINT_EVERY,
    TABLE4_GENERATIONS,
    TABLE4_ITERATIONS,
    TABLE4_ROLLOUT,
    optimizer_steps_per_iteration,
    training_steps,
)
from omnivchat.rl.service import RewardError, RewardService

ORM_NAME = "omnivchat"
"""The name registered in ms-swift's ``orms`` (``--reward_funcs omnivchat``)."""
ENV_PREFIX = "OMNIVCHAT_RL_"
"""Settings of the registered ORM: OMNIVCHAT_RL_JUDGE (default rule), OMNIVCHAT_RL_JUDGES_FILE,
OMNIVCHAT_RL_WEIGHTS ("1,0.5,0.1,0.5"), OMNIVCHAT_RL_GROUP_SIZE, OMNIVCHAT_RL_LOG, OMNIVCHAT_RL_CACHE_DIR."""

__all__ = [
    "ENV_PREFIX",
    "ORM_NAME",
    "OmnivchatORM",
    "register",
    "settings_from_env",
    "swift_arguments",
    "swift_recipe",
    "swift_registry",
]


class OmnivchatORM:
    """R(y) of Eq. 4 for ms-swift's GRPO trainer: ``__call__(completions, **kwargs) -> list[float]``.

    ``settings`` (class attribute, set by :func:`register`) are :func:`omnivchat.rl.trl.make_reward_function`'s
    arguments; the reward service is made with the ORM, so a bad judge fails when training starts.
    """

    settings: ClassVar[dict[str, Any]] = {}

    def __init__(self, args: Any = None, **kwargs: Any) -> None:
        self.args = args
        settings = dict(self.settings)
        judge = str(settings.pop("judge", RULE_JUDGE))
        self.service: RewardService = make_service(
            judge,
            settings.pop("judges_file", None),
            settings.pop("weights", None),
            settings.pop("group_size", None),
            settings,
        )
        self._instances: dict[str, Instance] = {}

    def __call__(self, completions: Sequence[Any], **kwargs: Any) -> list[float]:
        n = len(completions)
        instances = column(kwargs, INSTANCE_COLUMN, n, "ms-swift")
        keys = column(kwargs, PROMPT_ID_COLUMN, n, "ms-swift") if kwargs.get(PROMPT_ID_COLUMN) is not None else None
        replies = [c if isinstance(c, str) else "" if c is None else str(c) for c in completions]
        batch = completions_of(replies, instances, keys, self._instances)
        return totals_as_floats(batch, self.service.score_sync(batch), "ms-swift")

    def close(self) -> None:
        self.service.close()


def swift_registry() -> tuple[type, dict[str, Any]] | None:
    """ms-swift's ORM base class and ``orms`` registry, or None when ms-swift is not importable."""
    for name in ("swift.rewards", "swift.plugin"):  # ms-swift 4, then 3.x
        try:
            module = importlib.import_module(name)
            return module.ORM, module.orms
        except (ImportError, AttributeError):
            continue
    return None


def settings_from_env(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """The registered ORM's settings from ``OMNIVCHAT_RL_*`` variables (see :data:`ENV_PREFIX`)."""
    env = os.environ if environ is None else environ
    settings: dict[str, Any] = {"judge": env.get(f"{ENV_PREFIX}JUDGE", RULE_JUDGE)}
    if env.get(f"{ENV_PREFIX}JUDGES_FILE"):
        settings["judges_file"] = Path(env[f"{ENV_PREFIX}JUDGES_FILE"])
    if env.get(f"{ENV_PREFIX}WEIGHTS"):
        text = env[f"{ENV_PREFIX}WEIGHTS"]
        try:
            settings["weights"] = tuple(float(w) for w in text.split(","))
        except ValueError:
            raise RewardError(f"{ENV_PREFIX}WEIGHTS={text!r}: expected 4 numbers such as 1,0.5,0.1,0.5") from None
    if env.get(f"{ENV_PREFIX}GROUP_SIZE"):
        text = env[f"{ENV_PREFIX}GROUP_SIZE"]
        if not text.isdigit():
            raise RewardError(f"{ENV_PREFIX}GROUP_SIZE={text!r}: expected the number of generations, e.g. 4")
        settings["group_size"] = int(text)
    if env.get(f"{ENV_PREFIX}LOG"):
        settings["log_path"] = Path(env[f"{ENV_PREFIX}LOG"])
    if env.get(f"{ENV_PREFIX}CACHE_DIR"):
        settings["cache_dir"] = Path(env[f"{ENV_PREFIX}CACHE_DIR"])
    return settings


def register(name: str = ORM_NAME, **settings: Any) -> type[OmnivchatORM] | None:
    """Register an ORM under ``name`` in ms-swift's ``orms`` with ``settings`` (judge, judges_file, weights,
    group_size and reward service options); returns its class, or None when ms-swift is not importable."""
    found = swift_registry()
    if found is None:
        return None
    base, orms = found
    cls = type(f"OmnivchatORM_{name}", (OmnivchatORM, base), {"settings": dict(settings), "__module__": __name__})
    orms[name] = cls
    return cls


def swift_recipe(
    *,
    iterations: int = TABLE4_ITERATIONS,
    checkpoint_every: int = TABLE4_CHECKPOINT_EVERY,
    num_processes: int = 1,
    per_device_train_batch_size: int = 1,
    gradient_accumulation_steps: int = 1,
    num_iterations: int = 1,
) -> dict[str, Any]:
    """Table 4 as ``swift rlhf --rlhf_type grpo`` arguments (name -> value).

    ms-swift's GRPO trainer schedules rollouts as TRL does and counts ``max_steps``/``save_steps`` in optimizer
    steps, so they are derived from the geometry (:func:`omnivchat.rl.recipe.optimizer_steps_per_iteration`;
    ``num_processes`` is the world size, NPROC_PER_NODE x nodes; sequence parallelism is not covered). Its defaults
    differ from Table 4 (cosine schedule, weight decay 0.1, T 0.9, LoRA r 8 / alpha 32 / dropout 0.05 on
    all-linear), so every value is given; ``target_regex`` keeps the adapter on the thinker's language model.
    ``per_device_train_batch_size`` defaults to ms-swift's 1.
    """
    per_iteration = optimizer_steps_per_iteration(
        generation_batch_size=TABLE4_ROLLOUT,
        per_device_train_batch_size=per_device_train_batch_size,
        num_processes=num_processes,
        gradient_accumulation_steps=gradient_accumulation_steps,
        num_iterations=num_iterations,
    )
    max_steps, save_steps = training_steps(iterations, checkpoint_every, per_iteration)
    return {
        "num_generations": TABLE4_GENERATIONS,
        "generation_batch_size": TABLE4_ROLLOUT,
        "per_device_train_batch_size": per_device_train_batch_size,
        "gradient_accumulation_steps": gradient_accumulation_steps,
        "num_iterations": num_iterations,
        "max_steps": max_steps,
        "save_strategy": "steps",
        "save_steps": save_steps,
        "learning_rate": 1e-6,
        "lr_scheduler_type": "constant",
        "warmup_ratio": 0.0,
        "weight_decay": 0.01,
        "importance_sampling_level": "sequence",
        "loss_type": "grpo",
        "epsilon": EPS_LOW,
        "epsilon_high": EPS_HIGH,
        "scale_rewards": "none",
        "beta": 0.0,
        "temperature": 1.0,
        "top_k": 20,
        "top_p": 1.0,
        "max_completion_length": 1024,
        # prompt + reply: Table 4's 11,072 + 1,024 tokens (`omnivchat rl dataset` keeps prompts within the first)
        "max_length": 11_072 + 1024,
        "tuner_type": "lora",  # ms-swift 4 (3.x called it train_type)
        "lora_rank": 64,
        "lora_alpha": 256,
        "lora_dropout": 0.0,
        "target_regex": LM_TARGET_REGEX,
    }


def swift_arguments(**kwargs: Any) -> list[str]:
    """:func:`swift_recipe` as command-line tokens (``--name value``), for ``subprocess`` or ``shlex.join``."""
    return [token for name, value in swift_recipe(**kwargs).items() for token in (f"--{name}", str(value))]


if swift_registry() is not None:
    register(ORM_NAME, **settings_from_env())
