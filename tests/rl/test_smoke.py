"""`omnivchat rl smoke` end to end: TRL's GRPOTrainer with the GSPO settings on a tiny random model, rewarded by
the reward service with the rule judge, for two steps on the CPU, in a fresh process (the Hugging Face libraries
read their offline settings at import). Skipped only where torch/trl are absent, as the llama.cpp test is: `.ci/run`
installs them (a CPU torch wheel), and a failed install fails CI."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app

INSTALL = "the `rl` install step of .ci/run (a CPU torch wheel, then trl and peft; docs/rl.md, CPU smoke run)"
# `omnivchat ...` as its entry point runs it (omnivchat/__main__.py), with code to run first.
CLI = "import sys\n{before}from omnivchat.cli import app\napp(prog_name='omnivchat')\n"
STEP = re.compile(
    r"^step (\d): 8 replies to 2 prompts: r (\d\.\d{3})  f (\d\.\d{3})  e (\d\.\d{3})  s —  total (\d\.\d{3})$", re.M
)


def omnivchat(args: list[str], *, before: str = "", timeout: float = 280) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI.format(before=before), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_smoke_run_two_steps(tmp_path: Path) -> None:
    missing = [
        name for name in ("torch", "transformers", "trl", "peft", "datasets") if not importlib.util.find_spec(name)
    ]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run {INSTALL}")
    out = tmp_path / "smoke"
    started = time.perf_counter()
    result = omnivchat(["rl", "smoke", "-o", str(out)])
    elapsed = time.perf_counter() - started
    assert result.returncode == 0, result.stdout + result.stderr
    steps = STEP.findall(result.stdout)
    assert [s[0] for s in steps] == ["1", "2"], result.stdout
    for _, r, f, e, total in steps:
        r_, f_, e_, t_ = float(r), float(f), float(e), float(total)
        assert 0 <= r_ <= 1 and 0 <= f_ <= 1 and 0 <= e_ <= 1
        assert t_ == pytest.approx(r_ + 0.5 * f_ + 0.1 * e_, abs=2e-3)  # Eq. 4 with style weight 0 (rounded)
    assert re.search(r"^step 2: loss -?\d\.\d{6}, reward \d\.\d{3}, clipped 0\.000$", result.stdout, re.M)

    summary = json.loads((out / "smoke.json").read_text())
    assert [s["step"] for s in summary["steps"]] == [1, 2]
    assert all(s["replies"] == 8 and s["prompts"] == 2 and s["unscored"] == 0 for s in summary["steps"])
    config = summary["grpo_config"]
    assert config["importance_sampling_level"] == "sequence" and config["loss_type"] == "grpo"
    assert (config["epsilon"], config["epsilon_high"], config["beta"]) == (2e-4, 4e-4, 0.0)
    assert config["scale_rewards"] == "none" and config["num_generations"] == 4
    assert summary["lora"] == {"r": 64, "lora_alpha": 256}
    adapter = summary["adapter"]
    assert 0 < adapter["trainable_parameters"] < adapter["total_parameters"]
    said = next(line for line in result.stdout.splitlines() if line.startswith("LoRA adapter: "))
    assert said.startswith(f"LoRA adapter: {adapter['trainable_parameters']:,} trainable parameters of ")
    assert result.stdout.index("LoRA adapter: ") < result.stdout.index("step 1: ")  # before training starts
    assert [line["step"] for line in summary["train_log"] if "loss" in line] == [1, 2]

    log = [json.loads(line) for line in (out / "rewards.jsonl").read_text().splitlines()]
    assert [line["step"] for line in log] == [1, 2] and all(line["n"] == 8 for line in log)
    completions = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert len(completions) == 16 and all(c["total"] is not None for c in completions)
    for name in ("prompts.jsonl", "tokenizer/tokenizer.json", "adapter/adapter_model.safetensors"):
        assert (out / name).is_file(), name
        assert f"wrote {out / name}" in result.stdout
    written = {line.removeprefix("wrote ") for line in result.stdout.splitlines() if line.startswith("wrote ")}
    assert written == {str(p) for p in out.rglob("*") if p.is_file()}  # everything is under -o and listed
    assert elapsed < 240, f"the smoke run took {elapsed:.0f} s"


def test_smoke_refuses_a_folder_that_holds_something_else(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep")
    result = CliRunner().invoke(app, ["rl", "smoke", "-o", str(tmp_path)], terminal_width=400)
    assert result.exit_code == 2
    assert f"error: {tmp_path} is not empty; give a new or empty folder" in result.output
    assert (tmp_path / "mine.txt").read_text() == "keep" and len(list(tmp_path.iterdir())) == 1


def test_smoke_without_trl_names_the_install_step(tmp_path: Path) -> None:
    # `import trl` fails as if it were not installed; in an environment synced without the `rl` extra (plain
    # `uv sync`) torch and the rest are missing too, and the line names them all
    # (the timeout only guards against a hang: importing torch, transformers and peft took 37 s at load 6)
    result = omnivchat(["rl", "smoke", "-o", str(tmp_path / "s")], before="sys.modules['trl'] = None\n", timeout=300)
    assert result.returncode == 2
    line = result.stderr.strip()
    missing = re.match(r"error: ([\w, ]+) not installed: install the `rl` extra: pip install 'omnivchat\[rl\]'", line)
    assert missing is not None, line
    assert "trl" in missing.group(1).split(", ")
    assert "torch" in missing.group(1).split(", ") or importlib.util.find_spec("torch") is not None
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in line
    assert "/opt/" not in line and "wheels" not in line  # a hint any user can follow: no path of our machines
