"""A CPU smoke run of OmniVChat-RL: TRL's ``GRPOTrainer`` with the Table 4 GSPO settings (Eq. 3) and the reward
service's R(y) of Eq. 4, on a tiny random causal LM, for a couple of steps.

Nothing is downloaded: the tokenizer is a word-level one trained here on the prompts' sentences (with a small chat
template) and the model a 2-layer Qwen2 built from its config with random weights. The prompts are text-only
questions of four bench instances whose criteria carry machine checks, so the offline rule judge grades them
(style weight 0). The replies are noise, but every piece is the real one: the dataset columns TRL hands the
reward function, the group term e of Eq. 6, None for a failed grade, sequence-level importance sampling, the
asymmetric clip range, LoRA r 64 / α 256. Everything is written under one output folder.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omnivchat._files import check_output_dir, write_text_atomic
from omnivchat.bench import Instance
from omnivchat.errors import OmnivchatError
from omnivchat.rl._adapt import RULE_WEIGHTS, instance_json
from omnivchat.rl.recipe import describe_adapter, trainable_parameters
from omnivchat.rl.service import Completion, RewardTerms

SMOKE_FILE = "smoke.json"
"""The run's summary: settings, versions, each step's reward terms and trainer log, the files written."""
# For any user on any machine: no path of ours, only the package index and PyTorch's public CPU index.
INSTALL_HINT = (
    "install the `rl` extra: pip install 'omnivchat[rl]', or in a clone of omnivchat uv sync --extra rl (PyPI's torch "
    "is a CUDA build of several GB: on a CPU machine first pip install torch --index-url "
    "https://download.pytorch.org/whl/cpu); see docs/rl.md, CPU smoke run"
)


class SmokeError(OmnivchatError):
    """The smoke run cannot start: the RL packages are missing, or the output folder is not usable."""


@dataclass
class StepReport:
    """One training step's reward terms: means over the step's replies of r, f, e, s (None where none is known)
    and of the total R(y) of Eq. 4, with the replies left without a total."""

    step: int
    replies: int
    prompts: int
    r: float | None
    f: float | None
    e: float | None
    s: float | None
    total: float | None
    unscored: int
    failures: int
    completions: list[dict[str, Any]] = field(default_factory=list, repr=False)


@dataclass
class SmokeResult:
    """What the smoke run did: its steps, the trainer's log lines, the files it wrote and how long it took."""

    output: Path
    steps: list[StepReport]
    train_log: list[dict[str, Any]]
    written: list[Path]
    elapsed_s: float


def offline_environment(output: Path) -> dict[str, str]:
    """Environment for a run that must not reach the network (or write outside ``output``): the Hugging Face
    libraries offline, telemetry and trackers off, their caches under ``output``."""
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "DO_NOT_TRACK": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HOME": str(output.absolute() / "hf-home"),
    }


def _instance(id_: str, question: str, reference: str, key: str, extra: str) -> Instance:
    return Instance.model_validate(
        {
            "id": id_,
            "subcategory": "SVMR",
            "language": "en",
            "turns": [{"video": f"media/{id_}/turn1.mp4", "text": question}],
            "reference": reference,
            "rubric": [
                {"tier": 0, "text": "The reply is in English.", "check": {"language": "en"}},
                {"tier": 1, "text": f"Says {key}.", "check": {"any_of": [key]}},
                {"tier": 2, "text": f"Mentions {extra}.", "check": {"any_of": [extra]}},
            ],
            "meta": {"transcript": question, "smoke": True},
        }
    )


def smoke_instances() -> list[Instance]:
    """Four text-only instances whose criteria all carry machine checks (the rule judge decides them)."""
    return [
        _instance("door", "Is the door on my left closed?", "Yes, the left door is closed.", "closed", "left"),
        _instance("cup", "What colour is the cup on the table?", "The cup on the table is red.", "red", "table"),
        _instance(
            "count", "How many chairs are by the window?", "There are three chairs by the window.", "three", "window"
        ),
        _instance("light", "Is the light in the hall on?", "No, the hall light is off.", "off", "hall"),
    ]


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return math.fsum(known) / len(known) if known else None


def step_report(step: int, batch: list[Completion], terms: list[RewardTerms]) -> StepReport:
    """A :class:`StepReport` from one scored batch."""
    return StepReport(
        step=step,
        replies=len(batch),
        prompts=len({c.prompt_id for c in batch}),
        r=_mean([t.r for t in terms]),
        f=_mean([t.f for t in terms]),
        e=_mean([t.e for t in terms]),
        s=_mean([t.s for t in terms]),
        total=_mean([t.total for t in terms]),
        unscored=sum(t.total is None for t in terms),
        failures=sum(t.error is not None for t in terms),
        completions=[
            {"step": step, "prompt_id": c.prompt_id, "reply": c.reply, **t._asdict()}
            for c, t in zip(batch, terms, strict=True)
        ],
    )


def _require_packages() -> None:
    missing = []
    for name in ("torch", "transformers", "trl", "peft", "datasets", "tokenizers"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise SmokeError(f"{', '.join(missing)} not installed: {INSTALL_HINT}")


CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tokenizer(sentences: list[str]) -> Any:
    """A word-level tokenizer trained on ``sentences`` (lower-cased words and punctuation), wrapped as a
    ``PreTrainedTokenizerFast`` with pad, unknown and end tokens and a small chat template."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(unk_token="<unk>"))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ["<pad>", "<unk>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
    core.train_from_iterator(sentences, trainer=trainers.WordLevelTrainer(special_tokens=special))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="<|end|>", padding_side="left"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model(tokenizer: Any, seed: int) -> Any:
    """A 2-layer Qwen2 causal LM sized for ``tokenizer``, with random weights drawn from ``seed``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def run_smoke(
    output: Path,
    *,
    steps: int = 2,
    prompts_per_step: int = 2,
    num_generations: int = 4,
    max_completion_length: int = 12,
    seed: int = 0,
    on_step: Callable[[StepReport], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> SmokeResult:
    """Train the tiny model for ``steps`` GSPO steps of ``prompts_per_step`` prompts × ``num_generations`` replies,
    rewarded by the rule judge (weights 1 / 0.5 / 0.1 / 0); ``on_step`` gets each step's reward terms, and
    ``on_start`` the adapter's trainable parameter count (:func:`omnivchat.rl.recipe.describe_adapter`) before the
    first step.

    ``output`` must be new or empty. It receives ``smoke.json``, ``prompts.jsonl`` (the instances),
    ``rewards.jsonl`` (the reward service's per-step log), ``completions.jsonl`` (every reply with its terms),
    ``tokenizer/`` and ``adapter/`` (the trained LoRA adapter). Call with :func:`offline_environment` set.
    """
    started = time.perf_counter()
    check_output_dir(output, ours=lambda _: True, kind="a smoke run's folder")  # a file, a path through a file
    if output.is_dir() and any(output.iterdir()):
        raise SmokeError(f"{output} is not empty; give a new or empty folder (the smoke run writes all it makes there)")
    _require_packages()
    if steps < 1 or prompts_per_step < 1 or num_generations < 2:
        raise SmokeError("a smoke run needs steps >= 1, prompts_per_step >= 1 and num_generations >= 2")

    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOTrainer

    from omnivchat.rl.trl import grpo_config, lora_config, make_reward_function

    # transformers 5 deprecates names TRL still passes (gradient_checkpointing...): not ours to act on
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|peft)\.")
    transformers.set_seed(seed)
    output.mkdir(parents=True, exist_ok=True)
    instances = smoke_instances()
    n_prompts = steps * prompts_per_step
    rows = [instances[i % len(instances)] for i in range(n_prompts)]
    dataset = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": instance.turns[-1].text or ""}],
                "instance": instance_json(instance),
                "prompt_id": f"{instance.id}-{i}",
            }
            for i, instance in enumerate(rows)
        ]
    )
    write_text_atomic(output / "prompts.jsonl", "".join(instance_json(i) + "\n" for i in instances))

    sentences = [text for i in instances for text in (i.turns[-1].text or "", i.reference)]
    tokenizer = build_tokenizer(sentences)
    tokenizer.save_pretrained(str(output / "tokenizer"))
    model = build_model(tokenizer, seed)

    reports: list[StepReport] = []

    def record(batch: list[Completion], terms: list[RewardTerms]) -> None:
        report = step_report(len(reports) + 1, batch, terms)
        reports.append(report)
        if on_step is not None:
            on_step(report)

    reward = make_reward_function(
        "rule",
        weights=RULE_WEIGHTS,
        group_size=num_generations,
        log_path=output / "rewards.jsonl",
        on_batch=record,
    )
    settings: dict[str, Any] = {
        "output_dir": str(output / "trainer"),
        "per_device_train_batch_size": prompts_per_step * num_generations,
        "gradient_accumulation_steps": 1,
        "generation_batch_size": prompts_per_step * num_generations,
        "num_generations": num_generations,
        "max_completion_length": max_completion_length,
        "save_strategy": "no",
        "logging_steps": 1,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
        "seed": seed,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }
    config = grpo_config(iterations=steps, checkpoint_every=steps, num_processes=1, **settings)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(),  # the tiny Qwen2's `model.layers.N` are a thinker's language-model layers
    )
    trainer.remove_callback(PrinterCallback)  # the caller prints the steps
    trainable, total = trainable_parameters(trainer.model)
    if on_start is not None:
        on_start(describe_adapter(trainer.model))
    try:
        trainer.train()
    finally:
        reward.close()
    trainer.save_model(str(output / "adapter"))

    train_log = [dict(line) for line in trainer.state.log_history]
    completions = [line for report in reports for line in report.completions]
    write_text_atomic(
        output / "completions.jsonl", "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in completions)
    )
    elapsed = time.perf_counter() - started
    summary = {
        "schema": "omnivchat-rl-smoke-v1",
        "elapsed_s": round(elapsed, 2),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__},
        "model": {"type": "Qwen2ForCausalLM", **model.config.to_diff_dict()},
        "grpo_config": {k: _jsonable(v) for k, v in sorted(config.to_dict().items()) if k in _SHOWN},
        "lora": {k: _jsonable(v) for k, v in lora_config().to_dict().items() if k in ("r", "lora_alpha")},
        "adapter": {"trainable_parameters": trainable, "total_parameters": total},
        "weights": list(RULE_WEIGHTS),
        "steps": [{k: v for k, v in asdict(r).items() if k != "completions"} for r in reports],
        "train_log": train_log,
    }
    write_text_atomic(output / SMOKE_FILE, json.dumps(summary, indent=2, default=str) + "\n")
    written = sorted(p for p in output.rglob("*") if p.is_file())
    return SmokeResult(output=output, steps=reports, train_log=train_log, written=written, elapsed_s=elapsed)


_SHOWN = frozenset(
    {
        "importance_sampling_level",
        "loss_type",
        "epsilon",
        "epsilon_high",
        "scale_rewards",
        "beta",
        "entropy_coef",
        "num_generations",
        "generation_batch_size",
        "per_device_train_batch_size",
        "steps_per_generation",
        "temperature",
        "top_k",
        "top_p",
        "max_completion_length",
        "learning_rate",
        "lr_scheduler_type",
        "weight_decay",
        "max_steps",
    }
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return str(value)
