"""Training analytics for OmniVChat-RL: Figure 4, checkpoint selection and the Appendix E.5 correlations.

Paper: Section 4.3 (Figure 4: the unweighted reward terms of Eq. 4, raw Reply Efficiency, reply length, and the
held-out Subcategory Mean of Eq. 2 per set with the selected checkpoint; the checkpoint with the best
development Subcategory Mean is selected; the bottom-right panel's language-matched control, the Chinese-only
bench subset) and Appendix E.5 (level and change correlations, Eq. 13, between the held-out curves; block means
over k checkpoints; the sign test; each curve's correlation with the training step, its residual SD around a
centered five-point moving average, its mean gain per checkpoint and the ratio of the two).

Inputs are the reward service's per-step log (JSONL, one line per training step) and the scores.json of one
evaluation run per (set, checkpoint step), with the run's store for each item's language. The maths is pure;
reading and writing sit at the edges of this module. numpy, scipy and matplotlib load only inside the functions
that need them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from omnivchat._files import (
    FileModel,
    check_output_dir,
    check_path,
    loads_json,
    loads_toml,
    read_text,
    write_bytes_atomic,
    write_model,
    write_text_atomic,
)
from omnivchat.errors import OmnivchatError
from omnivchat.judges import SCORES_FILE, Table1Scores, has_table1, read_scores, stale_scores, table1_scores
from omnivchat.scoring import pooled_mean, subcategory_mean, turn_kind_means

CURVES_SCHEMA = "omnivchat-rl-curves-v1"
CURVES_FILE = "curves.json"
DEVELOPMENT = "dev"
DEFAULT_BLOCKS = (5, 10)
"""Appendix E.5 reports blocks of k = 5 checkpoints (100 steps) and k = 10 (200 steps)."""
TERMS = ("r", "f", "e", "s")
TERM_LABELS = {"r": "Rubric r", "f": "Format f", "e": "Reply Efficiency e", "s": "Style s"}
Metric = Literal["pooled", "subcategory"]
METRICS: tuple[Metric, ...] = ("pooled", "subcategory")

# Every file this module may write into an output folder: a rerun removes the ones it does not write again, so a
# panel left over from an earlier log can never sit beside numbers it does not match.
PANELS = ("reward-terms", "reply-efficiency", "reply-length", "heldout", "figure4")
OUTPUT_NAMES = frozenset(
    {CURVES_FILE, "correlations.csv", "trends.csv"} | {f"{p}.{ext}" for p in PANELS for ext in ("png", "json")}
)
# Okabe-Ito: distinguishable with colour-vision deficiencies and in greyscale print (as the report's plots).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")

_SET_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_EVAL_SPEC = re.compile(r"(?P<set>[^:=]*):(?P<step>[^=]*)=(?P<path>.*)", re.DOTALL)


class CurvesError(OmnivchatError, ValueError):
    """A reward log, an evaluation spec or index, or an evaluation run that cannot be used as given."""


# ---------------------------------------------------------------------------------------------------------------
# The reward log


class StepLog(BaseModel):
    """One training step of the reward log: the mean of each unweighted reward term over the step's replies.

    A term the line does not carry (or carries as null) is None, a gap in the plot, never 0.
    """

    model_config = ConfigDict(frozen=True)

    step: int
    r: float | None = None
    f: float | None = None
    e: float | None = None
    s: float | None = None
    total: float | None = None
    reply_efficiency: float | None = Field(None, description="Raw RE: rubric credit per 1,000 counted words.")
    reply_length: float | None = Field(None, description="Mean counted reply length w(y), in words.")
    source: str = Field("", description="file:line the step was read from.")


_LOG_FIELDS = (*TERMS, "total", "reply_efficiency", "reply_length")


def _number(value: Any, where: str, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CurvesError(f"{where}: {name} is {value!r}, expected a number or null")
    if not math.isfinite(value):
        raise CurvesError(f"{where}: {name} is {value}, expected a finite number (write null for no value)")
    return float(value)


def parse_log_line(text: str, where: str) -> StepLog:
    """One line of the reward log; ``where`` (file:line) starts any error. ``step`` is required; the term means
    and the optional fields may be absent or null; other fields are ignored."""
    try:
        data = loads_json(text)
    except ValueError as err:
        raise CurvesError(f"{where}: not a JSON object ({err}); the log holds one JSON object per line") from None
    if not isinstance(data, dict):
        raise CurvesError(f"{where}: a JSON {type(data).__name__}, expected one object per line")
    if "step" not in data:
        raise CurvesError(f"{where}: no 'step'; each line needs the training step it logs")
    step = data["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise CurvesError(f"{where}: step is {step!r}, expected a whole number >= 0")
    values = {name: _number(data.get(name), where, name) for name in _LOG_FIELDS}
    return StepLog(step=step, source=where, **values)


def read_reward_logs(paths: Sequence[Path]) -> list[StepLog]:
    """The steps of one or more reward logs (a training resumed into a new file), sorted by step.

    A step logged twice, a malformed line, or a log with no reward term at all raises CurvesError naming the
    file and line: a silently merged or dropped step would move the curves.
    """
    steps: dict[int, StepLog] = {}
    for path in paths:
        path = Path(path)
        for number, line in enumerate(read_text(path, "reward log").splitlines(), start=1):
            if not line.strip():
                continue
            entry = parse_log_line(line, f"{path}:{number}")
            first = steps.get(entry.step)
            if first is not None:
                raise CurvesError(
                    f"{entry.source}: step {entry.step} is logged again (first at {first.source}); "
                    "keep one line per step"
                )
            steps[entry.step] = entry
    if not steps:
        raise CurvesError(f"{', '.join(map(str, paths))}: no step logged; the log holds one JSON object per step")
    if all(getattr(s, name) is None for s in steps.values() for name in (*TERMS, "total")):
        raise CurvesError(
            f"{', '.join(map(str, paths))}: no line holds a reward term (r, f, e, s, total); "
            "give the reward service's step log"
        )
    return [steps[k] for k in sorted(steps)]


# ---------------------------------------------------------------------------------------------------------------
# Evaluation runs


class EvalSpec(BaseModel):
    """One evaluation run: the set it scores, the checkpoint's training step, and its run dir or scores.json."""

    model_config = ConfigDict(frozen=True)

    set: str
    step: int
    path: Path
    origin: str = Field("", description="Where it was given (the --eval text, or the index file and key).")


def _set_name(name: str, origin: str) -> str:
    if not _SET_NAME.fullmatch(name):
        raise CurvesError(
            f"{origin}: set name {name!r} is not a plain name (a letter, then letters, digits, '_', '-', '.')"
        )
    return name


def _step(text: str, origin: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise CurvesError(f"{origin}: step {text!r} is not a whole number >= 0 (the checkpoint's training step)")
    return int(text)


def parse_eval_spec(text: str) -> EvalSpec:
    """``SET:STEP=PATH`` as given to ``--eval`` (``dev:20=runs/ck20``)."""
    origin = f"--eval {text!r}"
    match = _EVAL_SPEC.fullmatch(text)
    if match is None or not match["path"]:
        raise CurvesError(f"{origin}: expected SET:STEP=PATH, e.g. dev:20=runs/ck20")
    path = check_path(Path(match["path"]), "evaluation run")
    return EvalSpec(
        set=_set_name(match["set"], origin), step=_step(match["step"].strip(), origin), path=path, origin=origin
    )


def read_eval_index(path: Path) -> list[EvalSpec]:
    """An index file (JSON, or TOML by its .toml suffix): ``{"dev": {"20": "runs/ck20", ...}, "bench": {...}}``.

    A relative run path is taken from the index file's folder, so the index travels with its runs.
    """
    path = Path(path)
    text = read_text(path, "evaluation index")
    try:
        data: Any = loads_toml(text) if path.suffix.lower() == ".toml" else loads_json(text)
    except (ValueError, tomllib.TOMLDecodeError) as err:
        kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise CurvesError(f"{path}: not valid {kind} ({' '.join(str(err).split())})") from None
    shape = 'expected {"SET": {"STEP": "RUN_DIR or scores.json", ...}, ...}'
    if not isinstance(data, dict) or not data:
        raise CurvesError(f"{path}: {shape}")
    specs = []
    for name, runs in data.items():
        origin = f"{path}: {name}"
        _set_name(str(name), f"{path}")
        if not isinstance(runs, dict) or not runs:
            raise CurvesError(f"{origin}: {shape}")
        for step, run in runs.items():
            where = f"{origin}.{step}"
            if not isinstance(run, str) or not run:
                raise CurvesError(f"{where}: {run!r} is not a path to a run directory or scores.json")
            run_path = check_path(Path(run), "evaluation run")
            specs.append(
                EvalSpec(
                    set=name,
                    step=_step(str(step), where),
                    path=run_path if run_path.is_absolute() else path.parent / run_path,
                    origin=where,
                )
            )
    return specs


def eval_grid(specs: Iterable[EvalSpec]) -> dict[str, dict[int, EvalSpec]]:
    """Set -> step -> run, sets in the order first given; a (set, step) given twice raises CurvesError."""
    grid: dict[str, dict[int, EvalSpec]] = {}
    for spec in specs:
        runs = grid.setdefault(spec.set, {})
        if spec.step in runs:
            raise CurvesError(f"{spec.origin}: {spec.set} step {spec.step} is also given by {runs[spec.step].origin}")
        runs[spec.step] = spec
    return {name: dict(sorted(runs.items())) for name, runs in grid.items()}


class CheckpointScore(BaseModel):
    """One evaluation run's scores (set, checkpoint step), or why it is left out (``excluded``).

    Means run over every scored item of the run, whatever its source: a Bench-Human run holds only recorded items,
    whose Table 1 Mean column is empty. ``re`` and ``length`` are the run's Table 1 RE and Len where present.
    """

    model_config = ConfigDict(frozen=True)

    set: str
    step: int
    path: str
    subcategory_mean: float | None = None
    pooled_mean: float | None = None
    single: float | None = None
    multi: float | None = None
    re: float | None = None
    length: float | None = None
    n_items: int = 0
    n_scored: int = 0
    n_unscored: int = 0
    excluded: str | None = Field(None, description="Why the run is left out (incomplete, not scored), or None.")

    @property
    def usable(self) -> bool:
        return self.excluded is None

    def value(self, metric: Metric) -> float | None:
        """The score ``metric`` names, or None when the run is left out."""
        if not self.usable:
            return None
        return self.pooled_mean if metric == "pooled" else self.subcategory_mean


def checkpoint_from_scores(spec: EvalSpec, scores: Table1Scores, path: Path) -> CheckpointScore:
    """A run's Subcategory Mean and Pooled Mean (Eq. 2), single/multi-turn means, RE and Len from its scores.

    An incomplete run, or one with no scored item, is left out with the reason, never read as 0.
    """
    from omnivchat.bench import resolve_subcategory

    scored = [(item.subcategory, item.score) for item in scores.items if item.score is not None]
    for subcategory, _ in scored:
        try:
            resolve_subcategory(subcategory)
        except KeyError as err:
            raise CurvesError(f"{path}: {err.args[0]}") from None
    base = {
        "set": spec.set,
        "step": spec.step,
        "path": str(path),
        "n_items": len(scores.items),
        "n_scored": len(scored),
        "n_unscored": len(scores.items) - len(scored),
    }
    if not scores.complete:
        return CheckpointScore(**base, excluded=scores.incomplete or "incomplete run")
    if not scored:
        return CheckpointScore(**base, excluded="no scored item")
    kinds = turn_kind_means(scored)
    return CheckpointScore(
        **base,
        subcategory_mean=subcategory_mean(scored),
        pooled_mean=pooled_mean(score for _, score in scored),
        single=kinds.get("single"),
        multi=kinds.get("multi"),
        re=scores.table1.RE,
        length=scores.table1.Len,
    )


def read_checkpoint(spec: EvalSpec) -> CheckpointScore:
    """One evaluation run's scores. A path that does not exist raises CurvesError (a typo must not pass as a
    missing point); a run directory with no scores.json yet is left out as not scored."""
    path = spec.path
    if not path.exists():
        raise CurvesError(f"{spec.origin}: {path} does not exist; give a run directory or its scores.json")
    file = path / SCORES_FILE if path.is_dir() else path
    if not file.is_file():
        return CheckpointScore(
            set=spec.set,
            step=spec.step,
            path=str(file),
            excluded=f"not scored: no {SCORES_FILE} (run `omnivchat score {path}`)",
        )
    scores = read_scores(file, error=CurvesError)
    if not has_table1(scores):
        raise CurvesError(f"{file}: the scores of a {scores.benchmark} run; rl curves reads OmniVChat runs")
    stale = stale_scores(file.parent, scores)
    if stale is not None:  # never plotted as the run's scores
        return CheckpointScore(set=spec.set, step=spec.step, path=str(file), excluded=stale)
    return checkpoint_from_scores(spec, table1_scores(scores, file, error=CurvesError), file)


def read_evaluations(grid: Mapping[str, Mapping[int, EvalSpec]]) -> dict[str, list[CheckpointScore]]:
    """Every run of :func:`eval_grid`'s grid, read: set -> checkpoints by step."""
    return {name: [read_checkpoint(spec) for spec in runs.values()] for name, runs in grid.items()}


# ---------------------------------------------------------------------------------------------------------------
# Selection (Section 4.3)


class Selection(BaseModel):
    """The selected checkpoint: the best development Subcategory Mean; ties go to the earliest step."""

    set: str
    step: int | None = None
    subcategory_mean: float | None = None
    tied: list[int] = Field(default_factory=list, description="Every step that reached the same best value.")
    candidates: int = 0
    left_out: dict[int, str] = Field(default_factory=dict, description="Steps left out of selection, and why.")
    note: str = ""


def select_checkpoint(points: Sequence[CheckpointScore], set_name: str = DEVELOPMENT) -> Selection:
    """Section 4.3: the checkpoint with the highest development Subcategory Mean (Eq. 2).

    Left-out runs (incomplete, not scored) are listed and never compete as 0. Equal means (to 1e-12, so that
    float summation order cannot split a tie) go to the earliest step, and the note says so.
    """
    left_out = {p.step: p.excluded for p in points if p.excluded is not None}
    candidates = [(p.step, p.subcategory_mean) for p in points if p.usable and p.subcategory_mean is not None]
    if not candidates:
        return Selection(set=set_name, left_out=left_out, note=f"no usable {set_name} run: no checkpoint selected")
    best = max(value for _, value in candidates)
    tied = sorted(step for step, value in candidates if math.isclose(value, best, rel_tol=1e-12, abs_tol=1e-12))
    note = f"best {set_name} Subcategory Mean {best:.4f} at step {tied[0]}"
    if len(tied) > 1:
        note += f" (tied with step {', '.join(map(str, tied[1:]))}: the earliest is selected)"
    return Selection(
        set=set_name,
        step=tied[0],
        subcategory_mean=dict(candidates)[tied[0]],
        tied=tied,
        candidates=len(candidates),
        left_out=left_out,
        note=note,
    )


# ---------------------------------------------------------------------------------------------------------------
# Appendix E.5 statistics


def pearson(u: Sequence[float], v: Sequence[float]) -> float | None:
    """Eq. 13: the Pearson correlation of paired sequences; None with fewer than 3 pairs or a constant sequence
    (two points always correlate at +-1, which says nothing)."""
    if len(u) != len(v):
        raise ValueError(f"{len(u)} values paired with {len(v)}")
    if len(u) < 3:
        return None
    mu, mv = math.fsum(u) / len(u), math.fsum(v) / len(v)
    su = math.fsum((a - mu) ** 2 for a in u)
    sv = math.fsum((b - mv) ** 2 for b in v)
    if su == 0 or sv == 0:
        return None
    r = math.fsum((a - mu) * (b - mv) for a, b in zip(u, v, strict=True)) / math.sqrt(su * sv)
    return max(-1.0, min(1.0, r))  # rounding may step just past +-1


def spearman(u: Sequence[float], v: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Appendix E.5 reports it beside the level correlations); None as pearson."""
    if len(u) != len(v):
        raise ValueError(f"{len(u)} values paired with {len(v)}")
    if len(u) < 3 or len(set(u)) == 1 or len(set(v)) == 1:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(u, v).statistic)


def changes(values: Sequence[float | None]) -> list[float | None]:
    """Appendix E.5: Δ_t = x_t − x_{t−1} between adjacent checkpoints; None where either end is missing."""
    return [None if a is None or b is None else b - a for a, b in pairwise(values)]


def block_means(values: Sequence[float | None], k: int) -> list[float | None]:
    """Appendix E.5: non-overlapping block means b_j = k⁻¹ Σ x_t over k consecutive checkpoints.

    Blocks start at the first checkpoint; trailing checkpoints that fill no whole block are left out (with 51
    checkpoints and k = 5 or 10, blocks cover x_0..x_49 and exclude x_50, as the paper). A block holding a
    missing checkpoint is None: averaging over a gap would shift it.
    """
    if k < 1:
        raise ValueError(f"block size {k} < 1")
    blocks: list[float | None] = []
    for start in range(0, len(values) - k + 1, k):
        block = values[start : start + k]
        blocks.append(None if any(x is None for x in block) else math.fsum(x for x in block if x is not None) / k)
    return blocks


class SignTest(BaseModel):
    """How often two sets' changes share a sign, with the two-sided binomial p under chance agreement (p = 1/2)."""

    agree: int = 0
    disagree: int = 0
    ties: int = Field(0, description="Pairs where either change is exactly 0: excluded from the test, counted.")
    n: int = Field(0, description="agree + disagree: the pairs tested.")
    p: float | None = None


def sign_test(du: Sequence[float], dv: Sequence[float]) -> SignTest:
    """Appendix E.5's sign test on paired changes: agreements among non-zero pairs against Binomial(n, 1/2),
    two-sided (scipy.stats.binomtest). A zero change has no direction, so its pair is a tie, excluded and
    counted; p is None when no pair is left."""
    if len(du) != len(dv):
        raise ValueError(f"{len(du)} changes paired with {len(dv)}")
    agree = sum(1 for a, b in zip(du, dv, strict=True) if a * b > 0)
    ties = sum(1 for a, b in zip(du, dv, strict=True) if a == 0 or b == 0)
    n = len(du) - ties
    if n == 0:
        return SignTest(ties=ties)
    from scipy.stats import binomtest

    p = float(binomtest(agree, n, 0.5, alternative="two-sided").pvalue)
    return SignTest(agree=agree, disagree=n - agree, ties=ties, n=n, p=p)


class Correlation(BaseModel):
    """A correlation with the number of points behind it; None (with ``note``) when it is not defined."""

    r: float | None = None
    spearman: float | None = None
    n: int = 0
    note: str | None = None


def correlation(u: Sequence[float], v: Sequence[float]) -> Correlation:
    """Eq. 13 (and Spearman's) over paired points, saying why when it is undefined."""
    r = pearson(u, v)
    note = None
    if r is None:
        note = "fewer than 3 points" if len(u) < 3 else "a constant sequence"
    return Correlation(r=r, spearman=spearman(u, v), n=len(u), note=note)


class Agreement(BaseModel):
    """Level and change correlations of two curves on one grid (single checkpoints, or block means)."""

    level: Correlation
    change: Correlation
    sign: SignTest


def agreement(a: Sequence[float | None], b: Sequence[float | None]) -> Agreement:
    """Level correlation over points present in both curves; change correlation and sign test over adjacent
    pairs whose four ends are present (a change across a gap would span two intervals)."""
    levels = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    moves = [(x, y) for x, y in zip(changes(a), changes(b), strict=True) if x is not None and y is not None]
    du, dv = [x for x, _ in moves], [y for _, y in moves]
    return Agreement(
        level=correlation([x for x, _ in levels], [y for _, y in levels]),
        change=correlation(du, dv),
        sign=sign_test(du, dv),
    )


class BlockAgreement(Agreement):
    """:class:`Agreement` on block means of k checkpoints."""

    k: int
    blocks: int = Field(description="Whole blocks on the pair's grid.")
    dropped: int = Field(description="Trailing checkpoints that fill no whole block.")


class PairStats(BaseModel):
    """Appendix E.5 for one pair of sets: on single checkpoints, and on block means for each k."""

    a: str
    b: str
    metric: Metric
    steps: list[int] = Field(description="The pair's grid: steps evaluated on both sets, usable or not.")
    checkpoints: Agreement
    blocks: list[BlockAgreement] = Field(default_factory=list)


def pair_stats(
    a: Sequence[CheckpointScore],
    b: Sequence[CheckpointScore],
    *,
    metric: Metric = "pooled",
    blocks: Sequence[int] = DEFAULT_BLOCKS,
) -> PairStats:
    """Appendix E.5 for two sets' curves.

    The grid is the steps evaluated on both sets; a left-out run is a gap on it (never a 0 and never closed up,
    so each change spans one checkpoint interval and each block k consecutive checkpoints).
    """
    if not a or not b:
        raise ValueError("pair_stats needs two non-empty curves")
    xa = {p.step: p.value(metric) for p in a}
    xb = {p.step: p.value(metric) for p in b}
    steps = sorted(set(xa) & set(xb))
    ua, ub = [xa[t] for t in steps], [xb[t] for t in steps]
    block_stats = []
    for k in blocks:
        on_blocks = agreement(block_means(ua, k), block_means(ub, k))
        n_blocks = len(steps) // k
        block_stats.append(
            BlockAgreement(k=k, blocks=n_blocks, dropped=len(steps) - n_blocks * k, **on_blocks.model_dump())
        )
    return PairStats(
        a=a[0].set, b=b[0].set, metric=metric, steps=steps, checkpoints=agreement(ua, ub), blocks=block_stats
    )


def e5_statistics(
    curves: Mapping[str, Sequence[CheckpointScore]],
    *,
    metric: Metric = "pooled",
    blocks: Sequence[int] = DEFAULT_BLOCKS,
    skip: Collection[frozenset[str]] = (),
) -> list[PairStats]:
    """Appendix E.5 for every pair of sets, in the order the sets were given; the pairs in ``skip`` are left out
    (a set and its own control share instances, where E.5's sets share none)."""
    names = [name for name, points in curves.items() if points]
    return [
        pair_stats(curves[x], curves[y], metric=metric, blocks=blocks)
        for i, x in enumerate(names)
        for y in names[i + 1 :]
        if frozenset((x, y)) not in skip
    ]


# ---------------------------------------------------------------------------------------------------------------
# Appendix E.5: each curve on its own (its trend, its noise, its mean gain)

NOISE_WINDOW = 5
"""Appendix E.5: "Residual standard deviations use a centered five-point moving average"."""


def moving_average(values: Sequence[float | None], window: int = NOISE_WINDOW) -> list[float | None]:
    """Appendix E.5: the centered moving average of ``window`` (odd) checkpoints; "endpoint windows use all
    available points", so the window is cut at the curve's ends (x_0's averages x_0..x_2 for window 5).

    A left-out checkpoint (None) is skipped inside a window like a point past the end (our extension: the paper's
    grid has no gap). A window holding fewer than 3 present points gives None: a point averaged with at most one
    neighbour says little about the curve around it, and alone it would leave a residual of exactly 0.
    """
    if window < 3 or window % 2 == 0:
        raise ValueError(f"window {window}: an odd number >= 3")
    half = window // 2
    out: list[float | None] = []
    for t, x in enumerate(values):
        near = [v for v in values[max(0, t - half) : t + half + 1] if v is not None]
        out.append(None if x is None or len(near) < 3 else math.fsum(near) / len(near))
    return out


class Estimate(BaseModel):
    """One number of Appendix E.5, or None with the reason it is undefined (printed as "n/a (reason)")."""

    value: float | None = None
    note: str | None = None


def residual_sd(values: Sequence[float | None], window: int = NOISE_WINDOW) -> Estimate:
    """Appendix E.5's measurement-variation estimate σ̂_q: the standard deviation of the residuals x_t − m_t around
    the centered moving average m_t (:func:`moving_average`).

    The paper does not say which standard deviation; this is the population one (divisor n, numpy's default),
    over every checkpoint whose window holds 3 present points. Undefined with fewer than 3 residuals, and for a
    constant curve (no variation to measure: its 0 would read as a perfectly quiet measurement).
    """
    present = [x for x in values if x is not None]
    if len(present) < 3:
        return Estimate(note=f"fewer than 3 points ({len(present)})")
    if len(set(present)) == 1:
        return Estimate(note="a constant curve")
    smooth = moving_average(values, window)
    residuals = [x - m for x, m in zip(values, smooth, strict=True) if x is not None and m is not None]
    if len(residuals) < 3:
        return Estimate(note=f"fewer than 3 residuals ({len(residuals)}): too many gaps")
    return Estimate(value=statistics.pstdev(residuals))


def mean_gain(values: Sequence[float | None], steps: Sequence[int]) -> Estimate:
    """Appendix E.5: the mean checkpoint gain Δτ̄_q = (x_T − x_0) / T, T the number of checkpoint intervals on the
    curve's grid (50 for the paper's 51 checkpoints, one every 20 steps).

    Undefined with fewer than 3 checkpoints, and when the first or last checkpoint is left out (the endpoint
    difference needs both ends; filling one in would move the gain). A constant curve's gain is 0, a number.
    """
    if len(values) != len(steps):
        raise ValueError(f"{len(values)} values on {len(steps)} steps")
    if len(values) < 3:
        return Estimate(note=f"fewer than 3 checkpoints ({len(values)})")
    for end, x, step in (("first", values[0], steps[0]), ("last", values[-1], steps[-1])):
        if x is None:
            return Estimate(note=f"the {end} checkpoint (step {step}) is left out")
    first, last = values[0], values[-1]
    assert first is not None and last is not None
    return Estimate(value=(last - first) / (len(values) - 1))


def noise_to_gain(noise: Estimate, gain: Estimate) -> Estimate:
    """Appendix E.5's ratio σ̂_q / Δτ̄_q: short-term variation against the mean gain of one checkpoint (the paper
    finds 1.1 to 2.6). Undefined when either is, and when the curve did not rise (Δτ̄_q <= 0: the ratio would
    compare the noise with a loss, or divide by 0)."""
    if noise.value is None:
        return Estimate(note=f"no noise estimate: {noise.note}")
    if gain.value is None:
        return Estimate(note=f"no mean gain: {gain.note}")
    if gain.value <= 0:
        return Estimate(note=f"the curve did not rise (mean gain {gain.value:.4g})")
    return Estimate(value=noise.value / gain.value)


class CurveTrend(BaseModel):
    """Appendix E.5 for one held-out curve: its correlation with the training step (Pearson and Spearman; the
    paper reports Spearman >= 0.932 for each curve), the residual SD around a centered moving average (σ̂_q), the
    mean gain per checkpoint (Δτ̄_q) and their ratio σ̂_q / Δτ̄_q."""

    set: str
    metric: Metric
    steps: list[int] = Field(description="The curve's grid: every evaluated step, left out or not.")
    with_step: Correlation
    window: int = NOISE_WINDOW
    noise: Estimate
    gain: Estimate
    ratio: Estimate


def curve_trend(points: Sequence[CheckpointScore], *, metric: Metric = "pooled") -> CurveTrend:
    """Appendix E.5 for one set's checkpoints (in step order; a left-out run is a gap, never a 0)."""
    if not points:
        raise ValueError("curve_trend needs a non-empty curve")
    points = sorted(points, key=lambda p: p.step)
    steps = [p.step for p in points]
    values = [p.value(metric) for p in points]
    present = [(t, x) for t, x in zip(steps, values, strict=True) if x is not None]
    noise = residual_sd(values)
    gain = mean_gain(values, steps)
    return CurveTrend(
        set=points[0].set,
        metric=metric,
        steps=steps,
        with_step=correlation([float(t) for t, _ in present], [x for _, x in present]),
        noise=noise,
        gain=gain,
        ratio=noise_to_gain(noise, gain),
    )


# ---------------------------------------------------------------------------------------------------------------
# Figure 4's control set: the Chinese-only subset of the bench

CONTROL_LANGUAGE = "zh"
DEFAULT_CONTROL_OF = "bench"


class Control(BaseModel):
    """Figure 4's language-matched control (bottom right: the Chinese OmniVChat-Bench instances beside Bench-Human,
    whose recordings are all Chinese): which set it is taken from, its curve's name, or why it is absent."""

    of: str
    language: str = CONTROL_LANGUAGE
    set: str | None = Field(None, description="The control curve's set name (``bench-zh``), None when absent.")
    absent: str | None = Field(None, description="Why there is no control curve.")


def item_languages(run_dir: Path) -> dict[str, str] | None:
    """Instance id -> language, as the run's store recorded it (``omnivchat eval`` keeps each item's language
    beside its reply); None when the run has no store or its items record no language."""
    from omnivchat.runs import STORE_FILE, RunError, RunStore

    path = run_dir / STORE_FILE
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with RunStore(path, read_only=True) as store:
            rows = store.items()
    except RunError as err:
        raise CurvesError(f"{path}: cannot read the run store ({err})") from None
    languages = {str(r["item_id"]): r["meta"]["language"] for r in rows if isinstance(r["meta"].get("language"), str)}
    return languages or None


def _language_base(language: str) -> str:
    return language.split("-")[0].lower()


def read_subset_checkpoint(spec: EvalSpec, name: str, language: str = CONTROL_LANGUAGE) -> CheckpointScore | None:
    """The checkpoint of one run scored on its ``language`` items only, as set ``name``; None when the run records
    no item language or holds no item in ``language``. Table 1's RE and Len are the whole run's, so they are left
    empty here; an incomplete run is left out as :func:`read_checkpoint` leaves it out."""
    path = spec.path
    file = path / SCORES_FILE if path.is_dir() else path
    if not file.is_file():
        return None
    languages = item_languages(file.parent)
    if languages is None:
        return None
    read = read_scores(file, error=CurvesError)
    if not has_table1(read) or stale_scores(file.parent, read) is not None:  # the whole run says why
        return None
    scores = table1_scores(read, file, error=CurvesError)
    items = [i for i in scores.items if _language_base(languages.get(i.id, "")) == language]
    if not items:
        return None
    subset = scores.model_copy(update={"items": items})
    point = checkpoint_from_scores(spec.model_copy(update={"set": name}), subset, file)
    return point.model_copy(update={"re": None, "length": None})


def control_curve(
    grid: Mapping[str, Mapping[int, EvalSpec]], of: str = DEFAULT_CONTROL_OF, language: str = CONTROL_LANGUAGE
) -> tuple[Control, list[CheckpointScore]]:
    """Figure 4's control: set ``of``'s runs scored on their ``language`` items only (set ``OF-LANGUAGE``), one
    checkpoint per run. Absent, with the reason, when there is no set ``of`` or none of its runs holds such an
    item; a run without one (while others have them) is a left-out checkpoint, never a 0."""
    runs = grid.get(of)
    if not runs:
        return Control(of=of, language=language, absent=f"no evaluation set named {of!r}"), []
    name = f"{of}-{language}"
    points = []
    for step, spec in runs.items():
        point = read_subset_checkpoint(spec, name, language)
        points.append(
            point
            or CheckpointScore(set=name, step=step, path=str(spec.path), excluded=f"no {language} item in the run")
        )
    if all(p.excluded == f"no {language} item in the run" for p in points):
        why = f"the runs of {of} hold no {language} item (or record no item language: no run store)"
        return Control(of=of, language=language, absent=why), []
    if name in grid:
        raise CurvesError(f"set {name!r} is given, and is also the name of {of}'s {language} control: rename it")
    return Control(of=of, language=language, set=name), points


def add_control(
    curves: Mapping[str, Sequence[CheckpointScore]],
    grid: Mapping[str, Mapping[int, EvalSpec]],
    of: str = DEFAULT_CONTROL_OF,
    language: str = CONTROL_LANGUAGE,
) -> tuple[dict[str, list[CheckpointScore]], Control]:
    """``curves`` with Figure 4's control curve added after them when the runs hold it (:func:`control_curve`)."""
    control, points = control_curve(grid, of, language)
    out = {name: list(p) for name, p in curves.items()}
    if control.set is not None:
        out[control.set] = points
    return out, control


# ---------------------------------------------------------------------------------------------------------------
# The result, its files and its plots


class CurvesFile(FileModel):
    """OUT/curves.json: the selection, every checkpoint's scores (or why it was left out), and Appendix E.5."""

    schema_: str = Field(CURVES_SCHEMA, alias="schema")
    logs: list[str] = Field(default_factory=list)
    steps_logged: int = 0
    metric: Metric = "pooled"
    blocks: list[int] = Field(default_factory=lambda: list(DEFAULT_BLOCKS))
    selection: Selection | None = None
    checkpoints: dict[str, list[CheckpointScore]] = Field(default_factory=dict)
    pairs: list[PairStats] = Field(default_factory=list)
    trends: list[CurveTrend] = Field(default_factory=list, description="Appendix E.5 for each curve on its own.")
    control: Control | None = Field(None, description="Figure 4's Chinese-only control, or why it is absent.")


def analyse(
    logs: Sequence[Path],
    steps: Sequence[StepLog],
    curves: Mapping[str, Sequence[CheckpointScore]],
    *,
    select_on: str = DEVELOPMENT,
    metric: Metric = "pooled",
    blocks: Sequence[int] = DEFAULT_BLOCKS,
    control: Control | None = None,
) -> CurvesFile:
    """Selection (Section 4.3) and Appendix E.5 over the evaluation curves (``curves`` holds the control's curve
    when :func:`add_control` found one). With evaluation sets but none named ``select_on``, CurvesError: a
    development set under another name must not pass unselected."""
    if metric not in METRICS:
        raise CurvesError(f"metric {metric!r}: expected one of {', '.join(METRICS)}")
    bad = [k for k in blocks if k < 2]
    if bad:
        raise CurvesError(f"block size {bad[0]}: a block averages k >= 2 checkpoints")
    blocks = list(dict.fromkeys(blocks))
    selection = None
    if curves:
        if select_on not in curves:
            raise CurvesError(
                f"no evaluation set named {select_on!r} (sets: {', '.join(curves)}); "
                f"name the development set {select_on} or pass --select-on SET"
            )
        selection = select_checkpoint(curves[select_on], select_on)
    return CurvesFile(
        logs=[str(p) for p in logs],
        steps_logged=len(steps),
        metric=metric,
        blocks=blocks,
        selection=selection,
        checkpoints={name: list(points) for name, points in curves.items()},
        pairs=e5_statistics(
            curves,
            metric=metric,
            blocks=blocks,
            skip=[frozenset((control.of, control.set))] if control is not None and control.set else [],
        ),
        trends=[curve_trend(points, metric=metric) for points in curves.values() if points],
        control=control,
    )


def panel_numbers(steps: Sequence[StepLog], result: CurvesFile) -> dict[str, dict[str, Any]]:
    """The numbers behind each Figure 4 panel, by panel name; a top-row panel the log cannot fill is absent."""
    numbers: dict[str, dict[str, Any]] = {}
    xs = [s.step for s in steps]
    if steps:
        numbers["reward-terms"] = {
            "panel": "unweighted reward terms of Eq. 4, mean over each step's replies",
            "step": xs,
            **{name: [getattr(s, name) for s in steps] for name in (*TERMS, "total")},
        }
        for name, panel, what in (
            ("reply_efficiency", "reply-efficiency", "raw Reply Efficiency: rubric credit per 1,000 counted words"),
            ("reply_length", "reply-length", "mean counted reply length w(y), words"),
        ):
            if any(getattr(s, name) is not None for s in steps):
                numbers[panel] = {"panel": what, "step": xs, name: [getattr(s, name) for s in steps]}
    if result.checkpoints:
        selected = result.selection.step if result.selection is not None else None
        numbers["heldout"] = {
            "panel": "held-out Subcategory Mean (Eq. 2) per set, with the selected checkpoint",
            "selected_step": selected,
            "sets": {
                name: {
                    "step": [p.step for p in points],
                    "subcategory_mean": [p.value("subcategory") for p in points],
                    "single": [p.single if p.usable else None for p in points],
                    "multi": [p.multi if p.usable else None for p in points],
                    "left_out": {str(p.step): p.excluded for p in points if p.excluded is not None},
                }
                for name, points in result.checkpoints.items()
            },
        }
    return numbers


def _figure(width: float, height: float, rows: int = 1, cols: int = 1) -> tuple[Any, list[Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A bare Figure on its own Agg canvas: no display, no pyplot state, a caller's backend left alone.
    figure = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, cols, squeeze=False)
    return figure, [ax for row in axes for ax in row]


def _line(ax: Any, xs: Sequence[int], ys: Sequence[float | None], **style: Any) -> None:
    # None becomes NaN: matplotlib breaks the line there, so a missing value is a gap, not a 0.
    ax.plot(xs, [math.nan if y is None else y for y in ys], **style)


def _draw_terms(ax: Any, data: Mapping[str, Any]) -> None:
    for i, name in enumerate(TERMS):
        _line(ax, data["step"], data[name], color=PALETTE[i], linewidth=1.2, label=TERM_LABELS[name])
    ax.set_title("Reward Terms (Unweighted)", fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel("term value")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=7, loc="lower right")


def _draw_single(ax: Any, data: Mapping[str, Any] | None, key: str, title: str, ylabel: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    if data is None:  # an empty panel that says why, rather than a missing one
        ax.text(0.5, 0.5, f"no '{key}' in the log", transform=ax.transAxes, ha="center", va="center", color="#888888")
        return
    _line(ax, data["step"], data[key], color=PALETTE[0], linewidth=1.2)


def _draw_heldout(ax: Any, name: str, data: Mapping[str, Any], selected: int | None, select_on: str | None) -> None:
    xs = data["step"]
    _line(ax, xs, data["subcategory_mean"], color=PALETTE[0], marker="o", markersize=3, label="Subcategory Mean")
    for i, key in enumerate(("single", "multi"), start=1):
        if any(v is not None for v in data[key]):
            label = "Single-Turn" if key == "single" else "Multi-Turn"
            _line(ax, xs, data[key], color=PALETTE[i], linewidth=0.9, linestyle=":", label=label)
    left_out = [int(step) for step in data["left_out"]]
    if left_out:  # left-out runs are crosses on the axis, so a gap is seen as a gap and not as a dip
        marks = {"color": "#B00020", "clip_on": False, "transform": ax.get_xaxis_transform()}
        ax.plot(left_out, [0.0] * len(left_out), "x", label="left out (no score)", **marks)
    if selected is not None:
        ax.axvline(selected, color="#000000", linestyle="--", linewidth=1, label=f"selected on {select_on}: {selected}")
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel("Subcategory Mean")
    ax.legend(fontsize=7, loc="lower right")


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", facecolor="white")
    return buffer.getvalue()


# The top row's one-line panels: (panel, log field, title, y label).
SINGLE_PANELS = (
    ("reply-efficiency", "reply_efficiency", "Raw Reply Efficiency", "rubric per 1k words"),
    ("reply-length", "reply_length", "Reply Length During Training", "words"),
)


def render_panels(numbers: Mapping[str, Mapping[str, Any]], select_on: str | None) -> dict[str, bytes]:
    """PNG bytes of each panel in ``numbers`` and of the whole figure (``figure4``), in the paper's layout: top
    row the reward terms, raw RE and reply length; bottom row one held-out panel per set."""
    pngs: dict[str, bytes] = {}
    held = numbers.get("heldout")
    selected = held["selected_step"] if held else None
    if "reward-terms" in numbers:
        figure, (ax,) = _figure(4.6, 3.2)
        _draw_terms(ax, numbers["reward-terms"])
        pngs["reward-terms"] = _png(figure)
    for panel, key, title, ylabel in SINGLE_PANELS:
        if panel in numbers:
            figure, (ax,) = _figure(4.6, 3.2)
            _draw_single(ax, numbers[panel], key, title, ylabel)
            pngs[panel] = _png(figure)
    sets: Mapping[str, Any] = held["sets"] if held else {}
    if sets:
        figure, axes = _figure(4.2 * len(sets), 3.4, 1, len(sets))
        for ax, (name, data) in zip(axes, sets.items(), strict=True):
            _draw_heldout(ax, name, data, selected, select_on)
        pngs["heldout"] = _png(figure)
    top = "reward-terms" in numbers
    rows = int(top) + int(bool(sets))
    if rows:
        cols = max(3 if top else 1, len(sets))
        figure, axes = _figure(4.2 * cols, 3.3 * rows, rows, cols)
        if top:
            _draw_terms(axes[0], numbers["reward-terms"])
            for ax, (panel, key, title, ylabel) in zip(axes[1:3], SINGLE_PANELS, strict=True):
                _draw_single(ax, numbers.get(panel), key, title, ylabel)
            for ax in axes[3:cols]:
                ax.set_visible(False)
        bottom = axes[cols:] if top else axes
        for ax, (name, data) in zip(bottom, sets.items(), strict=False):
            _draw_heldout(ax, name, data, selected, select_on)
        for ax in bottom[len(sets) :] if sets else []:
            ax.set_visible(False)
        pngs["figure4"] = _png(figure)
    return pngs


def correlations_csv(pairs: Sequence[PairStats]) -> str:
    """The E.5 table as CSV: one row per pair, grid (k = 1: single checkpoints) and kind (level, change)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["a", "b", "metric", "k", "kind", "r", "spearman", "n", "agree", "disagree", "ties", "p"])
    for pair in pairs:
        grids: list[tuple[int, Agreement]] = [(1, pair.checkpoints), *((blk.k, blk) for blk in pair.blocks)]
        for k, stats in grids:
            for kind, corr in (("level", stats.level), ("change", stats.change)):
                sign: list[Any] = ["", "", "", ""]
                if kind == "change":
                    sign = [stats.sign.agree, stats.sign.disagree, stats.sign.ties, stats.sign.p]
                r = "" if corr.r is None else corr.r
                rho = "" if corr.spearman is None else corr.spearman
                writer.writerow([pair.a, pair.b, pair.metric, k, kind, r, rho, corr.n, *sign])
    return buffer.getvalue()


def trends_csv(trends: Sequence[CurveTrend]) -> str:
    """Appendix E.5 per curve as CSV: correlation with the step (Pearson, Spearman), σ̂ (the residual SD around a
    centered moving average of ``window`` checkpoints), the mean gain per checkpoint and σ̂ / gain; an empty cell
    is undefined, its reason in ``notes``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["set", "metric", "checkpoints", "n", "r_step", "spearman_step", "window", "noise", "gain", "ratio", "notes"]
    )
    for t in trends:
        named = (("step", t.with_step.note), ("noise", t.noise.note), ("gain", t.gain.note), ("ratio", t.ratio.note))
        notes = "; ".join(f"{what}: {note}" for what, note in named if note)
        cells = [t.with_step.r, t.with_step.spearman, t.window, t.noise.value, t.gain.value, t.ratio.value]
        writer.writerow([t.set, t.metric, len(t.steps), t.with_step.n, *("" if c is None else c for c in cells), notes])
    return buffer.getvalue()


def is_curves_dir(path: Path) -> bool:
    """A folder this module wrote (it holds curves.json): a rerun may replace its files."""
    return (path / CURVES_FILE).is_file()


def write_curves(out_dir: Path, steps: Sequence[StepLog], result: CurvesFile) -> list[Path]:
    """Write curves.json, correlations.csv and each panel's PNG with its numbers (JSON) into ``out_dir``.

    The folder must be new, empty, or an earlier curves folder (whose files this replaces, and whose panels not
    drawn this time are removed). Returns the paths written.
    """
    check_output_dir(out_dir, ours=is_curves_dir, kind="an rl curves folder")
    numbers = panel_numbers(steps, result)
    select_on = result.selection.set if result.selection is not None else None
    pngs = render_panels(numbers, select_on)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for panel, png in pngs.items():
        written.append(write_bytes_atomic(out_dir / f"{panel}.png", png))
        data = numbers if panel == "figure4" else numbers[panel]
        written.append(write_text_atomic(out_dir / f"{panel}.json", json.dumps(data, indent=2) + "\n"))
    if result.pairs:
        written.append(write_text_atomic(out_dir / "correlations.csv", correlations_csv(result.pairs)))
    if result.trends:
        written.append(write_text_atomic(out_dir / "trends.csv", trends_csv(result.trends)))
    written.append(write_model(out_dir / CURVES_FILE, result))
    for stale in sorted(OUTPUT_NAMES - {p.name for p in written}):
        (out_dir / stale).unlink(missing_ok=True)
    return written


__all__ = [
    "CONTROL_LANGUAGE",
    "CURVES_FILE",
    "CURVES_SCHEMA",
    "DEFAULT_BLOCKS",
    "DEFAULT_CONTROL_OF",
    "DEVELOPMENT",
    "NOISE_WINDOW",
    "Agreement",
    "BlockAgreement",
    "CheckpointScore",
    "Control",
    "Correlation",
    "CurveTrend",
    "CurvesError",
    "CurvesFile",
    "Estimate",
    "EvalSpec",
    "PairStats",
    "Selection",
    "SignTest",
    "StepLog",
    "add_control",
    "agreement",
    "analyse",
    "block_means",
    "changes",
    "checkpoint_from_scores",
    "control_curve",
    "correlation",
    "correlations_csv",
    "curve_trend",
    "e5_statistics",
    "eval_grid",
    "is_curves_dir",
    "item_languages",
    "mean_gain",
    "moving_average",
    "noise_to_gain",
    "pair_stats",
    "panel_numbers",
    "parse_eval_spec",
    "parse_log_line",
    "pearson",
    "read_checkpoint",
    "read_eval_index",
    "read_evaluations",
    "read_reward_logs",
    "read_subset_checkpoint",
    "render_panels",
    "residual_sd",
    "select_checkpoint",
    "sign_test",
    "spearman",
    "trends_csv",
    "write_curves",
]
