"""The files of a native run directory (protocol omnivchat-run-v1): its manifest. A manifest made
before the benchmark's name was recorded is the native bench's (``benchmark`` defaults to it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from omnivchat._files import FileModel, InputError, loads_json, read_text, validate_file
from omnivchat.prompts import source_label
from omnivchat.runs import (
    MANIFEST_FILE,
    PROTOCOL,
    STORE_FILE,
    Manifest,
    PackageRecord,
    PromptRecord,
    RouteIdentity,
    RunError,
    known_protocols,
    manifest_model,
    register_manifest,
)
from omnivchat.socialomni import SOCIALOMNI_JUDGING_PROTOCOL

NATIVE_BENCHMARK = "omnivchat"  # the registry name of the native bench format (omnivchat.benchmarks)


class BenchIdentity(FileModel):
    """The bench a native run was made on: its name and version, and the hashes of its instances and clips."""

    name: str
    version: str
    instances_sha256: str
    n_instances: int
    clips: dict[str, str] = Field(default_factory=dict, description="Clip path -> sha256 ('missing' if absent).")


class RunManifest(Manifest):
    """manifest.json of a native run (protocol omnivchat-run-v1): the run's identity. A resume needs the very same
    one, but for the code fields (``package``); anything a benchmark or the grid adds (``ablation``) is kept."""

    benchmark: str | None = NATIVE_BENCHMARK
    bench: BenchIdentity
    prompts: dict[str, PromptRecord] = Field(default_factory=dict, description="'system' -> the system prompt.")
    prompt_labels: dict[str, str] | None = None
    """'system' -> which prompt ran, said plainly (omnivchat.prompts.prompt_label); older manifests have none."""
    route: RouteIdentity
    sampling: dict[str, Any] = Field(default_factory=dict)
    condition: str = "both"
    """The ablation condition the clips were sent under (``both``: as they are)."""
    simulated: bool = False
    package: PackageRecord | None = None

    omit_when_none = ("benchmark", "prompt_labels")

    def prompt_label(self, kind: str = "system") -> str | None:
        """Which prompt of ``kind`` ran: the recorded label, else (a manifest written before labels were recorded)
        omnivchat's default or the user file named by its source; None when the run recorded no such prompt."""
        if self.prompt_labels and kind in self.prompt_labels:
            return self.prompt_labels[kind]
        record = self.prompts.get(kind)
        return source_label(record.source, record.sha256) if record is not None else None


register_manifest(PROTOCOL, RunManifest)


def _read_manifest(run_dir: Path) -> Manifest:
    """Any run directory's manifest (read only), as the model of its protocol; RunError naming the directory and
    what it expected."""
    path = Path(run_dir) / MANIFEST_FILE
    expected = f"{MANIFEST_FILE} with protocol {', '.join(known_protocols())}"
    if not path.is_file():
        raise RunError(f"{run_dir}: not a run directory (no {MANIFEST_FILE}; expected {expected} and {STORE_FILE})")
    try:
        data = loads_json(read_text(path, "manifest"))
    except (InputError, ValueError) as err:
        raise RunError(f"{path}: cannot read the manifest ({err})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a run manifest (expected a JSON object with protocol {expected})")
    protocol = data.get("protocol", PROTOCOL)  # the first native manifests had no protocol field
    if protocol not in known_protocols():
        raise RunError(f"{path}: unknown protocol {protocol!r} (expected one of {', '.join(known_protocols())})")
    return validate_file(manifest_model(protocol), data, path, f"{protocol} manifest", error=RunError)


def load_manifest(run_dir: Path) -> RunManifest:
    """The manifest of a native run directory (protocol omnivchat-run-v1, with its store); RunError otherwise."""
    manifest = _read_manifest(run_dir)
    if not isinstance(manifest, RunManifest):
        judging = manifest.protocol == SOCIALOMNI_JUDGING_PROTOCOL
        raise RunError(
            f"{run_dir} is a SocialOmni {'judging' if judging else 'run'} directory "
            f"({manifest.protocol}), not an omnivchat run ({PROTOCOL}); use the `omnivchat socialomni` commands for it"
        )
    if not (Path(run_dir) / STORE_FILE).is_file():
        raise RunError(f"{run_dir}: not a run directory (needs {MANIFEST_FILE} and {STORE_FILE})")
    return manifest
