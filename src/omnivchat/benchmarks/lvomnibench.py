"""lvomnibench: LVOmniBench (arXiv 2603.19217), long videos (10-90 min) with their soundtrack, read as released on
Hugging Face (``KD-TAO/LVOmniBench``).

Dataset: ``data.json``, a list of questions: ``question_id`` (an integer), ``video_id`` (the file is
``<video_id>.mp4``), ``question``,
``options`` (a list; whether each carries its ``"A. "`` prefix is not confirmed: prefixes are stripped only when
every option has the right one), ``correct_option`` (a letter) and the breakdown keys ``question_type``,
``audio_type``, ``difficulty`` and ``video_category`` (their values are not confirmed; an item without one counts
under ``(missing)``). Media: ``videos/<video_id>.mp4`` with its soundtrack; ``--media`` is the ``videos`` folder
(default: ``videos/`` beside ``data.json``).
Item ids: the release's ``question_id`` (VLMEvalKit's reader, by the benchmark's author, has one on every item), so
our ids are the release's; a file without it gets ``<video_id>-<n>``, n counting that video's questions from 1 in
file order. Cluster: the video.
Scores: accuracy overall and per question type, audio type, difficulty and video category, clustered by video.
Chance: 1/K for K options (1/4 when there are four).
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

DEFAULT_FILE = "data.json"
BREAKDOWNS = ("question_type", "audio_type", "difficulty", "video_category")


def read(source: Source) -> Release:
    """Every question of ``data.json`` with its video, or every problem (file and item)."""
    path = annotations_file(source.data, DEFAULT_FILE)
    media = Path(source.media) if source.media else path.parent / "videos"
    release = Release(path=path, media_root=media)
    counts: dict[str, int] = {}
    for where, row in object_rows(release, path):
        problems: list[str] = []
        vid = text_field(row, "video_id", problems)
        counts[vid] = counts.get(vid, 0) + 1
        item_id = f"{vid}-{counts[vid]}"
        if "question_id" in row:  # the release's own id (an integer), kept as it is
            item_id = _question_id(row["question_id"], problems)
        if vid and item_id:
            where += f" (id {item_id!r})"
        question = text_field(row, "question", problems)
        options = option_texts(row.get("options"), problems, prefixed=None)
        gold = gold_letter(row, "correct_option", options, problems)
        add_item(
            release,
            where,
            problems,
            id=item_id,
            question=question,
            options=options,
            gold=gold,
            media=McqMedia("video", (inside(media, f"{vid}.mp4", problems, "video_id"),)),
            cluster=vid,
            breakdown={name: label_field(row, name, problems) for name in BREAKDOWNS},
        )
    return release


def _question_id(value: object, problems: list[str]) -> str:
    """The release's ``question_id``: an integer (or its digits as a string), as its text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip().isdigit():
        return value.strip()
    problems.append(f"'question_id' must be an integer (got {value!r})")
    return ""


LVOMNIBENCH = register(
    McqBenchmark(
        name="lvomnibench",
        title="LVOmniBench (arXiv 2603.19217): multiple-choice questions on long videos (10-90 min) with their "
        "soundtrack; accuracy by question type, audio type, difficulty and category",
        read=read,
        breakdowns=BREAKDOWNS,
        group="question_type",
        official=OFFICIAL["lvomnibench"],
    )
)
