"""What Table 4 means in every engine: the training length in iterations, and LoRA on the language model only.

- An **iteration** (Table 4: "1,000 iterations, checkpoint every 20") is one rollout of the whole group batch:
  32 prompts x N = 4 replies = 128 completions, then the updates it feeds. TRL and ms-swift count ``max_steps`` and
  ``save_steps`` in optimizer steps, and one rollout feeds several of them when the per-device batch is smaller
  than the rollout: :func:`optimizer_steps_per_iteration` gives how many, from the batch geometry. verl counts
  ``trainer.total_training_steps`` in rollouts already.
- **LoRA targets**: the attention and MLP/expert projections of the thinker's language model, never the audio or
  vision tower, the talker, the code2wav/token2wav vocoder or the MoE router. Module names differ between
  transformers 4 (``thinker.model.layers.N``) and 5 (``thinker.model.language_model.layers.N``), with or without
  the ``thinker.`` prefix (a thinker loaded alone): :data:`LM_TARGET_REGEX` covers them all. In transformers 5 the
  Qwen3-Omni experts are fused 3-D parameters (``mlp.experts.gate_up_proj``, ``down_proj``) that only peft's
  ``target_parameters`` reaches: :func:`expert_parameters` lists them for one model.
"""

from __future__ import annotations

import re
from typing import Any

from omnivchat.errors import OmnivchatError

TABLE4_ITERATIONS = 1000
TABLE4_CHECKPOINT_EVERY = 20
TABLE4_PROMPTS = 32
TABLE4_GENERATIONS = 4
TABLE4_ROLLOUT = TABLE4_PROMPTS * TABLE4_GENERATIONS  # 128 completions per iteration

LM_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Leaf names of the adapted layers: attention q/k/v/o and the MLP or per-expert gate/up/down projections."""
LM_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")

_LM_LAYER = r"(thinker\.)?model\.(language_model\.)?layers\.\d+\."
LM_TARGET_REGEX = _LM_LAYER + r"(self_attn\.[qkvo]_proj|mlp\.(experts\.\d+\.)?(gate|up|down)_proj)"
"""The adapted modules as one regex (peft and ms-swift's ``target_regex`` match it against the whole name)."""
LM_EXCLUDE_REGEX = r"(?!" + _LM_LAYER + r"(self_attn|mlp)\.).*"
"""Everything outside the thinker's language-model layers, for engines that take leaf names plus an exclusion
(peft's ``exclude_modules``, verl's ``exclude_modules``): with :data:`LM_PROJECTIONS` it selects the same modules as
:data:`LM_TARGET_REGEX`."""
LM_EXPERT_PARAMETER_REGEX = _LM_LAYER + r"mlp\.experts\.(gate_up_proj|down_proj)"
"""Fused expert parameters (transformers >= 5) of the thinker's language model."""


class RecipeError(OmnivchatError, ValueError):
    """A training recipe that cannot be built as asked (a batch geometry that does not fit the rollout)."""


def positive_int(name: str, value: Any) -> int:
    """``value`` as an int >= 1, else a :class:`RecipeError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RecipeError(f"{name} must be a whole number >= 1, got {value!r}")
    return value


def optimizer_steps_per_iteration(
    *,
    generation_batch_size: int | None,
    per_device_train_batch_size: int,
    num_processes: int = 1,
    gradient_accumulation_steps: int = 1,
    steps_per_generation: int | None = None,
    num_iterations: int = 1,
    num_generations: int = TABLE4_GENERATIONS,
) -> int:
    """Optimizer steps fed by one rollout, as TRL 1.16 (and ms-swift's copy of its trainer) schedules them.

    The rollout of ``generation_batch_size`` completions is split into ``steps_per_generation`` micro-batches of
    ``per_device_train_batch_size x num_processes`` (``GRPOConfig.__post_init__``), and the trainer generates again
    every ``steps_per_generation x num_iterations`` micro-batches (``GRPOTrainer._prepare_inputs``); an optimizer
    step is ``gradient_accumulation_steps`` micro-batches. So k = steps_per_generation x num_iterations /
    gradient_accumulation_steps, which must be whole: an optimizer step that straddles two rollouts makes
    "iteration" meaningless. Give one of ``generation_batch_size`` and ``steps_per_generation``, as TRL requires.
    """
    per_device = positive_int("per_device_train_batch_size", per_device_train_batch_size)
    processes = positive_int("num_processes", num_processes)
    accumulation = positive_int("gradient_accumulation_steps", gradient_accumulation_steps)
    reuse = positive_int("num_iterations", num_iterations)
    generations = positive_int("num_generations", num_generations)
    step_batch = per_device * processes
    if (generation_batch_size is None) == (steps_per_generation is None):
        raise RecipeError(
            "give exactly one of generation_batch_size and steps_per_generation "
            f"(got {generation_batch_size!r} and {steps_per_generation!r}; TRL refuses both and derives the other)"
        )
    if steps_per_generation is None:
        rollout = positive_int("generation_batch_size", generation_batch_size)
        if rollout % step_batch:
            raise RecipeError(
                f"a rollout of {rollout} completions does not split into micro-batches of "
                f"per_device_train_batch_size {per_device} x {processes} process(es) = {step_batch} "
                f"(their product must divide {rollout})"
            )
        micro_batches = rollout // step_batch
    else:
        micro_batches = positive_int("steps_per_generation", steps_per_generation)
        rollout = micro_batches * step_batch
    if rollout % generations:
        raise RecipeError(f"a rollout of {rollout} completions is not whole groups of num_generations {generations}")
    per_rollout = micro_batches * reuse
    if per_rollout % accumulation:
        raise RecipeError(
            f"one rollout is {per_rollout} micro-batches ({micro_batches} x num_iterations {reuse}), not a whole "
            f"number of optimizer steps of gradient_accumulation_steps {accumulation}: an update would mix rollouts"
        )
    return per_rollout // accumulation


def training_steps(iterations: int, checkpoint_every: int, steps_per_iteration: int) -> tuple[int, int]:
    """(max_steps, save_steps) in optimizer steps for ``iterations`` rollouts with a checkpoint every
    ``checkpoint_every`` of them."""
    iterations = positive_int("iterations", iterations)
    checkpoint_every = positive_int("checkpoint_every", checkpoint_every)
    if checkpoint_every > iterations:
        raise RecipeError(f"checkpoint_every {checkpoint_every} is more than the {iterations} iterations")
    return iterations * steps_per_iteration, checkpoint_every * steps_per_iteration


def is_lm_target(name: str) -> bool:
    """True when the module ``name`` is one the Table 4 adapter targets (see :data:`LM_TARGET_REGEX`)."""
    return re.fullmatch(LM_TARGET_REGEX, name) is not None


def expert_parameters(model: Any) -> list[str]:
    """The fused expert parameters (transformers >= 5 Qwen3-Omni: ``...mlp.experts.gate_up_proj``/``down_proj``) of
    the thinker's language model in ``model``, by full name, for peft's ``target_parameters`` (peft matches those by
    name suffix, so a plain ``mlp.experts.gate_up_proj`` would also adapt the talker's experts). Empty for a dense
    model or transformers 4, whose experts are ``nn.Linear`` modules that :data:`LM_TARGET_REGEX` already names."""
    return [name for name, _ in model.named_parameters() if re.fullmatch(LM_EXPERT_PARAMETER_REGEX, name)]
