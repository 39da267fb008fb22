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
from dataclasses import dataclass
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


# --- the adapter's size -----------------------------------------------------------------------------------------
# Table 4 states "Adapter / Total Params 325M / 30B (3B Active)" for LoRA r = 64 on "Attention + MoE Experts" of
# Qwen3-Omni-30B-A3B. Counted on the model's own shapes, no reading of those modules at that rank gives 325M
# (docs/rl.md, "The adapter's size"): the counts below are what each reading trains.

TABLE4_ADAPTER_PARAMETERS = 325_000_000
"""The adapter size Table 4 states (325M)."""


@dataclass(frozen=True)
class LanguageModelShape:
    """The shapes of a MoE language model's layers that a LoRA adapter's size depends on."""

    layers: int
    hidden: int
    query: int  # attention heads x head size
    key_value: int  # key/value heads x head size
    experts: int
    experts_per_token: int
    expert_intermediate: int

    @classmethod
    def of(cls, text_config: Any) -> LanguageModelShape:
        """From a transformers text config (``model.config.thinker_config.text_config`` for Qwen3-Omni)."""
        c = text_config
        head = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        return cls(
            layers=c.num_hidden_layers,
            hidden=c.hidden_size,
            query=c.num_attention_heads * head,
            key_value=c.num_key_value_heads * head,
            experts=c.num_experts,
            experts_per_token=c.num_experts_per_tok,
            expert_intermediate=c.moe_intermediate_size,
        )


QWEN3_OMNI_30B = LanguageModelShape(
    layers=48, hidden=2048, query=32 * 128, key_value=4 * 128, experts=128, experts_per_token=8, expert_intermediate=768
)
"""Qwen3-Omni-30B-A3B's thinker language model (its config.json: 48 layers, hidden 2048, 32 query and 4 key/value
heads of 128, 128 experts of which 8 per token, expert intermediate size 768)."""


def _lora(d_in: int, d_out: int, rank: int) -> int:
    return rank * (d_in + d_out)  # A: rank x d_in, B: d_out x rank


def lora_sizes(shape: LanguageModelShape, rank: int = 64) -> dict[str, int]:
    """Trainable LoRA parameters of rank ``rank`` under each reading of Table 4's "Attention + MoE Experts".

    - ``attention``: q/k/v/o of every layer;
    - ``attention + every expert (fused)``: plus each expert's fused ``gate_up_proj`` (one A and B for both) and
      ``down_proj``, as peft adapts them in transformers 5 (the recipe's default there);
    - ``attention + every expert (separate)``: each expert's ``gate_proj``, ``up_proj`` and ``down_proj`` apart,
      as in transformers 4;
    - ``... (per-token share)``: only the experts one token passes through (``experts_per_token`` of them): what a
      token's forward pass touches, not what trains (every expert is adapted and updated).
    """
    h, i = shape.hidden, shape.expert_intermediate
    attention = 2 * _lora(h, shape.query, rank) + 2 * _lora(h, shape.key_value, rank)
    fused = _lora(h, 2 * i, rank) + _lora(i, h, rank)
    separate = 2 * _lora(h, i, rank) + _lora(i, h, rank)
    n, k = shape.experts, shape.experts_per_token
    per_layer = {
        "attention": attention,
        "attention + every expert (fused)": attention + n * fused,
        "attention + every expert (separate)": attention + n * separate,
        "attention + per-token share of experts (fused)": attention + k * fused,
        "attention + per-token share of experts (separate)": attention + k * separate,
    }
    return {reading: shape.layers * count for reading, count in per_layer.items()}


def trainable_parameters(model: Any) -> tuple[int, int]:
    """``(trainable, total)`` parameter counts of a (peft-wrapped) torch model."""
    trainable = total = 0
    for parameter in model.parameters():
        total += parameter.numel()
        if parameter.requires_grad:
            trainable += parameter.numel()
    return trainable, total


def describe_adapter(model: Any) -> str:
    """One line for the log before training: the adapter's trainable count, the model's total, Table 4's figure."""
    trainable, total = trainable_parameters(model)
    share = f" ({trainable / total:.2%})" if total else ""
    return (
        f"LoRA adapter: {trainable:,} trainable parameters of {total:,}{share}; Table 4 states 325M, which no "
        "reading of its modules at rank 64 gives (docs/rl.md, 'The adapter's size')"
    )
