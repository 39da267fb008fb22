"""What a SocialOmni run directory declared (per task: who, when, how), for the shared status and export, and
the status of its judging directory (per judge of the panel), read without changing anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omnivchat.runs import (
    JudgeCounts,
    RunStatus,
    attempt_counts,
    read_manifest,
    served_status,
    store_counts,
)
from omnivchat.socialomni._errors import SocialOmniError
from omnivchat.socialomni._files import (
    SOCIALOMNI_JUDGING_PROTOCOL,
    SocialOmniJudgingManifest,
    SocialOmniManifest,
)


def declared_items(run_dir: Path) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """A SocialOmni run's declared items per task (who, when, how: the keys its manifest lists) and what its
    status says of the run (model, route, limit, prompt cards); a SocialOmniError when it is not a run."""
    manifest = read_manifest(run_dir)
    if not isinstance(manifest, SocialOmniManifest):
        raise SocialOmniError(f"{run_dir}: not a SocialOmni run directory ({manifest.protocol})")
    declared = list(manifest.source_media_sha256 or {})
    tasks = {t: [k for k in declared if k.split("-", 1)[0] == t] for t in manifest.tasks or []}
    route = manifest.route.get("route", "?")
    cards = manifest.prompts.items()
    fields = {
        "label": "SocialOmni",
        "model": manifest.model,
        "route": str(route),
        "simulated": route == "sim",
        "condition": manifest.condition or "both",
        "limit": manifest.limit,
        # a manifest written before labels were recorded has the cards' hashes only
        "prompts": {t: (manifest.prompt_labels or {}).get(t) or f"not recorded (sha256 {h[:12]})" for t, h in cards},
    }
    return tasks, fields


def _judging_status(run_dir: Path, manifest: SocialOmniJudgingManifest) -> RunStatus:
    """A SocialOmni judging directory: per judge of the panel, the scores done and failed."""
    counts, by_kind = store_counts(run_dir)
    judges = {}
    for name in manifest.judge_names:
        stored = by_kind.get(f"judge:{name}", {"items": {}})["items"]
        judges[name] = JudgeCounts(done=stored.get("done", 0), failed=stored.get("failed", 0))
    return RunStatus(
        protocol=SOCIALOMNI_JUDGING_PROTOCOL,
        label="SocialOmni",
        kind="judging",
        panel=manifest.panel,
        judges=judges,
        **attempt_counts(counts),
    )


def judging_status(run_dir: Path) -> RunStatus | None:
    """What a SocialOmni judging directory holds (per judge of the panel), read without changing anything; None
    for a SocialOmni run directory (the shared status reads it: omnivchat.benchmarks.status)."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    if not isinstance(manifest, SocialOmniJudgingManifest):
        return None
    return served_status(run_dir, lambda: _judging_status(run_dir, manifest))
