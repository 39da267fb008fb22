"""What a hosted Director and Reviewer read: fixed parts shared by every subcategory (the role, each module's task,
the answer's JSON contract) and flexible parts taken from the subcategory's configuration (its definition, the
sampled attributes and what they mean, the Validator's rules, what a good reply does). Our own words, after the
paper's Section 2 and Appendix C."""

from __future__ import annotations

import json
from typing import Any

PROMPTS_VERSION = "1"  # part of each hosted agent's name: new prompts are new calls, not replays of old answers

DIRECTOR_ROLE = """\
You are the Director of a data engine that synthesizes audio-visual dialogues between a user and an AI assistant.
In each dialogue the user speaks to the assistant inside a short video clip recorded on their own device; the
assistant must hear and see the clip to answer well. You handle every text task: you outline the dialogue, plan
the scene, write the script a video generator will render, review the evidence about the rendered clip, and write
the reference reply and the rubric that grades other models' replies.

Rules that hold at every step:
- The sampled attributes are fixed for this instance. Never change them to make the dialogue easier.
- The question must need the clip: if the audio alone, or common sense alone, answers it, it does not test the
  subcategory.
- Never reveal the subcategory under test in what the user says (for example, never announce a camera switch or
  a change of speaker when the test is to notice it).
- Ground the reply in what the rendered clip shows and says, as the Reviewer reports it, not in what the script
  intended.
- Answer with one JSON object only, exactly in the shape asked, with no text around it."""

REVIEWER_ROLE = """\
You are the Reviewer of a data engine that synthesizes audio-visual dialogue clips. You watch and listen to one
rendered clip and report what is in it. You do not know what the clip was meant to show, and you do not judge
whether it is acceptable: report only what you see and hear, precisely, with times in seconds from the start.
Answer with one JSON object only, exactly in the shape asked, with no text around it."""

CAPTION_TASK = """\
Describe the clip and write its quality report.
- "caption": two to four sentences: the setting, the people (clothes, expression, what they do), the objects that
  matter (colour, where they are in the image: left, right, centre), the camera (facing the user or facing away,
  moving or still), and what is said and when.
- "transcript": the exact words the user speaks, in the language spoken.
- "report": seven aspects, each {"ok": true or false, "note": what you saw}:
  "cuts" (any scene cut or jump), "realism" (anything implausible), "delivery_speed" (speech unnaturally fast or
  slow), "body_structure" (malformed hands, arms or faces), "appearance" (lighting, blur, faces hidden),
  "artifacts" (glitches, audio clicks, missing or broken audio, abrupt endings), "on_screen_text" (any subtitles
  or text drawn on the image).
- "observed": {"objects": [{"name", "colour_seen", "image_side"}], "people": [...], "speech": [{"start", "end",
  "text"}], "camera": "front" or "rear", "has_audio": true or false, "duration_s": seconds}."""

QA_TASK = """\
Answer each question from the clip alone. When the clip does not show or say it, answer "cannot tell from the
clip". Answer JSON {"answers": [{"index": the question's number, "answer": "..."}]}."""

# Payload keys shown in their own sections (or constant per instance), not again in the raw input.
_SHOWN_APART = frozenset(
    {"instance", "subcategory", "assignment", "attribute_meanings", "config", "rules", "language", "extra_requirement"}
)
_REPLY_MODULES = frozenset({"reply_plan", "reply", "reply_review", "final_reply_plan"})


def director_system(module_title: str, instructions: str, schema: dict[str, Any]) -> str:
    """The fixed part: the role, this module's task and the JSON contract of its answer."""
    return (
        f"{DIRECTOR_ROLE}\n\n## This step: {module_title}\n{instructions}\n\n"
        f"## Answer\nOne JSON object matching this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}"
    )


def director_user(module: str, payload: dict[str, Any], history: list[dict[str, Any]]) -> str:
    """The flexible part: the subcategory, the fixed attributes, the rules, the work so far, and the input."""
    config = payload.get("config", {})
    sub = payload.get("subcategory", {})
    parts = [f"## Subcategory\n{sub.get('name', '')} ({sub.get('code', '')}): {sub.get('definition', '')}"]
    meanings = payload.get("attribute_meanings", {})
    lines = [f"- {k} = {v}: {meanings.get(k, '')}".rstrip(": ") for k, v in payload.get("assignment", {}).items()]
    parts.append("## Sampled attributes (fixed for this instance)\n" + "\n".join(lines))
    if payload.get("extra_requirement"):
        parts.append(f"## Extra requirement (stage it too)\n{payload['extra_requirement']}")
    parts.append(f"## Language of the dialogue\n{payload.get('language', '')}")
    if payload.get("rules"):
        parts.append(f"## Rules the script must obey (a deterministic Validator checks each)\n{payload['rules']}")
    if module in _REPLY_MODULES and config.get("reply_requirements"):
        parts.append("## What a good reply does\n" + "\n".join(f"- {r}" for r in config["reply_requirements"]))
    if history:
        done = "\n".join(f"- {h['module']}: {json.dumps(h['answer'], ensure_ascii=False)}" for h in history)
        parts.append(f"## Your work so far on this instance\n{done}")
    rest = {k: v for k, v in payload.items() if k not in _SHOWN_APART}
    parts.append(f"## Input\n{json.dumps(rest, ensure_ascii=False, indent=1)}")
    return "\n\n".join(parts)


def qa_user(questions: list[str]) -> str:
    return QA_TASK + "\n\n" + "\n".join(f"{i}. {q}" for i, q in enumerate(questions, start=1))
