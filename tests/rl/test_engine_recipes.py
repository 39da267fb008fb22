"""Table 4 in verl's and ms-swift's own words: the run length in their step units, a flat learning rate, LoRA on the
thinker's language model; every key checked against the engine's config schema (facts recorded below) and against
the snippets in docs/rl.md."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from omnivchat.rl.recipe import LM_TARGET_REGEX, RecipeError
from omnivchat.rl.swift import swift_arguments, swift_recipe
from omnivchat.rl.verl import verl_recipe

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rl.md"

# verl, commit b178a3cd56f58b2d502255daba591e92833930a7 (2026-01-29), verl/trainer/config/_generated_ppo_trainer.yaml:
# keys that exist (flattened), with the defaults that matter here. trainer.global_steps is incremented once per
# train_batch_size batch (verl/trainer/ppo/ray_trainer.py, fit), and the loop also ends after trainer.total_epochs.
VERL_KEYS = {
    "data.train_batch_size": 1024,
    "actor_rollout_ref.rollout.n": 1,
    "actor_rollout_ref.actor.ppo_mini_batch_size": 256,
    "actor_rollout_ref.actor.ppo_epochs": 1,
    "actor_rollout_ref.actor.optim.lr": 1e-6,
    "actor_rollout_ref.actor.optim.lr_scheduler_type": "constant",
    "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 0.0,
    "actor_rollout_ref.actor.optim.weight_decay": 0.01,
    "actor_rollout_ref.model.lora_rank": 0,
    "actor_rollout_ref.model.lora_alpha": 16,
    "actor_rollout_ref.model.target_modules": "all-linear",
    "actor_rollout_ref.model.exclude_modules": None,
    "trainer.total_training_steps": None,
    "trainer.save_freq": -1,
    "trainer.total_epochs": 30,
}

# ms-swift, commit 3602360a562313afbf2ef6065fdf61f271a2c5b9 (2026-08-22): dataclass fields of its GRPO arguments
# (swift/arguments/rlhf_args.py, base_args/base_args.py, tuner_args.py, swift/rlhf_trainers/args_mixin.py,
# swift/trainers/arguments.py), with ms-swift's own defaults where they differ from Table 4. The rest
# (max_steps, save_strategy, save_steps, learning_rate) are transformers.TrainingArguments fields, checked below.
SWIFT_FIELDS = {
    "num_generations": 8,
    "num_iterations": 1,
    "generation_batch_size": None,
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": None,  # GRPO: 1 (rlhf_args.py)
    "lr_scheduler_type": "cosine",
    "warmup_ratio": 0.0,
    "weight_decay": 0.1,
    "importance_sampling_level": "token",
    "loss_type": None,
    "epsilon": 0.2,
    "epsilon_high": None,
    "scale_rewards": None,
    "beta": None,
    "temperature": 0.9,
    "top_k": -1,
    "top_p": 1.0,
    "max_completion_length": 512,
    "max_length": None,  # TemplateArguments (swift/arguments/base_args/template_args.py): the template's limit
    "tuner_type": "lora",  # ms-swift 4 (train_type in 3.x)
    "lora_rank": 8,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "target_regex": None,
}


def docs_block(after: str, language: str) -> str:
    text = DOCS.read_text()
    start = text.index(after)
    match = re.search(rf"```{language}\n(.*?)```", text[start:], re.S)
    assert match, f"no {language} block after {after!r} in docs/rl.md"
    return match.group(1)


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def test_verl_counts_iterations_in_its_own_steps() -> None:
    recipe = verl_recipe()
    assert set(recipe) <= set(VERL_KEYS) | {"trainer.total_epochs"}
    assert recipe["trainer.total_training_steps"] == 1000 and recipe["trainer.save_freq"] == 20
    assert recipe["data.train_batch_size"] * recipe["actor_rollout_ref.rollout.n"] == 128
    assert recipe["actor_rollout_ref.actor.optim.lr_scheduler_type"] == "constant"
    assert "trainer.total_epochs" not in recipe  # verl's 30 unless the set's size is given
    # 5,566 dialogues within budget: 173 batches of 32 per epoch, so 6 epochs hold 1,000 iterations
    assert verl_recipe(train_prompts=5566)["trainer.total_epochs"] == 6
    assert verl_recipe(iterations=2, checkpoint_every=1)["trainer.save_freq"] == 1
    with pytest.raises(RecipeError, match="ppo_mini_batch_size 12 does not divide the 32 prompts"):
        verl_recipe(ppo_mini_batch_size=12)
    with pytest.raises(RecipeError, match="do not fill one batch of 32"):
        verl_recipe(train_prompts=20)


def test_docs_verl_config_is_the_recipe() -> None:
    flat = flatten(yaml.safe_load(docs_block("The Table 4 configuration", "yaml")))
    recipe = verl_recipe()
    assert {k: flat.get(k) for k in recipe} == recipe  # all-linear would adapt the towers and the talker


def test_swift_counts_iterations_in_optimizer_steps() -> None:
    recipe = swift_recipe()
    assert set(recipe) <= set(SWIFT_FIELDS) | {"max_steps", "save_strategy", "save_steps", "learning_rate"}
    assert (recipe["max_steps"], recipe["save_steps"]) == (128_000, 2_560)  # ms-swift's per-device batch 1
    for per_device, max_steps, save_steps in ((8, 16_000, 320), (16, 8_000, 160), (32, 4_000, 80)):
        got = swift_recipe(per_device_train_batch_size=per_device)
        assert (got["max_steps"], got["save_steps"]) == (max_steps, save_steps)
    assert swift_recipe(per_device_train_batch_size=4, num_processes=8)["max_steps"] == 4_000
    assert {k: v for k, v in recipe.items() if SWIFT_FIELDS.get(k, v) == v and k in SWIFT_FIELDS} == {
        "num_iterations": 1,
        "per_device_train_batch_size": 1,
        "warmup_ratio": 0.0,
        "top_p": 1.0,
        "tuner_type": "lora",
    }  # everything else differs from ms-swift's defaults, so it must be given
    assert recipe["target_regex"] == LM_TARGET_REGEX
    with pytest.raises(RecipeError, match="does not split"):
        swift_recipe(per_device_train_batch_size=3)


def test_swift_training_arguments_are_transformers_fields() -> None:
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers not installed")
    from transformers import TrainingArguments

    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    assert {"max_steps", "save_strategy", "save_steps", "learning_rate"} <= fields


def test_docs_swift_command_is_the_recipe() -> None:
    block = docs_block("Configure the\nplugin through the environment", "bash")
    tokens = shlex.split(block.replace("\\\n", " "))
    given = {tokens[i][2:]: tokens[i + 1] for i in range(len(tokens) - 1) if tokens[i].startswith("--")}
    wanted = swift_arguments(per_device_train_batch_size=8)
    wanted_pairs = dict(zip(wanted[::2], wanted[1::2], strict=True))
    assert {k: given.get(k) for k in (n[2:] for n in wanted_pairs)} == {k[2:]: v for k, v in wanted_pairs.items()}
