"""omnibench: OmniBench (arXiv 2409.15272), tri-modal reasoning on an image and an audio recording, read as released
in the repository ``multimodal-art-projection/OmniBench``.

Dataset: ``dataset/batch-5_1142_20240817.jsonl``, one question a line: ``index``, ``task type``, ``audio type``
(speech, sound event, music), ``question``, ``options`` (four texts without letters), ``answer`` (the text of the
right option), ``audio_path`` and ``image_path`` (basenames). Media: ``mm_data/audio/<audio_path>`` (mp3) and
``mm_data/image/<image_path>``; ``--media`` is the ``mm_data`` folder (default: ``mm_data/`` beside ``dataset/``).
Each item's clip shows its picture for as long as its recording plays, composed and cached in the run.
The gold letter is the position of ``answer`` in ``options`` (exactly one must match): never parsed from the
answer's own text, as the official script does ("A man is..." read as A).
Item ids: ``index``; cluster: the (image, audio) pair. Scores: accuracy overall and per audio type and task type.
Chance: 1/4.
"""

from __future__ import annotations

from pathlib import Path

from omnivchat.benchmarks._choice import LETTERS
from omnivchat.benchmarks._official import OFFICIAL
from omnivchat.benchmarks._protocol import Source
from omnivchat.benchmarks._registry import register
from omnivchat.benchmarks.mcq import (
    McqBenchmark,
    McqMedia,
    Release,
    add_item,
    annotations_file,
    inside,
    label_field,
    object_rows,
    option_texts,
    text_field,
)

DEFAULT_FILE = "dataset/batch-5_1142_20240817.jsonl"


def read(source: Source) -> Release:
    """Every question of the JSON-lines file with its image and audio, or every problem (file and line)."""
    path = annotations_file(source.data, DEFAULT_FILE)
    base = path.parent.parent if path.parent.name == "dataset" else path.parent
    media = Path(source.media) if source.media else base / "mm_data"
    release = Release(path=path, media_root=media)
    for where, row in object_rows(release, path):
        problems: list[str] = []
        item_id = text_field(row, "index", problems)
        if item_id:
            where += f" (index {item_id})"
        question = text_field(row, "question", problems)
        options = option_texts(row.get("options"), problems, prefixed=False)
        answer = text_field(row, "answer", problems)
        gold = ""
        if options and answer:
            matches = [k for k, text in enumerate(options) if text == answer]
            if len(matches) == 1:
                gold = LETTERS[matches[0]]
            else:
                said = "is not one of the options" if not matches else "matches several options"
                problems.append(f"'answer' {answer!r} {said} (the gold option is found by its exact text)")
        audio = text_field(row, "audio_path", problems)
        image = text_field(row, "image_path", problems)
        add_item(
            release,
            where,
            problems,
            id=item_id,
            question=question,
            options=options,
            gold=gold,
            media=McqMedia(
                "images+audio",
                (inside(media / "image", image, problems, "image_path"),),
                (inside(media / "audio", audio, problems, "audio_path"),),
            ),
            cluster=f"{image}+{audio}",
            breakdown={name: label_field(row, name, problems) for name in ("audio type", "task type")},
        )
    return release


OMNIBENCH = register(
    McqBenchmark(
        name="omnibench",
        title="OmniBench (arXiv 2409.15272): 4-way questions on an image and a recording (one clip: the picture "
        "while the audio plays); accuracy by audio type and task type",
        read=read,
        breakdowns=("audio type", "task type"),
        group="audio type",
        official=OFFICIAL["omnibench"],
        orders={"audio type": ("speech", "sound event", "music")},
    )
)
