"""A paired comparison of two runs of one benchmark on the same items (``omnivchat compare RUN_A RUN_B``).

Each run is scored through its benchmark's ``score`` (from its store; no request is sent), and its items are
matched by (task, key). An item scored in both runs is a pair; every other item is listed and counted apart,
never dropped silently: items only one run declares, and items unscored in either run (never run, request
failed, or no usable score: no verdict, no machine check...). The statistics of the pairs (means, B − A with a
seeded paired-bootstrap interval, the paired t-test, the sign-flip permutation test and the verdict) come from
:func:`omnivchat.scoring.compare_paired`.

Runs of different benchmarks are refused, and so are runs whose manifests record different data (bench
instances, clips, data files) unless ``allow_different_data``; runs of the same model are compared with a
warning. The result is ``comparison.json`` (:class:`ComparisonFile`), which ``omnivchat report`` shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import Field

from omnivchat._files import FileModel, InputError, read_model, write_model
from omnivchat.benchmarks import ItemResult, ScoreOptions, Scores, benchmark_of, read_run_manifest
from omnivchat.errors import OmnivchatError
from omnivchat.scoring import PAIRED_ALPHA as ALPHA
from omnivchat.scoring import PAIRED_BOOTSTRAP_RESAMPLES as BOOTSTRAP_RESAMPLES
from omnivchat.scoring import PAIRED_LEVEL as LEVEL
from omnivchat.scoring import PAIRED_PERMUTATION_RESAMPLES as PERMUTATION_RESAMPLES
from omnivchat.scoring import PAIRED_SEED as SEED
from omnivchat.scoring import PairedComparison, compare_paired

COMPARISON_FILE = "comparison.json"
COMPARISON_SCHEMA = "omnivchat-comparison-v1"
# Manifest fields that identify a run's data, by benchmark: the native bench (instances and clips), bring-your-own
# JSON (data file and media), SocialOmni (annotation files and clips). A map of hashes is compared on the keys
# both runs hold (an item only one run declares is listed apart, not a change of data).
DATA_FIELDS = (
    "bench.instances_sha256",
    "bench.clips",
    "data_sha256",
    "media_sha256",
    "source_sha256",
    "source_media_sha256",
)
NOT_RUN, REQUEST_FAILED, UNSCORED = "not run", "request failed", "unscored"


class CompareError(OmnivchatError, ValueError):
    """Two runs cannot be compared as asked; the message names the runs and says what to do."""


class RunSide(FileModel):
    """One of the two runs: where it is, what made it, and how much of it is scored."""

    dir: str = Field(description="The run directory, resolved.")
    model: str = "?"
    condition: str = "both"
    simulated: bool = False
    manifest_sha256: str = ""
    n_items: int = Field(0, description="Items the run's scores list (its benchmark's declared items).")
    n_scored: int = 0
    complete: bool = True
    incomplete: str | None = None


class ItemRef(FileModel):
    """An item by its task (store kind) and key."""

    task: str
    key: str


class UnscoredItem(FileModel):
    """An item both runs declare but at least one did not score: per run, why (None: scored there)."""

    task: str
    key: str
    a: str | None = None
    b: str | None = None
    kind_a: str | None = Field(None, description="'not run', 'request failed' or 'unscored' (None: scored).")
    kind_b: str | None = None


class PairedItem(FileModel):
    """An item scored in both runs."""

    task: str
    key: str
    a: float
    b: float


class DataCheck(FileModel):
    """Whether the manifests record the same data: the fields compared and what differs."""

    same: bool | None = Field(description="None: the manifests hold none of the data fields this check knows.")
    compared: list[str] = Field(default_factory=list)
    differences: list[str] = Field(default_factory=list)
    allowed: bool = Field(False, description="Compared anyway (--allow-different-data).")


class ComparisonFile(FileModel):
    """comparison.json (schema omnivchat-comparison-v1): two runs of one benchmark compared item by item."""

    schema_: str = Field(COMPARISON_SCHEMA, alias="schema")
    benchmark: str
    a: RunSide
    b: RunSide
    scoring: dict[str, Any] = Field(default_factory=dict, description="How both runs were scored (panel...).")
    data: DataCheck
    warnings: list[str] = Field(default_factory=list)
    n_paired: int
    only_a: list[ItemRef] = Field(default_factory=list, description="Items only run A declares.")
    only_b: list[ItemRef] = Field(default_factory=list, description="Items only run B declares.")
    unscored: list[UnscoredItem] = Field(default_factory=list, description="Declared by both, unscored in one.")
    unscored_counts: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="'a' / 'b' -> kind -> items of both runs unscored there, by kind."
    )
    stats: PairedComparison
    verdict: str
    pairs: list[PairedItem] = Field(default_factory=list)


class Pairing(NamedTuple):
    """Two runs' items matched by (task, key)."""

    pairs: list[PairedItem]
    only_a: list[ItemRef]
    only_b: list[ItemRef]
    unscored: list[UnscoredItem]


def unscored_kind(item: ItemResult) -> str:
    """Why an item has no score, as a kind to count by: ``not run``, ``request failed`` or ``unscored`` (a reply
    with no usable score: no verdict, no machine check, an incomplete panel)."""
    if not item.ran or item.detail.get("not_run"):
        return NOT_RUN
    if item.detail.get("request_failed") or item.reason.startswith("request failed"):
        return REQUEST_FAILED
    return UNSCORED


def _by_ref(items: Iterable[ItemResult], run: str) -> dict[tuple[str, str], ItemResult]:
    out: dict[tuple[str, str], ItemResult] = {}
    for item in items:
        ref = (item.task, item.key)
        if ref in out:
            raise CompareError(f"run {run}: item {item.task}/{item.key} is scored twice; score the run again")
        out[ref] = item
    return out


def pair_items(a: Iterable[ItemResult], b: Iterable[ItemResult]) -> Pairing:
    """Match two runs' items by (task, key), in run A's order (then B's): pairs scored in both, items only one run
    declares, and items both declare that one of them left unscored (with each run's reason)."""
    by_a, by_b = _by_ref(a, "A"), _by_ref(b, "B")
    pairs, unscored = [], []
    for ref, x in by_a.items():
        y = by_b.get(ref)
        if y is None:
            continue
        if x.score is not None and y.score is not None:
            pairs.append(PairedItem(task=ref[0], key=ref[1], a=x.score, b=y.score))
        else:
            unscored.append(
                UnscoredItem(
                    task=ref[0],
                    key=ref[1],
                    a=None if x.score is not None else (x.reason or "unscored"),
                    b=None if y.score is not None else (y.reason or "unscored"),
                    kind_a=None if x.score is not None else unscored_kind(x),
                    kind_b=None if y.score is not None else unscored_kind(y),
                )
            )
    only_a = [ItemRef(task=t, key=k) for t, k in by_a if (t, k) not in by_b]
    only_b = [ItemRef(task=t, key=k) for t, k in by_b if (t, k) not in by_a]
    return Pairing(pairs, only_a, only_b, unscored)


def _field(data: dict[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def data_check(a: dict[str, Any], b: dict[str, Any], fields: tuple[str, ...] = DATA_FIELDS) -> DataCheck:
    """Compare the data fields of two manifests (as dicts). A scalar must be equal; a map of hashes (clip ->
    sha256) must agree on every key both hold. A field one manifest lacks is a difference."""
    compared: list[str] = []
    diffs: list[str] = []
    for name in fields:
        x, y = _field(a, name), _field(b, name)
        if x is None and y is None:
            continue
        compared.append(name)
        if x is None or y is None:
            diffs.append(f"{name}: recorded by run {'B' if x is None else 'A'} only")
        elif isinstance(x, dict) and isinstance(y, dict):
            changed = sorted(k for k in x.keys() & y.keys() if x[k] != y[k])
            if changed:
                more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
                diffs.append(f"{name}: {len(changed)} differ ({', '.join(changed[:3])}{more})")
        elif x != y:
            diffs.append(f"{name}: {str(x)[:16]}… in A, {str(y)[:16]}… in B")
    return DataCheck(same=(not diffs) if compared else None, compared=compared, differences=diffs)


def _side(run_dir: Path, manifest: dict[str, Any], sha256: str, scores: Scores) -> RunSide:
    route = manifest.get("route")
    route = route if isinstance(route, dict) else {}
    simulated = bool(manifest.get("simulated")) or "sim" in (route.get("kind"), route.get("route"))
    return RunSide(
        dir=str(run_dir.resolve()),
        model=str(manifest.get("model") or route.get("model") or "?"),
        condition=str(manifest.get("condition") or "both"),
        simulated=simulated,
        manifest_sha256=sha256,
        n_items=len(scores.items),
        n_scored=sum(1 for i in scores.items if i.score is not None),
        complete=scores.complete,
        incomplete=scores.incomplete,
    )


def score_run(run_dir: Path, options: ScoreOptions) -> tuple[str, Scores]:
    """(benchmark name, every item's score) of a run, through its benchmark's ``score`` (no request sent)."""
    benchmark = benchmark_of(run_dir)
    return benchmark.name, benchmark.score(None, run_dir, options)


def compare_runs(
    run_a: Path,
    run_b: Path,
    *,
    options: ScoreOptions | None = None,
    allow_different_data: bool = False,
    alpha: float = ALPHA,
    level: float = LEVEL,
    bootstrap_resamples: int = BOOTSTRAP_RESAMPLES,
    permutation_resamples: int = PERMUTATION_RESAMPLES,
    seed: int = SEED,
    status: Callable[[str], None] | None = None,
) -> ComparisonFile:
    """Compare two runs of one benchmark item by item (B − A). Both are scored with the same ``options`` (the
    native bench: the offline rule judge unless a panel is given).

    Raises :class:`CompareError` for runs of different benchmarks, for runs whose manifests record different
    data (unless ``allow_different_data``; then the differences are kept in the file and warned about), and when
    no item is scored in both runs. A directory that is not a run raises the registry's error naming it."""
    say = status or (lambda _message: None)
    run_a, run_b = Path(run_a), Path(run_b)
    manifests = {name: read_run_manifest(run) for name, run in (("A", run_a), ("B", run_b))}
    names = {name: benchmark_of(run).name for name, run in (("A", run_a), ("B", run_b))}
    if names["A"] != names["B"]:
        raise CompareError(
            f"{run_a} is a run of {names['A']!r} and {run_b} a run of {names['B']!r}: only runs of one benchmark "
            "can be compared item by item"
        )
    dumps = {name: m.dump(as_read=True) for name, m in manifests.items()}
    check = data_check(dumps["A"], dumps["B"])
    warnings: list[str] = []
    if check.same is False:
        listed = "; ".join(check.differences)
        if not allow_different_data:
            raise CompareError(
                f"{run_a} and {run_b} were run on different data ({listed}); pass --allow-different-data to "
                "compare their common items anyway"
            )
        check = check.model_copy(update={"allowed": True})
        warnings.append(f"the runs were made on different data ({listed}): compared on their common items anyway")
    elif check.same is None:
        warnings.append("the manifests record no data hash this command knows: that the data are the same is unchecked")
    options = options or ScoreOptions()
    say(f"scoring {run_a}")
    _, scores_a = score_run(run_a, options)
    say(f"scoring {run_b}")
    _, scores_b = score_run(run_b, options)
    sides = {
        "A": _side(run_a, dumps["A"], manifests["A"].sha256(), scores_a),
        "B": _side(run_b, dumps["B"], manifests["B"].sha256(), scores_b),
    }
    if run_a.resolve() == run_b.resolve():
        warnings.append("A and B are the same run directory: every difference is 0")
    elif sides["A"].model == sides["B"].model:
        warnings.append(
            f"both runs are of the same model ({sides['A'].model}): the comparison measures what else differs "
            f"(condition {sides['A'].condition} / {sides['B'].condition}, settings, sampling noise)"
        )
    for name, side in sides.items():
        if side.incomplete:
            warnings.append(f"run {name} is {side.incomplete}")
    pairing = pair_items(scores_a.items, scores_b.items)
    if not pairing.pairs:
        raise CompareError(
            f"no item is scored in both {run_a} ({sides['A'].n_scored} of {sides['A'].n_items} scored) and {run_b} "
            f"({sides['B'].n_scored} of {sides['B'].n_items} scored; {len(pairing.only_a) + len(pairing.only_b)} "
            "items in one run only): nothing to compare; score the runs (or finish them) first"
        )
    say(f"testing {len(pairing.pairs)} pairs")
    stats = compare_paired(
        [p.a for p in pairing.pairs],
        [p.b for p in pairing.pairs],
        alpha=alpha,
        level=level,
        bootstrap_resamples=bootstrap_resamples,
        permutation_resamples=permutation_resamples,
        seed=seed,
    )
    counts: dict[str, dict[str, int]] = {"a": {}, "b": {}}
    for u in pairing.unscored:
        for run, kind in (("a", u.kind_a), ("b", u.kind_b)):
            if kind is not None:
                counts[run][kind] = counts[run].get(kind, 0) + 1
    return ComparisonFile(
        benchmark=names["A"],
        a=sides["A"],
        b=sides["B"],
        scoring={"panel": options.panel, "aggregate": options.aggregate},
        data=check,
        warnings=warnings,
        n_paired=len(pairing.pairs),
        only_a=pairing.only_a,
        only_b=pairing.only_b,
        unscored=pairing.unscored,
        unscored_counts=counts,
        stats=stats,
        verdict=stats.verdict,
        pairs=pairing.pairs,
    )


def write_comparison(path: Path, comparison: ComparisonFile) -> Path:
    """Write comparison.json (the caller has checked the output path)."""
    return write_model(Path(path), comparison)


def read_comparison(path: Path, *, error: type[Exception] = InputError) -> ComparisonFile:
    """A comparison.json as written by :func:`write_comparison`; ``error`` naming the file otherwise."""
    comparison = read_model(Path(path), ComparisonFile, "comparison file", error=error)
    if comparison.schema_ != COMPARISON_SCHEMA:
        raise error(f"{path}: schema {comparison.schema_!r}, expected {COMPARISON_SCHEMA!r}")
    return comparison
