"""worldsense: WorldSense (arXiv 2502.04326), real-world omni-modal video understanding, read as released on
Hugging Face (``honglyhly/WorldSense``).

Dataset: ``worldsense_qa.json``, an object keyed by video id. Each video holds ``duration`` (a bucket: ``<1min`` ...
``>8min``), ``domain``, ``sub_category`` and ``audio_class`` (a list drawn from Speech, Event, Music) and its
questions as ``task0`` ... ``taskN``: ``question``, ``candidates`` (strings ``"A. ..."``: four, or three for
some questions, so the benchmark has tasks ``mc3`` and ``mc4``), ``answer`` (a letter), ``task_domain`` and
``task_type``. Media: ``<video id>.mp4`` with its soundtrack (unzipped from
``worldsense_videos*.zip``) in ``--media`` (default: the JSON file's folder; ``videos/`` below it is looked in too).
Item ids: ``<video id>/task<N>``; cluster: the video.
Scores (:mod:`omnivchat.benchmarks.mcq`): accuracy overall and per duration bucket, domain, sub-category (as
VLMEvalKit reports it), task domain, task type and audio class (multi-label: an item counts in each of its
classes), clustered by video. Chance: 1/K for a question with K candidates (1/3 or 1/4).
"""

from __future__ import annotations

import re
from pathlib import Path

from omnivchat.benchmarks._official import OFFICIAL
from omnivchat.benchmarks._protocol import Source
from omnivchat.benchmarks._registry import register
from omnivchat.benchmarks.mcq import (
    McqBenchmark,
    McqError,
    McqMedia,
    Release,
    add_item,
    annotations_file,
    first_existing,
    gold_letter,
    inside,
    label_field,
    option_texts,
    read_json,
    text_field,
)

DEFAULT_FILE = "worldsense_qa.json"
DURATIONS = ("<1min", "1-2min", "2-4min", "4-6min", "6-8min", ">8min")
_TASK = re.compile(r"^task(\d+)$")


def read(source: Source) -> Release:
    """Every question of ``worldsense_qa.json`` with its video, or every problem (file, video id and task key)."""
    path = annotations_file(source.data, DEFAULT_FILE)
    media = Path(source.media) if source.media else path.parent
    data = read_json(path)
    if not isinstance(data, dict):
        raise McqError(f"{path}: expected a JSON object keyed by video id, got {type(data).__name__}")
    release = Release(path=path, media_root=media)
    for vid, entry in data.items():
        here = f"{path}: video {vid!r}"
        if not isinstance(entry, dict):
            release.problems.append(f"{here}: expected an object, got {type(entry).__name__}")
            continue
        tasks = sorted((int(m.group(1)), key) for key in entry if (m := _TASK.match(key)))
        if not tasks:
            release.problems.append(f"{here}: no questions (keys task0, task1, ...)")
            continue
        shared: list[str] = []
        video_fields = {
            key: label_field(entry, key, shared) for key in ("duration", "domain", "sub_category", "audio_class")
        }
        video = inside(media, f"{vid}.mp4", shared, "video id")
        release.problems.extend(f"{here}: {p}" for p in shared)
        if shared:
            continue
        video = first_existing(video, media / "videos" / f"{vid}.mp4")
        for _, key in tasks:
            where = f"{here} {key}"
            task = entry[key]
            if not isinstance(task, dict):
                release.problems.append(f"{where}: expected an object, got {type(task).__name__}")
                continue
            problems: list[str] = []
            question = text_field(task, "question", problems)
            options = option_texts(task.get("candidates"), problems, prefixed=True, name="candidates")
            gold = gold_letter(task, "answer", options, problems)
            breakdown = {
                **video_fields,
                "task_domain": label_field(task, "task_domain", problems),
                "task_type": label_field(task, "task_type", problems),
            }
            add_item(
                release,
                where,
                problems,
                id=f"{vid}/{key}",
                question=question,
                options=options,
                gold=gold,
                media=McqMedia("video", (video,)),
                cluster=str(vid),
                breakdown=breakdown,
            )
    return release


WORLDSENSE = register(
    McqBenchmark(
        name="worldsense",
        title="WorldSense (arXiv 2502.04326): 3- and 4-way questions on real-world videos with their sound; "
        "accuracy by duration, domain, sub-category, task and audio class",
        read=read,
        breakdowns=("duration", "domain", "sub_category", "task_domain", "task_type", "audio_class"),
        group="task_domain",
        official=OFFICIAL["worldsense"],
        orders={
            "duration": DURATIONS,
            "task_domain": ("Recognition", "Understanding", "Reasoning"),
            "audio_class": ("Speech", "Event", "Music"),
        },
    )
)
