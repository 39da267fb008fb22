"""SocialOmni fixtures in the released file formats, with our own content and clips rendered on the spot."""

from __future__ import annotations

import json
from pathlib import Path

WHO = [  # (question with its interval, options, gold)
    (
        "What did the woman say from 0:01 to 0:02?",
        ["A. She asked for tea.", "B. She said hello.", "C. She left.", "D. Nothing."],
        "B",
    ),
    ("Who was speaking at the 1th and 2th second?", ["A. The man", "B. The woman", "C. Both", "D. Nobody"], "A"),
    (
        "What happened in the video from the 1st second to the 2nd second?",
        ["A.A greeting", "B.A song", "C.A phone call", "D.Silence"],
        "A",
    ),
]
WHEN = [  # (participant, timestamp, gold option letter, option_A, reference continuation)
    ("Anna", "00:02:00", "A", "YES", "Shall we start the meeting?"),
    ("Ben", "2", "B", "Yes", ""),
    ("Carla", "0:02", "A", "YES", "I can take notes today."),
    ("Dev", "1.5", "A", "Yes", "Sorry I'm late, what did I miss?"),
]


def _clip(path: Path, line: str, seed: int) -> None:
    from omnivchat.synth import render_clip

    spec = {
        "size": [160, 90], "duration": 3.0, "seed": seed, "person": {"expression": "neutral"},
        "speech": [{"text": line, "language": "en", "start": 0.2}],
    }  # fmt: skip
    render_clip(spec, path)


def make_socialomni(root: Path) -> tuple[Path, Path, Path]:
    """(annotations dir, media root, judge contexts file) for 3 Who items and 4 When items (3 gold YES)."""
    annotations, media = root / "annotations", root / "media"
    who = []
    for i, (question, options, gold) in enumerate(WHO, start=1):
        _clip(media / "level_1" / "videos" / f"video_{i}.mp4", "Hello there, nice to see you.", i)
        who.append(
            {
                "id": i,
                "video_path": f"video_{i}.mp4",
                "question": question,
                "options": options,
                "correct_answer": gold,
                "asr_content": "hello there",
                "metadata": {},
            }
        )
    data, contexts = [], {}
    for k, (name, timestamp, gold, option_a, reference) in enumerate(WHEN, start=1):
        video_id = f"video_{k:04d}"
        _clip(media / "level_2" / "videos" / f"{video_id}.mp4", f"Well, {name}, what do you think?", 10 + k)
        data.append({
            "video_id": video_id, "video_file": f"{video_id}.mp4",
            "question_1": {"question": f"Should {name} start speaking now?", "timestamp": timestamp,
                           "option_A": option_a, "option_B": "NO", "correct_answer": gold},
            "question_2": {"question": f"What should {name} say?", "answer": reference},
            "metadata": {}, "full_asr": "well what do you think",
        })  # fmt: skip
        if gold == "A":
            contexts[video_id] = {
                "context": f"Someone asks {name} what they think.",
                "target_question": f"What should {name} say?",
                "reference": reference,
            }
    (annotations / "level_1").mkdir(parents=True, exist_ok=True)
    (annotations / "level_2").mkdir(parents=True, exist_ok=True)
    (annotations / "level_1" / "dataset.json").write_text(json.dumps(who, indent=1))
    (annotations / "level_2" / "annotations_200.json").write_text(
        json.dumps({"dataset_name": "fixture", "total_items": len(data), "data": data}, indent=1)
    )
    contexts_path = root / "judge-contexts.json"
    contexts_path.write_text(json.dumps(contexts, indent=1))
    return annotations, media, contexts_path


def candidate_answers(request_json: dict) -> object:
    """A loopback model for SocialOmni runs: a How reply, B to a Who question, A (interrupt now) to a When one."""
    from omnivchat.testing import Behaviour, message_text

    text = message_text(request_json)
    if "Target participant:" in text:
        return Behaviour(text="Sure, let me start: I think we should begin.")
    if "(A, B, C or D)" in text or "\nD." in text:
        return Behaviour(text="B")
    return Behaviour(text="A")
