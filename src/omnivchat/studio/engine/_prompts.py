"""What the Director is asked at each module, in words (the payload carries the facts). Hosted Directors read
these; the offline template Director acts on the payload alone."""

from __future__ import annotations

INSTRUCTIONS: dict[str, str] = {
    "description": (
        "Pick the corpus passage that best suits the sampled attributes and outline, in a few sentences, a "
        "dialogue that tests the subcategory: who the user is, where they are, what they show and what they ask. "
        'Answer JSON {"description": str, "passage": passage id}.'
    ),
    "plan": (
        "Refine the outline into a plan of the scene and the storyline, then review it yourself: every object the "
        "question needs is present, speech does not contradict what is visible, and the user yields the turn. "
        'Answer JSON {"plan": str, "review": str}.'
    ),
    "script": (
        "Write the structured script: scene fields and contiguous timed segments of speech, action, silence, sound "
        "and on-screen text, obeying every rule listed. Keep the sampled attributes exactly. Answer the Script JSON."
    ),
    "validation_review": (
        "The Validator reported these violations. Dismiss the ones that context shows are not real (a forbidden "
        "word inside an unrelated compound, fast speech in an emergency) or ask for a revision. "
        'Answer JSON {"action": "dismiss" | "revise", "reason": str}.'
    ),
    "script_review": (
        "Does the script test the subcategory? Check object presence, false premises, that the question needs the "
        "clip (audio alone must not answer a visual question) and that it can be answered offline. "
        'Answer JSON {"action": "accept" | "rewrite" | "discard", "reason": str}.'
    ),
    "video_plan": (
        "Select the rendering fragments compatible with the scene (a clear-face rule conflicts with a camera facing "
        'away). Answer JSON {"fragments": [fragment ids]}.'
    ),
    "video_review": (
        "Compare the Reviewer's caption, quality report and any Q-A answers with the script. Accept, re-seed a "
        "random rendering defect, rewrite the script for a repeated defect, ask focused questions, or discard. "
        'Answer JSON {"action": "accept" | "reseed" | "rewrite" | "qa" | "discard", "reason": str, '
        '"questions": [{"text": str, "about": {...}}]}.'
    ),
    "reply_plan": (
        "Plan a grounded reply: keep only facts the caption or Q-A confirm; list what you leave out. "
        'Answer JSON {"facts": [str], "left_out": [str]}.'
    ),
    "reply": (
        "Write the reference reply in the user's language, natural when spoken aloud, and (final turn) a tiered "
        "rubric: tier 0 the language gate, then binary, grounded criteria with basic correctness before detail. "
        'Answer JSON {"reply": str, "rubric": [{"tier": int, "text": str}]}.'
    ),
    "reply_review": (
        "Check the reply and rubric against the evidence: the user's language, every criterion binary and grounded, "
        "tier order, the reply meeting every criterion, natural spoken style. "
        'Answer JSON {"action": "accept" | "refine", "reason": str}.'
    ),
    "joint_plan": (
        "Plan every turn of the dialogue and, for each turn after the first, the earlier clip, audio or final "
        "frame it uses, within the reference budget. "
        'Answer JSON {"plan": str, "turns": [{"turn": int, "summary": str, "references": [...]}]}.'
    ),
    "plan_review": (
        "Review the joint plan in full: language, every turn, every media link, the final silent wait. "
        'Answer JSON {"action": "accept" | "revise" | "discard", "reason": str}.'
    ),
    "prompt": (
        "Write this turn's rendering prompt from the reviewed plan and the shared rendering instructions, with "
        "earlier media as placeholders (turnN.clip, turnN.audio, turnN.final_frame). Answer the Script JSON."
    ),
    "prompt_review": (
        "Check this turn's prompt and its media links before rendering. Accept, rewrite it locally, or update the "
        'plan from the first affected turn. Answer JSON {"action": "accept" | "rewrite" | "update_plan", '
        '"reason": str, "turn": int | null}.'
    ),
    "final_reply_plan": (
        "Read every turn's clip evidence and the earlier replies; plan the final reply from confirmed facts only. "
        'Answer JSON {"facts": [str], "left_out": [str]}.'
    ),
}
