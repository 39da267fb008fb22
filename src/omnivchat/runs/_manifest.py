"""Run manifests: the identity of a run (bench, clips, prompts, model, route settings, condition, code).

Resuming needs the very same identity; anything else stops with a list of what changed. Settings that change
no result (concurrency, --limit) are not part of it: they are logged per invocation instead. Nor is the code
that made the run: request hashes already cover what is sent (a code change that changes a request makes a new
request, sent anew), so a new omnivchat version resumes an old run, with a warning and the version of every
invocation on record. A protocol that fixes its code (SocialOmni: ``harness_sha256``, over its own modules too)
refuses such a resume instead.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import omnivchat
from omnivchat._files import loads_json, read_text, write_text_atomic
from omnivchat.errors import OmnivchatError
from omnivchat.routes import Route
from omnivchat.runs._files import MANIFEST_FILE, PROTOCOL, Manifest, RouteIdentity

# The code that decides what is sent and how it is stored: recorded with the run, for audit, not its identity.
_HASHED_PACKAGES = ("bench", "media", "routes", "runs", "prompts", "benchmarks/native")
# Manifest fields that record which code made a run; a change in them warns instead of refusing.
CODE_FIELDS = ("package",)
# The field of a protocol that fixes its code (SocialOmni's seed: "changed inputs or code require a new output
# directory"): a change in it refuses the resume, in one line.
HARNESS_FIELD = "harness_sha256"
# Manifest fields recorded for information only, never compared: where the run was served (a replica set) and what
# served it (the server's kind and version, and what was changed for it: the changed settings are compared). A run
# resumed on other servers is the same run (the served models and fingerprints are kept per result instead). The
# prompts' labels follow from their hashes and sources, which are compared: a run made before labels were recorded
# resumes.
RECORD_FIELDS = ("replicas", "server", "prompt_labels")


class ManifestMismatch(OmnivchatError, RuntimeError):
    """The run directory belongs to a different run; the message lists what changed."""


@cache
def source_hash(*more: str) -> str:
    """sha256 over the sources that shape requests and results (bench, media, routes, runs, prompts and the native
    benchmark, which builds a bench's requests), and ``more``: a benchmark's own packages or modules (paths inside
    omnivchat, e.g. ``socialomni`` or ``benchmarks/socialomni.py``)."""
    return tree_hash(Path(omnivchat.__file__).parent, (*_HASHED_PACKAGES, *more))


def tree_hash(root: Path, packages: tuple[str, ...]) -> str:
    """sha256 over ``root``'s ``_canonical.py`` and the ``.py`` and ``.txt`` files of ``packages`` (folders or
    single modules under ``root``), each with its path."""
    digest = hashlib.sha256()
    files = [root / "_canonical.py"]
    for package in packages:
        if (root / package).is_file():
            files.append(root / package)
            continue
        files += sorted(p for p in (root / package).rglob("*") if p.suffix in (".py", ".txt") and p.is_file())
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def package_record() -> dict[str, str]:
    """The code of this process: omnivchat's version and the hash of the sources that shape requests (a dict, for
    a benchmark that writes its manifest as one; :class:`PackageRecord` in a typed manifest)."""
    return {"version": omnivchat.__version__, "source_sha256": source_hash()}


def route_identity(route: Route) -> RouteIdentity:
    """Route kind, endpoint (no port, query or key) and every resolved setting but the base URL."""
    settings = route.settings.model_dump(mode="json", exclude={"base_url"})
    stages = getattr(route, "stage_identity", None)
    if callable(stages):  # a cascade: every stage's model, endpoint and settings (never a key)
        settings["stages"] = stages()
    return RouteIdentity(model=route.model_id, kind=route.settings.route, endpoint=route.endpoint, settings=settings)


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences between two manifests, one line per changed, added or removed field."""
    a, b = _flatten(old), _flatten(new)
    lines = []
    for key in sorted(set(a) | set(b)):
        if key not in a:
            lines.append(f"{key}: added")
        elif key not in b:
            lines.append(f"{key}: removed")
        elif a[key] != b[key]:
            lines.append(f"{key}: {json.dumps(a[key])[:60]} -> {json.dumps(b[key])[:60]}")
    return lines


class ManifestCheck(NamedTuple):
    """``resumed``: the run directory already held this run. ``code_changed``: a note when it was made by other
    code (another version or source of omnivchat), None otherwise."""

    resumed: bool
    code_changed: str | None = None


def write_or_check_manifest(run_dir: Path, manifest: Manifest | dict[str, Any], *, write: bool = True) -> ManifestCheck:
    """Write the manifest of a new run, or check it equals the stored one but for the code fields.

    The check compares the JSON: the stored file as it is, and ``manifest`` as it would be written. Without
    ``write`` (a dry run) a new run's manifest is not written."""
    path = run_dir / MANIFEST_FILE
    if isinstance(manifest, Manifest):
        manifest = manifest.dump()
    if path.is_file():
        try:
            stored = loads_json(read_text(path, "manifest"))
        except ValueError as err:  # InputError too: undecodable, unreadable
            raise ManifestMismatch(
                f"{path}: cannot read the manifest ({err}); the directory is damaged or not a run. Keep it for "
                "inspection and use a new output directory"
            ) from None
        protocol = stored.get("protocol", PROTOCOL) if isinstance(stored, dict) else None
        if protocol != manifest.get("protocol", PROTOCOL):
            raise ManifestMismatch(
                f"{path}: a manifest of {protocol!r}, not of {manifest.get('protocol', PROTOCOL)!r}: this directory "
                "holds something else; use a new output directory"
            )
        if "benchmark" not in stored and "benchmark" in manifest:
            stored["benchmark"] = manifest["benchmark"]  # made before names were recorded: the protocol implies it
        if HARNESS_FIELD in manifest and stored.get(HARNESS_FIELD) != manifest[HARNESS_FIELD]:
            was = str(stored.get(HARNESS_FIELD) or "none recorded")[:12]
            raise ManifestMismatch(
                f"{run_dir} was made by other harness code ({HARNESS_FIELD} {was} -> {manifest[HARNESS_FIELD][:12]}: "
                f"{manifest.get('benchmark', protocol)}'s modules or the request path changed); its protocol resumes "
                "only identical code: use a new output directory (this one is kept as it is)"
            )
        ignored = (*CODE_FIELDS, *RECORD_FIELDS)
        identity = {k: v for k, v in manifest.items() if k not in ignored}
        changed = differences({k: v for k, v in stored.items() if k not in ignored}, identity)
        if changed:
            listing = "\n".join(f"  - {line}" for line in changed[:12])
            more = f"\n  ... and {len(changed) - 12} more" if len(changed) > 12 else ""
            raise ManifestMismatch(
                f"{run_dir} holds a different run; what changed:\n{listing}{more}\n"
                "Use a new output directory for a run with these inputs."
            )
        code = differences({k: stored.get(k) for k in CODE_FIELDS}, {k: manifest.get(k) for k in CODE_FIELDS})
        note = None
        if code:
            was = (stored.get("package") or {}).get("version", "?")
            now = (manifest.get("package") or {}).get("version", "?")
            note = (
                f"{run_dir} was made by other omnivchat code (version {was}, now {now}; "
                f"{', '.join(line.split(':')[0] for line in code)} changed): resuming, since the inputs, prompts "
                "and settings are the same; any request the new code builds differently is sent anew"
            )
        return ManifestCheck(True, note)
    if not write:
        return ManifestCheck(False)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return ManifestCheck(False)
