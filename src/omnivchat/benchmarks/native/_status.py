"""What a native run directory (omnivchat-run-v1) declared, for the shared status and export
(:mod:`omnivchat.benchmarks`): its bench's instances (counted, as the manifest records no keys) and what its status
and export say of the run (bench, prompts, failure kinds; simulated)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnivchat.benchmarks._protocol import Declared, ExportExtras
from omnivchat.benchmarks.native._files import RunManifest, load_manifest
from omnivchat.runs import CANDIDATE, store_counts


def _prompt_labels(manifest: RunManifest) -> dict[str, str]:
    """Which prompts a native run used, said plainly (its system prompt)."""
    label = manifest.prompt_label("system")
    return {"system": label} if label is not None else {}


def declared(run_dir: Path) -> Declared:
    """The bench's instances (the run's candidate requests, counted) and the status fields of a native run; a
    RunError when ``run_dir`` is not one."""
    manifest = load_manifest(run_dir)
    counts, _ = store_counts(run_dir)
    fields: dict[str, Any] = {
        "kind": "run",
        "model": manifest.route.model,
        "route": manifest.route.kind,
        "simulated": manifest.simulated,
        "condition": manifest.condition,
        "bench": f"{manifest.bench.name} v{manifest.bench.version}",
        "failure_kinds": counts["failure_kinds"],
        "prompts": _prompt_labels(manifest),
    }
    return Declared({CANDIDATE: manifest.bench.n_instances}, fields)


def export_extras(run_dir: Path) -> ExportExtras:
    """A native export's run-level figures: whether the model was simulated, and which prompts ran."""
    manifest = load_manifest(run_dir)
    return ExportExtras(extra={"simulated": manifest.simulated, "prompts": _prompt_labels(manifest)})
