"""The offline Studio's texts read as correct English and Chinese (issue 23, item 8).

Every template that writes a reference, a rubric criterion, a question or a description is rendered over the 17
subcategory configs x both languages x every value of every attribute (and enough seeds that every colour and
shape the builders draw appears), and checked: "a" / "an" by the sound of the next word, no "no anything", and in
Chinese no English left over and no doubled measure word. The checks here are independent of
``omnivchat.studio.minibench._kit.article``, which the templates use.
"""

from __future__ import annotations

import random
import re

import pytest

from omnivchat.studio.config import load_all
from omnivchat.studio.minibench import BUILDERS
from omnivchat.studio.minibench._kit import COLOURS, SHAPES, article, plural
from omnivchat.studio.offline import OfflineDirector
from omnivchat.studio.offline._caption import _an
from omnivchat.studio.offline._director import _clip_problems

SEEDS = range(40)
CONFIGS = load_all()

# Words spelt with a vowel that open with a consonant sound, and the other way round.
_CONSONANT_SOUND = re.compile(r"^(uni|use|usu|eu|one\b|once)", re.I)
_VOWEL_SOUND = re.compile(r"^(hour|honest|honou?r|heir)", re.I)
_PAUSE = re.compile(r"\[pause [\d.]+\]")


def english_problems(text: str) -> list[str]:
    """Where ``text`` has "a" before a vowel sound, "an" before a consonant sound, or "no anything"."""
    problems = []
    for m in re.finditer(r"\b([Aa]n?) ([\w.-]+)", text):
        art, word = m.group(1).lower(), m.group(2)
        if word[:1].isdigit():
            vowel = word.startswith("8") or re.match(r"(11|18)(\D|$)", word) is not None
        elif word.isupper() and len(word) > 1:
            vowel = word[0] in "AEFHILMNORSX"
        elif _CONSONANT_SOUND.match(word):
            vowel = False
        elif _VOWEL_SOUND.match(word):
            vowel = True
        else:
            vowel = word[:1].lower() in "aeiou"
        if vowel != (art == "an"):
            problems.append(f"{m.group(0)!r} in {text!r}")
    problems += [f"'no any' in {text!r}" for _ in re.finditer(r"\bno any", text, re.I)]
    problems += [f"'not ... no' in {text!r}" for _ in re.finditer(r"\bthere is no nothing\b", text, re.I)]
    return problems


def chinese_problems(text: str) -> list[str]:
    """Where a Chinese ``text`` keeps English words (speech pause marks aside) or doubles a measure word."""
    problems = []
    bare = _PAUSE.sub("", text)
    if re.search(r"[A-Za-z]", bare):
        problems.append(f"English left in {text!r}")
    if re.search(r"(个|只|张|件|块|位|的)\1", bare) or re.search(r"[一两二三四五六七八九十几]个(一|两|几)个", bare):
        problems.append(f"doubled measure word in {text!r}")
    return problems


def draft_texts(code: str, lang: str, seed: int) -> tuple[list[str], list[str]]:
    """(texts in the instance's language: speech, replies, reference; rubric criteria, always English)."""
    draft = BUILDERS[code](random.Random(f"omnivchat-studio:{seed}:{code}"), lang)
    spoken = [line["text"] for scene, _ in draft.turns for line in scene.get("speech", [])]
    spoken += [reply for _, reply in draft.turns if reply]
    spoken.append(draft.reference)
    return spoken, [c.text for c in draft.rubric]


def test_article_goes_by_sound():
    assert article("orange ball") == "an orange ball"
    assert article("red cube") == "a red cube"
    assert article("unicorn") == "a unicorn"
    assert article("hour") == "an hour"
    assert article("8.0 s clip") == "an 8.0 s clip"
    assert article("11 s clip") == "an 11 s clip"
    assert article("18 s clip") == "an 18 s clip"
    assert article("1.5 s clip") == "a 1.5 s clip"
    assert article("110 s clip") == "a 110 s clip"
    assert article("AI assistant") == "an AI assistant"
    assert article("one-off") == "a one-off"
    assert plural("red box") == "red boxes" and plural("blue cube") == "blue cubes"


def test_the_oracle_catches_the_reported_phrases():
    assert english_problems("I can only see a orange ball.")
    assert english_problems("Says there is no anything yellow in view.")
    assert english_problems("A 8.0 s clip with a grey backdrop")
    assert english_problems("an red cube")
    assert not english_problems("An 8.0 s clip with an orange ball and a unicorn")
    assert chinese_problems("我只看到一个个red cube")
    assert not chinese_problems("你看，我把这个放在这儿。 [pause 0.6] 它是什么颜色的？")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("code", sorted(BUILDERS))
def test_every_builder_text_reads_right(code, lang):
    problems = []
    colours, shapes = set(), set()
    for seed in SEEDS:
        spoken, rubric = draft_texts(code, lang, seed)
        for text in spoken:
            problems += english_problems(text) if lang == "en" else chinese_problems(text)
        for text in rubric:
            problems += english_problems(text)
        joined = " ".join(spoken + rubric)
        colours |= {c.en for c in COLOURS if c.en in joined}
        shapes |= {s.en for s in SHAPES if s.en in joined}
    assert problems == []
    if code in ("AOR", "MIST", "MDCC", "DR"):  # the builders that name items: every colour and shape was tried
        assert colours == {c.en for c in COLOURS} and shapes == {s.en for s in SHAPES}, code


def test_the_17_configs_have_builders():
    assert sorted(c.code for c in CONFIGS) == sorted(BUILDERS) and len(CONFIGS) == 17


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.code)
def test_the_director_texts_read_right_for_every_attribute_value(config, lang):
    """The Director's description and reply for every value of every attribute of the config."""
    director = OfflineDirector()
    problems = []
    base = {name: next(iter(attr.values)) for name, attr in config.attributes.items()}
    base["language"] = lang
    for name, attr in config.attributes.items():
        for value in attr.values:
            assignment = {**base, name: value}
            payload = {
                "instance": {"id": f"{config.code}-{name}-{value}", "seed": len(problems)},
                "subcategory": {"code": config.code, "name": config.name, "definition": config.definition},
                "assignment": assignment,
                "attribute_meanings": {n: config.attributes[n].values[v].description for n, v in assignment.items()},
                "language": lang,
                "passages": [],
                "turn": 1,
                "final": True,
            }
            description = director.ask(_request("description", payload))["description"]
            problems += english_problems(description)
            assert ".;" not in description, description  # each meaning quoted as a clause, without its full stop
            assert "camera: " in description or "camera" not in config.attributes, description
            reply = director.ask(_request("reply", payload))
            problems += english_problems(reply["reply"]) if lang == "en" else chinese_problems(reply["reply"])
            for criterion in reply["rubric"]:
                problems += english_problems(criterion["text"])
    assert problems == []


def _request(module, payload):
    from omnivchat.studio.engine._agents import DirectorRequest

    return DirectorRequest(module=module, instructions="", payload=payload)


@pytest.mark.parametrize("seconds", [8.0, 8.4, 11.0, 18.2, 1.5, 9.0])
def test_number_phrases_take_the_article_of_their_sound(seconds):
    problems = _clip_problems({"duration_s": seconds, "scene": {}}, {"observed": {"duration_s": 0.5}})
    assert problems and all(not english_problems(p) for p in problems), problems
    caption = _an(f"{seconds:.1f} s clip").capitalize()
    assert not english_problems(caption), caption
    assert caption.startswith("An " if str(seconds).startswith(("8", "11", "18")) else "A ")
