"""The deterministic Validator (modules 4 and m): one test per rule, each with a script that breaks exactly that
rule, plus multi-turn records and the rules in words."""

from __future__ import annotations

from typing import Any

import pytest

from omnivchat.studio.config import SubcategoryConfig, load_config
from omnivchat.studio.engine._types import MediaReference, Script, Segment, Violation
from omnivchat.studio.engine._validator import rules_text, validate_record, validate_script

SVMR = load_config("SVMR")
MDCC = load_config("MDCC")
MRR = load_config("MRR")
MIST = load_config("MIST")
UPC = load_config("UPC")

SVMR_A = {
    "language": "en",
    "users": "one_user",
    "domain": "office_work",
    "camera": "selfie_walking",
    "audio_interference": "medium",
    "visual_interference": "high",
    "question_type": "side_identification",
    "target_anchor": "in_scene",
}
MDCC_A = {
    "language": "en",
    "users": "one_user",
    "domain": "volunteering_community",
    "camera": "laptop_webcam",
    "audio_interference": "low",
    "visual_interference": "low",
    "turns": "2",
    "trigger": "reopened_app",
}
EN_QUESTION = "There is a meeting room on each side of me, is the one on my left open?"  # 17 words
ZH_QUESTION = "我两边各有一间会议室，我左边那间的门是开着的吗？"  # 22 characters


def script(
    assignment: dict[str, str] | None = None,
    *,
    language: str = "en",
    text: str | None = None,
    duration: float = 11.0,
    segments: list[Segment] | None = None,
    fields: dict[str, Any] | None = None,
    references: list[MediaReference] | None = None,
    question: str | None = None,
) -> Script:
    """A valid SVMR-style script: an action from 0 s, the question from 1 s to 7 s (2.8 words/s in English,
    3.7 characters/s in Chinese), then a silent wait to the end."""
    assignment = dict(SVMR_A if assignment is None else assignment)
    if language != "en" and "language" in assignment:
        assignment["language"] = language
    said = text if text is not None else (EN_QUESTION if language == "en" else ZH_QUESTION)
    return Script(
        language=language,
        duration_s=duration,
        question=question if question is not None else said,
        segments=segments
        if segments is not None
        else [
            Segment(start=0.0, end=1.0, kind="action", text="He walks along the corridor."),
            Segment(start=1.0, end=7.0, kind="speech", text=said),
            Segment(start=7.0, end=duration, kind="silence", text="He waits, looking at the lens."),
        ],
        fields={"attributes": assignment, **(fields or {})},
        references=references or [],
    )


def rules(violations: list[Violation]) -> set[str]:
    return {v.rule for v in violations}


def only(violations: list[Violation], rule: str) -> Violation:
    """The one violation, which must be of ``rule``."""
    assert [v.rule for v in violations] == [rule], violations
    return violations[0]


# ------------------------------------------------------------------------------------------------------ passing


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_valid_script_passes(language: str) -> None:
    assignment = {**SVMR_A, "language": language}
    assert validate_script(script(assignment, language=language), SVMR, assignment) == []


def test_every_shipped_config_accepts_a_plain_valid_single_turn_script() -> None:
    for code in ("ICC", "UCR", "SVMR", "AR", "DR", "SPSD", "STIC", "PLA", "AOR", "FGC", "ER"):
        config = load_config(code)
        assignment = {name: next(iter(a.values)) for name, a in config.attributes.items()}
        assignment["language"] = "en"
        assert (
            validate_script(
                script(assignment, text="Could you tell me which way the station is from here please?"),
                config,
                assignment,
            )
            == []
        ), code


# ------------------------------------------------------------------------------------------------ speaking_rate


def test_too_fast_speech() -> None:
    fast = " ".join(["word"] * 30)  # 30 words in 6 s = 5 words/s
    v = only(validate_script(script(text=fast), SVMR, SVMR_A), "speaking_rate")
    assert v.segment == 1 and "segments[1]" in v.message
    assert "30 words in 6.00 s" in v.message and "5.00 words/s" in v.message and "3.2" in v.message


def test_too_slow_speech() -> None:
    v = only(validate_script(script(text="Left?"), SVMR, SVMR_A), "speaking_rate")
    assert "1 words in 6.00 s" in v.message and "0.17 words/s" in v.message and "minimum of 0.8" in v.message


def test_chinese_rate_counts_characters() -> None:
    zh = {**SVMR_A, "language": "zh"}
    fast = "我" * 40  # 40 characters in 6 s = 6.67/s, over 5.5
    v = only(validate_script(script(zh, language="zh", text=fast), SVMR, zh), "speaking_rate")
    assert "40 characters" in v.message and "6.67 characters/s" in v.message and "zh maximum of 5.5" in v.message
    # The English text at the same pace passes only under the Chinese bounds it is not held to.
    assert validate_script(script(zh, language="zh"), SVMR, zh) == []


def test_a_language_without_bounds_is_not_rate_checked() -> None:
    ja = {**SVMR_A, "language": "ja"}  # the Validator checks the script against the assignment, not the value list
    assert validate_script(script(ja, language="ja", text="word " * 60), SVMR, ja) == []


# ----------------------------------------------------------------------------------------------------- duration


def test_duration_outside_the_bounds() -> None:
    v = only(validate_script(script(duration=14.0), SVMR, SVMR_A), "duration")
    assert "14.00 s" in v.message and "8-13 s" in v.message


def test_a_segment_past_the_duration() -> None:
    s = script()
    late = s.model_copy(update={"duration_s": 10.0})  # the silence still runs to 11 s
    v = only(validate_script(late, SVMR, SVMR_A), "duration")
    assert v.segment == 2 and "segments[2] ends at 11.00 s" in v.message and "10.00 s" in v.message


def test_duration_within_the_tolerance_passes() -> None:
    s = script().model_copy(update={"duration_s": 11.04})
    assert validate_script(s, SVMR, SVMR_A) == []


# --------------------------------------------------------------------------------------------------- continuity


def _segments(*spans: tuple[float, float, str], speaker: str = "user") -> list[Segment]:
    texts = {"speech": EN_QUESTION, "action": "walks", "silence": ""}
    return [Segment(start=a, end=b, kind=k, text=texts.get(k, "x"), speaker=speaker) for a, b, k in spans]


def test_a_gap_in_the_timeline() -> None:
    segs = _segments((0, 1, "action"), (1, 7, "speech"), (8, 11, "silence"))
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "continuity")
    assert "from 7.00 s to 8.00 s" in v.message and "1.00 s gap" in v.message and v.segment == 2


def test_an_uncovered_start_and_end() -> None:
    segs = _segments((0.5, 7, "speech"), (7, 10.5, "silence"))
    found = validate_script(script(segments=segs), SVMR, SVMR_A)
    assert rules(found) == {"continuity"} and len(found) == 2
    assert "from 0.00 s to 0.50 s" in found[0].message
    assert "from 10.50 s to 11.00 s" in found[1].message and "end of the clip" in found[1].message


def test_segments_out_of_order() -> None:
    segs = _segments((1, 7, "speech"), (0, 1, "action"), (7, 11, "silence"))
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "continuity")
    assert v.segment == 1 and "segments[1] starts at 0.00 s, before segments[0] (1.00 s)" in v.message


def test_a_segment_that_does_not_end_after_it_starts() -> None:
    segs = _segments((0, 1, "action"), (1, 7, "speech"), (5, 5, "action"), (7, 11, "silence"))
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "continuity")
    assert v.segment == 2 and "ends at 5.00 s, not after its start 5.00 s" in v.message


def test_one_speaker_never_overlaps_itself() -> None:
    segs = [
        Segment(start=0, end=6, kind="speech", text=EN_QUESTION),
        Segment(start=1, end=7, kind="speech", text=EN_QUESTION),  # starts inside the first, same speaker
        Segment(start=7, end=11, kind="silence"),
    ]
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "continuity")
    assert v.segment == 1 and "overlaps segments[0]" in v.message and "'user'" in v.message


def test_different_speakers_may_overlap() -> None:
    segs = [
        Segment(start=0, end=6, kind="speech", text=EN_QUESTION),
        Segment(start=1, end=7, kind="speech", text=EN_QUESTION, speaker="bystander"),
        Segment(start=7, end=11, kind="silence"),
    ]
    assert validate_script(script(segments=segs), SVMR, SVMR_A) == []


# ---------------------------------------------------------------------------------------------- forbidden_phrase


def test_a_forbidden_phrase_in_speech() -> None:
    text = "Is the open door on the image left or on my left side, the corridor one?"
    v = only(validate_script(script(text=text), SVMR, SVMR_A), "forbidden_phrase")
    assert v.segment == 1 and "segments[1] (speech)" in v.message and "'image left'" in v.message


def test_a_forbidden_phrase_in_on_screen_text_and_question_only() -> None:
    segs = [*script().segments, Segment(start=7, end=11, kind="text", text="FROM YOUR VIEW")]
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "forbidden_phrase")
    assert v.segment == 3 and "segments[3] (text)" in v.message and "'from your view'" in v.message  # any case
    s = script(question="Mirrored, is the door on my left open?")
    v = only(validate_script(s, SVMR, SVMR_A), "forbidden_phrase")
    assert v.segment is None and "the question says 'mirrored'" in v.message


def test_a_phrase_rule_applies_only_when_its_when_matches() -> None:
    text = "I am facing the camera now, so is the door on my left open or closed?"
    rear = {**SVMR_A, "camera": "rear_handheld"}
    v = only(validate_script(script(rear, text=text), SVMR, rear), "forbidden_phrase")
    assert "'facing the camera'" in v.message
    assert validate_script(script(text=text), SVMR, SVMR_A) == []  # a selfie: the rule's when does not match


def test_a_phrase_rule_applies_only_in_its_language() -> None:
    zh = {**SVMR_A, "language": "zh"}
    said = "从你的角度看，我左边那间会议室的门开着吗？"
    v = only(validate_script(script(zh, language="zh", text=said), SVMR, zh), "forbidden_phrase")
    assert "'从你的角度'" in v.message
    # The English list does not apply to a Chinese script, nor the Chinese list to an English one.
    mixed = "镜像 is a word here, and the door on my left side, is it open or not?"
    assert validate_script(script(text=mixed), SVMR, SVMR_A) == []
    assert validate_script(script(zh, language="zh", text="mirrored我左边那间会议室的门开着吗？"), SVMR, zh) == []


def test_latin_phrases_match_whole_words_only() -> None:
    a = {**MDCC_A, "turns": "2"}
    ok = script(a, text="I lean against the table, can you still hear me from over here?")
    assert validate_script(ok, MDCC, a, turn=1, n_turns=2) == []
    bad = script(a, text="Hello AGAIN, can you still hear me from over here, is it working?")
    v = only(validate_script(bad, MDCC, a, turn=1, n_turns=2), "forbidden_phrase")
    assert "'again'" in v.message and v.turn == 1


def test_cjk_phrases_match_as_substrings() -> None:
    zh = {**SVMR_A, "language": "zh"}
    said = "你看我画面左边的门，是开着还是关着的呢？"  # "画面左" inside a longer run of characters
    v = only(validate_script(script(zh, language="zh", text=said), SVMR, zh), "forbidden_phrase")
    assert "'画面左'" in v.message


# ---------------------------------------------------------------------------------------------- required_segment


def test_a_missing_required_segment_kind() -> None:
    segs = _segments((0, 1, "action"), (1, 7, "speech"), (7, 11, "action"))
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "required_segment")
    assert "'silence'" in v.message


# ------------------------------------------------------------------------------------------------ completion_cue


def test_the_user_must_end_with_a_silent_wait() -> None:
    segs = _segments((0, 4.5, "action"), (4.5, 10.5, "speech"), (10.5, 11, "silence"))
    v = only(validate_script(script(segments=segs), SVMR, SVMR_A), "completion_cue")
    assert v.segment == 1 and "10.50 s" in v.message and "0.50 s before" in v.message and "at least 1 s" in v.message


def test_an_unfinished_request_needs_no_completion_cue() -> None:
    upc = {name: next(iter(a.values)) for name, a in UPC.attributes.items()} | {"language": "en"}
    segs = _segments((0, 5, "action"), (5, 11, "speech"))  # speech runs to the very end
    assert validate_script(script(upc, segments=segs), UPC, upc) == []


def test_the_completion_cue_follows_the_active_speaker() -> None:
    segs = [
        Segment(start=0, end=6, kind="speech", text=EN_QUESTION, speaker="B"),
        Segment(start=5, end=10.8, kind="speech", text=EN_QUESTION, speaker="A"),
        Segment(start=10.8, end=11, kind="silence"),
    ]
    # A bystander "A" talks until 10.8 s; the active speaker "B" finished at 6 s: the cue holds.
    s = script(segments=segs, fields={"active_speaker": "B"})
    assert rules(validate_script(s, SVMR, SVMR_A)) == set()
    v = only(validate_script(script(segments=segs, fields={"active_speaker": "C"}), SVMR, SVMR_A), "completion_cue")
    assert "'C'" in v.message


# ----------------------------------------------------------------------------------------------------- attribute


def test_the_script_must_carry_the_sampled_assignment() -> None:
    s = script()
    bare = s.model_copy(update={"fields": {}})
    v = only(validate_script(bare, SVMR, SVMR_A), "attribute")
    assert "no fields.attributes" in v.message


def test_each_differing_attribute_is_reported() -> None:
    changed = {**SVMR_A, "camera": "rear_walking", "visual_interference": "low"}
    found = validate_script(script(changed), SVMR, SVMR_A)
    assert rules(found) == {"attribute"} and len(found) == 2
    assert any("'camera' is 'rear_walking'" in v.message and "'selfie_walking' was sampled" in v.message for v in found)


def test_a_missing_or_extra_attribute() -> None:
    less = {k: v for k, v in SVMR_A.items() if k != "domain"}
    assert "lacks 'domain'" in only(validate_script(script(less), SVMR, SVMR_A), "attribute").message
    more = {**SVMR_A, "mood": "sunny"}
    assert "'mood'" in only(validate_script(script(more), SVMR, SVMR_A), "attribute").message


def test_a_numeric_turns_value_counts_as_the_sampled_string() -> None:
    s = script(MDCC_A)
    s.fields["attributes"] = {**MDCC_A, "turns": 2}  # a Director's JSON may write the sampled "2" as 2
    assert validate_script(s, MDCC, MDCC_A, turn=1, n_turns=2) == []
    s.fields["attributes"] = {**MDCC_A, "turns": 2.0}
    assert "'turns'" in only(validate_script(s, MDCC, MDCC_A, turn=1, n_turns=2), "attribute").message


def test_the_scripts_language_must_be_the_sampled_one() -> None:
    s = script().model_copy(update={"language": "zh"})
    v = only(validate_script(s, SVMR, SVMR_A), "attribute")
    assert "'zh'" in v.message and "'en' was sampled" in v.message


# ---------------------------------------------------------------------------------------------------- turn_field


def _mrr(turns: int) -> dict[str, str]:
    a = {name: next(iter(attr.values)) for name, attr in MRR.attributes.items()}
    return a | {"language": "en", "turns": str(turns)}


def _ref(turn: int, kind: str = "clip") -> MediaReference:
    return MediaReference(turn=turn, kind=kind)


def test_the_final_turn_needs_its_required_field() -> None:
    a = _mrr(6)
    done = {f"turn{k}.clip" for k in range(1, 6)}
    final = script(a, references=[_ref(5)])
    v = only(validate_script(final, MRR, a, turn=6, n_turns=6, completed=done), "turn_field")
    assert v.turn == 6 and "'recall_target'" in v.message and "final turn" in v.message
    ok = script(a, references=[_ref(5)], fields={"recall_target": {"object": "basket", "turn": 2}})
    assert validate_script(ok, MRR, a, turn=6, n_turns=6, completed=done) == []


def test_a_field_forbidden_at_a_position() -> None:
    a = _mrr(6)
    first = script(a, fields={"recall_target": "basket"})
    v = only(validate_script(first, MRR, a, turn=1, n_turns=6), "turn_field")
    assert "turn 1 of 6 has the field 'recall_target'" in v.message and "first turn" in v.message
    middle = script(a, fields={"recall_target": "basket"}, references=[_ref(2)])
    v = only(validate_script(middle, MRR, a, turn=3, n_turns=6, completed={"turn2.clip"}), "turn_field")
    assert "middle turn" in v.message


def test_a_field_required_at_every_turn() -> None:
    a = {name: next(iter(attr.values)) for name, attr in MIST.attributes.items()} | {"language": "en", "turns": "2"}
    v = only(validate_script(script(a), MIST, a, turn=1, n_turns=2), "turn_field")
    assert "'active_speaker'" in v.message and "every turn" in v.message


# ----------------------------------------------------------------------------------------------------- reference


def test_a_later_turn_needs_a_reference() -> None:
    a = {**MDCC_A}
    s = script(a, fields={"connection_check": "Hello?"})
    v = only(validate_script(s, MDCC, a, turn=2, n_turns=2, completed={"turn1.clip"}), "reference")
    assert v.turn == 2 and "turn 2 uses no earlier media" in v.message


def test_a_reference_must_point_to_a_completed_earlier_turn() -> None:
    a = {**MDCC_A, "turns": "3"}
    s = script(a, references=[_ref(2), _ref(1, "final_frame")])
    done = {"turn1.clip", "turn1.final_frame"}
    v = only(validate_script(s, MDCC, a, turn=2, n_turns=3, completed=done), "reference")
    assert "references[0] (turn2.clip) is not from a turn before turn 2" in v.message
    s = script(a, references=[_ref(1, "audio")])
    v = only(validate_script(s, MDCC, a, turn=2, n_turns=3, completed={"turn1.clip"}), "reference")
    assert "references[0] (turn1.audio) is not a completed turn's media" in v.message


def test_the_reference_budget() -> None:
    a = {**MDCC_A, "turns": "4"}
    done = {f"turn{k}.{m}" for k in (1, 2, 3) for m in ("clip", "audio", "final_frame")}
    s = script(a, fields={"connection_check": "Hi?"}, references=[_ref(1), _ref(2), _ref(3)])
    v = only(validate_script(s, MDCC, a, turn=4, n_turns=4, completed=done), "reference")
    assert "3 earlier media, over the budget of 2" in v.message


def test_a_single_turn_script_uses_no_reference() -> None:
    found = validate_script(script(references=[_ref(1)]), SVMR, SVMR_A)
    assert rules(found) == {"reference"}
    assert any("over the budget of 0" in v.message for v in found)


# ------------------------------------------------------------------------------------------------ validate_record


def _mdcc_record(n: int, **final: Any) -> tuple[list[Script], dict[str, str]]:
    a = {**MDCC_A, "turns": str(n)}
    turns = [script(a, references=[_ref(k - 1)] if k > 1 else []) for k in range(1, n)]
    turns.append(
        script(a, fields={"connection_check": "Hello? Are you still there?"}, references=[_ref(n - 1)], **final)
    )
    return turns, a


def test_a_valid_record_passes() -> None:
    record, a = _mdcc_record(3)
    assert validate_record(record, MDCC, a) == []


def test_a_record_checks_each_turn_at_its_position() -> None:
    record, a = _mdcc_record(3)
    record[0] = script(a, fields={"connection_check": "Hello?"})  # the check belongs to the final turn only
    v = only(validate_record(record, MDCC, a), "turn_field")
    assert v.turn == 1


def test_a_record_knows_which_media_are_completed() -> None:
    record, a = _mdcc_record(3)
    record[1] = script(a, references=[_ref(1, "final_frame"), _ref(1, "audio")])
    assert validate_record(record, MDCC, a) == []
    record[1] = script(a, references=[_ref(3)])
    v = only(validate_record(record, MDCC, a), "reference")
    assert v.turn == 2 and "turn3.clip" in v.message


def test_a_record_with_the_wrong_number_of_turns() -> None:
    record, a = _mdcc_record(3)
    four = {**a, "turns": "4"}
    # Each turn's attributes still say "3": those differ from the sampled "4" too.
    found = validate_record(record, MDCC, four)
    assert rules(found) == {"turns", "attribute"}
    v = only([x for x in found if x.rule == "turns"], "turns")
    assert "3 turn(s) but 4 were sampled" in v.message and v.turn is None
    assert rules(validate_record([], MDCC, a)) == {"turns"}


def test_a_record_keeps_one_language() -> None:
    record, a = _mdcc_record(2)
    record[1] = record[1].model_copy(update={"language": "zh", "question": ZH_QUESTION})
    found = validate_record(record, MDCC, a)
    lang = only([v for v in found if v.rule == "language"], "language")
    assert lang.turn == 2 and "'zh'" in lang.message and "turn 1 is in 'en'" in lang.message
    assert rules(found) == {"language", "attribute"}  # and the sampled language differs from the script's


def test_single_turn_violations_carry_the_turn_in_a_record() -> None:
    v = only(validate_record([script(duration=14.0)], SVMR, SVMR_A), "duration")
    assert v.turn == 1


# ---------------------------------------------------------------------------------------------------- rules_text


ALL_RULES = (
    "speaking_rate",
    "duration",
    "continuity",
    "forbidden_phrase",
    "required_segment",
    "completion_cue",
    "attribute",
    "turn_field",
    "reference",
)


@pytest.mark.parametrize("config", [MDCC, MRR, MIST], ids=lambda c: c.code)
def test_rules_text_mentions_every_rule(config: SubcategoryConfig) -> None:
    a = {name: next(iter(attr.values)) for name, attr in config.attributes.items()} | {"language": "en"}
    text = rules_text(config, a, "en")
    for rule in (*ALL_RULES, "language", "turns"):
        assert f"- {rule}:" in text, rule
    assert all(line.startswith("- ") for line in text.splitlines())


def test_rules_text_uses_the_configs_numbers_and_active_rules() -> None:
    text = rules_text(SVMR, SVMR_A, "en")
    assert "between 0.8 and 3.2 words per second" in text and "8-13 s" in text and "at least 1 s" in text
    assert '"image left"' in text and "facing the camera" not in text and "画面左" not in text
    assert '"camera": "selfie_walking"' in text and "- turn_field:" not in text
    rear = {**SVMR_A, "camera": "rear_tripod"}
    assert '"facing the camera"' in rules_text(SVMR, rear, "en")
    zh = rules_text(SVMR, {**SVMR_A, "language": "zh"}, "zh")
    assert "1.5 and 5.5 characters per second" in zh and '"画面左"' in zh and '"image left"' not in zh
    upc = {name: next(iter(attr.values)) for name, attr in UPC.attributes.items()}
    assert "completion_cue: none required" in rules_text(UPC, upc, "en")


def test_every_reported_rule_name_appears_in_rules_text() -> None:
    """The prompt and the Validator speak of the same rules: each rule a violation names has a line."""
    a = {**MDCC_A, "turns": "3"}
    broken = [
        script(a, text="word " * 40, duration=16.0, fields={"connection_check": "x"}, references=[_ref(2)]),
        script(a, segments=_segments((1, 7, "speech"), (7, 8, "action")), text="again"),
    ]
    broken[1] = broken[1].model_copy(update={"question": "Are you there again?", "fields": {}})
    found = rules(validate_record(broken, MDCC, a))
    text = rules_text(MDCC, a, "en")
    assert found >= {"speaking_rate", "duration", "continuity", "forbidden_phrase", "required_segment", "attribute"}
    for rule in found:
        assert f"- {rule}:" in text, rule
