"""Recorded dialogues (OmniVChat-Bench-Human, paper Appendix D.2): clips people recorded, with a corrected caption
(and the user's speech) in place of a synthesis script, turned into bench instances marked ``source: human``.

For each recording the Director reads the caption, never the clip, and writes a spoken reference reply and a
tiered rubric. The answer is validated deterministically (:func:`answer_problems`); a failed validation goes back
to the Director with its problems, for up to three rounds. A recording still failing after the third round is
reported as not imported, with its problems, and nothing of it enters the bench.

Input: a manifest JSONL file, one recording a line (docs/studio.md, "Recorded dialogues")::

    {"id": "rec-001", "video": "clips/rec-001.mp4", "subcategory": "ICC", "language": "zh",
     "caption": "A woman in a red T-shirt sits at a desk ...", "transcript": "喂？能听到吗？"}

or, for a multi-turn recording, ``"turns": [{"video", "caption", "transcript"?, "reply"?}, ...]`` where every turn
but the last carries the reply the user heard. Every line, field and clip is checked before anything is written.

Layout of the output directory::

    bench.yaml, instances.jsonl, media/<id>/turnN.mp4     the bench (clips copied byte for byte)
    recorded/settings.json                                 the validation settings (a rerun must use the same)
    recorded/calls.sqlite                                  every Director call (the run store: replayed on resume)
    recorded/traces/<id>.json                              each recording: rounds, problems, decisions, status
    recorded/accepted/<id>.json                            the bench record of each imported recording

Resumable: a recording whose trace matches its manifest entry and clips is done; any other is run again, its
Director calls answered from the store where they were made before. Repeating a finished import adds nothing.

The work is split by job: ``_manifest`` (reading and checking the manifest), ``_validation`` (the deterministic
checks of an answer), ``_import`` (the Director rounds, the clips, the bench) and ``_traces`` (what an import keeps
under ``recorded/``).
"""

from __future__ import annotations

from omnivchat.studio.recorded._import import RECORDED_MODULE, RECORDED_REPLY_INSTRUCTIONS, import_recorded
from omnivchat.studio.recorded._manifest import LANGUAGES, RecordedError, RecordedTurn, Recording, load_recordings
from omnivchat.studio.recorded._traces import (
    MAX_ROUNDS,
    RECORDED_DIR,
    SETTINGS_FILE,
    ImportSettings,
    ImportSummary,
    Outcome,
    RecordedTrace,
    Round,
    read_recorded_trace,
)
from omnivchat.studio.recorded._validation import (
    DEFAULT_BRANDS,
    HIDDEN_SOURCE_PATTERNS,
    LANGUAGE_NAMES,
    MAX_CRITERIA,
    MIN_CRITERIA,
    PLACEHOLDER,
    TRADEMARK_SIGNS,
    answer_problems,
    brand_in,
    hidden_source,
    names_language,
    scrub_brands,
)

__all__ = [
    "DEFAULT_BRANDS",
    "HIDDEN_SOURCE_PATTERNS",
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "MAX_CRITERIA",
    "MAX_ROUNDS",
    "MIN_CRITERIA",
    "PLACEHOLDER",
    "RECORDED_DIR",
    "RECORDED_MODULE",
    "RECORDED_REPLY_INSTRUCTIONS",
    "SETTINGS_FILE",
    "TRADEMARK_SIGNS",
    "ImportSettings",
    "ImportSummary",
    "Outcome",
    "RecordedError",
    "RecordedTrace",
    "RecordedTurn",
    "Recording",
    "Round",
    "answer_problems",
    "brand_in",
    "hidden_source",
    "import_recorded",
    "load_recordings",
    "names_language",
    "read_recorded_trace",
    "scrub_brands",
]
