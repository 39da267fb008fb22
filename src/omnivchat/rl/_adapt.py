"""What the engine adapters (TRL, verl, ms-swift) share: the dataset columns, reading a row's bench instance, the
reply text of a completion, the service they score with, and the engines' floats for failed grades."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from omnivchat.bench import Instance
from omnivchat.judges import RULE_JUDGE
from omnivchat.rl.rewards import DEFAULT_WEIGHTS
from omnivchat.rl.service import Completion, RewardError, RewardService, RewardTerms

log = logging.getLogger("omnivchat.rl")

INSTANCE_COLUMN = "instance"
"""Dataset column holding the bench instance a prompt comes from, as JSON text (its rubric is graded)."""
PROMPT_ID_COLUMN = "prompt_id"
"""Dataset column naming the prompt: the N replies sampled for one prompt form the group G(x) of Eq. 6."""
RULE_WEIGHTS: tuple[float, float, float, float] = (DEFAULT_WEIGHTS[0], DEFAULT_WEIGHTS[1], DEFAULT_WEIGHTS[2], 0.0)
"""Eq. 4 weights with the rule judge, which cannot grade style: the paper's, with λ_sty = 0."""

_SERVICE_OPTIONS = frozenset(inspect.signature(RewardService.__init__).parameters) - {"self"}


def default_weights(judge: str, weights: Sequence[float] | None) -> tuple[float, ...]:
    """``weights`` as given, else Table 4's (1 / 0.5 / 0.1 / 0.5), or :data:`RULE_WEIGHTS` for the rule judge."""
    if weights is not None:
        return tuple(float(w) for w in weights)  # a list from a YAML or Hydra config included
    return RULE_WEIGHTS if judge == RULE_JUDGE else DEFAULT_WEIGHTS


def make_service(
    judge: str,
    judges_file: str | Path | None,
    weights: Sequence[float] | None,
    group_size: int | None,
    options: Mapping[str, Any],
) -> RewardService:
    """A :class:`RewardService` for an adapter; an option the service does not take is a RewardError naming it."""
    unknown = sorted(set(options) - _SERVICE_OPTIONS)
    if unknown:
        raise RewardError(
            f"unknown reward service option(s): {', '.join(unknown)} (known: {', '.join(sorted(_SERVICE_OPTIONS))})"
        )
    return RewardService(
        judge=judge,
        judges_file=judges_file,
        weights=default_weights(judge, weights),
        group_size=group_size,
        **options,
    )


def read_instance(value: object, where: str, cache: dict[str, Instance]) -> Instance:
    """The bench instance of one row: JSON text (as the adapters document), a dict, or an Instance.

    Parsed instances are kept in ``cache`` by their text: the N copies of a row are validated once.
    """
    if isinstance(value, Instance):
        return value
    if isinstance(value, str):
        cached = cache.get(value)
        if cached is not None:
            return cached
        try:
            instance = Instance.model_validate_json(value)
        except ValidationError as err:
            raise RewardError(f"{where}: not a bench instance ({_first_error(err)})") from None
        cache[value] = instance
        return instance
    if isinstance(value, Mapping):
        try:
            return Instance.model_validate(dict(value))
        except ValidationError as err:
            raise RewardError(f"{where}: not a bench instance ({_first_error(err)})") from None
    raise RewardError(
        f"{where}: a {type(value).__name__}, expected the bench instance as JSON text (json.dumps of an instance)"
    )


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    place = ".".join(str(p) for p in first["loc"]) or "instance"
    return f"{place}: {first['msg']}"


def instance_json(instance: Instance) -> str:
    """The text to put in a dataset's ``instance`` column (what :func:`read_instance` reads back)."""
    return instance.model_dump_json(exclude_none=True)


def _text(content: object) -> str:
    """The text of a message content: a string, or a list of parts of which the text parts count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text":
                texts.append(str(part.get("text") or ""))
        return "".join(texts)
    return str(content)


def reply_text(completion: object) -> str:
    """The reply y of one completion as an engine hands it over: a string, or a conversational completion (a list
    of messages such as ``[{"role": "assistant", "content": "..."}]``, whose last assistant message is the reply).

    A template that parsed thinking out of the text (``reasoning_content``, ``reasoning`` or ``thinking`` beside
    ``content``) gets it back as a ``<think>`` block, so the format term f(y) of Eq. 4 still sees it.
    """
    if completion is None or isinstance(completion, str):
        return completion or ""
    if isinstance(completion, Mapping):
        messages: list[object] = [completion]
    elif isinstance(completion, Iterable):
        messages = list(completion)
    else:
        raise RewardError(f"a completion is a string or a list of messages, not a {type(completion).__name__}")
    replies = [m for m in messages if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"]
    if not replies:
        return ""
    last = replies[-1]
    text = _text(last.get("content"))
    thinking = next((last[key] for key in ("reasoning_content", "reasoning", "thinking") if last.get(key)), None)
    return f"<think>{_text(thinking)}</think>{text}" if thinking else text


def column(kwargs: Mapping[str, Any], name: str, n: int, engine: str) -> list[Any]:
    """Dataset column ``name`` from an engine's keyword arguments, one value per completion."""
    values = kwargs.get(name)
    if values is None:
        raise RewardError(
            f"{engine} passed no {name!r} column to the reward function: give every dataset row its {name!r} "
            f"(got columns: {', '.join(sorted(k for k in kwargs if not k.startswith('_'))) or 'none'})"
        )
    values = list(values)
    if len(values) != n:
        raise RewardError(f"{engine}: column {name!r} has {len(values)} values for {n} completions")
    return values


def completions_of(
    replies: Sequence[str], instances: Sequence[object], keys: Sequence[object] | None, cache: dict[str, Instance]
) -> list[Completion]:
    """The service's batch: each reply with its instance and its prompt's group key (the instance id if none)."""
    batch = []
    for i, (reply, raw) in enumerate(zip(replies, instances, strict=True)):
        instance = read_instance(raw, f"completion {i}: column {INSTANCE_COLUMN!r}", cache)
        key = instance.id if keys is None or keys[i] is None else str(keys[i])
        batch.append(Completion(key, reply, instance))
    return batch


def totals_as_floats(batch: Sequence[Completion], terms: Sequence[RewardTerms], engine: str) -> list[float]:
    """Totals R(y) for an engine that takes only numbers (verl, ms-swift), with a failed grade never read as 0.

    A completion with no total (its grade failed, or a sibling's did so that e of Eq. 6 is undefined) gets the
    mean total of the graded replies of its group: the group baseline of the others is unchanged and its own
    advantage A_i = R - mean is 0, which is what TRL does with a None reward. A group with no graded reply gets 0
    for all (every advantage 0). Failures are logged on the ``omnivchat.rl`` logger, with the first reason.
    """
    groups: dict[str, list[int]] = {}
    for i, completion in enumerate(batch):
        groups.setdefault(completion.prompt_id, []).append(i)
    out = [math.nan] * len(batch)
    filled = 0
    for indices in groups.values():
        graded = [terms[i].total for i in indices if terms[i].total is not None]
        stand_in = math.fsum(t for t in graded if t is not None) / len(graded) if graded else 0.0
        for i in indices:
            total = terms[i].total
            out[i] = stand_in if total is None else total
            filled += total is None
    if filled:
        first = next((t.error for t in terms if t.error), "no reason given")
        log.warning(
            "%s reward: %d of %d replies have no reward; each gets its group's mean graded total (advantage 0). "
            "First reason: %s",
            engine,
            filled,
            len(batch),
            first,
        )
    return out
