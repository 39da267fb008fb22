"""Table 4 in TRL: 1,000 iterations (rollouts of 32 prompts x 4 replies) with a checkpoint every 20 whatever the
batch geometry, a flat learning rate, and LoRA on the thinker's language model only (real module names of
Qwen2.5-Omni and Qwen3-Omni, matched by peft itself)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from omnivchat.rl.recipe import RecipeError, is_lm_target, optimizer_steps_per_iteration
from omnivchat.rl.trl import grpo_recipe

INSTALL = "the `rl` install step of .ci/run (a CPU torch wheel, then trl and peft; docs/rl.md, CPU smoke run)"


def need(*names: str) -> None:
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run {INSTALL}")


@pytest.mark.parametrize(
    ("per_device", "processes", "accumulation", "max_steps", "save_steps"),
    [
        (8, 1, 1, 16_000, 320),  # docs/rl.md's example: 128 / 8 = 16 optimizer steps per rollout
        (16, 1, 1, 8_000, 160),
        (32, 1, 1, 4_000, 80),
        (8, 4, 1, 4_000, 80),  # 4 processes x 8 = 32 per micro-batch
        (8, 1, 4, 4_000, 80),  # 16 micro-batches, 4 per optimizer step
        (16, 8, 1, 1_000, 20),  # one micro-batch is the whole rollout: Table 4's numbers as they stand
    ],
)
def test_iterations_are_rollouts_whatever_the_geometry(
    per_device: int, processes: int, accumulation: int, max_steps: int, save_steps: int
) -> None:
    recipe = grpo_recipe(
        per_device_train_batch_size=per_device, gradient_accumulation_steps=accumulation, num_processes=processes
    )
    assert (recipe["max_steps"], recipe["save_steps"]) == (max_steps, save_steps)
    assert recipe["lr_scheduler_type"] == "constant" and recipe["learning_rate"] == 1e-6
    assert recipe["generation_batch_size"] == 128


def test_reused_rollouts_and_steps_per_generation() -> None:
    # num_iterations (mu) = 2: every rollout is trained on twice, so it feeds twice the optimizer steps
    assert grpo_recipe(per_device_train_batch_size=32, num_iterations=2)["max_steps"] == 8_000
    # steps_per_generation given: TRL derives the rollout (8 x 16 = 128), so generation_batch_size is left out
    recipe = grpo_recipe(per_device_train_batch_size=8, steps_per_generation=16)
    assert "generation_batch_size" not in recipe and recipe["max_steps"] == 16_000
    assert (
        grpo_recipe(iterations=2, checkpoint_every=1, per_device_train_batch_size=4, generation_batch_size=8)[
            "max_steps"
        ]
        == 4
    )


def test_inconsistent_geometry_is_one_clear_error() -> None:
    with pytest.raises(RecipeError, match=r"rollout of 128 completions does not split .* = 24"):
        grpo_recipe(per_device_train_batch_size=24)
    with pytest.raises(RecipeError, match=r"16 micro-batches .* gradient_accumulation_steps 3"):
        grpo_recipe(per_device_train_batch_size=8, gradient_accumulation_steps=3)
    with pytest.raises(RecipeError, match=r"max_steps and save_steps count optimizer steps: give iterations="):
        grpo_recipe(max_steps=1000, save_steps=20)
    with pytest.raises(RecipeError, match=r"checkpoint_every 30 is more than the 20 iterations"):
        grpo_recipe(iterations=20, checkpoint_every=30)
    with pytest.raises(RecipeError, match=r"iterations must be a whole number >= 1, got 0"):
        grpo_recipe(iterations=0)
    with pytest.raises(RecipeError, match="exactly one of generation_batch_size and steps_per_generation"):
        optimizer_steps_per_iteration(generation_batch_size=128, per_device_train_batch_size=8, steps_per_generation=4)
    with pytest.raises(RecipeError, match="not whole groups of num_generations 4"):
        grpo_recipe(per_device_train_batch_size=3, steps_per_generation=1)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers 5 renames what TRL still sets
@pytest.mark.filterwarnings("ignore::UserWarning")  # TRL's notes on the tiny model (no chat template tokens...)
def test_real_grpo_trainer_runs_two_iterations_with_two_checkpoints_at_a_flat_rate(tmp_path: Path) -> None:
    need("torch", "transformers", "trl", "peft", "datasets", "tokenizers")
    from datasets import Dataset
    from trl import GRPOTrainer

    from omnivchat.rl._adapt import RULE_WEIGHTS
    from omnivchat.rl.smoke import build_model, build_tokenizer, smoke_instances
    from omnivchat.rl.trl import grpo_config, instance_json, lora_config, make_reward_function

    instances = smoke_instances()
    dataset = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": i.turns[-1].text or ""}],
                "instance": instance_json(i),
                "prompt_id": i.id,
            }
            for i in instances
        ]
    )
    tokenizer = build_tokenizer([t for i in instances for t in (i.turns[-1].text or "", i.reference)])
    model = build_model(tokenizer, seed=0)
    batches: list[int] = []
    reward = make_reward_function(
        "rule", weights=RULE_WEIGHTS, group_size=4, on_batch=lambda batch, _: batches.append(len(batch))
    )
    # a rollout of 2 prompts x 4 replies, in micro-batches of 4: 2 optimizer steps per iteration
    config = grpo_config(
        iterations=2,
        checkpoint_every=1,
        num_processes=1,
        output_dir=str(tmp_path / "trainer"),
        per_device_train_batch_size=4,
        generation_batch_size=8,
        max_completion_length=6,
        logging_steps=1,
        report_to="none",
        use_cpu=True,
        bf16=False,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    assert (config.steps_per_generation, config.max_steps, config.save_steps) == (2, 4, 2)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(),
    )
    try:
        trainer.train()
    finally:
        reward.close()

    assert reward.steps == 2 and batches == [8, 8]  # one reward batch per iteration, each the whole rollout
    checkpoints = sorted(p.name for p in (tmp_path / "trainer").glob("checkpoint-*"))
    assert checkpoints == ["checkpoint-2", "checkpoint-4"]  # one per iteration (checkpoint_every=1)
    rates = [line["learning_rate"] for line in trainer.state.log_history if "learning_rate" in line]
    print(f"reward batches {reward.steps}, checkpoints {checkpoints}, learning rates {rates}")
    assert len(rates) == 4 and set(rates) == {1e-6}  # every optimizer step at Table 4's flat 1e-6


# ------------------------------------------------------------------------------------------------------------ LoRA

TEXT = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
}
AUDIO = {"encoder_layers": 1, "d_model": 32, "encoder_attention_heads": 2, "encoder_ffn_dim": 32, "output_dim": 64}
VISION = {"depth": 1, "hidden_size": 32, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 64}
SMALL = {"num_hidden_layers": 1, "hidden_size": 32, "intermediate_size": 32, "num_attention_heads": 2}


def qwen2_5_omni() -> object:
    """The whole Qwen2.5-Omni (thinker with audio and vision towers, talker, token2wav), tiny, on the meta device."""
    import torch
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    config = Qwen2_5OmniConfig(
        thinker_config={"text_config": TEXT, "audio_config": AUDIO, "vision_config": VISION},
        talker_config={**SMALL, "num_key_value_heads": 1, "vocab_size": 128, "embedding_size": 64},
        token2wav_config={"dit_config": {**SMALL, "head_dim": 16, "ff_mult": 1}, "bigvgan_config": {}},
    )
    with torch.device("meta"):
        return Qwen2_5OmniForConditionalGeneration(config)


def qwen3_omni() -> object:
    """The whole Qwen3-Omni-MoE (thinker with MoE text model, towers, MoE talker, code predictor, code2wav), tiny."""
    import torch
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration

    moe = {"moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2}
    talker_text = {**SMALL, "num_key_value_heads": 1, "vocab_size": 128, **moe, "shared_expert_intermediate_size": 16}
    config = Qwen3OmniMoeConfig(
        thinker_config={
            "text_config": {**TEXT, **moe},
            "audio_config": AUDIO,
            "vision_config": {**VISION, "deepstack_visual_indexes": [0]},
        },
        talker_config={
            "text_config": talker_text,
            "code_predictor_config": {**SMALL, "num_key_value_heads": 1, "vocab_size": 128},
            "thinker_hidden_size": 64,
            "spatial_merge_size": 2,  # transformers 5.24's talker reads it but its config has no default
        },
        code2wav_config={**SMALL, "num_key_value_heads": 2},
    )
    with torch.device("meta"):
        return Qwen3OmniMoeForConditionalGeneration(config)


def adapted(model: object, config: object) -> set[str]:
    """The names (in ``model``) of the modules and parameters peft gives an adapter under ``config``."""
    from peft import get_peft_model

    peft_model = get_peft_model(model, config)  # type: ignore[arg-type]
    names = set()
    for name, _ in peft_model.named_parameters():
        if ".lora_A." in name:
            base = name.removeprefix("base_model.model.").split(".lora_A.")[0]
            names.add(base.removesuffix(".base_layer"))
    return names


FROZEN = ("audio_tower", "visual", "talker", "token2wav", "code2wav", "lm_head", "mlp.gate.", "shared_expert_gate")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("build", [qwen2_5_omni, qwen3_omni], ids=["qwen2.5-omni", "qwen3-omni"])
def test_lora_adapts_the_thinkers_language_model_only(build) -> None:  # type: ignore[no-untyped-def]
    need("torch", "transformers", "peft")
    from omnivchat.rl.trl import lora_config

    model = build()
    linear = {n for n, m in model.named_modules() if type(m).__name__ == "Linear"}  # type: ignore[attr-defined]
    fused = {n for n, p in model.named_parameters() if p.dim() == 3 and ".experts." in n}  # type: ignore[attr-defined]
    lm = re.compile(r"thinker\.model\.language_model\.layers\.(\d+)\.")
    # every projection of the language model, and nothing else: attention q/k/v/o, dense MLP or fused experts
    want = {n for n in linear if lm.match(n) and re.search(r"\.(self_attn\.[qkvo]|mlp\.(gate|up|down))_proj$", n)}
    want |= {n.rsplit(".", 1)[0] for n in fused if lm.match(n)}
    assert any("talker" in n for n in linear) and any("audio_tower" in n for n in linear)  # the towers are there
    assert any(re.search(r"talker\..*(q_proj|gate_proj)$", n) for n in linear)  # with the same leaf names
    got = adapted(model, lora_config(model))
    assert got == want, sorted(got ^ want)
    assert not [n for n in got if any(part in n for part in FROZEN)]
    layers = {int(m.group(1)) for n in got if (m := lm.match(n))}
    assert layers == {0, 1}
    if fused:  # Qwen3-Omni in transformers 5: the experts of both layers, the talker's experts untouched
        assert {n for n in got if n.endswith("mlp.experts")} == {
            "thinker.model.language_model.layers.0.mlp.experts",
            "thinker.model.language_model.layers.1.mlp.experts",
        }


# Module names of the transformers 4 layout, where Qwen3-Omni's experts and router were nn.Linear and the thinker's
# text model sat at thinker.model (transformers v4.57.1, src/transformers/models/qwen3_omni_moe/
# modeling_qwen3_omni_moe.py: Qwen3OmniMoeThinkerForConditionalGeneration.model, ThinkerTextSparseMoeBlock.gate /
# .experts[i].gate_proj; Qwen2.5-Omni likewise at thinker.model.layers, thinker.audio_tower, thinker.visual).
V4_TARGETS = [
    "thinker.model.layers.0.self_attn.q_proj",
    "thinker.model.layers.47.self_attn.o_proj",
    "thinker.model.layers.3.mlp.experts.127.gate_proj",
    "thinker.model.layers.3.mlp.experts.0.down_proj",
    "thinker.model.layers.3.mlp.up_proj",
    "model.layers.0.self_attn.k_proj",  # a thinker loaded on its own
]
V4_FROZEN = [
    "thinker.model.layers.3.mlp.gate",  # the router
    "thinker.audio_tower.layers.0.self_attn.q_proj",
    "thinker.visual.blocks.0.mlp.gate_proj",
    "thinker.visual.merger.mlp.0",
    "talker.model.layers.0.self_attn.q_proj",
    "talker.model.layers.0.mlp.experts.1.up_proj",
    "talker.model.layers.0.mlp.shared_expert.gate_proj",
    "talker.code_predictor.model.layers.0.self_attn.v_proj",
    "code2wav.decoder.0.self_attn.q_proj",
    "token2wav.code2wav_dit_model.transformer_blocks.0.attn.to_q",
    "thinker.lm_head",
]


def test_transformers_4_names_with_peft_matching() -> None:
    need("peft")
    from peft.tuners.tuners_utils import check_target_module_exists

    from omnivchat.rl.trl import lora_config

    config = lora_config()
    assert [n for n in V4_TARGETS if not check_target_module_exists(config, n)] == []
    assert [n for n in V4_FROZEN if check_target_module_exists(config, n)] == []
    # the one-regex form (ms-swift's target_regex) selects the same names
    assert all(is_lm_target(n) for n in V4_TARGETS) and not any(is_lm_target(n) for n in V4_FROZEN)


def test_table4_adapter_size_under_each_reading() -> None:
    """Table 4's 325M is no reading of "Attention + MoE Experts" at rank 64 on Qwen3-Omni-30B-A3B's own shapes."""
    from omnivchat.rl.recipe import QWEN3_OMNI_30B, TABLE4_ADAPTER_PARAMETERS, lora_sizes

    sizes = lora_sizes(QWEN3_OMNI_30B)
    assert sizes == {
        "attention": 53_477_376,  # 48 x 64 x (2 x (2048 + 4096) + 2 x (2048 + 512))
        "attention + every expert (fused)": 2_570_059_776,  # + 48 x 128 x 64 x ((2048 + 1536) + (768 + 2048))
        "attention + every expert (separate)": 3_375_366_144,  # + 48 x 128 x 64 x 3 x (2048 + 768)
        "attention + per-token share of experts (fused)": 210_763_776,  # 8 of the 128 experts
        "attention + per-token share of experts (separate)": 261_095_424,
    }
    assert all(abs(n - TABLE4_ADAPTER_PARAMETERS) / TABLE4_ADAPTER_PARAMETERS > 0.15 for n in sizes.values())


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_recipe_says_what_the_adapter_trains_on_a_real_qwen3_omni() -> None:
    """peft's count on the tiny Qwen3-Omni built from the real classes is the formula's, and the line says it."""
    need("torch", "transformers", "peft")
    from peft import get_peft_model

    from omnivchat.rl.recipe import LM_ATTENTION, LanguageModelShape, describe_adapter, lora_sizes, trainable_parameters
    from omnivchat.rl.trl import adapter_size_callback, lora_config

    model = qwen3_omni()
    shape = LanguageModelShape.of(model.config.thinker_config.text_config)  # type: ignore[attr-defined]
    peft_model = get_peft_model(model, lora_config(model))  # type: ignore[arg-type]
    trainable, total = trainable_parameters(peft_model)
    assert trainable == lora_sizes(shape)["attention + every expert (fused)"] > 0
    assert trainable < total
    line = describe_adapter(peft_model)
    assert line.startswith(f"LoRA adapter: {trainable:,} trainable parameters of {total:,} (")
    assert "Table 4 states 325M" in line

    said: list[str] = []

    class State:
        is_world_process_zero = True

    adapter_size_callback(said.append).on_train_begin(None, State(), None, model=peft_model)
    assert said == [line]

    # the smaller adapter docs/rl.md names (attention only) trains what the formula says too
    small = get_peft_model(qwen3_omni(), lora_config(model, target_modules=list(LM_ATTENTION), target_parameters=[]))  # type: ignore[arg-type]
    assert trainable_parameters(small)[0] == lora_sizes(shape)["attention"]
