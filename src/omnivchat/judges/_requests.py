"""The requests a judge is sent: a rubric verdict per reply, and a style checklist per reply."""

from __future__ import annotations

from pathlib import Path

from omnivchat.bench import Instance
from omnivchat.judges._config import JudgeSpec
from omnivchat.prompts import load_prompt, prompt_label
from omnivchat.routes import ChatRequest, Sampling

STYLE_REQUIREMENTS = 7

# Other names that count as correct for a model under test, by id prefix (for the <model_name> rules).
KNOWN_ALIASES: dict[str, list[str]] = {
    "qwen": ["Qwen", "通义千问", "Tongyi Qianwen"],
    "dashscope/qwen": ["Qwen", "通义千问", "Tongyi Qianwen"],
    "gemini": ["Gemini"],
    "gpt": ["GPT", "ChatGPT"],
    "sim:": ["a simulated model"],
}


# Names of the bench's languages for the style judge; another code is given as it is written.
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


def language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code.split("-")[0].lower(), code)


def aliases_for(model_id: str, extra: list[str] | None = None) -> list[str]:
    found = next((names for prefix, names in KNOWN_ALIASES.items() if model_id.lower().startswith(prefix)), [])
    return [*found, *(extra or [])]


class JudgePrompts:
    """System prompt and user template of the rubric and style judges, from the shipped files or the user's."""

    def __init__(self, rubric: str | Path | None = None, style: str | Path | None = None) -> None:
        self.rubric_system, self.rubric_label = load_prompt(rubric, "rubric_judge.txt")
        self.rubric_user = load_prompt(None, "rubric_judge_user.txt")[0]
        self.style_system, self.style_label = load_prompt(style, "style_judge.txt")
        self.style_user = load_prompt(None, "style_judge_user.txt")[0]
        # which style prompt runs, said plainly: omnivchat's default, the paper's (by hash), or the user file
        self.style_prompt = prompt_label(self.style_system, "style", self.style_label)


def _sampling(spec: JudgeSpec) -> Sampling:
    return Sampling(temperature=spec.temperature, max_tokens=spec.max_tokens)


def rubric_request(
    instance: Instance, reply: str, *, model_id: str, aliases: list[str], prompts: JudgePrompts, spec: JudgeSpec
) -> ChatRequest:
    """One rubric verdict request: the reply, the model under test, and the criteria numbered 1..K with tiers."""
    criteria = "\n".join(f"{n}. [tier {c.tier}] {c.text}" for n, c in enumerate(instance.rubric, start=1))
    text = prompts.rubric_user.format(
        reply=reply, model=model_id, aliases=", ".join(aliases) or "none", criteria=criteria
    )
    return ChatRequest(
        item_id=instance.id,
        system_prompt=prompts.rubric_system,
        text=text,
        sampling=_sampling(spec),
        require_text=True,
        response_format=spec.response_format,
    )


def style_request(instance: Instance, reply: str, *, prompts: JudgePrompts, spec: JudgeSpec) -> ChatRequest:
    """One style checklist request for a reply (Section 4.2: s = 1 only when all seven requirements hold), with
    the user's language, which requirement 7 is about."""
    return ChatRequest(
        item_id=instance.id,
        system_prompt=prompts.style_system,
        text=prompts.style_user.format(reply=reply, language=language_name(instance.language)),
        sampling=_sampling(spec),
        require_text=True,
        response_format=spec.response_format,
    )
