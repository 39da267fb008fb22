"""The engine adapters, each called the way its engine calls it, with the engine's argument shapes:

- TRL ``GRPOTrainer._calculate_rewards``: ``func(prompts=..., completions=..., completion_ids=..., **reward_kwargs)``
  with every dataset column but ``prompt`` repeated per completion, ``trainer_state``, ``log_extra``,
  ``log_metric``; completions as strings or as ``[{"role": "assistant", "content": ...}]``.
- verl ``BatchRewardManager.verify``: ``compute_score(data_sources=<object array>, solution_strs=[...],
  ground_truths=[...], extra_infos=<object array of dicts with rollout_reward_scores>, **reward_kwargs)``, on a
  batch that ``balance_batch`` has reordered.
- ms-swift ``compute_rewards_per_func``: ``orm(completions, trainer_state=..., messages=..., prompt_id=...,
  request_id=..., ..., <dataset columns>)`` on an ORM made as ``orms[name](args=args)``.

The expected rewards are worked by hand (the door group of tests/rl/test_service.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import sys
import types
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from omnivchat.bench import Instance
from omnivchat.rl import RewardError, RewardTerms
from omnivchat.rl._adapt import RULE_WEIGHTS, reply_text, totals_as_floats
from omnivchat.rl.service import Completion
from omnivchat.rl.trl import (
    REWARD_NAME,
    grpo_config,
    grpo_recipe,
    instance_json,
    lora_config,
    lora_recipe,
    make_reward_function,
)

INSTALL = "the `rl` install step of .ci/run (a CPU torch wheel, then trl and peft; docs/rl.md, CPU smoke run)"


def door(id_: str = "d1", *, checks: bool = True) -> Instance:
    rubric = [
        {"tier": 0, "text": "The reply is in English.", "check": {"language": "en"}},
        {"tier": 1, "text": "Says the left door is closed.", "check": {"all_of": ["closed"]}},
        {"tier": 2, "text": "Mentions the right door.", **({"check": {"any_of": ["right"]}} if checks else {})},
    ]
    return Instance.model_validate(
        {
            "id": id_,
            "subcategory": "SVMR",
            "language": "en",
            "turns": [{"video": f"media/{id_}/turn1.mp4"}],
            "reference": "The left door is closed; the right one is open.",
            "rubric": rubric,
        }
    )


GROUP = [
    "The left door is closed.",  # hits 1, 2: r = 1/2, w = 5, ρ = 0.1
    "Closed. The right one is open.",  # hits 1, 2, 3: r = 1, w = 6, ρ = 1/6 (the max)
    "",  # empty: r = 0 without a grader, f = 0, ρ = 0 (the min)
    "<think>Which door?</think> The left door is closed, the right one is open.",  # r = 1, f = 0, w = 14
]
# e = (ρ - 0) / (1/6): 0.6, 1, 0, 6/14; R = r + 0.5 f + 0.1 e (style weight 0 with the rule judge)
DOOR_TOTALS = [0.5 + 0.5 + 0.06, 1.0 + 0.5 + 0.1, 0.0, 1.0 + 0.6 / 14]
OTHER = ["Closed.", "It is closed, and the right one is open."]  # r = 1/2 and 1 (w = 1 and 9)
# ρ = 0.5, 1/9 -> e = 1, 0; R = 0.5 + 0.5 + 0.1, 1 + 0.5 + 0
OTHER_TOTALS = [1.1, 1.5]


# ----------------------------------------------------------------------------------------------------------- TRL


def trl_kwargs(rows: list[dict[str, Any]], per_row: int) -> dict[str, Any]:
    """What TRL adds to the reward call: each dataset column but `prompt`, one value per completion (the rows
    repeated per_row times, as RepeatSampler makes them adjacent), the trainer state and the two loggers."""
    repeated = [row for row in rows for _ in range(per_row)]
    kwargs: dict[str, Any] = {key: [r[key] for r in repeated] for key in rows[0] if key != "prompt"}
    kwargs["trainer_state"] = SimpleNamespace(global_step=3, epoch=0.5)
    kwargs["metrics"] = {}
    kwargs["log_extra"] = lambda column, values: None
    kwargs["log_metric"] = lambda name, value: kwargs["metrics"].setdefault(name, []).append(value)
    return kwargs


def test_trl_reward_with_conversational_and_plain_completions() -> None:
    rows = [
        {"prompt": [{"role": "user", "content": "Which door is closed?"}], "instance": instance_json(door()),
         "prompt_id": "p-0"},
    ]  # fmt: skip
    kwargs = trl_kwargs(rows, per_row=4)
    prompts = [rows[0]["prompt"]] * 4
    completions = [[{"role": "assistant", "content": text}] for text in GROUP]
    reward = make_reward_function("rule", group_size=4)
    try:
        assert reward.__name__ == REWARD_NAME == "omnivchat_reward"
        out = reward(prompts=prompts, completions=completions, completion_ids=[[1, 2]] * 4, **kwargs)
        assert out == pytest.approx(DOOR_TOTALS)
        assert all(isinstance(v, float) for v in out)
        metrics = kwargs["metrics"]
        assert metrics["omnivchat/r"] == [pytest.approx(2.5 / 4)] and metrics["omnivchat/unscored"] == [0.0]
        assert "omnivchat/s" not in metrics  # style is not graded by the rule judge
        # the same replies as plain strings (a standard, not conversational, dataset) score the same
        plain = reward(prompts=["Which door is closed?"] * 4, completions=GROUP, completion_ids=[[1]] * 4, **kwargs)
        assert plain == out
        assert reward.steps == 2 and reward.service.stats.cache_hits == 3  # the non-empty replies were cached
    finally:
        reward.close()


def test_trl_reward_groups_by_prompt_id_and_returns_none_for_a_failed_grade() -> None:
    rows = [
        {"prompt": "a", "instance": instance_json(door("d1")), "prompt_id": "p-0"},
        {"prompt": "b", "instance": instance_json(door("d2", checks=False)), "prompt_id": "p-1"},
        {"prompt": "c", "instance": instance_json(door("d3")), "prompt_id": "p-2"},
    ]
    kwargs = trl_kwargs(rows, per_row=2)
    completions = [*GROUP[:2], *OTHER, *OTHER]
    seen: list[tuple[list[Completion], list[RewardTerms]]] = []
    reward = make_reward_function(group_size=2, on_batch=lambda b, t: seen.append((b, t)))
    try:
        out = reward(prompts=["a", "a", "b", "b", "c", "c"], completions=completions, **kwargs)
    finally:
        reward.close()
    # group p-0: ρ = 0.1, 1/6 -> e = 0, 1
    assert out[:2] == pytest.approx([0.5 + 0.5 + 0.0, 1.0 + 0.5 + 0.1])
    # p-1: its last criterion has no machine check, so the rule judge cannot grade it: None, not 0
    assert out[2:4] == [None, None]
    assert "no machine check" in (seen[0][1][2].error or "")
    assert out[4:] == pytest.approx(OTHER_TOTALS)
    assert [c.prompt_id for c in seen[0][0]] == ["p-0", "p-0", "p-1", "p-1", "p-2", "p-2"]


def test_trl_reward_without_prompt_id_groups_by_instance_and_names_a_missing_column() -> None:
    kwargs = trl_kwargs([{"prompt": "q", "instance": instance_json(door())}], per_row=4)
    reward = make_reward_function(weights=RULE_WEIGHTS)
    try:
        assert reward(prompts=["q"] * 4, completions=GROUP, **kwargs) == pytest.approx(DOOR_TOTALS)
        with pytest.raises(RewardError, match=r"TRL passed no 'instance' column.*got columns: .*trainer_state"):
            reward(prompts=["q"], completions=["x"], trainer_state=None, log_metric=None)
        with pytest.raises(RewardError, match="completion 0: column 'instance': not a bench instance"):
            reward(prompts=["q"], completions=["x"], instance=['{"id": "x"}'])
    finally:
        reward.close()


def test_trl_reward_setup_errors() -> None:
    with pytest.raises(RewardError, match="rule judge cannot grade it"):
        make_reward_function("rule", weights=(1.0, 0.5, 0.1, 0.5))
    with pytest.raises(RewardError, match=r"unknown reward service option.*concurency"):
        make_reward_function("rule", concurency=4)


def test_reply_text_of_conversational_completions() -> None:
    assert reply_text("plain") == "plain"
    assert reply_text(None) == ""
    assert reply_text([{"role": "assistant", "content": "Hi."}]) == "Hi."
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "Left "}, {"type": "text", "text": "door."}]}]
    assert reply_text(parts) == "Left door."
    tool_loop = [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "look"}}]},
        {"role": "tool", "content": "a door"},
        {"role": "assistant", "content": "The left door."},
    ]
    assert reply_text(tool_loop) == "The left door."  # the final assistant message is the reply
    parsed = [{"role": "assistant", "content": "Closed.", "reasoning_content": "which door?"}]
    assert reply_text(parsed) == "<think>which door?</think>Closed."  # so that f(y) = 0 still applies


def test_grpo_recipe_is_table_4() -> None:
    recipe = grpo_recipe(output_dir="out")
    assert recipe["importance_sampling_level"] == "sequence" and recipe["loss_type"] == "grpo"
    assert (recipe["epsilon"], recipe["epsilon_high"]) == (2e-4, 4e-4)
    assert recipe["scale_rewards"] == "none" and recipe["beta"] == 0.0
    assert (recipe["num_generations"], recipe["generation_batch_size"]) == (4, 128)  # 32 prompts x 4
    assert (recipe["learning_rate"], recipe["weight_decay"], recipe["entropy_coef"]) == (1e-6, 0.01, 1e-5)
    assert (recipe["temperature"], recipe["top_k"], recipe["top_p"], recipe["max_completion_length"]) == (
        1.0,
        20,
        1.0,
        1024,
    )
    assert recipe["output_dir"] == "out" and "output_dir" not in grpo_recipe()
    lora = lora_recipe()
    assert (lora["r"], lora["lora_alpha"], lora["lora_dropout"]) == (64, 256, 0.0)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # transformers 5 renames what TRL still sets
def test_grpo_config_and_lora_config_are_accepted_by_trl_and_peft(tmp_path) -> None:
    missing = [name for name in ("torch", "trl", "peft") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run {INSTALL}")
    config = grpo_config(output_dir=str(tmp_path), per_device_train_batch_size=8, use_cpu=True, report_to="none")
    assert config.importance_sampling_level == "sequence" and config.loss_type == "grpo"
    assert (config.epsilon, config.epsilon_high, config.beta) == (2e-4, 4e-4, 0.0)
    assert config.scale_rewards == "none" and config.num_generations == 4
    assert config.generation_batch_size == 128 and config.steps_per_generation == 16  # 128 / 8 on one process
    assert config.remove_unused_columns is False
    with pytest.raises(TypeError):
        grpo_config(output_dir=str(tmp_path), not_an_argument=1)
    lora = lora_config()
    assert (lora.r, lora.lora_alpha, lora.lora_dropout) == (64, 256, 0.0)
    assert set(lora.target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


# ---------------------------------------------------------------------------------------------------------- verl


def verl_call(compute_score, rows: list[dict[str, Any]], replies: list[str], order: list[int], **reward_kwargs: Any):
    """BatchRewardManager.verify's call on the batch after balance_batch reordered it (``order``): data_sources
    and extra_infos are numpy object arrays (non_tensor_batch), ground truths a list, and every extra_info gets
    ``rollout_reward_scores``."""
    batch = [rows[i] for i in order]
    data_sources = np.array([r["data_source"] for r in batch], dtype=object)
    ground_truths = [r["reward_model"].get("ground_truth", None) for r in batch]
    extras = np.array([dict(r["extra_info"]) for r in batch], dtype=object)
    for extra in extras:
        extra["rollout_reward_scores"] = {}
    return compute_score(
        data_sources=data_sources,
        solution_strs=[replies[i] for i in order],
        ground_truths=ground_truths,
        extra_infos=extras,
        **reward_kwargs,
    )


def verl_rows(instances: list[Instance], per_prompt: int, *, in_ground_truth: bool = False) -> list[dict[str, Any]]:
    """Parquet rows as docs/rl.md describes them, repeated n times (verl's interleaved repeat)."""
    rows = []
    for index, instance in enumerate(instances):
        info: dict[str, Any] = {"split": "train", "index": index}
        if not in_ground_truth:
            info["instance"] = instance_json(instance)
        truth = instance_json(instance) if in_ground_truth else ""
        row = {"data_source": "omnivchat", "reward_model": {"style": "rule", "ground_truth": truth}, "extra_info": info}
        rows += [row] * per_prompt
    return rows


def test_verl_batch_reward_on_a_reordered_batch() -> None:
    from omnivchat.rl import verl

    rows = verl_rows([door("d1"), door("d3")], per_prompt=4)
    replies = [*GROUP, *OTHER, *OTHER]
    order = [5, 0, 7, 2, 4, 1, 6, 3]  # balance_batch interleaves the prompts' replies
    scores = verl_call(verl.compute_score, rows, replies, order, judge="rule", weights=[1.0, 0.5, 0.1, 0.0])
    assert all(type(s) is float for s in scores)
    # prompt 1's four replies: OTHER twice, ρ = 0.5, 1/9, 0.5, 1/9 -> e = 1, 0, 1, 0
    by_position = dict(zip(order, scores, strict=True))
    assert [by_position[i] for i in range(4)] == pytest.approx(DOOR_TOTALS)
    assert [by_position[i] for i in range(4, 8)] == pytest.approx(OTHER_TOTALS * 2)
    # the same settings reuse one scorer (and its verdict cache); the instance may travel as the ground truth
    again = verl_call(
        verl.compute_score,
        verl_rows([door("d1"), door("d3")], 4, in_ground_truth=True),
        replies,
        order,
        judge="rule",
        weights=[1.0, 0.5, 0.1, 0.0],
    )
    assert again == scores and len(verl._SCORERS) >= 1


def test_verl_failed_grades_get_the_group_mean_and_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    from omnivchat.rl.verl import make_compute_score

    rows = verl_rows([door("d1"), door("d2", checks=False)], per_prompt=2)
    scorer = make_compute_score("rule", group_size=2)
    try:
        with caplog.at_level(logging.WARNING, logger="omnivchat.rl"):
            scores = verl_call(scorer, rows, [*GROUP[:2], *OTHER], [0, 1, 2, 3])
    finally:
        scorer.close()
    assert scores[:2] == pytest.approx([1.0, 1.6])
    assert scores[2:] == [0.0, 0.0]  # a group with no graded reply: every advantage 0, never a NaN
    assert "verl reward: 2 of 4 replies have no reward" in caplog.text and "no machine check" in caplog.text


def test_verl_needs_a_prompt_index() -> None:
    from omnivchat.rl import verl

    rows = verl_rows([door()], per_prompt=2)
    for row in rows:
        row["extra_info"] = {"instance": row["extra_info"]["instance"]}
    with pytest.raises(RewardError, match=r"no extra_info\['index'\]"):
        verl_call(verl.compute_score, rows, GROUP[:2], [0, 1], weights=[1, 0.5, 0.1, 0])


def test_failed_totals_as_floats_by_hand() -> None:
    instance = door()
    batch = [Completion(p, "x", instance) for p in ("a", "a", "a", "b", "b")]
    terms = [
        RewardTerms(1.0, 1.0, 1.0, None, 1.6),
        RewardTerms(0.5, 1.0, 0.0, None, 1.0),
        RewardTerms(None, 1.0, None, None, None, "judge timed out"),
        RewardTerms(None, 1.0, None, None, None, "judge timed out"),
        RewardTerms(1.0, 0.0, 0.5, None, 1.05),
    ]
    assert totals_as_floats(batch, terms, "test") == pytest.approx([1.6, 1.0, 1.3, 1.05, 1.05])


# ------------------------------------------------------------------------------------------------------ ms-swift


class FakeORM:
    """ms-swift's ``swift.rewards.ORM`` as the shape our plugin meets: ``__init__(args=None, **kwargs)``."""

    def __init__(self, args: Any = None, **kwargs: Any) -> None:
        self.args = args

    def __call__(self, **kwargs: Any) -> list[float]:
        raise NotImplementedError


@pytest.fixture
def fake_swift(monkeypatch: pytest.MonkeyPatch):
    """A stand-in for ms-swift 4's ``swift.rewards`` (ORM, orms), then the plugin module imported afresh."""
    swift = types.ModuleType("swift")
    rewards = types.ModuleType("swift.rewards")
    rewards.ORM = FakeORM  # type: ignore[attr-defined]
    rewards.orms = {}  # type: ignore[attr-defined]
    swift.rewards = rewards  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "swift", swift)
    monkeypatch.setitem(sys.modules, "swift.rewards", rewards)
    monkeypatch.setenv("OMNIVCHAT_RL_WEIGHTS", "1,0.5,0.1,0")
    monkeypatch.setenv("OMNIVCHAT_RL_GROUP_SIZE", "2")
    import omnivchat.rl.swift as plugin

    yield importlib.reload(plugin), rewards.orms  # type: ignore[attr-defined]
    monkeypatch.undo()
    importlib.reload(plugin)


def swift_kwargs(rows: list[dict[str, Any]], replies: list[str], prompt_ids: list[str]) -> dict[str, Any]:
    """What compute_rewards_per_func passes beside the completions: trainer_state, then every reward row's keys
    batched (GRPOSample.to_reward_row: messages, prompt_id, request_id, finish_reason, is_truncated,
    rollout_infos, response_token_ids, then the dataset columns)."""
    reward_rows = []
    for row, reply, prompt_id in zip(rows, replies, prompt_ids, strict=True):
        messages = [*row["messages"], {"role": "assistant", "content": reply}]
        reward_rows.append(
            {
                "messages": messages,
                "prompt_id": prompt_id,
                "request_id": f"chatcmpl-{len(reward_rows)}",
                "finish_reason": "stop",
                "is_truncated": False,
                "rollout_infos": {},
                "response_token_ids": [1, 2, 3],
                **{k: v for k, v in row.items() if k != "messages"},
            }
        )
    batched = {key: [r[key] for r in reward_rows] for key in reward_rows[0]}
    return {"trainer_state": SimpleNamespace(global_step=1), **batched}


def test_swift_orm_registered_and_called_as_ms_swift_calls_it(fake_swift) -> None:
    plugin, orms = fake_swift
    assert set(orms) == {"omnivchat"} and issubclass(orms["omnivchat"], FakeORM)
    orm = orms["omnivchat"](args=SimpleNamespace(num_generations=2))  # GRPOTrainer._prepare_rewards
    try:
        rows = [{"messages": [{"role": "user", "content": "Which door?"}], "instance": instance_json(door())}] * 2
        rows += [{"messages": [{"role": "user", "content": "And now?"}], "instance": instance_json(door("d3"))}] * 2
        replies = [*GROUP[:2], *OTHER]
        kwargs = swift_kwargs(rows, replies, ["prompt_0", "prompt_0", "prompt_1", "prompt_1"])
        scores = orm(replies, **kwargs)  # reward_func(completions, **reward_kwargs)
    finally:
        orm.close()
    assert scores == pytest.approx([1.0, 1.6, *OTHER_TOTALS])
    assert all(type(s) is float for s in scores)
    # a second name with its own settings, from a user's plugin file
    cls = plugin.register("omnivchat_fast", weights=(1.0, 0.0, 0.0, 0.0))
    assert orms["omnivchat_fast"] is cls
    orm = cls()
    try:
        assert orm(replies, **kwargs) == pytest.approx([0.5, 1.0, 0.5, 1.0])  # r alone
    finally:
        orm.close()


def test_swift_plugin_without_ms_swift_registers_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "swift", None)  # `import swift` raises ImportError
    monkeypatch.setitem(sys.modules, "swift.rewards", None)
    monkeypatch.setitem(sys.modules, "swift.plugin", None)
    import omnivchat.rl.swift as plugin

    plugin = importlib.reload(plugin)
    assert plugin.swift_registry() is None and plugin.register("x") is None


def test_swift_settings_from_env() -> None:
    from omnivchat.rl.swift import settings_from_env

    env = {"OMNIVCHAT_RL_JUDGE": "gpt", "OMNIVCHAT_RL_WEIGHTS": "1, 0.5,0.1,0.5", "OMNIVCHAT_RL_LOG": "r.jsonl"}
    settings = settings_from_env(env)
    assert settings["judge"] == "gpt" and settings["weights"] == (1.0, 0.5, 0.1, 0.5)
    assert str(settings["log_path"]) == "r.jsonl"
    with pytest.raises(RewardError, match="OMNIVCHAT_RL_WEIGHTS='a,b'"):
        settings_from_env({"OMNIVCHAT_RL_WEIGHTS": "a,b"})


def test_instance_json_round_trips() -> None:
    instance = door()
    text = instance_json(instance)
    assert Instance.model_validate_json(text) == instance and json.loads(text)["id"] == "d1"


def test_nothing_loads_torch_or_an_engine_at_import() -> None:
    import subprocess

    code = (
        "import sys\n"
        "import omnivchat.cli, omnivchat.cli.rl, omnivchat.rl.gspo, omnivchat.rl.smoke\n"
        "import omnivchat.rl.swift, omnivchat.rl.trl, omnivchat.rl.verl\n"
        "print(sorted(m for m in ('torch', 'trl', 'transformers', 'peft', 'datasets', 'verl', 'swift') "
        "if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
