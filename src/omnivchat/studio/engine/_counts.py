"""Per-subcategory instance counts for a synthesis (``studio run --n-per SUBCAT=N`` and ``--counts FILE``).

The paper's OmniVChat-Bench is not N per subcategory: Figure 3 gives 200 to most subcategories, 300 to AR and DR,
150 to ER and 50 to each multi-turn one (2,800 in all). A count named here replaces ``--n`` for its subcategory;
the others keep ``--n``. Every bad entry is refused, naming it, before anything runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omnivchat.errors import OmnivchatError
from omnivchat.studio.config import SubcategoryConfig, shipped_codes


class CountsError(OmnivchatError, ValueError):
    """A per-subcategory count that cannot be used: an unknown code, or a count that is not a whole number >= 1."""


def _code(name: str, configs: Sequence[SubcategoryConfig]) -> str | None:
    """The configuration code ``name`` means (a code, any case, or a shipped full path such as DSLP-VDMC-SVMR), or
    None when it names no subcategory at all."""
    key = name.strip().upper()
    codes = {c.code for c in configs} | set(shipped_codes())
    if key in codes:
        return key
    from omnivchat.bench import resolve_subcategory

    try:
        return resolve_subcategory(key).code
    except KeyError:
        return None


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CountsError(f"{where}: count {value!r} is not a whole number >= 1")
    return value


def parse_count_items(items: Sequence[str], configs: Sequence[SubcategoryConfig]) -> dict[str, int]:
    """``SUBCAT=N`` items (``--n-per``, repeatable) as code -> count. Each code must be one of the subcategories
    being synthesized (``configs``): naming another one could only be a mistake. CountsError names the item."""
    selected = {c.code for c in configs}
    out: dict[str, int] = {}
    for item in items:
        where = f"--n-per {item!r}"
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise CountsError(f"{where}: give SUBCAT=N, e.g. SVMR=200")
        code = _code(name, configs)
        if code is None:
            raise CountsError(f"{where}: unknown subcategory {name.strip()!r} (known: {', '.join(shipped_codes())})")
        if code not in selected:
            raise CountsError(f"{where}: {code} is not being synthesized; add --config {code} or use --all")
        count: int | str = text.strip()
        with contextlib.suppress(ValueError):
            count = int(text)
        if code in out:
            raise CountsError(f"{where}: {code} is given a count twice")
        out[code] = _count(count, where)
    return out


def read_counts_file(path: Path, configs: Sequence[SubcategoryConfig]) -> dict[str, int]:
    """A counts file (``--counts``): a YAML or JSON mapping ``SUBCAT: N`` (JSON by a .json suffix). A shipped
    subcategory not being synthesized is skipped, so one file (Figure 3's) serves any ``--config`` choice; a code
    that names no subcategory, or a bad count, raises CountsError naming the file and the entry."""
    import yaml

    from omnivchat._files import loads_json, loads_yaml, read_text

    text = read_text(path, "counts file")
    json_file = path.suffix.lower() == ".json"
    try:
        data: Any = loads_json(text) if json_file else loads_yaml(text)
    except (ValueError, yaml.YAMLError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CountsError(f"{path}: not valid {'JSON' if json_file else 'YAML'} ({first})") from None
    if not isinstance(data, dict) or not data:
        raise CountsError(f"{path}: expected a mapping of subcategory code to count, e.g. {{SVMR: 200, AR: 300}}")
    selected = {c.code for c in configs}
    out: dict[str, int] = {}
    for name, value in data.items():
        where = f"{path}: {name}"
        code = _code(str(name), configs)
        if code is None:
            raise CountsError(f"{where}: unknown subcategory (known: {', '.join(shipped_codes())})")
        if code in out:
            raise CountsError(f"{where}: {code} is given a count twice")
        count = _count(value, where)
        if code in selected:
            out[code] = count
    return out


def instance_counts(
    configs: Sequence[SubcategoryConfig], n: int, counts: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Code -> instances to synthesize: ``counts`` where given, ``n`` for every other configuration. A count for a
    code that is not among ``configs``, or below 1, raises CountsError."""
    counts = dict(counts or {})
    selected = {c.code for c in configs}
    unknown = sorted(set(counts) - selected)
    if unknown:
        raise CountsError(
            f"counts name {', '.join(unknown)}, which are not being synthesized ({', '.join(sorted(selected))})"
        )
    for code, value in counts.items():
        _count(value, f"count of {code}")
    return {c.code: counts.get(c.code, n) for c in configs}


__all__ = ["CountsError", "instance_counts", "parse_count_items", "read_counts_file"]
