"""Attribute-assignment sampling for dialogue authoring (the paper's Eq. 7, Appendix C.2.1), and corpus sampling.

An assignment picks one value per attribute. Its weight (Eq. 7) is the product of the values' target
probabilities times the multipliers of the soft preference rules it matches, and 0 when an exclusion matches.
A batch of n assignments is the top n of the exponential race, keys ``ln(U_a) / w(a)``: successive sampling
without replacement proportional to ``w``. Small spaces are enumerated; large ones are sampled exactly by
rejection, without ever listing the product space (see :func:`sample_assignments`).

numpy is imported inside the functions: importing this module stays cheap.
"""

from __future__ import annotations

import itertools
import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ENUMERATE_LIMIT",
    "MAX_CONSECUTIVE_REJECTIONS",
    "PROBABILITY_TOLERANCE",
    "Predicate",
    "Preference",
    "assignment_weight",
    "sample_assignments",
    "sample_passages",
]

Predicate = Callable[[Mapping[str, str]], bool]
Preference = tuple[Predicate, float]
P = TypeVar("P")

#: Product spaces with at most this many positive-probability assignments are enumerated and Eq. 7 applied
#: literally; larger ones are sampled by rejection. Read at call time (tests monkeypatch it).
ENUMERATE_LIMIT = 50_000
#: The largest product space whose pool the rejection sampler counts, to start a new round once it is all drawn.
POOL_COUNT_LIMIT = 1_000_000
#: The rejection sampler gives up (ValueError) after this many consecutive rejected draws.
MAX_CONSECUTIVE_REJECTIONS = 1_000_000
#: How far an attribute's probabilities may sum from 1.
PROBABILITY_TOLERANCE = 1e-6

_MIN_BATCH = 64
_MAX_BATCH = 1 << 16


@dataclass(frozen=True)
class _Space:
    """The validated attributes, restricted to their positive-probability values (in the given order)."""

    names: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    probs: tuple[tuple[float, ...], ...]

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.values)


def _check_attributes(attributes: Mapping[str, Mapping[str, float]]) -> _Space:
    if not attributes:
        raise ValueError("no attributes: an assignment needs at least one attribute")
    names, values, probs = [], [], []
    for name, dist in attributes.items():
        if not dist:
            raise ValueError(f"attribute {name!r} has no values")
        kept_v, kept_p = [], []
        for value, p in dist.items():
            try:
                q = float(p)
            except (TypeError, ValueError):
                raise ValueError(f"attribute {name!r}: value {value!r} has a non-numeric probability {p!r}") from None
            if not math.isfinite(q) or q < 0:
                raise ValueError(f"attribute {name!r}: value {value!r} has probability {p!r}; need finite and >= 0")
            if q > 0:
                kept_v.append(value)
                kept_p.append(q)
        total = math.fsum(float(p) for p in dist.values())
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            raise ValueError(
                f"attribute {name!r}: probabilities sum to {total!r}, not 1 (tolerance {PROBABILITY_TOLERANCE:g})"
            )
        names.append(name)
        values.append(tuple(kept_v))
        probs.append(tuple(kept_p))
    return _Space(tuple(names), tuple(values), tuple(probs))


def _check_preferences(preferences: Sequence[Preference]) -> list[Preference]:
    rules = []
    for i, (predicate, m) in enumerate(preferences):
        try:
            mult = float(m)
        except (TypeError, ValueError):
            raise ValueError(f"preference rule {i}: multiplier {m!r} is not a number") from None
        if not math.isfinite(mult) or mult < 0:
            raise ValueError(f"preference rule {i}: multiplier {m!r} must be finite and >= 0")
        rules.append((predicate, mult))
    return rules


def assignment_weight(
    assignment: Mapping[str, str],
    attributes: Mapping[str, Mapping[str, float]],
    preferences: Sequence[Preference] = (),
    exclusions: Sequence[Predicate] = (),
) -> float:
    """Eq. 7's weight ``w(a) = prod_d p_d(a_d) * prod_{pi matching a} m_pi`` (Appendix C.2.1); 0 if excluded.

    Not normalised; the multiplier product is 1 when no rule matches. ValueError on invalid attributes or
    multipliers, a missing attribute, an unknown attribute or a value the attribute does not have.
    """
    _check_attributes(attributes)
    rules = _check_preferences(preferences)
    unknown = set(assignment) - set(attributes)
    if unknown:
        raise ValueError(f"assignment names unknown attributes: {sorted(unknown)!r}")
    w = 1.0
    for name, dist in attributes.items():
        if name not in assignment:
            raise ValueError(f"assignment has no value for attribute {name!r}")
        value = assignment[name]
        if value not in dist:
            raise ValueError(f"attribute {name!r} has no value {value!r}")
        w *= float(dist[value])
    if any(excluded(assignment) for excluded in exclusions):
        return 0.0
    for predicate, m in rules:
        if predicate(assignment):
            w *= m
    return w


def sample_assignments(
    attributes: Mapping[str, Mapping[str, float]],
    n: int,
    *,
    preferences: Sequence[tuple[Callable[[Mapping[str, str]], bool], float]] = (),
    exclusions: Sequence[Callable[[Mapping[str, str]], bool]] = (),
    seed: int | None = None,
) -> list[dict[str, str]]:
    """The n assignments with the largest keys ``k_a = ln(U_a) / w(a)`` (Eq. 7, Appendix C.2.1), in key order.

    ``attributes`` maps each attribute to ``{value: probability}`` (summing to 1); ``preferences`` are
    ``(predicate, multiplier)`` rules; ``exclusions`` are predicates that set ``w(a) = 0``. The result is
    successive sampling without replacement proportional to ``w``: distinct assignments, largest key first.
    When n exceeds the pool of positive-weight assignments, the whole pool is taken in key order, then again
    with fresh keys, and so on until n (the only case with repeats). Same seed, same output.

    Two exact methods, chosen by the number of positive-probability assignments |A|:

    - |A| <= ``ENUMERATE_LIMIT``: enumerate, weigh each assignment by Eq. 7 and sort by key. Keys are compared
      as ``ln w(a) - ln(-ln U_a)``, a strictly increasing function of ``ln(U_a) / w(a)`` (same order) that
      does not underflow for tiny weights.
    - larger: rejection, never listing the space. Draw ``a`` from the product of the marginals ``p_d``;
      accept it with probability ``mult(a) / M`` (``mult`` the product of the matching multipliers,
      ``M = prod_pi max(1, m_pi)`` >= any ``mult``), unless it is excluded or already selected. An accepted
      draw thus has law ``p(a) mult(a) / M`` restricted to the unselected positive-weight assignments, i.e.
      ``w(a) / sum_{b not selected} w(b)``, and each draw is independent of the past given the selected set.
      That is the law of the exponential race: by memorylessness of the exponential times ``-ln(U_a) / w(a)``,
      the first winner is ``a`` with probability ``w(a) / W`` and, given the first k winners, the next one is
      proportional to ``w`` over the rest. So both methods give the same law for the ordered n-tuple.
      When n exceeds the pool, ``MAX_CONSECUTIVE_REJECTIONS`` consecutive rejections end a round: the pool is
      then counted (a listable space only) and, every positive-weight assignment drawn, the next round starts
      with nothing selected, as in the enumerated method. Otherwise (the preferences and exclusions leave
      almost no weight) they raise ValueError.

    ValueError: probabilities not summing to 1 (within ``PROBABILITY_TOLERANCE``), negative or non-finite
    probabilities or multipliers, an attribute without values, ``n < 0``, or no assignment with positive
    weight. ``n == 0`` gives ``[]``; zero-probability values never appear.
    """
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    space = _check_attributes(attributes)
    rules = _check_preferences(preferences)
    excl = list(exclusions)
    if n == 0:
        return []
    import numpy as np

    rng = np.random.default_rng(seed)
    if space.size <= ENUMERATE_LIMIT:
        return _sample_enumerated(space, n, rules, excl, rng)
    return _sample_rejection(space, n, rules, excl, rng)


def _sample_enumerated(
    space: _Space, n: int, rules: list[Preference], exclusions: list[Predicate], rng: np.random.Generator
) -> list[dict[str, str]]:
    import numpy as np

    names, values = space.names, space.values
    log_m = [math.log(m) if m > 0 else -math.inf for _, m in rules]
    pool: list[dict[str, str]] = []
    log_w: list[float] = []
    log_p = [[math.log(p) for p in probs] for probs in space.probs]
    for combo in itertools.product(*(range(len(v)) for v in values)):
        a = {name: values[d][i] for d, (name, i) in enumerate(zip(names, combo, strict=True))}
        if any(excluded(a) for excluded in exclusions):
            continue
        lw = math.fsum(log_p[d][i] for d, i in enumerate(combo))
        for (predicate, _), lm in zip(rules, log_m, strict=True):
            if predicate(a):
                lw += lm
        if lw > -math.inf:
            pool.append(a)
            log_w.append(lw)
    if not pool:
        raise ValueError(
            "no assignment has positive weight: every assignment is excluded or matches a rule with multiplier 0"
        )
    lw_arr = np.asarray(log_w)
    out: list[dict[str, str]] = []
    while len(out) < n:  # one round per pass over the pool, each with fresh keys
        u = 1.0 - rng.random(len(pool))  # U_a in (0, 1]
        with np.errstate(divide="ignore"):
            keys = lw_arr - np.log(-np.log(u))  # increasing in ln(U_a) / w(a); U_a = 1 gives +inf, the top key
        order = np.argsort(-keys, kind="stable")[: n - len(out)]
        out.extend(dict(pool[i]) for i in order.tolist())
    return out


def _sample_rejection(
    space: _Space, n: int, rules: list[Preference], exclusions: list[Predicate], rng: np.random.Generator
) -> list[dict[str, str]]:
    import numpy as np

    names, values = space.names, space.values
    cdfs = []
    for probs in space.probs:
        cdf = np.cumsum(np.asarray(probs, dtype=np.float64))
        cdf /= cdf[-1]
        cdf[-1] = 1.0  # u < 1 always lands on a positive-probability value
        cdfs.append(cdf)
    # Acceptance mult(a) / M as a product of per-rule factors <= 1: min(m, 1) if the rule matches, else
    # 1 / max(1, m). No overflow for many rules; rules with every factor 1 are skipped.
    factors = [(pred, min(m, 1.0), 1.0 / max(1.0, m)) for pred, m in rules]
    factors = [f for f in factors if not (f[1] == 1.0 and f[2] == 1.0)]
    selected: set[tuple[int, ...]] = set()
    out: list[dict[str, str]] = []
    tried = accepted = rejected_run = 0
    while len(out) < n:
        rate = (accepted + 1) / (tried + 1)
        batch = int(min(_MAX_BATCH, max(_MIN_BATCH, math.ceil(1.25 * (n - len(out)) / rate))))
        idx = np.empty((batch, len(cdfs)), dtype=np.int64)
        for d, cdf in enumerate(cdfs):
            idx[:, d] = np.searchsorted(cdf, rng.random(batch), side="right")
        coins = rng.random(batch).tolist()
        for row, coin in zip(idx.tolist(), coins, strict=True):
            tried += 1
            key = tuple(row)
            ok = key not in selected
            if ok:
                a = {name: values[d][i] for d, (name, i) in enumerate(zip(names, row, strict=True))}
                ok = not any(excluded(a) for excluded in exclusions)
                if ok and factors:
                    ratio = 1.0
                    for predicate, f_match, f_miss in factors:
                        ratio *= f_match if predicate(a) else f_miss
                    ok = coin < ratio
            if not ok:
                rejected_run += 1
                if (
                    rejected_run >= MAX_CONSECUTIVE_REJECTIONS
                    and selected
                    and _pool_drawn(space, selected, rules, exclusions)
                ):
                    selected.clear()  # the whole pool is drawn: a new round, as the enumerated path does
                    rejected_run = 0
                    continue
                if rejected_run >= MAX_CONSECUTIVE_REJECTIONS:
                    raise ValueError(
                        f"{rejected_run} consecutive draws rejected after {len(out)} of {n} assignments: the "
                        "preferences/exclusions leave (almost) no weight outside the assignments already drawn "
                        "(or n exceeds the number of positive-weight assignments)"
                    )
                continue
            rejected_run = 0
            accepted += 1
            selected.add(key)
            out.append(a)
            if len(out) == n:
                break
    return out


def _pool_drawn(
    space: _Space, selected: set[tuple[int, ...]], rules: list[Preference], exclusions: list[Predicate]
) -> bool:
    """Whether ``selected`` holds every positive-weight assignment (Appendix C.2.1: then the race starts a new
    round). Counted by enumeration, only after a long run of rejections, and only for a space that can be listed
    (at most ``POOL_COUNT_LIMIT`` assignments); a larger one is never taken as drawn."""
    if space.size > POOL_COUNT_LIMIT:
        return False
    zero = [predicate for predicate, m in rules if m == 0]
    pool = 0
    for combo in itertools.product(*(range(len(v)) for v in space.values)):
        a = {name: space.values[d][i] for d, (name, i) in enumerate(zip(space.names, combo, strict=True))}
        if any(excluded(a) for excluded in exclusions) or any(predicate(a) for predicate in zero):
            continue
        pool += 1
        if combo not in selected:
            return False
    return pool == len(selected)


def sample_passages(
    passages: Sequence[P], k: int = 3, *, language_of: Callable[[P], str], rng: random.Random
) -> list[P]:
    """k distinct corpus passages balanced across languages (Appendix C.2.1).

    Languages are visited round-robin in a random order (skipping exhausted ones); within a language a passage
    is drawn uniformly without replacement. ValueError if the corpus has fewer than k passages or k < 0.
    """
    k = operator.index(k)
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if len(passages) < k:
        raise ValueError(f"need {k} distinct passages but the corpus has only {len(passages)}")
    by_language: dict[str, list[int]] = {}
    for i, passage in enumerate(passages):
        by_language.setdefault(language_of(passage), []).append(i)
    order = sorted(by_language)
    rng.shuffle(order)
    picked: list[int] = []
    for language in itertools.cycle(order):
        if len(picked) == k:
            break
        left = by_language[language]
        if left:
            picked.append(left.pop(rng.randrange(len(left))))
    return [passages[i] for i in picked]
