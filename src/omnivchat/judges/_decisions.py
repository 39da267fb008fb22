"""One judge's verdict on a reply (:class:`Judgment`) and the agreement of raters (judges, people) on binary
criterion decisions: Cohen's kappa and Krippendorff's alpha (Appendix D.3), shared by the judge agreement study
and the comparison with people."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np
from scipy.stats.contingency import crosstab

from omnivchat.scoring import rubric_score

__all__ = ["Judgment", "cohen_kappa", "krippendorff_alpha"]


@dataclass(frozen=True)
class Judgment:
    """One judge's verdict on one reply (Appendix D.3).

    ``tiers[k-1]`` is the tier of criterion k in rubric order; ``hits`` holds the 1-based numbers of the criteria
    the judge found met, or None when the verdict was unusable (the reply is then unscored for this judge, never
    read as 0). ``repeat`` numbers repeated gradings of the same replies by the same judge (0 is the main run).
    """

    item_id: str
    subcategory: str
    judge: str
    tiers: tuple[int, ...]
    hits: frozenset[int] | None
    repeat: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "tiers", tuple(int(t) for t in self.tiers))
        if self.hits is not None:
            object.__setattr__(self, "hits", frozenset(int(h) for h in self.hits))
        if self.repeat < 0:
            raise ValueError(f"repeat must be >= 0, got {self.repeat}")
        # Validates tiers and hits the way Eq. 1 does (negative tier, no point-bearing criterion, hit out of range).
        rubric_score(self.tiers, self.hits or ())


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters' binary decisions (Appendix D.3, Table 2 pair statistics).

    kappa = (p_o - p_e) / (1 - p_e) with p_o the observed agreement and p_e = sum_v p_a(v) p_b(v) the agreement
    expected from the marginals, both read off the 2x2 table of ``scipy.stats.contingency.crosstab``. Returns
    None when there is no decision or p_e = 1 (both raters constant and equal: kappa is undefined); see
    :func:`_kappa` for the reason.
    """
    return _kappa(a, b)[0]


def _kappa(a: Sequence[int], b: Sequence[int]) -> tuple[float | None, str | None]:
    """(Cohen's kappa, None) or (None, why it is undefined)."""
    if len(a) != len(b):
        raise ValueError(f"decision sequences differ in length: {len(a)} and {len(b)}")
    if not a:
        return None, "n/a (no decision)"
    table = crosstab(np.asarray(a, dtype=int), np.asarray(b, dtype=int), levels=([0, 1], [0, 1])).count
    n = table.sum()
    p_o = np.trace(table) / n
    p_e = float((table.sum(axis=1) * table.sum(axis=0)).sum()) / n**2
    if p_e >= 1.0:
        return None, "n/a (every decision of both judges is the same: chance agreement is 1)"
    return float((p_o - p_e) / (1.0 - p_e)), None


def krippendorff_alpha(decisions: Sequence[Sequence[float]]) -> float | None:
    """Krippendorff's alpha (nominal, values {0, 1}) of a judges x units matrix (Appendix D.3).

    ``decisions[j][u]`` is judge j's decision (1 met, 0 not met, NaN missing) on unit u, a (reply, criterion)
    pair. Computed by the ``krippendorff`` package. Returns None when alpha is undefined: fewer than two judges,
    no unit with two decisions, or a single value throughout (no expected disagreement); see :func:`_alpha`.
    """
    return _alpha(decisions)[0]


def _alpha(decisions: Sequence[Sequence[float]], who: str = "judge") -> tuple[float | None, str | None]:
    """(Krippendorff's alpha, None) or (None, why it is undefined); ``who`` names the rows in the reason."""
    data = np.asarray(decisions, dtype=float)
    if data.ndim != 2 or data.shape[0] < 2:
        return None, f"n/a (one {who})"
    if data.shape[1] == 0 or ((~np.isnan(data)).sum(axis=0) >= 2).sum() == 0:
        return None, f"n/a (no criterion decided by two {who}s)"
    values = np.unique(data[~np.isnan(data)])
    if len(values) < 2:
        return None, "n/a (every decision is the same: no disagreement to expect)"
    value = float(krippendorff.alpha(reliability_data=data, value_domain=[0.0, 1.0], level_of_measurement="nominal"))
    return (None, "n/a (undefined)") if math.isnan(value) else (value, None)
