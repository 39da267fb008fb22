"""The status of a SocialOmni run directory (per task: who, when, how) and of its judging directory (per judge
of the panel), read without changing anything."""

from __future__ import annotations

from pathlib import Path

from omnivchat.runs import (
    ItemCounts,
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
    SOCIALOMNI_PROTOCOL,
    SocialOmniJudgingManifest,
    SocialOmniManifest,
)


def _socialomni_status(run_dir: Path, manifest: SocialOmniManifest) -> RunStatus:
    """A SocialOmni run: per task (who, when, how) the items it declared, done, failed and not run."""
    counts, by_kind = store_counts(run_dir)
    declared = list(manifest.source_media_sha256 or {})
    per_task = {}
    for task in manifest.tasks or []:
        ids = {k for k in declared if k.split("-", 1)[0] == task}
        stored = by_kind.get(task, {"items": {}, "ids": {}})
        done = sum(1 for i, status in stored["ids"].items() if status == "done" and i in ids)
        failed = sum(1 for i, status in stored["ids"].items() if status == "failed" and i in ids)
        per_task[task] = ItemCounts(declared=len(ids), done=done, failed=failed, not_run=len(ids) - done - failed)
    route = manifest.route.get("route", "?")
    cards = manifest.prompts.items()
    return RunStatus(
        protocol=SOCIALOMNI_PROTOCOL,
        benchmark=manifest.benchmark,
        kind="tasks",
        model=manifest.model,
        route=str(route),
        simulated=route == "sim",
        condition=manifest.condition or "both",
        limit=manifest.limit,
        tasks=per_task,
        # a manifest written before labels were recorded has the cards' hashes only
        prompts={t: (manifest.prompt_labels or {}).get(t) or f"not recorded (sha256 {h[:12]})" for t, h in cards},
        **attempt_counts(counts),
    )


def _judging_status(run_dir: Path, manifest: SocialOmniJudgingManifest) -> RunStatus:
    """A SocialOmni judging directory: per judge of the panel, the scores done and failed."""
    counts, by_kind = store_counts(run_dir)
    judges = {}
    for name in manifest.judge_names:
        stored = by_kind.get(f"judge:{name}", {"items": {}})["items"]
        judges[name] = JudgeCounts(done=stored.get("done", 0), failed=stored.get("failed", 0))
    return RunStatus(
        protocol=SOCIALOMNI_JUDGING_PROTOCOL,
        kind="judging",
        panel=manifest.panel,
        judges=judges,
        **attempt_counts(counts),
    )


def run_status(run_dir: Path) -> RunStatus:
    """What a SocialOmni run directory (per task) or judging directory (per judge) holds, read without changing
    anything; see :class:`omnivchat.runs.RunStatus`."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)

    def read() -> RunStatus:
        if isinstance(manifest, SocialOmniJudgingManifest):
            return _judging_status(run_dir, manifest)
        if isinstance(manifest, SocialOmniManifest):
            return _socialomni_status(run_dir, manifest)
        raise SocialOmniError(f"{run_dir}: not a SocialOmni run or judging directory ({manifest.protocol})")

    return served_status(run_dir, read)
