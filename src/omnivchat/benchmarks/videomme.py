"""videomme: Video-MME (arXiv 2405.21075) in its audio setting: the model gets each video with its soundtrack (no
subtitles), read as released on Hugging Face (``lmms-lab/Video-MME``).

Dataset: ``videomme/test-00000-of-00001.parquet`` (a JSON list or JSON-lines file with the same fields is read too),
one row per question: ``video_id``, ``duration`` (short, medium, long), ``domain``, ``sub_category``, ``url``,
``videoID``, ``question_id``, ``task_type``, ``question``, ``options`` (four strings ``"A. ..."``) and ``answer`` (a
letter). Media: ``<videoID>.mp4`` with its soundtrack, unzipped from ``videos_chunked_*.zip``, in ``--media``
(default: the folder above ``videomme/``); ``data/`` and ``videos/`` below it are looked in too (the folder the zips
unpack to is not confirmed). Subtitles are not used: this is the audio setting.
Item ids: ``question_id``; cluster: the video (three questions each).
Scores: accuracy overall and per duration, domain, sub-category and task type, clustered by video. Chance: 1/4.
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
    first_existing,
    gold_letter,
    inside,
    label_field,
    object_rows,
    option_texts,
    text_field,
)

DEFAULT_FILE = "videomme/test-00000-of-00001.parquet"
COLUMNS = (
    "video_id",
    "duration",
    "domain",
    "sub_category",
    "videoID",
    "question_id",
    "task_type",
    "question",
    "options",
    "answer",
)
DOMAINS = (
    "Knowledge",
    "Film & Television",
    "Sports Competition",
    "Artistic Performance",
    "Life Record",
    "Multilingual",
)


def read(source: Source) -> Release:
    """Every question with its video, or every problem (file and row)."""
    path = annotations_file(source.data, DEFAULT_FILE)
    base = path.parent.parent if path.parent.name == "videomme" else path.parent
    media = Path(source.media) if source.media else base
    release = Release(path=path, media_root=media)
    for where, row in object_rows(release, path, columns=COLUMNS):
        problems: list[str] = []
        item_id = text_field(row, "question_id", problems)
        if item_id:
            where += f" (question_id {item_id!r})"
        video_name = text_field(row, "videoID", problems)
        question = text_field(row, "question", problems)
        options = option_texts(row.get("options"), problems, prefixed=True)
        gold = gold_letter(row, "answer", options, problems)
        video = inside(media, f"{video_name}.mp4", problems, "videoID")
        if not problems:
            video = first_existing(video, media / "data" / video.name, media / "videos" / video.name)
        add_item(
            release,
            where,
            problems,
            id=item_id,
            question=question,
            options=options,
            gold=gold,
            media=McqMedia("video", (video,)),
            cluster=video_name,
            breakdown={
                name: label_field(row, name, problems) for name in ("duration", "domain", "sub_category", "task_type")
            },
        )
    return release


VIDEOMME = register(
    McqBenchmark(
        name="videomme",
        title="Video-MME (arXiv 2405.21075), audio setting: 4-way questions on videos sent with their soundtrack; "
        "accuracy by duration, domain, sub-category and task type",
        read=read,
        breakdowns=("duration", "domain", "sub_category", "task_type"),
        group="duration",
        official=OFFICIAL["videomme"],
        orders={"duration": ("short", "medium", "long"), "domain": DOMAINS},
    )
)
