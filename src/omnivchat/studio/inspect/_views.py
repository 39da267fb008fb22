"""What the page shows of a bench: instances as JSON, the clips it may serve, Studio traces."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from omnivchat.bench import SUBCATEGORIES, Bench, Instance

MEDIA_DIR = "media"
TRACES_DIR = PurePosixPath("studio/traces")
_TURN_TEXTS = ("question", "transcript", "caption")  # Studio: question, transcript, caption; mini-bench: the first two
_NOTES = ("staging", "assignment")  # flat mappings of meta that say how an instance was staged
NOT_STAGED_NOTE = "recorded, not staged"
STUDIO_MANIFEST = PurePosixPath("studio/manifest.json")


def clip_key(video: str) -> str | None:
    """The clip's path under media/ as the page addresses it (``/media/<key>``), or None for a clip stored
    elsewhere in the bench, which the page does not serve."""
    parts = PurePosixPath(video.replace("\\", "/")).parts
    if len(parts) < 2 or parts[0] != MEDIA_DIR or any(p in ("..", ".") for p in parts):
        return None
    return "/".join(parts[1:])


def served_clips(bench: Bench) -> dict[str, str]:
    """Every clip the page may serve: its key under media/ -> its path as instances.jsonl gives it."""
    clips: dict[str, str] = {}
    for instance in bench.instances:
        for turn in instance.turns:
            key = clip_key(turn.video)
            if key is not None:
                clips[key] = turn.video
    return clips


def media_file(root: Path, clips: dict[str, str], key: str) -> Path | None:
    """The file to send for ``GET /media/<key>`` (``key`` already URL-decoded), or None.

    Only a clip of the bench is served, and only when its real path (symlinks followed) lies inside the bench's
    media/ folder: ``..``, absolute paths, backslashes, null bytes and symlinks that point elsewhere all end here.
    """
    if not key or "\x00" in key or "\\" in key or key.startswith("/") or key not in clips:
        return None
    parts = key.split("/")
    if any(p in ("..", ".", "") for p in parts):
        return None
    try:
        media_root = (root / MEDIA_DIR).resolve(strict=True)
        target = (root / MEDIA_DIR).joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(media_root) or not target.is_file():
        return None
    return target


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _notes(
    meta: dict[str, Any], unstaged: frozenset[str] = frozenset(), camera: str | None = None
) -> list[tuple[str, str]]:
    """How an instance was staged, as (label, value) rows. An attribute in ``unstaged`` was sampled and recorded but
    not staged (the offline Director's domain and camera): its value says so, with the camera the clip was
    rendered with when that is known, so the page never shows a sampled camera as if the clip had it."""
    notes: list[tuple[str, str]] = []
    for name in _NOTES:
        section = meta.get(name)
        if isinstance(section, dict):
            for key, value in section.items():
                if not isinstance(value, str | int | float | bool):
                    continue
                shown = str(value)
                if name == "assignment" and key in unstaged:
                    shown += f" ({NOT_STAGED_NOTE}"
                    shown += f"; the clip was rendered with the {camera} camera)" if key == "camera" and camera else ")"
                notes.append((str(key), shown))
    extra = _text(meta.get("extra_requirement"))
    if extra:
        notes.append(("extra requirement", extra))
    return notes


def unstaged_attributes(bench: Bench) -> frozenset[str]:
    """The sampled attributes a Studio bench records but did not stage: the offline Director's (its
    ``studio/manifest.json`` says ``"backend": "offline"``); none for any other bench."""
    try:
        manifest = json.loads(bench.root.joinpath(*STUDIO_MANIFEST.parts).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return frozenset()
    if not isinstance(manifest, dict) or manifest.get("backend") != "offline":
        return frozenset()
    from omnivchat.studio.offline import NOT_STAGED  # only for offline Studio benches: loaded when needed

    return frozenset(NOT_STAGED)


def _rendered_camera(bench: Bench, instance: Instance) -> str | None:
    """The camera mode the first clip was rendered with, from the procedural renderer's spec beside it."""
    if not instance.turns:
        return None
    clip = bench.media_path(instance.turns[0])
    try:
        spec = json.loads(clip.with_name(clip.stem + ".spec.json").read_text(encoding="utf-8"))
        mode = spec["camera"]["mode"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return mode if isinstance(mode, str) else None


def trace_path(bench: Bench, instance: Instance) -> Path | None:
    """The Studio trace of an instance (``studio/traces/<id>.json``), when it has one inside that folder."""
    generator = instance.meta.get("generator")
    given = generator.get("trace") if isinstance(generator, dict) else None
    relative = PurePosixPath(given) if isinstance(given, str) else TRACES_DIR / f"{instance.id}.json"
    if relative.is_absolute() or ".." in relative.parts or relative.parent != TRACES_DIR:
        return None
    path = bench.root.joinpath(*relative.parts)
    return path if path.is_file() else None


def instance_view(bench: Bench, instance: Instance, unstaged: frozenset[str] | None = None) -> dict[str, Any]:
    """One instance as the page shows it: its clips (by URL), what is said and shown in each turn, the
    reference reply and the rubric with its tiers. ``unstaged``: the bench's :func:`unstaged_attributes` (read
    from the bench when not given)."""
    if unstaged is None:
        unstaged = unstaged_attributes(bench)
    meta = instance.meta
    given = meta.get("turns")
    turn_meta: list[Any] = given if isinstance(given, list) else []
    turns = []
    for number, turn in enumerate(instance.turns, start=1):
        found = turn_meta[number - 1] if number <= len(turn_meta) else None
        info: dict[str, Any] = found if isinstance(found, dict) else {}
        key = clip_key(turn.video)
        duration = info.get("duration_s")
        turns.append(
            {
                "number": number,
                "video": turn.video,
                "clip": None if key is None else f"/{MEDIA_DIR}/{quote(key, safe='/')}",
                **{name: _text(info.get(name)) for name in _TURN_TEXTS},
                "duration_s": duration if isinstance(duration, int | float) else None,
                "text": turn.text,
                "reply": turn.reply,
            }
        )
    if len(turns) == 1 and not any(turns[0][name] for name in _TURN_TEXTS):
        turns[0]["transcript"] = _text(meta.get("transcript"))  # a bench that keeps one transcript per instance
    sub = SUBCATEGORIES[instance.subcategory]
    return {
        "id": instance.id,
        "line": bench.lines.get(instance.id),
        "subcategory": instance.subcategory,
        "subcategory_name": sub.name,
        "subcategory_path": sub.path,
        "language": instance.language,
        "source": instance.source,
        "requires": instance.requires,
        "turns": turns,
        "reference": instance.reference,
        "rubric": [{"number": n, "tier": c.tier, "text": c.text} for n, c in enumerate(instance.rubric, start=1)],
        "notes": _notes(meta, unstaged, _rendered_camera(bench, instance) if "camera" in unstaged else None),
        "trace": f"/api/trace/{quote(instance.id, safe='')}" if trace_path(bench, instance) else None,
    }


def trace_view(bench: Bench, instance: Instance) -> dict[str, Any] | None:
    """The module-by-module summary of an instance's Studio trace (``omnivchat studio trace``), or None."""
    path = trace_path(bench, instance)
    if path is None:
        return None
    from omnivchat.studio.engine import read_trace, trace_table  # only for Studio benches: loaded when asked

    trace = read_trace(path)
    rows = [{"module": m, "name": n, "turn": t, "decision": d, "summary": s} for m, n, t, d, s in trace_table(trace)]
    return {"id": trace.id, "status": trace.status, "repairs": trace.repairs, "steps": rows}
