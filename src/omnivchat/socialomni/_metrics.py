"""SocialOmni metrics: Who / When classification with fixed denominators, and How quality from a judge panel.

Who and When (``evaluate.summarize``): every item counts, failures included; request failures and parse
failures are reported apart. How (``judge_eval.metrics`` / ``rescore.summarize``): QGold, QEns, Cov+ and
QEns_joint over the 128 gold-YES items, never averaged over a partial panel.

Denominators are the release's item counts (or a declared ``--limit``), never the number of stored records: an
item with no record is *missing*, counted on its own (``n_missing``), never a wrong answer, a "NO" or a 0, and
a result with a missing item is incomplete (its headline numbers are None).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from omnivchat.socialomni._errors import SocialOmniError

#: The five scores a judge may give.
SCORE_VALUES = (0, 25, 50, 75, 100)
#: Judges per panel: every non-empty reply needs exactly this many valid scores.
PANEL_SIZE = 3


def classification_metrics(
    predictions: Mapping[str, str | None],
    gold: Mapping[str, str],
    labels: Sequence[str],
    request_failed: set[str],
    *,
    expected: Collection[str] | None = None,
) -> dict[str, Any]:
    """Accuracy and macro-F1 over every item of the task (a fixed denominator), with failures counted apart.

    ``expected`` names the task's items as loaded from the release (2,000 Who, 200 When, or the declared
    ``--limit``); ``n = len(expected)`` (``len(gold)`` when not given). Each item is one of:

    - a request failure (in ``request_failed``): counted, prediction None, wrong;
    - a parse failure (request fine, prediction None): counted, wrong;
    - answered (a prediction in ``labels``): right or wrong;
    - missing: no record at all (not in ``predictions`` and not failed, or an expected item without a gold
      label). A missing item is never wrong and never dropped from ``n``: it is counted in ``n_missing`` and
      the result is incomplete.

    For each label L, ``F1_L = 2tp / (2tp + fp + fn)`` (0 when the denominator is 0); a None prediction is a
    false negative for its gold label and a false positive for no label.

    Returns ``{n, correct, accuracy, macro_f1, class_counts: {L: {tp, fp, fn}}, request_failures,
    parse_failures, n_missing, missing, complete}`` with ``accuracy = 100*correct/n`` and ``macro_f1 =
    100*mean_L F1_L``; both are None when ``n`` is 0 or any item is missing (``complete`` False: a headline over
    part of the items is never reported). ``missing`` lists the missing ids, sorted.
    Raises SocialOmniError for a gold label or a prediction outside ``labels``, a prediction for an item that
    has no gold label, or a record for an item outside ``expected``.
    """
    labels = list(labels)
    if len(set(labels)) != len(labels) or not labels:
        raise SocialOmniError(f"labels {labels!r}: expected distinct labels")
    if extra := sorted(set(predictions) - set(gold)):
        raise SocialOmniError(f"predictions for items without a gold label: {', '.join(extra[:10])}")
    if expected is None:
        universe = list(gold)
    else:
        universe = list(expected)
        if len(set(universe)) != len(universe):
            raise SocialOmniError("expected items: an id is named more than once")
        if extra := sorted(set(gold) - set(universe)):
            raise SocialOmniError(f"records for items outside the task's item list: {', '.join(extra[:10])}")
    counts = {label: {"tp": 0, "fp": 0, "fn": 0} for label in labels}
    correct = request_failures = parse_failures = 0
    missing: list[str] = []
    for item in universe:
        if item not in gold:  # an expected item with no record: its gold label is not even known here
            missing.append(item)
            continue
        truth = gold[item]
        if truth not in counts:
            raise SocialOmniError(f"item {item}: gold label {truth!r} is not one of {labels}")
        if item in request_failed:
            request_failures += 1
            predicted = None
        elif item not in predictions:
            missing.append(item)
            continue
        else:
            predicted = predictions[item]
            if predicted is None:
                parse_failures += 1
        if predicted is not None and predicted not in counts:
            raise SocialOmniError(f"item {item}: prediction {predicted!r} is not one of {labels}")
        if predicted == truth:
            correct += 1
            counts[truth]["tp"] += 1
        else:
            counts[truth]["fn"] += 1
            if predicted is not None:
                counts[predicted]["fp"] += 1
    n = len(universe)
    complete = not missing
    f1s = []
    for c in counts.values():
        denominator = 2 * c["tp"] + c["fp"] + c["fn"]
        f1s.append(2 * c["tp"] / denominator if denominator else 0.0)
    headline = bool(n) and complete
    return {
        "n": n,
        "correct": correct,
        "accuracy": 100 * correct / n if headline else None,
        "macro_f1": 100 * sum(f1s) / len(f1s) if headline else None,
        "class_counts": counts,
        "request_failures": request_failures,
        "parse_failures": parse_failures,
        "n_missing": len(missing),
        "missing": sorted(missing),
        "complete": complete,
    }


class HowMetrics(BaseModel):
    """How quality over the gold-YES items (read fields as attributes or ``metrics["qgold"]``).

    The four metrics are None where undefined, and all four are None while the result is incomplete (with
    ``strict=False``, Cov+ stays when every item has its When decision and its reply: it needs no judge).
    ``model_dump()`` gives the JSON-ready form.
    """

    model_config = ConfigDict(frozen=True)

    qgold: float | None
    """Σ_{i∈G} quality_i / n_gold: every gold item, When=NO predictions and empty replies (0) included. None for
    archives (``full_gold`` False)."""
    qens: float | None
    """Σ_{i∈C} quality_i / |C|, C = items predicted YES with a non-empty reply; None when C is empty."""
    cov_plus: float | None
    """100 · |C| / n_gold."""
    qens_joint: float | None
    """Σ_{i∈C} quality_i / n_gold (= QEns · Cov+ / 100)."""
    n_gold: int
    """The denominator: the number of gold-YES items (128 in the release, or the declared ``--limit``)."""
    n_items: int
    """Items given (every item named in any of the inputs)."""
    n_covered: int
    """|C|."""
    complete: bool
    """Every expected item has its When decision and its reply, and every non-empty reply a full valid panel."""
    missing: list[str]
    """Ids of the items that make the result incomplete, sorted (items missing without a name, see
    ``n_missing``, cannot be listed)."""
    failures: list[dict[str, str]]
    """``{item, phase}`` for each missing piece: phase ``when`` (no When decision: no record or a failed
    request), ``generation`` (the How request failed), ``missing`` (no How record at all) or ``judging`` (a
    non-empty reply without exactly three valid scores)."""
    full_gold: bool
    """True for a hosted run with forced replies on all gold items; False for an archive (QGold None)."""
    n_missing: int = 0
    """Expected items with no How record at all (neither a reply nor a failed request), including gold items
    that were not named by any input: never a 0, never dropped from ``n_gold``."""
    n_generation_failures: int = 0
    """Items whose How generation request failed (a record exists, with an error)."""
    n_when_missing: int = 0
    """Items without a When decision (no When record, or a failed When request): never counted as "NO"."""
    n_unjudged: int = 0
    """Non-empty replies without a full valid panel."""

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> list[str]:
        return list(type(self).model_fields)

    def quality_line(self) -> str:
        """QGold, QEns, Cov+ and QEns_joint on one line; null stays null."""
        values = {"qgold": self.qgold, "qens": self.qens, "cov_plus": self.cov_plus, "qens_joint": self.qens_joint}
        return ", ".join(f"{k} {v:.2f}" if v is not None else f"{k} null" for k, v in values.items())

    def gaps_line(self) -> str:
        """What keeps How quality incomplete, counted apart (summaries written before these counts show none)."""
        parts = [
            f"{self.n_missing} missing (no record)",
            f"{self.n_generation_failures} failed generations",
            f"{self.n_when_missing} without a When decision",
            f"{self.n_unjudged} without a full panel",
        ]
        return f"incomplete over {self.n_gold} How items: " + ", ".join(parts)


def _valid_panel(scores: Any) -> bool:
    return (
        isinstance(scores, (list, tuple))
        and len(scores) == PANEL_SIZE
        and all(isinstance(s, (int, float)) and not isinstance(s, bool) and s in SCORE_VALUES for s in scores)
    )


def how_metrics(
    qualities: Mapping[str, Sequence[int] | None],
    predicted_yes: Mapping[str, bool],
    empty: Mapping[str, bool],
    n_gold: int = 128,
    *,
    full_gold: bool = True,
    strict: bool = True,
    expected: Collection[str] | None = None,
    generation_failed: Collection[str] = (),
) -> HowMetrics:
    """QGold, QEns, Cov+ and QEns_joint over the How items.

    - ``qualities[id]``: the panel's three scores for a non-empty reply, each one of 0/25/50/75/100, or None
      when it has not been (fully) judged; quality_i is their mean. Never averaged over fewer judges.
    - ``predicted_yes[id]``: the item's When prediction is YES (a parse failure is False). Leave an item out
      when it has no When decision (no When record, or its When request failed): it is then never a "NO".
    - ``empty[id]``: the How reply completed; True when it is empty (it needs no scores and counts 0). Leave an
      item out when it has no completed reply.
    - ``generation_failed``: items whose How request failed (a record with an error).
    - ``expected``: the items that must be there (for a hosted run, every gold-YES item of the release or of the
      declared limit; ``n_gold`` of them when ``full_gold``). An expected item with neither a reply nor a failed
      request is *missing*. Without ``expected``, the items named in the inputs are taken, and with
      ``full_gold`` the ``n_gold`` minus that many unnamed gold items are missing.

    C = items predicted YES with a non-empty reply. QGold = Σ_G quality / n_gold; QEns = Σ_C quality / |C| (None
    if C is empty); Cov+ = 100·|C|/n_gold; QEns_joint = Σ_C quality / n_gold. The result is incomplete when any
    item is missing, lacks its When decision, its reply (failed generation), or (non-empty reply) a full valid
    panel; then all four are None (``strict``, the judge_eval rule) or the three quality metrics are None and
    Cov+ is kept when every item has its decision and its reply (``strict=False``). Missing items, failed
    generations, missing When decisions and unjudged replies are each counted apart.

    ``full_gold=False`` is for archives, which hold replies only for items gold YES and predicted YES: QGold is
    None, and QEns, Cov+ and QEns_joint are computed from the expected items (by default those present), still
    over ``n_gold``.
    """
    if isinstance(n_gold, bool) or not isinstance(n_gold, int) or n_gold < 1:
        raise SocialOmniError(f"n_gold {n_gold!r}: must be a positive integer")
    failed_generation = set(generation_failed)
    if both := sorted(failed_generation & set(empty)):
        raise SocialOmniError(f"How items with both a reply and a failed generation: {', '.join(both[:10])}")
    given = set(qualities) | set(predicted_yes) | set(empty) | failed_generation
    unnamed = 0
    if expected is not None:
        ids = list(expected)
        if len(set(ids)) != len(ids):
            raise SocialOmniError("expected How items: an id is named more than once")
        if extra := sorted(given - set(ids)):
            raise SocialOmniError(f"How items outside the expected items: {', '.join(extra[:10])}")
        if full_gold and len(ids) != n_gold:
            raise SocialOmniError(f"{len(ids)} expected How items but n_gold is {n_gold} (full_gold: all are expected)")
        if len(ids) > n_gold:
            raise SocialOmniError(f"{len(ids)} expected How items but n_gold is {n_gold}")
        ids = sorted(ids)
    else:
        ids = sorted(given)
        if len(ids) > n_gold:
            raise SocialOmniError(f"{len(ids)} How items given but n_gold is {n_gold}")
        if full_gold:  # every gold item is expected; those named nowhere have no record at all
            unnamed = n_gold - len(ids)
    failures: list[dict[str, str]] = []
    quality: dict[str, float] = {}
    covered: list[str] = []
    for item in ids:
        if item not in predicted_yes:
            failures.append({"item": item, "phase": "when"})
        if item in failed_generation:
            failures.append({"item": item, "phase": "generation"})
            continue
        if item not in empty:
            failures.append({"item": item, "phase": "missing"})
            continue
        if empty[item]:
            quality[item] = 0.0
            continue
        scores = qualities.get(item)
        if not _valid_panel(scores):
            failures.append({"item": item, "phase": "judging"})
        else:
            quality[item] = sum(scores) / PANEL_SIZE  # type: ignore[arg-type]  # no None here: the branch above took items with a missing score
        if predicted_yes.get(item, False):
            covered.append(item)
    phases = [f["phase"] for f in failures]
    missing = sorted({f["item"] for f in failures})
    complete = not failures and not unnamed
    coverage_known = not unnamed and not any(p in ("when", "generation", "missing") for p in phases)
    cov_plus = 100 * len(covered) / n_gold if complete or (not strict and coverage_known) else None
    qgold = qens = qens_joint = None
    if complete:
        covered_sum = sum(quality[i] for i in covered)
        qgold = sum(quality.values()) / n_gold if full_gold else None
        qens = covered_sum / len(covered) if covered else None
        qens_joint = covered_sum / n_gold
    return HowMetrics(
        qgold=qgold,
        qens=qens,
        cov_plus=cov_plus,
        qens_joint=qens_joint,
        n_gold=n_gold,
        n_items=len(given),
        n_covered=len(covered),
        complete=complete,
        missing=missing,
        failures=failures,
        full_gold=full_gold,
        n_missing=phases.count("missing") + unnamed,
        n_generation_failures=phases.count("generation"),
        n_when_missing=phases.count("when"),
        n_unjudged=phases.count("judging"),
    )
