"""avodyssey: AV-Odyssey Bench (arXiv 2412.02611), audio-visual questions on pictures or a video and audio
recordings, read in the form lmms-eval uses (``AV-Odyssey/AV_Odyssey_Bench_LMMs_Eval``: ``av_odyssey.parquet``).

Dataset: one row per question: ``question_id``, ``question_type_id`` (task 1-26), ``data_type``, ``subfield``
(Timbre, Tone, Melody, Space, Time, Hallucination, Intricacy), ``question`` (with inline tags ``[img1]``,
``[video1]``, ``[audio1]``...), ``options`` (four strings ``"A. ..."``), ``answer`` (a letter) and the media as
lists of relative paths, ``image_path``, ``video_path`` and ``audio_path``, resolved against ``--media`` (default:
the parquet file's folder). A JSON list or JSON-lines file with the same fields is read too. The full release
(``av_odyssey_part*.parquet``, media embedded as ``image_1`` ... ``audio_4``) is refused with a message: how its
``video_1`` column is to be read is not confirmed.

Media: every item needs audio and pictures. Its images are shown one after the other, or its one video is the
picture, while its audio files play one after the other (0.5 s apart; the video's own sound, if any, replaced);
the request says when each tagged part is on screen or plays ("[img1] is on screen from 0.0 s to 2.0 s; [audio1]
plays from ..."). An item with both images and a video, or several videos, is refused (one clip cannot show both
honestly): it is not sent, and the manifest and the scores count it with its reason.
Item ids: ``question_id``; cluster: the set of media files (questions on the same files form one cluster).
Scores: accuracy overall (micro) and per subfield and per task (``question_type_id``). Chance: 1/4.
"""

from __future__ import annotations

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
    gold_letter,
    inside,
    label_field,
    object_rows,
    option_texts,
    parquet_columns,
    path_list,
    text_field,
)

DEFAULT_FILE = "av_odyssey.parquet"
COLUMNS = (
    "question_id",
    "question_type_id",
    "data_type",
    "subfield",
    "question",
    "options",
    "answer",
    "image_path",
    "video_path",
    "audio_path",
)
SUBFIELDS = ("Timbre", "Tone", "Melody", "Space", "Time", "Hallucination", "Intricacy")
EMBEDDED = (
    "{path}: this is the full AV-Odyssey release with its media embedded (image_1..., audio_1...), which omnivchat "
    "does not read; use the lmms-eval form (AV-Odyssey/AV_Odyssey_Bench_LMMs_Eval: av_odyssey.parquet with "
    "image_path, video_path and audio_path) and its media folder as --media"
)
REFUSED_BOTH = "images and a video in one item: one clip cannot show both honestly"
REFUSED_VIDEOS = "several videos in one item: one clip cannot show them honestly"


def read(source: Source) -> Release:
    """Every question with its media, the items refused with their reason, or every problem (file and row)."""
    path = annotations_file(source.data, DEFAULT_FILE)
    media = Path(source.media) if source.media else path.parent
    columns = parquet_columns(path)
    if columns and "audio_path" not in columns and "audio_1" in columns:
        raise McqError(EMBEDDED.format(path=path))
    release = Release(path=path, media_root=media)
    for where, row in object_rows(release, path, columns=COLUMNS):
        if "audio_path" not in row and "audio_1" in row:
            raise McqError(EMBEDDED.format(path=path))
        problems: list[str] = []
        item_id = text_field(row, "question_id", problems)
        if item_id:
            where += f" (question_id {item_id!r})"
        question = text_field(row, "question", problems)
        options = option_texts(row.get("options"), problems, prefixed=True)
        gold = gold_letter(row, "answer", options, problems)
        images = path_list(row, "image_path", problems)
        videos = path_list(row, "video_path", problems)
        audios = path_list(row, "audio_path", problems)
        if not audios and "'audio_path'" not in " ".join(problems):
            problems.append("no audio ('audio_path' is empty): every AV-Odyssey question needs its recordings")
        if not images and not videos:
            problems.append("no picture ('image_path' and 'video_path' are empty)")
        if not problems and images and videos:
            release.refused[item_id] = REFUSED_BOTH
            continue
        if not problems and len(videos) > 1:
            release.refused[item_id] = REFUSED_VIDEOS
            continue
        pictures = [inside(media, v, problems, "video_path") for v in videos]
        pictures += [inside(media, i, problems, "image_path") for i in images]
        sounds = tuple(inside(media, a, problems, "audio_path") for a in audios)
        if videos:
            shown = McqMedia(
                "video+audio",
                (pictures[0],),
                sounds,
                visual_tags=("[video1]",),
                audio_tags=tuple(f"[audio{k}]" for k in range(1, len(audios) + 1)),
            )
        else:
            shown = McqMedia(
                "images+audio",
                tuple(pictures),
                sounds,
                visual_tags=tuple(f"[img{k}]" for k in range(1, len(images) + 1)),
                audio_tags=tuple(f"[audio{k}]" for k in range(1, len(audios) + 1)),
            )
        add_item(
            release,
            where,
            problems,
            id=item_id,
            question=question,
            options=options,
            gold=gold,
            media=shown,
            cluster="+".join(sorted({*images, *videos, *audios})),
            breakdown={name: label_field(row, name, problems) for name in ("subfield", "question_type_id")},
        )
    return release


def _task_order() -> tuple[str, ...]:
    return tuple(str(n) for n in range(1, 27))


AVODYSSEY = register(
    McqBenchmark(
        name="avodyssey",
        title="AV-Odyssey Bench (arXiv 2412.02611): 4-way questions on pictures or a video and recordings (one "
        "clip, tagged parts timed in the prompt); accuracy by subfield and task",
        read=read,
        breakdowns=("subfield", "question_type_id"),
        group="subfield",
        official=OFFICIAL["avodyssey"],
        orders={"subfield": SUBFIELDS, "question_type_id": _task_order()},
    )
)
