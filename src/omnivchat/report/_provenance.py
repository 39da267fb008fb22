"""What the runs of a report were really made with, and where that differs: the omnivchat version, the system
prompt, and what the servers said they served (model name and system_fingerprint, per result in each run's store).

A difference is not an error (comparing two models is what a report is for), but rows made with other code, another
prompt, or a model id served by different weights or builds are not comparable as they stand: the page says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from omnivchat.benchmarks.native import RunManifest
from omnivchat.runs import STORE_FILE, Manifest, ServedModel, served_changes, where_served


class ScoredRun(Protocol):
    """What this module reads of a report's run (``report._inputs.ScoredRun``, which imports this module)."""

    dir: Path
    manifest: Manifest | None
    label: str

    @property
    def model(self) -> str: ...

    @property
    def package_version(self) -> str | None: ...


CANDIDATE = "candidate"


def _served(run: ScoredRun) -> dict[str, list[ServedModel]]:
    if not (run.dir / STORE_FILE).is_file():
        return {}
    served: dict[str, list[ServedModel]] = where_served(run.dir)["served"]
    return served


def _describe(entries: list[ServedModel]) -> str:
    shown = sorted({(e.model or "(no model name)") + (f" [{e.fingerprint}]" if e.fingerprint else "") for e in entries})
    return ", ".join(shown) or "nothing yet"


def provenance_warnings(runs: Sequence[ScoredRun]) -> list[str]:
    """Warnings for the page: a run whose served model or build changed mid-run; runs compared that were made by
    different omnivchat versions or with different system prompts; runs of one model id served by different
    models or builds."""
    warnings: list[str] = []
    served = {run.dir: _served(run) for run in runs}
    for run in runs:
        for line in served_changes(served[run.dir]):
            warnings.append(f"{run.dir / STORE_FILE}: {line}")
    versions = {run.package_version for run in runs if run.package_version}
    if len(versions) > 1:
        listed = "; ".join(f"{run.label or run.dir}: {run.package_version}" for run in runs if run.package_version)
        warnings.append(f"the runs compared were made by different omnivchat versions ({listed})")
    prompts: dict[str, list[str]] = {}
    for run in runs:
        if isinstance(run.manifest, RunManifest) and "system" in run.manifest.prompts:
            record = run.manifest.prompts["system"]
            label = run.manifest.prompt_label("system")
            prompts.setdefault(f"{record.sha256[:12]} ({label})", []).append(run.label or str(run.dir))
    if len(prompts) > 1:
        listed = "; ".join(f"{prompt}: {', '.join(names)}" for prompt, names in prompts.items())
        warnings.append(f"the runs compared used different system prompts ({listed})")
    by_model: dict[str, list[ScoredRun]] = {}
    for run in runs:
        if served[run.dir].get(CANDIDATE):
            by_model.setdefault(run.model, []).append(run)
    for model, group in by_model.items():
        kinds = {_describe(served[run.dir][CANDIDATE]) for run in group}
        if len(kinds) > 1:
            listed = "; ".join(f"{run.label or run.dir}: {_describe(served[run.dir][CANDIDATE])}" for run in group)
            warnings.append(f"runs of {model} were served by different models or builds ({listed})")
    return warnings
