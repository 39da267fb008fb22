"""Means over instances and the columns of the paper's Table 1 (Section 3 Eq. 2, Section 4.2)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from omnivchat.bench import CATEGORIES, resolve_subcategory
from omnivchat.scoring._words import is_empty_reply, reply_efficiency, word_count


class ScoredReply(BaseModel):
    """One instance's outcome as the metrics need it.

    ``reply`` is None when no reply exists: the request failed, or the item was never run (``ran`` False);
    ``score`` is None when the reply was not scored (no reply, or the verdict was unusable); ``style`` is None
    when style was not graded successfully. None is never read as 0.
    """

    model_config = ConfigDict(frozen=True)

    subcategory: str
    source: Literal["synthetic", "human"] = "synthetic"
    score: float | None = None
    reply: str | None = None
    style: float | None = None
    ran: bool = True


def pooled_mean(scores: Iterable[float]) -> float:
    """PooledMean(E) of Eq. 2: every instance weighs the same. Raises ValueError on an empty set."""
    values = list(scores)
    if not values:
        raise ValueError("pooled mean of an empty set")
    return math.fsum(values) / len(values)


def subcategory_mean(records: Iterable[tuple[str, float]]) -> float:
    """SubcategoryMean(E) of Eq. 2: mean within each subcategory, then equal weight per subcategory present.

    ``records`` are (subcategory, score) pairs; subcategories may be short codes or full paths. C is the number
    of subcategories in ``records`` (the paper's 17): a caller that holds the bench says when one has no score
    (:func:`table1_row` does).
    """
    groups: dict[str, list[float]] = defaultdict(list)
    for subcategory, score in records:
        groups[resolve_subcategory(subcategory).code].append(score)
    if not groups:
        raise ValueError("subcategory mean of an empty set")
    return math.fsum(pooled_mean(v) for v in groups.values()) / len(groups)


def unscored_subcategories(records: Iterable[tuple[str, float | None]]) -> tuple[int, list[str]]:
    """C of Eq. 2 (the distinct subcategories of ``records``, every instance of the bench) and the codes of those
    with no scored instance (score None), sorted: while any is left, Eq. 2's Mean over all C cannot be taken."""
    scored: dict[str, bool] = {}
    for subcategory, score in records:
        code = resolve_subcategory(subcategory).code
        scored[code] = scored.get(code, False) or score is not None
    return len(scored), sorted(code for code, any_scored in scored.items() if not any_scored)


def category_means(records: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Pooled mean within each ability category present (Table 1 columns AH, ER, MSA, MEA, DSLP)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for subcategory, score in records:
        groups[resolve_subcategory(subcategory).category].append(score)
    return {code: pooled_mean(groups[code]) for code in CATEGORIES if code in groups}


def turn_kind_means(records: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Pooled means over single-turn and multi-turn subcategories (Table 1 columns Single and Multi)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for subcategory, score in records:
        groups[resolve_subcategory(subcategory).kind].append(score)
    return {kind: pooled_mean(values) for kind, values in groups.items()}


def style_rate(styles: Iterable[float | None]) -> float:
    """Style (Section 4.2): mean of the all-seven pass s(y) over successfully graded replies (None excluded)."""
    return pooled_mean(s for s in styles if s is not None)


def mean_length(replies: Iterable[str]) -> float:
    """Mean counted reply length w(y) over replies with non-zero length (Table 1 column Len)."""
    return pooled_mean(n for n in map(word_count, replies) if n > 0)


class Table1Row(BaseModel):
    """One row of Table 1, with the counts behind it. None marks a column with nothing to average."""

    AH: float | None = None
    ER: float | None = None
    MSA: float | None = None
    MEA: float | None = None
    DSLP: float | None = None
    Single: float | None = None
    Multi: float | None = None
    Mean: float | None = None
    Human: float | None = None
    RE: float | None = None
    Style: float | None = None
    Len: float | None = None
    n_instances: int = 0
    n_scored: int = 0
    n_unscored: int = 0
    n_failed_requests: int = 0
    n_not_run: int = 0
    n_empty_replies: int = 0
    n_style_graded: int = 0
    n_subcategories: int | None = Field(
        default=None, description="C of Eq. 2: the bench's synthetic subcategories (None in files older than it)."
    )
    unscored_subcategories: list[str] = Field(
        default_factory=list, description="The bench's subcategories with no scored instance (codes)."
    )
    partial_mean: float | None = Field(
        default=None,
        description="The Subcategory Mean over the scored subcategories only, when some have none (Mean is None).",
    )

    @computed_field  # type: ignore[prop-decorator]  # pydantic's computed_field over a property, which mypy does not model
    @property
    def complete(self) -> bool:
        """Every item of the bench has a reply (no request failed, none left unrun) and every subcategory of the
        bench has a scored instance (Eq. 2's Mean is over all C of them)."""
        return self.n_failed_requests + self.n_not_run == 0 and not self.unscored_subcategories

    def partial_mean_note(self) -> str | None:
        """``Mean over K of C subcategories: x (unscored: ...)``, or None when the Mean is over all of them."""
        if not self.unscored_subcategories or self.n_subcategories is None:
            return None
        c = self.n_subcategories
        k = c - len(self.unscored_subcategories)
        value = "—" if self.partial_mean is None else f"{self.partial_mean:.3f}"
        return f"Mean over {k} of {c} subcategories: {value} (unscored: {', '.join(self.unscored_subcategories)})"

    def incompleteness(self) -> str | None:
        """``incomplete: K of N items have no reply (...)`` and/or ``Mean over K of C subcategories ...``, or None
        for a complete run."""
        if self.complete:
            return None
        parts = []
        k = self.n_failed_requests + self.n_not_run
        if k:
            parts.append(
                f"{k} of {self.n_instances} items have no reply "
                f"({self.n_failed_requests} failed requests, {self.n_not_run} not run)"
            )
        note = self.partial_mean_note()
        if note is not None:
            parts.append(note)
        return "incomplete: " + "; ".join(parts)


TABLE1_COLUMNS = ("AH", "ER", "MSA", "MEA", "DSLP", "Single", "Multi", "Mean", "Human", "RE", "Style", "Len")


def _or_none(compute: Callable[..., float], *args: object) -> float | None:
    try:
        value = compute(*args)
    except ValueError:  # empty set: the column has nothing to average
        return None
    return None if math.isnan(value) else value


def table1_row(records: Sequence[ScoredReply], *, style_graded: bool | None = None) -> Table1Row:
    """The columns of the paper's Table 1 from per-instance records.

    Every column but Human uses the synthetic instances; Human is the pooled mean over ``source == "human"``.
    AH..DSLP, Single and Multi are pooled means; Mean is the Subcategory Mean of Eq. 2, over every one of the
    bench's C subcategories: while one has no scored instance, Mean is None, the mean over the others is
    ``partial_mean`` and the row is incomplete; RE is 1000 * sum r /
    sum w over scored replies; Len averages w(y) over non-empty replies. Unscored records are counted, never
    averaged as 0; ``records`` hold every item of the bench, those never run included (``ran`` False), so that
    a partial run is counted against the bench and marked incomplete.

    Style is the mean of s(y) over successfully graded replies (Section 4.2). ``style_graded`` says whether the
    replies went through a style grader (None: whenever any record carries a style). Without grading, Style is
    None, whatever the replies; with it, an empty reply counts 0 and a reply whose grading failed is skipped.
    """
    if style_graded is None:
        style_graded = any(r.style is not None for r in records)
    synthetic = [r for r in records if r.source == "synthetic"]
    scored = [(r.subcategory, r.score) for r in synthetic if r.score is not None]
    human = [r.score for r in records if r.source == "human" and r.score is not None]
    categories = category_means(scored)
    kinds = turn_kind_means(scored)
    with_reply = [r for r in synthetic if r.reply is not None]
    scored_replies = [r for r in with_reply if r.score is not None]
    styles = [0.0 if is_empty_reply(r.reply or "") else r.style for r in with_reply] if style_graded else []
    n_subcategories, unscored_codes = unscored_subcategories((r.subcategory, r.score) for r in synthetic)
    mean = _or_none(subcategory_mean, scored)
    return Table1Row(
        **{code: categories.get(code) for code in CATEGORIES},
        Single=kinds.get("single"),
        Multi=kinds.get("multi"),
        Mean=None if unscored_codes else mean,
        Human=_or_none(pooled_mean, human),
        RE=_or_none(reply_efficiency, [r.score for r in scored_replies], [r.reply for r in scored_replies]),
        Style=_or_none(style_rate, styles),
        Len=_or_none(mean_length, [r.reply for r in with_reply]),
        n_instances=len(records),
        n_scored=sum(1 for r in records if r.score is not None),
        n_unscored=sum(1 for r in records if r.score is None),
        n_failed_requests=sum(1 for r in records if r.reply is None and r.ran),
        n_not_run=sum(1 for r in records if not r.ran),
        n_empty_replies=sum(1 for r in records if r.reply is not None and is_empty_reply(r.reply)),
        n_style_graded=sum(1 for s in styles if s is not None),
        n_subcategories=n_subcategories,
        unscored_subcategories=unscored_codes,
        partial_mean=mean if unscored_codes else None,
    )
