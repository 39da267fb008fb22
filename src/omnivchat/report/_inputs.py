"""Reading what a report is built from: scored run directories, ablation directories, agreement files, and
comparison files (comparison.json from ``omnivchat compare``).

Every file read is registered in :class:`Sources` with its sha256, so the page can say which file (and which key
in it) each number came from. Nothing here runs or writes anything: a report reads files only, each as the typed
model of the package that writes it (scores, manifests, ablations).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat._files import loads_json, validate_file
from omnivchat.benchmarks.native import RunManifest
from omnivchat.diagnostics import (
    ABLATION_FILE,
    ABLATION_SCHEMA,
    COMPARISON_FILE,
    COMPARISON_SCHEMA,
    AblationFile,
    ComparisonFile,
    Diagnosis,
)
from omnivchat.errors import OmnivchatError
from omnivchat.judges import (
    AGREEMENT_FILE,
    BENCHMARK_SCORES_SCHEMA,
    SCORES_FILE,
    BenchmarkScores,
    ScoreRecord,
    Table1Scores,
    scores_from_json,
    stale_scores,
    store_changed,
    table1_scores,
)
from omnivchat.runs import MANIFEST_FILE, PROTOCOL, STORE_FILE, Manifest, RunCost, manifest_model
from omnivchat.scoring import Table1Row

__all__ = [
    "ABLATION_FILE",
    "ABLATION_SCHEMA",
    "AGREEMENT_FILE",
    "BENCHMARK_SCORES_SCHEMA",
    "LABELS_ROLE",
    "MANIFEST_FILE",
    "SCORES_FILE",
    "Ablation",
    "BenchmarkRun",
    "Comparison",
    "InputFile",
    "Inputs",
    "ReportError",
    "ScoredRun",
    "Sources",
    "load_ablation",
    "load_benchmark_run",
    "load_comparison",
    "load_inputs",
    "load_run",
    "name_rows",
]


class ReportError(OmnivchatError, ValueError):
    """An input cannot be reported: the message names the directory or file and says what to do."""


@dataclass(frozen=True)
class InputFile:
    """One file the report read: its number in the footer, role, path and content hash."""

    ref: int
    role: str
    path: Path
    sha256: str
    size: int


@dataclass
class Sources:
    """Every input file, in the order first read; a file read twice is listed once."""

    files: list[InputFile] = field(default_factory=list)
    _by_path: dict[Path, InputFile] = field(default_factory=dict)

    def read_json(self, path: Path, role: str) -> tuple[dict[str, Any], InputFile]:
        """Parse a JSON object from ``path`` and register the exact bytes parsed (hash and parse agree)."""
        try:
            raw = path.read_bytes()
        except OSError as err:
            raise ReportError(f"{path}: cannot read ({err.strerror or err})") from None
        try:
            data = loads_json(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as err:
            raise ReportError(f"{path}: not valid JSON ({err})") from None
        if not isinstance(data, dict):
            raise ReportError(f"{path}: expected a JSON object, found {type(data).__name__}")
        return data, self._register(path, raw, role)

    def read_store_cost(self, run_dir: Path) -> tuple[RunCost, InputFile]:
        """The cost a run's store records (read-only), registering the store file it was read from."""
        from omnivchat.runs import RunError, run_cost

        path = run_dir / STORE_FILE
        try:
            raw = path.read_bytes()
            cost = run_cost(run_dir)
        except OSError as err:
            raise ReportError(f"{path}: cannot read ({err.strerror or err})") from None
        except RunError as err:
            raise ReportError(str(err)) from None
        return cost, self._register(path, raw, "run store")

    def read_file(self, path: Path, role: str) -> InputFile | None:
        """Register a file the report names but does not parse (an agreement study's labels); None when unreadable."""
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        return self._register(path, raw, role)

    def _register(self, path: Path, raw: bytes, role: str) -> InputFile:
        key = path.resolve()
        if key not in self._by_path:
            entry = InputFile(len(self.files) + 1, role, path, hashlib.sha256(raw).hexdigest(), len(raw))
            self.files.append(entry)
            self._by_path[key] = entry
        return self._by_path[key]


@dataclass
class ScoredRun:
    """A native run directory with its scores.json, read as its Table 1 (and manifest.json and agreement.json
    when present)."""

    dir: Path
    scores: Table1Scores
    scores_file: InputFile
    manifest: Manifest | None = None
    manifest_file: InputFile | None = None
    agreement: Any = None  # omnivchat.judges.AgreementReport, validated on load
    agreement_file: InputFile | None = None
    cost: RunCost | None = None
    """What the run's store has cost (its model's requests and its judges'), when it has a store."""
    cost_file: InputFile | None = None
    label: str = ""
    """The row name on the page: the model, its condition when not "both", and where needed the directory."""

    @property
    def _native(self) -> RunManifest | None:
        return self.manifest if isinstance(self.manifest, RunManifest) else None

    @property
    def model(self) -> str:
        native = self._native
        return self.scores.model or (native.route.model if native is not None else None) or "?"

    @property
    def simulated(self) -> bool:
        if self.scores.simulated_recorded or self._native is None:
            return self.scores.simulated
        return self._native.simulated

    @property
    def condition(self) -> str:
        return self.scores.condition or (self._native.condition if self._native is not None else "both")

    @property
    def bench(self) -> str:
        return f"{self.scores.bench.name} v{self.scores.bench.version}"

    @property
    def package_version(self) -> str | None:
        native = self._native
        return native.package.version if native is not None and native.package is not None else None

    @property
    def prompts(self) -> dict[str, str]:
        """Which prompts ran, said plainly: scores.json's, else (an older file) the manifest's system prompt."""
        if self.scores.prompts:
            return self.scores.prompts
        native = self._native
        system = native.prompt_label("system") if native is not None else None
        return {"system": system} if system is not None else {}

    @property
    def table1(self) -> Table1Row:
        return self.scores.table1

    @property
    def items(self) -> list[ScoreRecord]:
        return self.scores.items


@dataclass
class Ablation:
    """An ablation directory: ablation.json, its diagnosis, and each condition's scored run when present."""

    dir: Path
    data: AblationFile
    file: InputFile
    runs: dict[str, ScoredRun | None]  # condition -> its scored run (None: no scores.json there)
    missing: dict[str, str] = field(default_factory=dict)  # condition -> why its run is not shown
    costs: list[tuple[str, RunCost, InputFile]] = field(default_factory=list)
    """Every run the grid made with a store (its conditions, then the self-check's): its name, cost, store file."""

    @property
    def diagnosis(self) -> Diagnosis:
        return self.data.diagnosis

    @property
    def categories(self) -> dict[str, Diagnosis | None]:
        """Category code (or a benchmark's group) -> its diagnosis (None: too few items)."""
        return self.data.categories

    @property
    def model(self) -> str:
        return self.data.model

    @property
    def simulated(self) -> bool:
        return self.data.simulated


@dataclass
class BenchmarkRun:
    """A scored run of another benchmark than the native one: its own metrics, from its scores.json."""

    dir: Path
    scores: BenchmarkScores
    scores_file: InputFile
    cost: RunCost | None = None
    """What the run's store has cost, when it has a store."""
    cost_file: InputFile | None = None

    @property
    def simulated(self) -> bool:
        return self.scores.simulated

    @property
    def label(self) -> str:
        condition = self.scores.condition or "both"
        model = self.scores.model or "?"
        return model if condition == "both" else f"{model} [{condition}]"


@dataclass
class Comparison:
    """A comparison.json: two runs of one benchmark compared item by item (``omnivchat compare``)."""

    path: Path
    data: ComparisonFile
    file: InputFile


@dataclass
class Inputs:
    """Everything a report shows: the Table 1 runs, the ablations, other benchmarks' runs, paired comparisons
    and the files."""

    runs: list[ScoredRun]
    ablations: list[Ablation]
    sources: Sources
    warnings: list[str]
    others: list[BenchmarkRun] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)


def _not_reportable(path: Path) -> ReportError:
    if (path / MANIFEST_FILE).is_file():
        return ReportError(
            f"{path}: a run directory that has not been scored (no {SCORES_FILE}); "
            f"run `omnivchat score {path}` first, then build the report"
        )
    if not path.exists():
        return ReportError(f"{path}: no such directory")
    return ReportError(
        f"{path}: neither {SCORES_FILE} nor {ABLATION_FILE} found; give a scored run directory "
        f"(run `omnivchat score RUN_DIR` first), an ablation directory (`omnivchat ablate`) or a {COMPARISON_FILE} "
        "(`omnivchat compare RUN_A RUN_B -o FILE`)"
    )


def _refuse_stale(path: Path, scores: BenchmarkScores) -> None:
    """A scores.json older than its run's store is never reported as the run's scores."""
    why = stale_scores(path, scores)
    if why is not None:
        raise ReportError(why)


def load_run(path: Path, sources: Sources) -> ScoredRun:
    """A scored run directory: scores.json (required), manifest.json and agreement.json (when present)."""
    data, scores_file = sources.read_json(path / SCORES_FILE, "scores")
    file = scores_from_json(data, path / SCORES_FILE, error=ReportError)  # an older native file converted
    _refuse_stale(path, file)
    scores = table1_scores(file, path / SCORES_FILE, error=ReportError)
    run = ScoredRun(dir=path, scores=scores, scores_file=scores_file)
    if (path / MANIFEST_FILE).is_file():
        manifest, run.manifest_file = sources.read_json(path / MANIFEST_FILE, "manifest")
        model = manifest_model(str(manifest.get("protocol", PROTOCOL)))
        run.manifest = validate_file(model, manifest, path / MANIFEST_FILE, "run manifest", error=ReportError)
    if (path / STORE_FILE).is_file():
        run.cost, run.cost_file = sources.read_store_cost(path)
    if (path / AGREEMENT_FILE).is_file():
        from pydantic import ValidationError

        from omnivchat.judges import AgreementReport

        data, run.agreement_file = sources.read_json(path / AGREEMENT_FILE, "agreement")
        try:
            run.agreement = AgreementReport.model_validate(data)
        except ValidationError as err:
            raise ReportError(
                f"{path / AGREEMENT_FILE}: not an agreement report ({err.error_count()} errors)"
            ) from None
    return run


def load_ablation(path: Path, sources: Sources, warnings: list[str]) -> Ablation:
    """An ablation directory: ablation.json and, for each condition, its scored run directory."""
    from omnivchat.diagnostics import CONDITIONS

    raw, file = sources.read_json(path / ABLATION_FILE, "ablation")
    where = path / ABLATION_FILE
    if raw.get("schema") != ABLATION_SCHEMA:
        raise ReportError(f"{where}: schema {raw.get('schema')!r}, expected {ABLATION_SCHEMA!r}")
    conditions = raw.get("conditions")
    if not isinstance(conditions, dict) or set(conditions) != set(CONDITIONS):
        raise ReportError(f"{where}: 'conditions' must hold exactly {', '.join(CONDITIONS)}")
    data = validate_file(AblationFile, raw, where, "ablation file", error=ReportError)
    runs: dict[str, ScoredRun | None] = {}
    missing: dict[str, str] = {}
    for condition in CONDITIONS:
        rel = data.conditions[condition].run_dir
        run_dir = path / rel if rel else None
        if run_dir is not None and _is_benchmark_run(run_dir):
            runs[condition] = None  # another benchmark's run: its counts are in its own scores.json
            missing[condition] = f"a {data.benchmark} run: its counts are in {run_dir / SCORES_FILE}"
        elif run_dir is not None and (run_dir / SCORES_FILE).is_file():
            runs[condition] = load_run(run_dir, sources)
        else:
            runs[condition] = None
            missing[condition] = f"no {SCORES_FILE} in {run_dir}" if run_dir else "no run_dir recorded"
            warnings.append(f"{where}: condition {condition}: {missing[condition]}; its failure counts are not shown")
    return Ablation(path, data, file, runs, missing, _grid_costs(path, data, sources))


def _grid_costs(path: Path, data: AblationFile, sources: Sources) -> list[tuple[str, RunCost, InputFile]]:
    """The cost of every run an ablation made: each condition's, then each self-check model's conditions."""
    from omnivchat.diagnostics import CONDITIONS, SELF_CHECK_DIR, self_check_grid_dir

    grids: list[tuple[str, Path, dict[str, str | None]]] = [
        ("", path, {c: data.conditions[c].run_dir for c in CONDITIONS})
    ]
    checked = (data.self_check.models if data.self_check else None) or {}
    for model in checked:
        model_dir = self_check_grid_dir(path / SELF_CHECK_DIR, model)
        grids.append((f"self-check {model} ", model_dir, {c: c for c in CONDITIONS}))
    costs = []
    for prefix, grid_dir, run_dirs in grids:
        for condition, rel in run_dirs.items():
            if rel is not None and (grid_dir / rel / STORE_FILE).is_file():
                costs.append((f"{prefix}{condition}", *sources.read_store_cost(grid_dir / rel)))
    return costs


def _is_benchmark_run(path: Path) -> bool:
    """Whether scores.json in ``path`` is another benchmark's: the one schema without a Table 1 in its metrics
    (read for that only; an older native file has its own schema)."""
    from omnivchat._files import loads_json, read_text

    try:
        data = loads_json(read_text(path / SCORES_FILE, "scores"))
    except ValueError:
        return False  # load_run names the problem
    if not isinstance(data, dict) or data.get("schema") != BENCHMARK_SCORES_SCHEMA:
        return False
    metrics = data.get("metrics")
    return not (isinstance(metrics, dict) and "table1" in metrics)


def load_benchmark_run(path: Path, sources: Sources) -> BenchmarkRun:
    data, file = sources.read_json(path / SCORES_FILE, "scores")
    if not isinstance(data.get("metrics"), dict):
        raise ReportError(f"{path / SCORES_FILE}: no 'metrics'; re-run `omnivchat score {path}`")
    run = BenchmarkRun(path, scores_from_json(data, path / SCORES_FILE, error=ReportError), file)
    _refuse_stale(path, run.scores)
    if (path / STORE_FILE).is_file():
        run.cost, run.cost_file = sources.read_store_cost(path)
    return run


def load_comparison(path: Path, sources: Sources) -> Comparison:
    """A comparison file written by ``omnivchat compare -o FILE`` (any name; its schema says what it is)."""
    data, file = sources.read_json(path, "comparison")
    if data.get("schema") != COMPARISON_SCHEMA:
        raise ReportError(
            f"{path}: not a comparison file (schema {data.get('schema')!r}, expected {COMPARISON_SCHEMA!r}); give "
            f"scored run directories, ablation directories or the files of `omnivchat compare RUN_A RUN_B -o FILE`"
        )
    return Comparison(path, validate_file(ComparisonFile, data, path, "comparison file", error=ReportError), file)


def name_rows(runs: list[ScoredRun]) -> None:
    """Give each run its row name; runs of one model get the shortest tail of their directory that tells them
    apart (a condition directory such as ``both`` keeps its parent, which names the grid)."""
    from omnivchat.diagnostics import CONDITIONS

    def base(run: ScoredRun) -> str:
        return run.model if run.condition == "both" else f"{run.model} [{run.condition}]"

    groups: dict[str, list[ScoredRun]] = {}
    for run in runs:
        groups.setdefault(base(run), []).append(run)
    for name, group in groups.items():
        if len(group) == 1:
            group[0].label = name
            continue
        parts = [run.dir.resolve().parts for run in group]
        for k, (run, own) in enumerate(zip(group, parts, strict=True)):
            depth = 2 if own[-1] in CONDITIONS else 1
            # shortest tail that no other run's directory also ends with
            while depth < len(own) and any(p[-depth:] == own[-depth:] for j, p in enumerate(parts) if j != k):
                depth += 1
            run.label = f"{name} · {'/'.join(own[-depth:])}"


def load_inputs(paths: list[Path]) -> Inputs:
    """Read every path (a scored run directory, an ablation directory, either JSON file itself, or a comparison
    file: any file, or a directory holding comparison.json, whose JSON has the comparison schema).

    Table 1 gets each scored run given and each ablation's "both" run, once per directory. Raises
    :class:`ReportError` naming the directory when it holds neither scores.json nor ablation.json.
    """
    if not paths:
        raise ReportError("no input: give at least one scored run directory, ablation directory or comparison file")
    sources = Sources()
    warnings: list[str] = []
    runs: list[ScoredRun] = []
    ablations: list[Ablation] = []
    others: list[BenchmarkRun] = []
    comparisons: list[Comparison] = []
    seen_runs: set[Path] = set()

    def add_run(run: ScoredRun) -> None:
        if run.dir.resolve() not in seen_runs:
            seen_runs.add(run.dir.resolve())
            runs.append(run)

    for given in paths:
        # A comparison: any other file given (its schema is checked), or comparison.json in a directory given.
        compared = given if given.is_file() and given.name not in (SCORES_FILE, ABLATION_FILE) else None
        if given.is_dir() and (given / COMPARISON_FILE).is_file():
            compared = given / COMPARISON_FILE
        if compared is not None:
            if all(c.path.resolve() != compared.resolve() for c in comparisons):
                comparisons.append(load_comparison(compared, sources))
            if given.is_file() or not ((given / SCORES_FILE).is_file() or (given / ABLATION_FILE).is_file()):
                continue
        path = given.parent if given.is_file() and given.name in (SCORES_FILE, ABLATION_FILE) else given
        has_ablation = (path / ABLATION_FILE).is_file()
        has_scores = (path / SCORES_FILE).is_file()
        if not (has_ablation or has_scores):
            raise _not_reportable(path)
        if has_ablation:
            ablation = load_ablation(path, sources, warnings)
            ablations.append(ablation)
            both = ablation.runs.get("both")
            if both is not None:
                add_run(both)
            elif _is_benchmark_run(path / "both") and (path / "both").resolve() not in seen_runs:
                seen_runs.add((path / "both").resolve())
                others.append(load_benchmark_run(path / "both", sources))
        if has_scores and _is_benchmark_run(path):
            if path.resolve() not in seen_runs:
                seen_runs.add(path.resolve())
                others.append(load_benchmark_run(path, sources))
        elif has_scores:
            add_run(load_run(path, sources))

    name_rows(runs)
    for ablation in ablations:
        name_rows([r for r in ablation.runs.values() if r is not None and not r.label])
    benches = sorted({run.bench for run in runs})
    if len(benches) > 1:
        warnings.append(f"Table 1 compares runs on different benches ({', '.join(benches)}): rows are not comparable")
    for run in runs:
        if run.manifest is None:
            warnings.append(f"{run.dir}: no {MANIFEST_FILE}; the run's settings cannot be traced beyond scores.json")
    from omnivchat.report._provenance import provenance_warnings  # imported here: it is the later module

    warnings += provenance_warnings(runs)
    studied = [*runs, *(r for a in ablations for r in a.runs.values() if r is not None)]
    warnings += _agreements(studied, sources)
    return Inputs(runs, ablations, sources, warnings, others, comparisons)


LABELS_ROLE = "human labels"
"""The role of an agreement study's labels file among the inputs (named by the report, not read by it)."""


def _agreements(runs: list[ScoredRun], sources: Sources) -> list[str]:
    """Leave out an agreement study made before its run's store last changed (judged or run further since: its
    figures are of other replies); list each study's human-labels file with the inputs, and warn where that file is
    gone or has changed since (the figures are of the file as it was, recorded by its sha256)."""
    warnings = []
    for run in runs:
        if run.agreement is not None and store_changed(run.dir, run.agreement.store_state):
            warnings.append(
                f"{run.dir / AGREEMENT_FILE} is out of date (the run was judged or run further after it) and is left "
                f"out; run `omnivchat judges agree {run.dir} ...` again to show it"
            )
            run.agreement = None
        human = getattr(run.agreement, "human", None)
        if human is None:
            continue
        where = f"{run.dir / AGREEMENT_FILE}: its human labels {human.labels_file}"
        labels = sources.read_file(Path(human.labels_file), LABELS_ROLE)
        if labels is None:
            warnings.append(f"{where} cannot be read; the figures are of the file with sha256 {human.labels_sha256}")
        elif labels.sha256 != human.labels_sha256:
            warnings.append(f"{where} changed after the study; run `omnivchat judges agree` again for its figures")
    return warnings
