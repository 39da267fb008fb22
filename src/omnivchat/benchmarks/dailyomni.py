"""dailyomni: Daily-Omni (arXiv 2505.17862), audio-visual reasoning with temporal alignment, read as released on
Hugging Face (``liarliar/Daily-Omni``: ``qa.json`` and ``Videos.tar``).

Dataset: ``qa.json``, a list of questions: ``Question``, ``Choice`` (four strings ``"A. ..."``), ``Answer`` (a
letter), ``video_id``, ``Type`` (AV Event Alignment, Event Sequence, Context understanding, Reasoning, Inference,
Comparative), ``video_category`` and ``video_duration`` (``30s`` or ``60s``). Media: the release keeps the sound
apart, ``Videos/<id>/<id>_video.mp4`` and ``Videos/<id>/<id>_audio.wav``; ``--media`` is the ``Videos`` folder
(default: ``Videos/`` beside ``qa.json``). Each item's clip is the video with the wav as its soundtrack (any sound
of the mp4 replaced: the wav is what the official scripts give the model), composed and cached in the run.
Item ids: ``<video id>-<n>``, n counting that video's questions from 1 in file order; cluster: the video.
Scores: accuracy overall and per ``Type``, duration (30s/60s) and ``video_category``, clustered by video. Chance 1/4.
"""

from __future__ import annotations

from pathlib import Path

from omnivchat.benchmarks._official import OFFICIAL
from omnivchat.benchmarks._protocol import Source
from omnivchat.benchmarks._registry import register
from omnivchat.benchmarks.mcq import (
    McqBenchmark,
    McqMedia,
    Release,
    add_item,
    annotations_file,
    gold_letter,
    inside,
    label_field,
    object_rows,
    option_texts,
    text_field,
)

DEFAULT_FILE = "qa.json"
TYPES = ("AV Event Alignment", "Event Sequence", "Context understanding", "Reasoning", "Inference", "Comparative")


def read(source: Source) -> Release:
    """Every question of ``qa.json`` with its video and audio file, or every problem (file and item)."""
    path = annotations_file(source.data, DEFAULT_FILE)
    media = Path(source.media) if source.media else path.parent / "Videos"
    release = Release(path=path, media_root=media)
    counts: dict[str, int] = {}
    for where, row in object_rows(release, path):
        problems: list[str] = []
        vid = text_field(row, "video_id", problems)
        counts[vid] = counts.get(vid, 0) + 1
        item_id = f"{vid}-{counts[vid]}"
        if vid:
            where += f" (id {item_id!r})"
        question = text_field(row, "Question", problems)
        options = option_texts(row.get("Choice"), problems, prefixed=True, name="Choice")
        gold = gold_letter(row, "Answer", options, problems)
        video = inside(media, f"{vid}/{vid}_video.mp4", problems, "video_id")
        # beside the video, named from its file name: a video id with a '/' in it must not raise here (with_name)
        audio = video.with_name(video.name.removesuffix("_video.mp4") + "_audio.wav")
        add_item(
            release,
            where,
            problems,
            id=item_id,
            question=question,
            options=options,
            gold=gold,
            media=McqMedia("video+audio", (video,), (audio,)),
            cluster=vid,
            breakdown={name: label_field(row, name, problems) for name in ("Type", "video_duration", "video_category")},
        )
    return release


DAILYOMNI = register(
    McqBenchmark(
        name="dailyomni",
        title="Daily-Omni (arXiv 2505.17862): 4-way audio-visual questions on 30 s and 60 s clips (video and wav "
        "composed into one clip); accuracy by type, duration and category",
        read=read,
        breakdowns=("Type", "video_duration", "video_category"),
        group="Type",
        official=OFFICIAL["dailyomni"],
        orders={"Type": TYPES, "video_duration": ("30s", "60s")},
    )
)
