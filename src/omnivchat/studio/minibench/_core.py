"""The mini-bench's machinery: the builder registry, the plan, rendering, writing the bench, the made-file record.

The builders themselves are in one module per ability category (``_dslp``, ``_mea``, ``_msa``, ``_ah``, ``_er``),
built from the kit in ``_kit``.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnivchat._canonical import sha256_file
from omnivchat.bench import (
    BENCH_FILE,
    INSTANCES_FILE,
    SUBCATEGORIES,
    Bench,
    BenchInfo,
    Instance,
    load_bench,
    save_bench,
)
from omnivchat.errors import OmnivchatError
from omnivchat.studio.minibench._ah import build_aor, build_fgc
from omnivchat.studio.minibench._dslp import build_icc, build_mdcc, build_mvms, build_svmr, build_ucr, build_upc
from omnivchat.studio.minibench._er import build_er
from omnivchat.studio.minibench._kit import Builder, Draft
from omnivchat.studio.minibench._mea import build_ar, build_dr, build_mist, build_mrr, build_spsd
from omnivchat.studio.minibench._msa import build_mtic, build_pla, build_stic

if TYPE_CHECKING:
    from omnivchat.synth import RenderedClip

LANGUAGES = ("en", "zh")
_PAUSE = re.compile(r"\[\s*pause[^\]]*\]", re.IGNORECASE)


class MiniBenchError(OmnivchatError, ValueError):
    """The mini-bench cannot be written where asked (a non-bench directory, or a bench without ``force``)."""


BUILDERS: dict[str, Builder] = {
    "ICC": build_icc,
    "MDCC": build_mdcc,
    "UPC": build_upc,
    "UCR": build_ucr,
    "SVMR": build_svmr,
    "MVMS": build_mvms,
    "AR": build_ar,
    "DR": build_dr,
    "MRR": build_mrr,
    "SPSD": build_spsd,
    "MIST": build_mist,
    "STIC": build_stic,
    "MTIC": build_mtic,
    "PLA": build_pla,
    "AOR": build_aor,
    "FGC": build_fgc,
    "ER": build_er,
}
"""One builder per subcategory that can be staged offline: all 17 (the category modules say where the staging is
narrower than the paper's)."""

STAGED: tuple[str, ...] = tuple(code for code in SUBCATEGORIES if code in BUILDERS)
NOT_STAGED: dict[str, str] = {code: "no builder" for code in SUBCATEGORIES if code not in BUILDERS}


def _spoken_text(text: str) -> str:
    """A speech line as heard: pause markers removed, spaces tidied."""
    return " ".join(_PAUSE.sub(" ", text).split())


def plan(
    *, per_subcategory: int = 2, languages: Sequence[str] = LANGUAGES, seed: int = 0
) -> list[tuple[str, str, str, Draft]]:
    """The instances to build, as (id, subcategory, language, draft), without rendering anything.

    Instance ``i`` of the ``k``-th subcategory speaks ``languages[(k + i) % len(languages)]``, so languages
    alternate within a subcategory and, with one instance each, across subcategories. Each draft has its own RNG,
    seeded from (seed, subcategory, i): asking for more instances never changes the earlier ones.
    """
    if per_subcategory < 1:
        raise ValueError(f"per_subcategory must be at least 1, got {per_subcategory}")
    langs = _languages(languages)
    out = []
    for k, code in enumerate(STAGED):
        for i in range(per_subcategory):
            lang = langs[(k + i) % len(langs)]
            rng = random.Random(f"omnivchat-minibench:{seed}:{code}:{i}")
            out.append((f"{code.lower()}-{i + 1:02d}-{lang}", code, lang, BUILDERS[code](rng, lang)))
    return out


def _languages(languages: Sequence[str]) -> list[str]:
    """The requested languages, lower-cased and without repeats; ValueError for one the bench cannot speak."""
    langs = list(dict.fromkeys(lang.strip().lower() for lang in languages if lang.strip()))
    unknown = [lang for lang in langs if lang not in LANGUAGES]
    if unknown or not langs:
        raise ValueError(f"languages must be drawn from {', '.join(LANGUAGES)}; got {', '.join(languages) or 'none'}")
    return langs


MADE_FILE = ".omnivchat-made.json"  # what `bench make` wrote, with hashes: the only files --force may replace


def _files_under(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _record_made(root: Path) -> None:
    """List every file of a freshly built bench with its sha256, so a later --force can tell them from others."""
    files = {rel: sha256_file(p) for rel, p in sorted(_files_under(root).items())}
    record = {"made_by": "omnivchat bench make", "files": files}
    (root / MADE_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _foreign_files(output: Path) -> list[str]:
    """Files under ``output`` that `bench make` did not write, or that were changed since (all of them when
    there is no record): never deleted."""
    try:
        made = json.loads((output / MADE_FILE).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return ["(no record of a bench made by omnivchat)"]
    foreign = []
    for rel, path in sorted(_files_under(output).items()):
        if rel == MADE_FILE:
            continue
        if rel not in made or path.is_symlink() or sha256_file(path) != made[rel]:
            foreign.append(rel)
    return foreign


def _prepare_output(output: Path, force: bool) -> None:
    """Refuse a non-empty directory that is not a bench, a bench unless ``force``, and with ``force`` any
    directory that holds a file `bench make` did not write (or that was changed since): those are the user's."""
    if output.exists() and not output.is_dir():
        raise MiniBenchError(f"{output} exists and is not a directory")
    if not output.is_dir() or not any(output.iterdir()):
        return
    if not (output / BENCH_FILE).is_file() or not (output / INSTANCES_FILE).is_file():
        raise MiniBenchError(
            f"{output} is not empty and is not a bench directory (no {BENCH_FILE} and {INSTANCES_FILE}); "
            "choose an empty or new directory"
        )
    if not force:
        raise MiniBenchError(f"{output} already holds a bench; pass --force (force=True) to replace it")
    foreign = _foreign_files(output)
    if foreign:
        listed = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise MiniBenchError(
            f"{output} holds files that omnivchat bench make did not write or that changed since: {listed}; "
            "--force replaces only a bench it made itself. Move those files out, or choose another directory"
        )


def make_minibench(
    output: Path | str,
    *,
    per_subcategory: int = 2,
    languages: Sequence[str] = LANGUAGES,
    seed: int = 0,
    progress: bool = False,
    force: bool = False,
    workers: int | None = None,
) -> Bench:
    """Render the procedural mini-bench into ``output`` and return it, loaded and validated.

    ``per_subcategory`` instances for each of the staged subcategories (``STAGED``), alternating ``languages``
    (``en``, ``zh``); scenes are drawn by an RNG seeded with ``seed`` (same seed, same bench, byte-identical clips
    on one ffmpeg build). Writes bench.yaml, instances.jsonl and media/<id>/turnN.mp4 (with the renderer's
    ``.spec.json`` and ``.timeline.json`` beside each clip). The bench is built in a temporary sibling directory
    and moved into place, so a failed build leaves ``output`` as it was. ``workers`` renders that many clips at
    once (default: up to 4, one per CPU); the bytes do not depend on it.

    Raises MiniBenchError when ``output`` is a non-empty directory that is not a bench, or a bench and ``force``
    is False; ValueError for bad arguments.
    """
    output = Path(output)
    drafts = plan(per_subcategory=per_subcategory, languages=languages, seed=seed)
    _prepare_output(output, force)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging_dir = output.with_name(f".{output.name}.building-{os.getpid()}")
    shutil.rmtree(staging_dir, ignore_errors=True)
    try:
        clips = _render_all(drafts, staging_dir, workers=workers, progress=progress)
        instances = [_instance(id_, code, lang, draft, clips, seed) for id_, code, lang, draft in drafts]
        info = BenchInfo(
            name="omnivchat-minibench",
            version="1",
            description=(
                f"Procedural mini-bench (seed {seed}, {per_subcategory} per subcategory, languages "
                f"{', '.join(_languages(languages))}), rendered offline by omnivchat; every criterion has a "
                "machine check."
            ),
        )
        save_bench(Bench(root=staging_dir, info=info, instances=instances))
        load_bench(staging_dir)  # prove what was written loads before it replaces anything
        _record_made(staging_dir)
        _prepare_output(output, force)  # the directory may have changed while we rendered
        if output.exists():
            shutil.rmtree(output)
        os.replace(staging_dir, output)
    finally:
        shutil.rmtree(staging_dir, ignore_errors=True)
    return load_bench(output)


def _render_all(
    drafts: list[tuple[str, str, str, Draft]], root: Path, *, workers: int | None, progress: bool
) -> dict[str, RenderedClip]:
    """Render every turn of every draft under ``root``; returns the clips by relative path.

    Clips are independent and each render is deterministic, so a thread pool changes the time, never the bytes:
    speech synthesis is serialised by the renderer, while drawing and x264 encoding overlap.
    """
    from concurrent.futures import ThreadPoolExecutor

    from omnivchat.synth import render_clip

    jobs = [
        (f"media/{id_}/turn{number}.mp4", scene)
        for id_, _, _, draft in drafts
        for number, (scene, _) in enumerate(draft.turns, start=1)
    ]
    n_workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    from omnivchat._progress import progress_bar  # rich loads when a mini-bench is rendered, not on import

    bar = progress_bar(elapsed=True, transient=True) if progress else None
    task = bar.add_task("rendering mini-bench clips", total=len(jobs)) if bar is not None else None
    clips: dict[str, RenderedClip] = {}
    try:
        if bar is not None:
            bar.start()
        # Two equal specs would share one render-cache entry: render repeats afterwards, from the cache.
        seen: set[str] = set()
        first: list[tuple[str, dict[str, Any]]] = []
        repeats: list[tuple[str, dict[str, Any]]] = []
        for video, scene in jobs:
            key = json.dumps(scene, sort_keys=True)
            (repeats if key in seen else first).append((video, scene))
            seen.add(key)
        with ThreadPoolExecutor(max_workers=max(1, n_workers)) as pool:
            futures = {video: pool.submit(render_clip, scene, root / video) for video, scene in first}
            for video, future in futures.items():
                clips[video] = future.result()
                if bar is not None and task is not None:
                    bar.advance(task)
        for video, scene in repeats:
            clips[video] = render_clip(scene, root / video)
            if bar is not None and task is not None:
                bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    return clips


def _instance(id_: str, code: str, lang: str, draft: Draft, clips: dict[str, RenderedClip], seed: int) -> Instance:
    """The instance of a rendered draft; ``meta`` records what is said in each turn and how it was staged."""
    turns, turn_meta = [], []
    for number, (scene, reply) in enumerate(draft.turns, start=1):
        video = f"media/{id_}/turn{number}.mp4"
        clip = clips[video]
        user_lines = [line["text"] for line in scene["speech"] if line.get("speaker", "user") == "user"]
        turn_meta.append(
            {
                "question": " ".join(_spoken_text(t) for t in user_lines),
                "transcript": clip.transcript,
                "camera": scene["camera"]["mode"],
                "duration_s": clip.duration,
            }
        )
        turns.append({"video": video, **({"reply": reply} if reply is not None else {})})
    meta = {
        "transcript": " / ".join(t["transcript"] for t in turn_meta),
        "turns": turn_meta,
        "staging": draft.staging,
        "generator": {"name": "omnivchat.studio.minibench", "seed": seed},
    }
    return Instance(
        id=id_,
        subcategory=code,
        language=lang,
        source="synthetic",
        turns=turns,
        reference=draft.reference,
        rubric=draft.rubric,
        requires=draft.requires,
        meta=meta,
    )
