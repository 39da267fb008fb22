"""Parsing judge verdicts strictly: a JSON object with the numbers of the criteria met, or nothing."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
# Keys a judge may use for the criteria it found NOT met; a number in both lists contradicts itself.
_NEGATIVE_KEYS = ("misses", "not_met", "unmet", "failed")


def _json_objects(text: str) -> list[Any]:
    """Every JSON value that starts at a '{' in ``text`` and parses (inside code fences or after prose)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    sources = [m.group(1) for m in _FENCE.finditer(text)] or [text]
    for source in sources:
        index = source.find("{")
        while index >= 0:
            try:
                value, end = decoder.raw_decode(source, index)
            except json.JSONDecodeError:
                index = source.find("{", index + 1)
                continue
            found.append(value)
            index = source.find("{", end)
    return found


def _numbers(value: Any) -> list[int] | None:
    if not isinstance(value, list):
        return None
    # bool is an int subclass in Python: true/false are not criterion numbers
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return None
    return value


def parse_verdict(text: str, n_criteria: int) -> list[int] | None:
    """The sorted, distinct criterion numbers a judge found met, or None when the verdict is unusable.

    Accepts strict JSON, JSON inside a code fence, and JSON after prose, as an object with a ``hits`` list.
    Returns None for: no JSON object with ``hits``; ``hits`` that is not a list of integers (strings, floats
    and booleans are refused); a number outside 1..n_criteria; a number listed both as met and as not met
    (``misses``/``not_met``); or several verdict objects that disagree. An empty list is a valid verdict
    (nothing met), distinct from None (no verdict).
    """
    verdicts: list[list[int]] = []
    for obj in _json_objects(text):
        if not isinstance(obj, dict) or "hits" not in obj:
            continue
        hits = _numbers(obj["hits"])
        if hits is None:
            return None
        if any(not 1 <= h <= n_criteria for h in hits):
            return None
        for key in _NEGATIVE_KEYS:
            if key in obj:
                misses = _numbers(obj[key])
                if misses is None or set(misses) & set(hits):
                    return None
        verdicts.append(sorted(set(hits)))
    if not verdicts or any(v != verdicts[0] for v in verdicts):
        return None
    return verdicts[0]
