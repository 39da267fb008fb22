"""What the Director is asked at each module, in words (the payload carries the facts). Hosted Directors read
these, wrapped in the role and the answer's JSON schema (``omnivchat.studio.hosted``); the offline template
Director acts on the payload alone. Our own words, after the paper's Section 2 and Appendix C."""

from __future__ import annotations

INSTRUCTIONS: dict[str, str] = {
    "description": (
        "Choose the corpus passage that best suits the sampled attributes, and outline in a few sentences a "
        "dialogue that tests the subcategory: who the user is, where they are, what the camera sees, what they "
        "show or do, and what they ask. The passage broadens the setting; the test comes from the subcategory. "
        'Answer {"description": str, "passage": the passage id}.'
    ),
    "plan": (
        "Refine the outline into a plan of the scene and the storyline: every object, person and sound the "
        "question depends on, where each is in the image, and when things happen. Then review your plan: is every "
        "object the question needs present and unambiguous (a red-and-white cup makes 'the red cup' ambiguous)? "
        "Does any speech contradict what is visible? Does the user clearly yield the turn at the end? Say what you "
        'changed. Answer {"plan": str, "review": str}.'
    ),
    "script": (
        "Write the structured script the Renderer will follow: the scene (setting, people, objects, camera) and "
        "contiguous timed segments from 0 to the clip's end (speech with the exact words, action, silence, sound, "
        "music, on-screen text), with no gap. Obey every rule listed: speaking rate, duration, the final silent "
        "wait, forbidden phrases. Put the sampled attributes, unchanged, in fields.attributes, and the media the "
        "answer needs (video, audio) in fields.requires. If feedback lists earlier errors, fix every one."
    ),
    "validation_review": (
        "The deterministic Validator reported these violations. Some may be false in context: a forbidden word "
        "inside an unrelated compound, a device heard only as ambient sound, fast speech during an argument or an "
        "emergency. Dismiss the report only if every violation is such an exception; otherwise ask for a revision. "
        'A violation marked "hard": true (the sampled attributes or language changed, a later turn without a '
        "reference to earlier media) is never an exception: never dismiss it; the engine revises it whatever you "
        'answer. Answer {"action": "dismiss" or "revise", "reason": str}.'
    ),
    "script_review": (
        "Does the script test the subcategory? Check that every object it relies on is present, that a false "
        "premise is really false in the scene, that the clip is needed (a question that audio alone answers does "
        "not test vision), and that the answer can be known from the clip alone. Accept it, ask for a rewrite of a "
        "repairable defect, or discard the instance when it cannot be repaired. "
        'Answer {"action": "accept", "rewrite" or "discard", "reason": str}.'
    ),
    "video_plan": (
        "Select the shared rendering instructions (fragments) that are compatible with this scene: continuous "
        "motion, camera constraints, plausible bodies, lip synchronisation, no subtitles. Leave out one that "
        "conflicts with the scene (a clear-face rule with a camera facing away from the user; strong backlight "
        'that hides the face by design). Answer {"fragments": [fragment ids]}.'
    ),
    "video_review": (
        "Compare the Reviewer's caption, quality report and any Q-A answers with the script. A small transcript "
        "difference alone is not a rendering defect (the Reviewer may mishear); scripted background details that "
        "are absent can be accepted if the storyline and the dialogue are intact. Accept the clip; re-seed a "
        "random rendering defect (malformed hands, a glitch); rewrite the script for a defect that repeats; ask "
        "focused questions when the evidence is unclear (only while qa_left > 0); or discard. A clip with a "
        '"hard" violation (speech heard in another language than sampled) is never accepted. '
        'Answer {"action": "accept", "reseed", "rewrite", "qa" or "discard", "reason": str, '
        '"questions": [{"text": str, "about": {}}]}.'
    ),
    "reply_plan": (
        "Plan a grounded reply: keep the facts the caption and the Q-A answers confirm, drop scripted facts the "
        'clip does not support, and list what you dropped. Answer {"facts": [str], "left_out": [str]}.'
    ),
    "reply": (
        "Write the reference reply in the user's language: what a good assistant would say aloud, natural, brief, "
        "grounded in the planned facts. On the final turn also write the rubric: tier 0 is exactly one criterion, "
        "that the reply is in the user's language; then binary, checkable criteria grounded in the clip, basic "
        "correctness in tier 1 before detail and style in later tiers. The reference must meet every criterion. "
        'Answer {"reply": str, "rubric": [{"tier": int, "text": str}]} (an empty rubric before the final turn).'
    ),
    "reply_review": (
        "Check the reply and the rubric against the evidence and the subcategory: the user's language, every "
        "criterion binary and grounded in the clip, tiers from basic correctness to detail, the reference meeting "
        "every criterion, and a reply that sounds natural aloud. Accept, or ask for one refinement saying what to "
        'fix. Answer {"action": "accept" or "refine", "reason": str}.'
    ),
    "joint_plan": (
        "Plan every turn of the dialogue at once: what the user shows and says in each turn, and for each turn "
        "after the first which earlier clip, audio or final frame it uses (turnN.clip, turnN.audio, "
        "turnN.final_frame) within the reference budget. A static scene can reuse an older clean clip; a change of "
        "place or a gradual change needs the previous turn; keeping a voice needs audio with a face frame. "
        'Answer {"plan": str, "turns": [{"turn": int, "summary": str, "references": [{"turn": int, "kind": '
        '"clip" | "audio" | "final_frame", "purpose": str}]}]}.'
    ),
    "plan_review": (
        "Review the joint plan as a whole, in a separate pass: the language, every turn, every media link (each "
        "points to an earlier turn, within the budget), consistency of people and places across turns, and a "
        'silent wait at the end of each turn. Answer {"action": "accept", "revise" or "discard", "reason": str}.'
    ),
    "prompt": (
        "Write this turn's rendering prompt as a script, from the reviewed plan and the shared rendering "
        "instructions, with the earlier media it uses as references (turnN.clip, turnN.audio, turnN.final_frame; "
        "only those listed as available). Obey the rules listed, including the fields required at this turn's "
        "position. Answer the Script JSON."
    ),
    "prompt_review": (
        "Check this turn's prompt and its media links before rendering, with the Validator's report. Accept it, "
        "rewrite it locally, or update the plan from the first affected turn when the plan itself is at fault. "
        'A prompt with a violation marked "hard": true is never accepted (the engine rewrites it if you do). '
        'Answer {"action": "accept", "rewrite" or "update_plan", "reason": str, "turn": int or null}.'
    ),
    "final_reply_plan": (
        "Read every turn's evidence and the earlier replies, and plan the final reply from confirmed facts only, "
        "consistent with what was said before. "
        'Answer {"facts": [str], "left_out": [str]}.'
    ),
}
