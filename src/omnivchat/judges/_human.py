"""Judges against people: per-criterion human verdicts beside each judge's and the panel's.

The paper checks its judges against people (Table 2, Appendix D.3); this module does the same for any judges on a
run, from a file of human verdicts, one line per (rater, instance, criterion):

    rater,instance,criterion,met,reply,note
    r1,ex-svmr-en,2,1,"It's on your right.",

``criterion`` is the 1-based number of the criterion in the instance's rubric order, ``met`` is 1/0 (true/false,
yes/no, y/n, met/not met/unmet; any case), ``reply`` (optional) is the reply the rater read: a label whose reply is
not the run's reply for that instance (whitespace aside: runs of spaces and line breaks count as one space) is
stale, left out and counted, never compared with verdicts on another text. ``note`` is free text, ignored. A CSV
may open with ``#`` comment lines (who labelled, how), only before the header; a JSONL file holds one object a
line with the same keys, each key once.

What is compared. The people's verdict on a (reply, criterion) unit is the majority of its raters (a tie is no
verdict: counted, left out). A judge's decision is whether it found the criterion met; a verdict that did not parse
or a reply the judge never graded is counted as such, never read as "not met". The panel decides each criterion by
majority of its judges (more than half, as ``--aggregate majority``), and only where every judge of the panel has
a usable verdict (a panel missing a judge gives no decision, as in scoring).

Figures per judge and tier (every tier together, then each tier): accuracy, false-miss rate (the judge says not
met where people say met: FN / people's met), false-accept rate (the judge says met where people say not met:
FP / people's not met), each with its Wilson 95% interval over decisions; and Cohen's kappa with a 95% percentile
interval from a bootstrap that resamples replies (a reply's decisions move together). Between raters: each pair's
agreement and kappa, and Krippendorff's alpha over all raters. Undefined figures are None with the reason, as in
:mod:`omnivchat.judges._agreement`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from rich.table import Table

from omnivchat.errors import OmnivchatError
from omnivchat.judges._calibration import wilson
from omnivchat.judges._decisions import Judgment, _alpha, _kappa

__all__ = [
    "HumanAgreement",
    "HumanLabel",
    "HumanLabelsError",
    "HumanRow",
    "Proportion",
    "RaterPair",
    "human_agreement",
    "read_human_labels",
    "render_human_agreement",
]

PANEL = "panel"
"""The row name of the panel (per-criterion majority of the compared judges)."""

MAX_RATER_PAIRS = 20
"""Raters up to which every pair is tabled (190 pairs); with more, only Krippendorff's alpha over all of them."""

_COLUMNS = ("rater", "instance", "criterion", "met")
_OPTIONAL = ("reply", "note")
_TRUE = {"1", "true", "yes", "y", "met"}
_FALSE = {"0", "false", "no", "n", "not met", "unmet"}


class HumanLabelsError(OmnivchatError, ValueError):
    """A human-labels file that cannot be read: the message names the file and line."""


@dataclass(frozen=True)
class HumanLabel:
    """One rater's verdict on one criterion of one instance's reply; ``where`` is ``file:line``."""

    rater: str
    item_id: str
    criterion: int
    met: bool
    reply: str | None
    where: str


# --------------------------------------------------------------------------------------------------------------
# Reading


def _met(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise HumanLabelsError(f"{where}: met must be 1 or 0 (true/false, yes/no, y/n, met/not met/unmet), got {value!r}")


def _label(row: Mapping[str, Any], where: str) -> HumanLabel:
    unknown = sorted(set(row) - set(_COLUMNS) - set(_OPTIONAL))
    if unknown:
        raise HumanLabelsError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; the fields are "
                               f"{', '.join(_COLUMNS + _OPTIONAL)}")  # fmt: skip
    missing = [c for c in _COLUMNS if row.get(c) is None or str(row[c]).strip() == ""]
    if missing:
        raise HumanLabelsError(f"{where}: no {', '.join(missing)}")
    raw = row["criterion"]
    whole = isinstance(raw, int) and not isinstance(raw, bool)
    if not whole and not (isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdecimal()):
        raise HumanLabelsError(f"{where}: criterion must be a whole number (1 = the rubric's first), got {raw!r}")
    criterion = int(raw)
    if criterion < 1:
        raise HumanLabelsError(f"{where}: criterion numbers start at 1 (the rubric's first), got {criterion}")
    for name in ("rater", "instance", "reply"):
        if row.get(name) is not None and not isinstance(row[name], str):
            raise HumanLabelsError(f"{where}: {name} must be text, got {type(row[name]).__name__}")
    reply = row.get("reply")
    return HumanLabel(
        rater=str(row["rater"]).strip(),
        item_id=str(row["instance"]).strip(),
        criterion=criterion,
        met=_met(row["met"], where),
        reply=reply if reply is not None and reply.strip() else None,  # a blank cell is no reply given
        where=where,
    )


def _lines(text: str) -> list[str]:
    """The file's lines, ending at line breaks only (\\n, \\r\\n, \\r): not at the other characters
    :meth:`str.splitlines` breaks at (U+2028, form feed...), which a note or a reply may hold."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _csv_rows(text: str, name: str) -> Iterable[tuple[dict[str, Any], str]]:
    lines = _lines(text)
    skipped = 0
    while skipped < len(lines) and (lines[skipped].startswith("#") or not lines[skipped].strip()):
        skipped += 1  # the file's own notes: who labelled, how
    reader = csv.reader(io.StringIO("\n".join(lines[skipped:]), newline=""), strict=True)
    first = skipped + 1
    try:
        header = [f.strip() for f in next(reader, [])]
        if not header:
            raise HumanLabelsError(f"{name}: no header line (rater,instance,criterion,met[,reply,note])")
        at = f"{name}:{skipped + reader.line_num}"
        if len(set(header)) != len(header):
            raise HumanLabelsError(f"{at}: a column is named twice in the header")
        unknown = [c for c in header if c not in _COLUMNS + _OPTIONAL]
        if unknown:
            raise HumanLabelsError(f"{at}: unknown column(s) {', '.join(map(repr, unknown))} in the header; the "
                                   f"columns are {', '.join(_COLUMNS + _OPTIONAL)}")  # fmt: skip
        while True:
            first = skipped + reader.line_num + 1  # a quoted reply may span lines: name the record's first
            cells = next(reader, None)
            if cells is None:
                return
            if not "".join(cells).strip():
                continue  # a blank line, or one of spaces
            where = f"{name}:{first}"
            if lines[first - 1].startswith("#"):
                raise HumanLabelsError(f"{where}: a '#' line after the header; notes go before the header")
            if len(cells) > len(header):
                raise HumanLabelsError(f"{where}: more fields than the header names")
            yield dict(zip(header, cells, strict=False)), where
    except csv.Error as err:
        raise HumanLabelsError(f"{name}:{first}: not CSV ({err})") from None


class _Object(dict[str, Any]):
    """A JSON object that remembers a key given twice (json keeps the last one without a word)."""

    repeated: str | None = None


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    row = _Object()
    for key, value in pairs:
        if key in row and row.repeated is None:
            row.repeated = key
        row[key] = value
    return row


def _jsonl_rows(text: str, name: str) -> Iterable[tuple[dict[str, Any], str]]:
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            row = json.loads(line, object_pairs_hook=_object)
        except json.JSONDecodeError as err:
            raise HumanLabelsError(f"{where}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise HumanLabelsError(f"{where}: a label is a JSON object, got {type(row).__name__}")
        if isinstance(row, _Object) and row.repeated is not None and row.repeated in _COLUMNS + _OPTIONAL:
            raise HumanLabelsError(f"{where}: the key {row.repeated!r} is given twice")
        yield row, where


def read_human_labels(path: str | Path) -> list[HumanLabel]:
    """The labels of a CSV (``.csv``) or JSONL (``.jsonl``) file of human verdicts, in file order.

    Raises HumanLabelsError naming the file and line for a file that is missing, not UTF-8, of another kind, has a
    line that is not a label, or labels the same (rater, instance, criterion) twice; and for a file with no label.
    """
    path = Path(path)
    kind = path.suffix.lower()
    if path.is_dir():
        raise HumanLabelsError(f"{path} is a directory; give the labels file (.csv or .jsonl)")
    if kind not in (".csv", ".jsonl"):
        raise HumanLabelsError(f"{path}: human labels are a .csv or .jsonl file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise HumanLabelsError(f"{path}: no such file") from None
    except OSError as err:
        raise HumanLabelsError(f"{path}: cannot be read ({err.strerror or err})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise HumanLabelsError(
            f"{path}:{line}: not UTF-8 text (byte {data[err.start]:#04x}); save it as UTF-8"
        ) from None
    rows = _csv_rows(text, str(path)) if kind == ".csv" else _jsonl_rows(text, str(path))
    labels: list[HumanLabel] = []
    seen: dict[tuple[str, str, int], str] = {}
    for row, where in rows:
        label = _label(row, where)
        key = (label.rater, label.item_id, label.criterion)
        if key in seen:
            raise HumanLabelsError(
                f"{where}: rater {label.rater!r} labels criterion {label.criterion} of {label.item_id!r} again "
                f"(first at {seen[key]})"
            )
        seen[key] = where
        labels.append(label)
    if not labels:
        raise HumanLabelsError(f"{path}: no label in the file")
    return labels


def labels_sha256(path: str | Path) -> str:
    """The sha256 of a labels file's bytes, recorded with the figures made from it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------------------------
# Figures


class Proportion(BaseModel):
    """k of n with its Wilson 95% interval; every figure None when n is 0."""

    model_config = ConfigDict(frozen=True)

    rate: float | None
    k: int
    n: int
    low: float | None
    high: float | None


class HumanRow(BaseModel):
    """One judge (or the panel) against people on one tier's decisions (``tier`` "all" or the tier number)."""

    model_config = ConfigDict(frozen=True)

    judge: str
    tier: str
    n_items: int
    """Replies with at least one decision compared."""
    n_decisions: int
    """(reply, criterion) decisions compared: people's verdict and a usable judge decision."""
    met_both: int
    """People and judge: met (true accepts)."""
    false_accepts: int
    """People: not met; judge: met."""
    false_misses: int
    """People: met; judge: not met."""
    unmet_both: int
    accuracy: Proportion
    false_miss_rate: Proportion
    """false_misses / the decisions people found met."""
    false_accept_rate: Proportion
    """false_accepts / the decisions people found not met."""
    kappa: float | None
    kappa_interval: list[float] | None
    """95% percentile bootstrap interval of kappa, replies resampled."""
    n_unscored: int
    """Decisions with people's verdict where the judge's verdict on the reply was unusable (did not parse)."""
    n_not_graded: int
    """Decisions with people's verdict on a reply this judge (or one panel judge) has no verdict for."""
    notes: dict[str, str] = Field(default_factory=dict)


class RaterPair(BaseModel):
    """Two raters on the (reply, criterion) units both labelled."""

    model_config = ConfigDict(frozen=True)

    rater_a: str
    rater_b: str
    n_decisions: int
    agreement: Proportion
    kappa: float | None
    notes: dict[str, str] = Field(default_factory=dict)


class HumanAgreement(BaseModel):
    """Judges against people: the figures of :func:`human_agreement`, with what they were made from."""

    model_config = ConfigDict(frozen=True)

    labels_file: str
    labels_sha256: str
    raters: list[str]
    judges: list[str]
    panel: list[str]
    """The judges of the panel row (empty with one judge: no panel)."""
    n_labels: int
    """Labels in the file."""
    n_stale: int
    """Labels whose reply is not the run's reply for that instance: left out."""
    n_no_reply: int
    """Labels on an instance the run has no reply for (never run, failed, empty): left out."""
    n_units: int
    """(reply, criterion) units with people's verdict (the majority of their raters)."""
    n_ties: int
    """Units whose raters split evenly: no people's verdict, left out."""
    rows: list[HumanRow]
    rater_pairs: list[RaterPair]
    rater_alpha: float | None
    """Krippendorff's alpha (nominal) over every rater's labels; None when undefined."""
    n_resamples: int
    seed: int
    notes: dict[str, str] = Field(default_factory=dict)


def _proportion(k: int, n: int) -> Proportion:
    return Proportion(**wilson(k, n))


def _kappa_from_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """Cohen's kappa from 2x2 counts (arrays: one kappa each); NaN where chance agreement is 1."""
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = (tp + tn) / n
        p_e = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n**2
        return np.where(p_e < 1.0, (p_o - p_e) / (1.0 - p_e), np.nan)


def _kappa_interval(per_item: np.ndarray, n_resamples: int, seed: int) -> tuple[list[float] | None, str | None]:
    """95% percentile interval of kappa over bootstrap resamples of replies; ``per_item`` rows are (tp, fp, fn, tn)."""
    if len(per_item) < 2:
        return None, "n/a (one reply: nothing to resample)"
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(per_item), size=(n_resamples, len(per_item)))
    sums = per_item[picks].sum(axis=1)
    kappas = _kappa_from_counts(sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3])
    defined = kappas[~np.isnan(kappas)]
    if len(defined) < 0.95 * n_resamples:
        return None, f"n/a (undefined in {n_resamples - len(defined)} of {n_resamples} resamples)"
    low, high = np.percentile(defined, [2.5, 97.5])
    if low == high:  # a zero-width interval would claim an exact kappa that a few replies cannot show
        return None, f"n/a (every resample gives {float(low):.3f})"
    return [round(float(low), 6), round(float(high), 6)], None


def _row(
    judge: str,
    tier: str,
    decided: Sequence[tuple[str, bool, bool]],
    n_unscored: int,
    n_not_graded: int,
    n_resamples: int,
    seed: int,
) -> HumanRow:
    """``decided``: (item, people's met, judge's met) for each compared decision."""
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # item -> (tp, fp, fn, tn)
    for item, people, judged in decided:
        per[item][0 if people and judged else 1 if judged else 2 if people else 3] += 1
    per_item = np.array([per[item] for item in sorted(per)], dtype=float).reshape(-1, 4)
    tp, fp, fn, tn = (int(x) for x in per_item.sum(axis=0))
    kappa, kappa_note = _kappa([int(p) for _, p, _ in decided], [int(j) for _, _, j in decided])
    if kappa is None and decided:
        kappa_note = "n/a (one answer throughout: chance agreement is 1)"
    interval, interval_note = (None, kappa_note) if kappa is None else _kappa_interval(per_item, n_resamples, seed)
    notes: dict[str, str] = {}
    if kappa is None:
        notes["kappa"] = kappa_note or "n/a"
    if interval is None:
        notes["kappa_interval"] = interval_note or "n/a"
    if not decided:
        for name in ("accuracy", "false_miss_rate", "false_accept_rate"):
            notes[name] = "n/a (no decision compared)"
    elif tp + fn == 0:
        notes["false_miss_rate"] = "n/a (people found no criterion met)"
    elif fp + tn == 0:
        notes["false_accept_rate"] = "n/a (people found every criterion met)"
    return HumanRow(
        judge=judge,
        tier=tier,
        n_items=len(per),
        n_decisions=len(decided),
        met_both=tp,
        false_accepts=fp,
        false_misses=fn,
        unmet_both=tn,
        accuracy=_proportion(tp + tn, len(decided)),
        false_miss_rate=_proportion(fn, tp + fn),
        false_accept_rate=_proportion(fp, fp + tn),
        kappa=kappa,
        kappa_interval=interval,
        n_unscored=n_unscored,
        n_not_graded=n_not_graded,
        notes=notes,
    )


def _words(text: str) -> str:
    """A reply with its whitespace made one space: a rater's copy that differs only in spacing is the same reply."""
    return " ".join(text.split())


def _tier_label(tier: int) -> str:
    return f"{tier} (gate)" if tier == 0 else str(tier)


def human_agreement(
    judgments: Iterable[Judgment],
    labels: Sequence[HumanLabel],
    judges: Sequence[str],
    *,
    rubrics: Mapping[str, Sequence[int]],
    replies: Mapping[str, str],
    labels_file: str,
    labels_digest: str,
    panel: bool = True,
    n_resamples: int = 1000,
    seed: int = 0,
) -> HumanAgreement:
    """Each judge's (and, with two judges or more and ``panel``, the panel's) agreement with people, per tier.

    ``judgments``: the judges' verdicts on the run's replies (only main runs, repeat 0, are compared).
    ``rubrics``: each bench instance's criterion tiers, in rubric order. ``replies``: the run's reply for each
    instance it has one for; a label naming a reply that differs is stale, a label on an instance without a reply
    is counted as such, both left out. ``labels_file`` and ``labels_digest`` are recorded as given.

    Raises ValueError for a judge without any verdict, and for a label on an instance the bench does not have or
    on a criterion past the end of its rubric (the message names the label's file and line).
    """
    main: dict[str, dict[str, Judgment]] = {judge: {} for judge in judges}
    for j in judgments:
        if j.judge in main and j.repeat == 0:
            main[j.judge][j.item_id] = j
    for judge, verdicts in main.items():
        if not verdicts:
            raise ValueError(f"judge {judge!r} has no verdict on this run")
    tiers = {item: tuple(t) for item, t in rubrics.items()}

    usable: list[HumanLabel] = []
    n_stale = n_no_reply = 0
    for label in labels:
        if label.item_id not in tiers:
            raise ValueError(f"{label.where}: the bench has no instance {label.item_id!r}")
        if label.criterion > len(tiers[label.item_id]):
            raise ValueError(
                f"{label.where}: {label.item_id!r} has {len(tiers[label.item_id])} criteria, "
                f"no criterion {label.criterion}"
            )
        reply = replies.get(label.item_id)
        if reply is None:
            n_no_reply += 1
            continue
        if label.reply is not None and _words(label.reply) != _words(reply):
            n_stale += 1
            continue
        usable.append(label)

    votes: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for label in usable:
        votes[(label.item_id, label.criterion)].append(label.met)
    people: dict[tuple[str, int], bool] = {}
    n_ties = 0
    for unit, said in votes.items():
        met = sum(said)
        if 2 * met == len(said):
            n_ties += 1
        else:
            people[unit] = 2 * met > len(said)
    units = sorted(people)

    members = list(judges) if panel and len(judges) >= 2 else []
    if members and PANEL in members:
        raise ValueError(f"a judge is named {PANEL!r}, the name of the panel's row: rename it in the judges file")

    def decision(judge: str | None, item: str, criterion: int) -> bool | str:
        """The judge's decision (None: the panel's), or why there is none ("unscored", "not graded")."""
        if judge is None:
            found = [decision(m, item, criterion) for m in members]
            for why in ("not graded", "unscored"):
                if why in found:
                    return why
            return 2 * sum(f is True for f in found) > len(found)
        verdict = main[judge].get(item)
        if verdict is None:
            return "not graded"
        if verdict.hits is None:
            return "unscored"
        return criterion in verdict.hits

    tier_values = sorted({tiers[item][criterion - 1] for item, criterion in units})
    rows = []
    compared: list[str | None] = [*judges, *([None] if members else [])]  # None: the panel
    for who in compared:
        for tier in [None, *tier_values]:
            chosen = [(i, c) for i, c in units if tier is None or tiers[i][c - 1] == tier]
            found = {(i, c): decision(who, i, c) for i, c in chosen}
            decided = [(i, people[(i, c)], d) for (i, c), d in found.items() if isinstance(d, bool)]
            rows.append(
                _row(
                    PANEL if who is None else who,
                    "all" if tier is None else _tier_label(tier),
                    decided,
                    n_unscored=sum(d == "unscored" for d in found.values()),
                    n_not_graded=sum(d == "not graded" for d in found.values()),
                    n_resamples=n_resamples,
                    seed=seed,
                )
            )

    by_rater: dict[str, dict[tuple[str, int], bool]] = defaultdict(dict)
    for label in usable:
        by_rater[label.rater][(label.item_id, label.criterion)] = label.met
    raters = sorted(by_rater)
    pairs = []
    for a, b in combinations(raters if len(raters) <= MAX_RATER_PAIRS else [], 2):
        shared = sorted(set(by_rater[a]) & set(by_rater[b]))
        da = [int(by_rater[a][u]) for u in shared]
        db = [int(by_rater[b][u]) for u in shared]
        kappa, why = _kappa(da, db)
        pairs.append(
            RaterPair(
                rater_a=a,
                rater_b=b,
                n_decisions=len(shared),
                agreement=_proportion(sum(x == y for x, y in zip(da, db, strict=True)), len(shared)),
                kappa=kappa,
                notes={} if kappa is not None else {"kappa": (why or "n/a").replace("judges", "raters")},
            )
        )
    all_units = sorted(votes)
    matrix = [[float(by_rater[r][u]) if u in by_rater[r] else np.nan for u in all_units] for r in raters]
    alpha, alpha_note = _alpha(matrix, who="rater")
    notes = {"rater_alpha": alpha_note or "n/a"} if alpha is None else {}
    if len(raters) > MAX_RATER_PAIRS:  # n(n-1)/2 pairs: 250 raters would be 31,125 rows nobody reads
        notes["rater_pairs"] = f"not tabled ({len(raters)} raters, more than {MAX_RATER_PAIRS}): alpha covers them all"
    if not members:
        notes["panel"] = "n/a (one judge: no panel)" if len(judges) < 2 else "n/a (left out)"
    return HumanAgreement(
        labels_file=labels_file,
        labels_sha256=labels_digest,
        raters=raters,
        judges=list(judges),
        panel=members,
        n_labels=len(labels),
        n_stale=n_stale,
        n_no_reply=n_no_reply,
        n_units=len(units),
        n_ties=n_ties,
        rows=rows,
        rater_pairs=pairs,
        rater_alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        notes=notes,
    )


# --------------------------------------------------------------------------------------------------------------
# Rendering


def _signed(value: float) -> str:
    """Three decimals, never "-0.000" (a kappa or alpha a hair below 0 is shown as 0.000)."""
    return f"{round(value, 3) + 0.0:.3f}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _names(names: Sequence[str], shown: int = 10) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _share(p: Proportion, note: str | None) -> str:
    if p.rate is None:
        return note or "—"
    return f"{100 * p.rate:.1f}% [{100 * (p.low or 0):.0f}, {100 * (p.high or 0):.0f}] ({p.k}/{p.n})"


def render_human_agreement(h: HumanAgreement) -> list[Table]:
    """Rich tables: each judge and the panel against people per tier, then the raters against each other."""
    left = []
    if h.n_stale:
        left.append(f"{h.n_stale} stale (labelled another reply)")
    if h.n_no_reply:
        left.append(f"{h.n_no_reply} on instances without a reply in this run")
    if h.n_ties:
        left.append(f"{_count(h.n_ties, 'unit')} where the raters split evenly")
    panel = f"; panel = per-criterion majority of {', '.join(h.panel)}" if h.panel else ""
    if h.raters:
        by = f"{_count(h.n_labels, 'label')}, {_count(len(h.raters), 'usable rater')} ({_names(h.raters)})"
    else:
        by = f"{_count(h.n_labels, 'label')}, none usable"
    table = Table(
        title="Judges against people",
        caption=f"{by}; {_count(h.n_units, '(reply, criterion) unit')} with people's verdict (majority of raters)"
        + (f"; left out: {', '.join(left)}" if left else "")
        + f"{panel}. Rates with Wilson 95% intervals (k/n); κ with a 95% bootstrap interval over replies. "
        "False miss: judge 'not met' where people say met; false accept: judge 'met' where people say not met.",
    )
    table.add_column("Judge")
    for column in ("Tier", "n", "Accuracy", "κ [95%]", "False miss", "False accept", "Unscored", "Not graded"):
        table.add_column(column, justify="right")
    for row in h.rows:
        notes = row.notes
        if row.kappa is None:
            kappa = notes.get("kappa", "—")
        elif row.kappa_interval is None:
            kappa = f"{_signed(row.kappa)}, interval {notes.get('kappa_interval', 'n/a')}"
        else:
            kappa = f"{_signed(row.kappa)} [{row.kappa_interval[0]:.2f}, {row.kappa_interval[1]:.2f}]"
        table.add_row(
            row.judge,
            row.tier,
            str(row.n_decisions),
            _share(row.accuracy, notes.get("accuracy")),
            kappa,
            _share(row.false_miss_rate, notes.get("false_miss_rate")),
            _share(row.false_accept_rate, notes.get("false_accept_rate")),
            str(row.n_unscored),
            str(row.n_not_graded),
        )
    if len(h.raters) < 2:
        if h.raters:
            table.caption = f"{table.caption} One rater: no agreement between raters."
        return [table]
    alpha = h.notes.get("rater_alpha", "—") if h.rater_alpha is None else _signed(h.rater_alpha)
    if not h.rater_pairs:
        pairs = h.notes.get("rater_pairs", "n/a")
        table.caption = f"{table.caption} Krippendorff's α over all raters: {alpha}; pairs {pairs}."
        return [table]
    raters = Table(title="Raters against each other")
    raters.add_column("Rater A")
    raters.add_column("Rater B")
    for column in ("n", "Agreement", "κ"):
        raters.add_column(column, justify="right")
    for p in h.rater_pairs:
        kappa = p.notes.get("kappa", "—") if p.kappa is None else _signed(p.kappa)
        raters.add_row(p.rater_a, p.rater_b, str(p.n_decisions), _share(p.agreement, None), kappa)
    raters.caption = f"Krippendorff's α over all raters: {alpha}"
    return [table, raters]
