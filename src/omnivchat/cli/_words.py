"""A benchmark's metrics as `score` prints them: one line per group, in words, never raw keys (``ci_low``,
``given``). scores.json keeps the keys; this is only how a person reads them."""

from __future__ import annotations

from typing import Any

# Words for the keys a figure may hold; a key not named here is printed with its underscores as spaces.
_WORDS = {
    "n": "items",
    "se_clustered": "clustered standard error",
    "se_naive": "naive standard error",
    "n_missing": "missing",
    "se": "standard error",
}
_FIGURE = ("n", "correct", "accuracy", "ci_low", "ci_high", "unparsed", "clusters", "se_clustered", "se_naive")


def shown(value: float | str | None) -> str:
    """A number with 3 decimals, — for none, anything else as it is."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def metric_lines(metrics: dict[str, Any]) -> list[str]:
    """One line per metric group, in words; nested lists and objects left out (they are in scores.json)."""
    lines = []
    for name, value in metrics.items():
        if isinstance(value, dict):
            lines.append(f"{name}: {group_words(value)}")
        elif not isinstance(value, list):
            lines.append(f"{name}: {shown(value)}")
    return lines


def group_words(value: dict[str, Any]) -> str:
    """One metric group in words: an accuracy figure, the official counting figure, a relabelling count, or any
    other group as "word value" pairs."""
    if "counting" in value and "counted" in value:
        return _official(value)
    if "accuracy" in value and "n" in value and "correct" in value:
        return _accuracy(value)
    if {"count", "to", "given"} <= set(value):  # byo's relabelled categories
        given = f" (given as: {value['given']})" if value["given"] else ""
        return f"{value['count']} items of an unknown category, scored as {value['to']}{given}"
    parts = [shown(value["count"])] if "count" in value else []
    parts += [
        f"{_WORDS.get(k, k.replace('_', ' '))} {shown(v)}"
        for k, v in value.items()
        if k != "count" and (v is None or isinstance(v, int | float | str))
    ]
    named = value.get("items")
    if isinstance(named, list) and named:  # the first few ids (e.g. the clips cut, the repeated questions)
        parts.append("; ".join(map(str, named[:5])) + ("; ..." if len(named) > 5 else ""))
    return ", ".join(parts)


def _accuracy(f: dict[str, Any]) -> str:
    said = [f"accuracy {shown(f['accuracy'])} ({f['correct']} of {f['n']} right)"]
    if f.get("ci_low") is not None:
        said.append(f"95% interval {shown(f['ci_low'])} to {shown(f.get('ci_high'))}")
    elif "ci_low" in f:
        said.append("no interval" + (" (one cluster says nothing of the spread)" if f.get("clusters") == 1 else ""))
    if "unparsed" in f:
        said.append(f"{f['unparsed']} unparsed (counted wrong)")
    if "clusters" in f:
        said.append(f"{f['clusters']} {'cluster' if f['clusters'] == 1 else 'clusters'}")
    if f.get("se_clustered") is not None:
        said.append(f"standard error {shown(f['se_clustered'])} clustered, {shown(f.get('se_naive'))} naive")
    rest = [
        f"{_WORDS.get(k, k.replace('_', ' '))} {shown(v)}"
        for k, v in f.items()
        if k not in _FIGURE and (v is None or isinstance(v, int | float | str))
    ]
    return ", ".join(said + rest)


def _official(f: dict[str, Any]) -> str:
    """e.g. "as the official Video-MME script counts: 0.710 (276 of 388 counted), 12 unparsed left out of 400"."""
    said = [f"{f['counting']}: {shown(f['accuracy'])} ({f['correct']} of {f['counted']} counted)"]
    for what, mode in (("unparsed", f.get("unparsed replies are")), ("failed", f.get("failed requests are"))):
        if mode == "left out":
            said.append(f"{f.get(f'{what} left out', 0)} {what} left out of {f['of']}")
        elif f.get(f"{what} counted wrong"):
            said.append(f"{f[f'{what} counted wrong']} {what} counted wrong")
    said += [f"{v} {k}" for k, v in f.items() if k.startswith("read as ") and v]
    differs = f.get("read otherwise than the strict parse", 0)
    said.append(f"{differs} {'reply' if differs == 1 else 'replies'} read otherwise than the strict parse")
    return ", ".join(said) + f"; rule from {f['source']}"
