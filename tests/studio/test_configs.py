"""The 17 shipped subcategory configurations (omnivchat/bench/subcategories/*.yaml) and the schema's errors."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from omnivchat.bench._taxonomy import MULTI_TURN_EXTENSIONS, SUBCATEGORIES
from omnivchat.studio.config import (
    SHIPPED_DIR,
    ConfigError,
    SubcategoryConfig,
    load_all,
    load_config,
    matches,
    read_config_data,
    shipped_codes,
)
from omnivchat.studio.engine._types import SegmentKind

CONFIGS = {c.code: c for c in load_all()}
REAR = ["rear_handheld", "rear_walking", "rear_tripod", "rear_top_down"]
PAPER_FRAGMENTS = {"single_shot", "content_limit", "camera_style", "camera_constraint", "realism", "no_subtitle"}


def _raw(code: str) -> dict[str, Any]:
    data = read_config_data(SHIPPED_DIR / f"{code.lower()}.yaml")
    assert isinstance(data, dict)
    return data


def _write(tmp_path: Path, data: Any, name: str = "broken.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- the shipped set


def test_the_17_bench_subcategories_are_shipped_and_only_those() -> None:
    assert shipped_codes() == sorted(SUBCATEGORIES)
    assert sorted(CONFIGS) == sorted(SUBCATEGORIES)


@pytest.mark.parametrize("code", sorted(SUBCATEGORIES))
def test_each_config_agrees_with_the_taxonomy(code: str) -> None:
    config, sub = CONFIGS[code], SUBCATEGORIES[code]
    assert (config.name, config.category, config.turns) == (sub.name, sub.category, sub.kind)
    assert 2 <= config.definition.count(". ") + 1 <= 4  # 2-4 sentences
    assert 2 <= len(config.reply_requirements) <= 4


def test_the_multi_turn_configs_are_the_extensions_and_sample_turns() -> None:
    multi = {c.code for c in CONFIGS.values() if c.turns == "multi"}
    assert multi == set(MULTI_TURN_EXTENSIONS)
    for code in multi:
        turns = CONFIGS[code].probabilities()["turns"]
        if code == "MRR":  # 6-10 turns, inferred from the paper's Figure 3 (see the file's comment)
            assert turns == pytest.approx({"6": 0.24, "7": 0.26, "8": 0.18, "9": 0.14, "10": 0.18})
        elif code in ("MIST", "MVMS"):  # Figure 3's marginal before their two-turn exclusion halves p(2)
            assert turns == pytest.approx({"2": 0.75 / 1.375, "3": 0.52 / 1.375, "4": 0.075 / 1.375, "5": 0.03 / 1.375})
        else:  # Figure 3: 75 / 104 / 15 / 6 of the 200 dialogues of 2-5 turns
            assert turns == pytest.approx({"2": 0.375, "3": 0.52, "4": 0.075, "5": 0.03})
    assert all("turns" not in c.attributes for c in CONFIGS.values() if c.turns == "single")


@pytest.mark.parametrize("code", sorted(SUBCATEGORIES))
def test_probabilities_sum_to_one_and_language_is_40_60(code: str) -> None:
    for name, values in CONFIGS[code].probabilities().items():
        assert math.isclose(sum(values.values()), 1.0, abs_tol=1e-9), name
    assert CONFIGS[code].probabilities()["language"] == {"zh": 0.4, "en": 0.6}


def test_shared_lists_are_the_same_in_every_file() -> None:
    base = CONFIGS["SVMR"].probabilities()
    assert len(base["domain"]) == 22 and len(base["camera"]) == 14
    assert all(p == pytest.approx(1 / 22) for p in base["domain"].values())
    assert all(p == pytest.approx(1 / 14) for p in base["camera"].values())
    for kind in ("audio_interference", "visual_interference"):
        assert base[kind] == {"none": 0.25, "low": 0.25, "medium": 0.25, "high": 0.25}
    descriptions = {c: CONFIGS["SVMR"].attributes[c].values for c in ("domain", "camera")}
    for config in CONFIGS.values():
        probs = config.probabilities()
        assert probs["domain"] == base["domain"], config.code
        assert config.attributes["domain"].values == descriptions["domain"], config.code
        assert set(REAR) <= set(base["camera"])
        if config.code == "MDCC":
            continue
        assert probs["camera"] == base["camera"], config.code
        assert probs["audio_interference"] == base["audio_interference"], config.code
        assert probs["visual_interference"] == base["visual_interference"], config.code


def test_mdcc_follows_the_papers_example_3() -> None:
    mdcc = CONFIGS["MDCC"]
    probs = mdcc.probabilities()
    assert len(probs["camera"]) == 10 and all(p == pytest.approx(0.1) for p in probs["camera"].values())
    assert set(probs["camera"]) < set(CONFIGS["SVMR"].probabilities()["camera"])
    assert "laptop_webcam" in probs["camera"]
    for kind in ("audio_interference", "visual_interference"):
        assert probs[kind]["high"] == 0
        assert [probs[kind][v] for v in ("none", "low", "medium")] == pytest.approx([1 / 3] * 3)
    assert len(probs["trigger"]) == 23 and "reopened_app" in probs["trigger"]
    assert mdcc.extra_requirements is not None
    assert mdcc.extra_requirements.probability == 0.3
    assert len(mdcc.extra_requirements.options) == 16
    assert any("cough" in o for o in mdcc.extra_requirements.options)


def test_svmr_follows_the_papers_example_2() -> None:
    svmr = CONFIGS["SVMR"]
    assert svmr.probabilities()["question_type"] == {"side_identification": 0.5, "two_sided_comparison": 0.5}
    assert svmr.probabilities()["users"] == {"one_user": 1.0}
    assert "selfie_walking" in svmr.probabilities()["camera"]


def test_speaker_subcategories_have_competing_speakers() -> None:
    assert CONFIGS["SPSD"].probabilities()["users"] == {"primary_with_others": 1.0}
    assert "competing_voice" in CONFIGS["SPSD"].attributes
    assert set(CONFIGS["MIST"].probabilities()["users"]) == {"two_interactors", "two_interactors_and_bystander"}
    others = [c for c in CONFIGS.values() if c.code not in ("SPSD", "MIST")]
    assert all(c.probabilities()["users"] == {"one_user": 1.0} for c in others)


@pytest.mark.parametrize("code", sorted(SUBCATEGORIES))
def test_validator_rules_are_sensible(code: str) -> None:
    config = CONFIGS[code]
    rules = config.validator
    assert set(rules.required_segments) <= set(get_args(SegmentKind))
    assert set(rules.max_speaking_rate) == set(rules.min_speaking_rate) == {"en", "zh"}
    assert all(rules.min_speaking_rate[k] < rules.max_speaking_rate[k] for k in ("en", "zh"))
    lo, hi = rules.duration_s
    assert lo < hi
    # The paper's clips: single-turn about 9.5-12 s, multi-turn turns about 7-14 s.
    assert (lo, hi) == ((6.0, 15.0) if config.turns == "multi" else (8.0, 13.0))
    if code == "UPC":  # the clip ends mid-request: no completion cue
        assert rules.final_silence_s is None and "silence" not in rules.required_segments
    else:
        assert rules.final_silence_s is not None and rules.final_silence_s > 0
    if config.turns == "single":
        assert rules.max_references == 0 and not rules.turn_fields
    else:
        assert rules.max_references >= 1
    for rule in rules.forbidden_phrases:
        assert rule.why and rule.language in (None, "en", "zh")


def test_turn_field_choices() -> None:
    tf = {code: CONFIGS[code].validator.turn_fields for code in MULTI_TURN_EXTENSIONS}
    assert tf["MRR"]["final"].required == ["recall_target"]
    assert "recall_target" in tf["MRR"]["first"].forbidden
    assert tf["MIST"]["any"].required == ["active_speaker"]
    assert tf["MDCC"]["final"].required == ["connection_check"]
    assert "connection_check" in tf["MDCC"]["first"].forbidden
    assert tf["MVMS"]["any"].required == ["camera_mode"]
    assert tf["MTIC"]["final"].required == ["identity_question"]


def test_the_papers_forbidden_phrases() -> None:
    def phrases(code: str, assignment: Mapping[str, str], language: str) -> set[str]:
        rules = CONFIGS[code].validator.forbidden_phrases
        active = [r for r in rules if r.language in (None, language) and matches(r.when, assignment)]
        return {p for r in active for p in r.phrases}

    assert "again" in phrases("MDCC", {}, "en")
    assert "facing the camera" in phrases("SVMR", {"camera": "rear_walking"}, "en")
    assert "facing the camera" not in phrases("SVMR", {"camera": "selfie_walking"}, "en")
    assert {"image left", "from your view"} <= phrases("SVMR", {"camera": "selfie_walking"}, "en")
    assert "画面左" in phrases("SVMR", {}, "zh") and "画面左" not in phrases("SVMR", {}, "en")


@pytest.mark.parametrize("code", sorted(SUBCATEGORIES))
def test_fragments(code: str) -> None:
    config = CONFIGS[code]
    ids = [f.id for f in config.fragments]
    assert len(ids) == len(set(ids))
    assert set(ids) >= PAPER_FRAGMENTS | ({"consistency"} if config.turns == "multi" else set())
    assert all(f.text for f in config.fragments)


def test_compatible_fragments_drop_a_conflicting_fragment() -> None:
    svmr = CONFIGS["SVMR"]
    front = {"camera": "selfie_handheld", "visual_interference": "low"}
    assert {"clear_face", "lip_sync"} <= {f.id for f in svmr.compatible_fragments(front)}
    rear = {"camera": "rear_walking", "visual_interference": "low"}
    kept = {f.id for f in svmr.compatible_fragments(rear)}
    assert "clear_face" not in kept and "lip_sync" not in kept and kept >= PAPER_FRAGMENTS
    # Strong backlight may hide the face by design: the clear-face rule goes, lip sync stays.
    glare = {"camera": "selfie_handheld", "visual_interference": "high"}
    assert {f.id for f in svmr.compatible_fragments(glare)} == {f.id for f in svmr.fragments} - {"clear_face"}


# ----------------------------------------------------------------------------- preferences and exclusions work


def _weight(config: SubcategoryConfig, assignment: Mapping[str, str]) -> float:
    """Eq. 7's w(a): the product of the attribute probabilities and the matching multipliers; 0 when excluded."""
    if any(rule(assignment) for rule in config.exclusion_rules()):
        return 0.0
    w = math.prod(config.probabilities()[d][v] for d, v in assignment.items())
    return w * math.prod(m for rule, m in config.preference_rules() if rule(assignment))


def _reachable(config: SubcategoryConfig, fixed: Mapping[str, str]) -> bool:
    """Whether some positive-weight assignment holds ``fixed``: a depth-first search that prunes a partial
    assignment as soon as an exclusion (or a zero multiplier) fully matches it."""
    probs = config.probabilities()
    names = list(probs)
    blockers = [e.when for e in config.exclusions] + [p.when for p in config.preferences if p.multiplier == 0]

    def blocked(partial: dict[str, str]) -> bool:
        return any(set(b) <= set(partial) and matches(b, partial) for b in blockers)

    def search(k: int, partial: dict[str, str]) -> bool:
        if blocked(partial):
            return False
        if k == len(names):
            return True
        name = names[k]
        options = [fixed[name]] if name in fixed else [v for v, p in probs[name].items() if p > 0]
        return any(search(k + 1, {**partial, name: v}) for v in options)

    return search(0, {})


@pytest.mark.parametrize("code", sorted(SUBCATEGORIES))
def test_exclusions_leave_every_value_reachable_unless_excluded_outright(code: str) -> None:
    config = CONFIGS[code]
    # A value excluded by a one-attribute exclusion is meant to go (ER and MIST drop the rear cameras).
    outright = {(d, v) for e in config.exclusions if len(e.when) == 1 for d, vs in e.when.items() for v in vs}
    for name, values in config.probabilities().items():
        for value, p in values.items():
            if p > 0 and (name, value) not in outright:
                assert _reachable(config, {name: value}), f"{code}: {name}={value} can never be sampled"


@pytest.mark.parametrize("code", sorted(SUBCATEGORIES))
def test_most_of_the_prior_mass_survives_the_exclusions(code: str) -> None:
    config = CONFIGS[code]
    rng = random.Random(code)
    probs = config.probabilities()
    draws = [{d: rng.choices(list(vs), weights=list(vs.values()))[0] for d, vs in probs.items()} for _ in range(2000)]
    kept = sum(_weight(config, a) > 0 for a in draws) / len(draws)
    assert kept > 0.5, f"{code}: only {kept:.0%} of prior draws survive the exclusions"


def test_a_preference_multiplies_the_weight() -> None:
    svmr = CONFIGS["SVMR"]
    base = {
        "language": "en",
        "users": "one_user",
        "domain": "office_work",
        "camera": "selfie_walking",
        "audio_interference": "medium",
        "visual_interference": "medium",
        "question_type": "side_identification",
        "target_anchor": "in_scene",
    }
    calm, glare = _weight(svmr, base), _weight(svmr, {**base, "visual_interference": "high"})
    assert glare == pytest.approx(calm * 0.5)  # both 1/4 before the selfie-with-glare preference
    assert _weight(svmr, {**base, "camera": "rear_walking", "target_anchor": "in_hand"}) == 0


# ------------------------------------------------------------------------------------------------- loading


@pytest.mark.parametrize("name", ["svmr", "SVMR", "SvMr"])
def test_load_config_by_code_in_any_case(name: str) -> None:
    assert load_config(name).code == "SVMR"


def test_load_config_by_path(tmp_path: Path) -> None:
    assert load_config(SHIPPED_DIR / "mdcc.yaml").code == "MDCC"
    assert load_config(str(SHIPPED_DIR / "mdcc.yaml")).code == "MDCC"
    custom = _write(tmp_path, {**_raw("ICC"), "code": "XICC"}, "custom.yaml")
    assert load_config(custom).code == "XICC"


def test_an_unknown_code_lists_the_codes() -> None:
    with pytest.raises(ConfigError) as err:
        load_config("NOPE")
    assert "NOPE" in str(err.value)
    assert all(code in str(err.value) for code in SUBCATEGORIES)


def _unknown_exclusion_value(data: dict[str, Any]) -> None:
    data["exclusions"] = [{"when": {"camera": "drone"}, "why": "x"}]


def _unknown_preference_attribute(data: dict[str, Any]) -> None:
    data["preferences"] = [{"when": {"weather": "rain"}, "multiplier": 0.5}]


def _unknown_fragment_conflict(data: dict[str, Any]) -> None:
    data["fragments"][0]["conflicts"] = [{"camera": "drone"}]


def _unknown_phrase_rule_value(data: dict[str, Any]) -> None:
    data["validator"]["forbidden_phrases"][0]["when"] = {"camera": ["drone"]}


def _bad_probabilities(data: dict[str, Any]) -> None:
    data["attributes"]["language"]["values"]["zh"]["probability"] = 0.5


def _no_language(data: dict[str, Any]) -> None:
    del data["attributes"]["language"]


def _unknown_field(data: dict[str, Any]) -> None:
    data["colour"] = "red"


@pytest.mark.parametrize(
    ("breaker", "says"),
    [
        (_unknown_exclusion_value, "unknown value 'drone'"),
        (_unknown_preference_attribute, "unknown attribute 'weather'"),
        (_unknown_fragment_conflict, "unknown value 'drone'"),
        (_unknown_phrase_rule_value, "unknown value 'drone'"),
        (_bad_probabilities, "sum to"),
        (_no_language, "'language' is required"),
        (_unknown_field, "colour"),
    ],
)
def test_a_broken_config_names_the_file(tmp_path: Path, breaker: Any, says: str) -> None:
    data = _raw("SVMR")
    breaker(data)
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and says in str(err.value)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"- just\n- a list\n", "a configuration is a mapping"),
        (b"code: [unclosed\n", "not valid YAML"),
        (b"code: \xff\xfe SVMR\n", "cannot read"),
    ],
    ids=["not-a-mapping", "invalid-yaml", "not-utf8"],
)
def test_an_unreadable_config_names_the_file(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and says in str(err.value)


def test_a_multi_turn_config_needs_turns(tmp_path: Path) -> None:
    data = _raw("MDCC")
    del data["attributes"]["turns"]
    with pytest.raises(ConfigError, match="needs an attribute 'turns'"):
        load_config(_write(tmp_path, data))
