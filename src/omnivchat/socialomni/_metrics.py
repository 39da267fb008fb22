"""SocialOmni metrics: Who / When classification with fixed denominators, and How quality from a judge panel.

Who and When (``evaluate.summarize``): every item counts, failures included; request failures and parse
failures are reported apart. How (``judge_eval.metrics`` / ``rescore.summarize``): QGold, QEns, Cov+ and
QEns_joint over the 128 gold-YES items, never averaged over a partial panel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from omnivchat.socialomni._data import SocialOmniError

#: The five scores a judge may give.
SCORE_VALUES = (0, 25, 50, 75, 100)
#: Judges per panel: every non-empty reply needs exactly this many valid scores.
PANEL_SIZE = 3


def classification_metrics(
    predictions: Mapping[str, str | None],
    gold: Mapping[str, str],
    labels: Sequence[str],
    request_failed: set[str],
) -> dict[str, Any]:
    """Accuracy and macro-F1 over every gold item (a fixed denominator), with failures counted apart.

    ``gold`` names the items (``n = len(gold)``); an item absent from ``predictions``, or with a failed request,
    has the prediction None. For each label L, ``F1_L = 2tp / (2tp + fp + fn)`` (0 when the denominator is 0);
    a None prediction is a false negative for its gold label and a false positive for no label.

    Returns ``{n, correct, accuracy, macro_f1, class_counts: {L: {tp, fp, fn}}, request_failures,
    parse_failures}`` with ``accuracy = 100*correct/n`` and ``macro_f1 = 100*mean_L F1_L`` (both None when
    ``n`` is 0). ``parse_failures`` counts items whose request succeeded but whose prediction is None.
    Raises SocialOmniError for a gold label or a prediction outside ``labels``, or a prediction for an item that
    has no gold label.
    """
    labels = list(labels)
    if len(set(labels)) != len(labels) or not labels:
        raise SocialOmniError(f"labels {labels!r}: expected distinct labels")
    if extra := sorted(set(predictions) - set(gold)):
        raise SocialOmniError(f"predictions for items without a gold label: {', '.join(extra[:10])}")
    counts = {label: {"tp": 0, "fp": 0, "fn": 0} for label in labels}
    correct = request_failures = parse_failures = 0
    for item, truth in gold.items():
        if truth not in counts:
            raise SocialOmniError(f"item {item}: gold label {truth!r} is not one of {labels}")
        predicted = None if item in request_failed else predictions.get(item)
        if item in request_failed:
            request_failures += 1
        elif predicted is None:
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
    n = len(gold)
    f1s = []
    for c in counts.values():
        denominator = 2 * c["tp"] + c["fp"] + c["fn"]
        f1s.append(2 * c["tp"] / denominator if denominator else 0.0)
    return {
        "n": n,
        "correct": correct,
        "accuracy": 100 * correct / n if n else None,
        "macro_f1": 100 * sum(f1s) / len(f1s) if n else None,
        "class_counts": counts,
        "request_failures": request_failures,
        "parse_failures": parse_failures,
    }


class HowMetrics(BaseModel):
    """How quality over the gold-YES items (read fields as attributes or ``metrics["qgold"]``).

    The four metrics are None where undefined, and all four are None while the result is incomplete (with
    ``strict=False``, Cov+ stays: it needs no judge). ``model_dump()`` gives the JSON-ready form.
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
    """The denominator: the number of gold-YES items (128 in the release)."""
    n_items: int
    """Items given (every item named in any of the three inputs)."""
    n_covered: int
    """|C|."""
    complete: bool
    """Every item has its When prediction and its reply, and every non-empty reply a full valid panel."""
    missing: list[str]
    """Ids of the items that make the result incomplete, sorted."""
    failures: list[dict[str, str]]
    """``{item, phase}`` for each missing piece: phase ``when`` (no When prediction), ``generation`` (no reply)
    or ``judging`` (a non-empty reply without exactly three valid scores)."""
    full_gold: bool
    """True for a hosted run with forced replies on all gold items; False for an archive (QGold None)."""

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def keys(self) -> list[str]:
        return list(type(self).model_fields)


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
) -> HowMetrics:
    """QGold, QEns, Cov+ and QEns_joint over the How items given.

    - ``qualities[id]``: the panel's three scores for a non-empty reply, each one of 0/25/50/75/100, or None
      when it has not been (fully) judged; quality_i is their mean. Never averaged over fewer judges.
    - ``predicted_yes[id]``: the item's When prediction is YES (a parse failure is False). Leave an item out
      when its When request failed.
    - ``empty[id]``: the How reply completed empty; it needs no scores and counts 0. Leave an item out when its
      How generation failed.

    C = items predicted YES with a non-empty reply. QGold = Σ_G quality / n_gold (over every item given:
    the caller passes all gold-YES items); QEns = Σ_C quality / |C| (None if C is empty); Cov+ = 100·|C|/n_gold;
    QEns_joint = Σ_C quality / n_gold. The result is incomplete when any item lacks its When prediction, its
    reply, or (non-empty reply) a full valid panel; then all four are None (``strict``, the judge_eval rule) or
    the three quality metrics are None and Cov+ is kept when every item has its prediction and its reply
    (``strict=False``, the rescore rule).

    ``full_gold=False`` is for archives, which hold replies only for items gold YES and predicted YES: QGold is
    None, and QEns, Cov+ and QEns_joint are computed from the items present, still over ``n_gold``.
    """
    if isinstance(n_gold, bool) or not isinstance(n_gold, int) or n_gold < 1:
        raise SocialOmniError(f"n_gold {n_gold!r}: must be a positive integer")
    ids = sorted(set(qualities) | set(predicted_yes) | set(empty))
    if len(ids) > n_gold:
        raise SocialOmniError(f"{len(ids)} How items given but n_gold is {n_gold}")
    failures: list[dict[str, str]] = []
    quality: dict[str, float] = {}
    covered: list[str] = []
    for item in ids:
        if item not in predicted_yes:
            failures.append({"item": item, "phase": "when"})
        if item not in empty:
            failures.append({"item": item, "phase": "generation"})
            continue
        if empty[item]:
            quality[item] = 0.0
            continue
        scores = qualities.get(item)
        if not _valid_panel(scores):
            failures.append({"item": item, "phase": "judging"})
        else:
            quality[item] = sum(scores) / PANEL_SIZE  # type: ignore[arg-type]
        if predicted_yes.get(item, False):
            covered.append(item)
    missing = sorted({f["item"] for f in failures})
    complete = not failures
    coverage_known = not any(f["phase"] in ("when", "generation") for f in failures)
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
        n_items=len(ids),
        n_covered=len(covered),
        complete=complete,
        missing=missing,
        failures=failures,
        full_gold=full_gold,
    )
