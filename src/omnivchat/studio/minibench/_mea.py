"""MEA (Multimodal Entity Alignment): builders for AR, DR, MRR (reference) and SPSD, MIST (speakers).

Narrower than the paper's staging:

- AR: the renderer draws no hands, so there are no pointing gestures. The reference is made by speech and
  timing instead: an object is put down while the user says "this one" and then asks about "it".
- MIST: the new user is a different figure with a different voice in the next turn; people cannot walk in and
  out of one clip as a hand-over would look.
"""

from __future__ import annotations

import random

from omnivchat.bench import Criterion
from omnivchat.studio.minibench._kit import (
    HAIRS,
    NAMES,
    SHIRTS,
    VOICES,
    Draft,
    Item,
    article,
    base_scene,
    by_lang,
    crit,
    draw_items,
    figure,
    gate,
    other_side,
    pick,
    say,
)

# ------------------------------------------------------------------------------------------- reference


def _colour_then_shape(lang: str, tier_text: str, item: Item, others: list[Item]) -> list[Criterion]:
    """Tier 1 the colour, tier 2 the shape, tier 3 no colour of another item (no mix-up)."""
    return [
        gate(lang),
        crit(1, tier_text, any_of=[item.colour.words(lang)]),
        crit(2, f"Names it as the {item.shape.en}.", any_of=[item.shape.words(lang)]),
        crit(
            3,
            "Does not mix it up with the other objects: gives none of their colours.",
            none_of=[w for o in others for w in o.colour.words(lang)],
        ),
    ]


def build_ar(rng: random.Random, lang: str) -> Draft:
    """AR, Anaphoric Reference: an object is put down while the user says "this one"; what colour is "it"?"""
    target, *others = draw_items(rng, 3)
    question = by_lang(
        lang,
        pick(
            rng,
            (
                "Look, I'm putting this one down here. [pause 0.6] What colour is it?",
                "Okay, this one goes next to the others. [pause 0.6] What colour would you call it?",
            ),
        ),
        pick(
            rng,
            (
                "你看，我把这个放在这儿。 [pause 0.6] 它是什么颜色的？",
                "好，这个我也放到桌上。 [pause 0.6] 它是什么颜色？",
            ),
        ),
    )
    slots = rng.sample(["left", "center", "right"], 3)
    scene = base_scene(
        rng,
        objects=[
            others[0].spec(slots[0]),
            others[1].spec(slots[1]),
            target.spec(slots[2], appear=1.0),  # put down while the user says "this one"
        ],
        speech=[say(question, lang)],
    )
    reference = by_lang(
        lang,
        f"It's {target.colour.en}: the {target.name(lang)} you just put down.",
        f"它是{target.colour.zh}的，就是你刚放下的那个{target.shape.zh}。",
    )
    rubric = _colour_then_shape(
        lang, f"Resolves 'it' to the object just put down and says it is {target.colour.en}.", target, others
    )
    staging = {
        "camera": "rear",
        "target": target.name("en"),
        "target_appears_s": 1.0,
        "others": [o.name("en") for o in others],
        "answer": target.colour.en,
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def build_dr(rng: random.Random, lang: str) -> Draft:
    """DR, Descriptive Reference: three objects; the colour of the one described (the biggest, the middle one,
    or by its shape)."""
    items = draw_items(rng, 3)
    slots = ["left", "center", "right"]
    how = pick(rng, ("biggest", "middle", "shape"))
    target_index = rng.randrange(3) if how != "middle" else 1
    target = items[target_index]
    others = [it for k, it in enumerate(items) if k != target_index]
    sizes = [0.22, 0.22, 0.22]
    if how == "biggest":
        sizes[target_index] = 0.42
    description = {
        "biggest": ("the biggest one", "最大的那个"),
        "middle": ("the one in the middle", "中间那个"),
        "shape": (f"the {target.shape.en}", f"那个{target.shape.zh}"),
    }[how]
    question = by_lang(
        lang,
        f"There are three things on the table. What colour is {description[0]}?",
        f"桌上有三个东西。{description[1]}是什么颜色？",
    )
    scene = base_scene(
        rng,
        objects=[it.spec(slots[k], size=sizes[k]) for k, it in enumerate(items)],
        speech=[say(question, lang)],
    )
    reference = by_lang(
        lang,
        f"{description[0].capitalize()} is the {target.name(lang)}, so it's {target.colour.en}.",
        f"{description[1]}是{target.name(lang)}。",
    )
    rubric = _colour_then_shape(lang, f"Picks out {description[0]} and says it is {target.colour.en}.", target, others)
    staging = {
        "camera": "rear",
        "description": description[0],
        "target": target.name("en"),
        "others": [o.name("en") for o in others],
        "answer": target.colour.en,
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def build_mrr(rng: random.Random, lang: str) -> Draft:
    """MRR, Multi-turn Reference Retrieval: turn 1 shows an object to remember; in turn 2 it is gone and others are
    in view; what colour was it?"""
    target, *others = draw_items(rng, 3)
    first_q = by_lang(
        lang,
        pick(
            rng,
            (
                "I'm about to put this away in a drawer. Just remember it for me, okay?",
                "Keep this one in mind for me, I'll ask you about it later.",
            ),
        ),
        pick(rng, ("我要把这个收进抽屉里了，你先帮我记住它，好吗？", "你帮我记一下这个东西，等会儿我再问你。")),
    )
    first_reply = by_lang(lang, "Sure, I'll remember it.", "好的，我记住了。")
    turn1 = base_scene(rng, objects=[target.spec("center", size=0.32)], speech=[say(first_q, lang)])
    second_q = by_lang(
        lang,
        "It's in the drawer now. What colour was the thing I asked you to remember?",
        "它已经在抽屉里了。我刚才让你记住的那个东西是什么颜色的？",
    )
    turn2 = base_scene(
        rng,
        objects=[others[0].spec("center-left"), others[1].spec("center-right")],
        speech=[say(second_q, lang)],
    )
    reference = by_lang(
        lang,
        f"It was {target.colour.en}: the {target.name(lang)} you showed me before you put it away.",
        f"是{target.colour.zh}的，就是你收起来之前给我看的那个{target.shape.zh}。",
    )
    rubric = _colour_then_shape(
        lang,
        f"Recalls the object from the first turn and says it was {target.colour.en}.",
        target,
        others,
    )
    staging = {
        "camera": "rear",
        "target": target.name("en"),
        "in_view_later": [o.name("en") for o in others],
        "answer": target.colour.en,
    }
    return Draft([(turn1, first_reply), (turn2, None)], reference, rubric, ["video", "audio"], staging)


# ------------------------------------------------------------------------------------------- speakers


_OVERTALK = {
    "en": (
        ("Has anyone seen my phone charger?", ["charger", "phone"]),
        ("Hey, are we still going out tonight?", ["tonight", "going out"]),
        ("I think the pizza is here!", ["pizza"]),
    ),
    "zh": (
        ("有人看到我的充电器了吗？", ["充电器"]),
        ("我们今晚还出去吗？", ["今晚", "出去"]),
        ("外卖到了，快来拿！", ["外卖"]),
    ),
}


def build_spsd(rng: random.Random, lang: str) -> Draft:
    """SPSD, Single-turn Primary Speaker Disambiguation: a quieter off-camera voice talks over the user's question;
    the reply answers the user."""
    target, other = draw_items(rng, 2)
    user_voice, other_voice = rng.sample(VOICES, 2)
    side = pick(rng, ("left", "right"))
    line, topic = pick(rng, _OVERTALK[lang])
    question = by_lang(
        lang, f"What colour is the {target.shape.en} in front of me?", f"我面前的那个{target.shape.zh}是什么颜色？"
    )
    scene = base_scene(
        rng,
        camera="front",
        objects=[target.spec(side), other.spec(other_side(side))],
        person=figure(rng),
        speech=[
            say(question, lang, voice=user_voice),
            # a second, quieter voice off camera talks over the user
            {"text": line, "language": lang, "speaker": "other", "voice": other_voice, "start": 1.1, "gain_db": -5},
        ],
    )
    reference = by_lang(
        lang,
        f"The {target.shape.en} in front of you is {target.colour.en}.",
        f"你面前的{target.shape.zh}是{target.colour.zh}的。",
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Answers the person on camera: the {target.shape.en} is {target.colour.en}.",
            any_of=[target.colour.words(lang)],
        ),
        crit(2, f"Names the {target.shape.en}.", any_of=[target.shape.words(lang)]),
        crit(3, "Does not answer the off-camera voice that talked over the user.", none_of=topic),
    ]
    staging = {
        "camera": "front",
        "primary": {"speaker": "user", "voice": user_voice, "on_camera": True},
        "overlap": {"speaker": "other", "voice": other_voice, "text": line, "start_s": 1.1},
        "target": target.name("en"),
        "answer": target.colour.en,
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def build_mist(rng: random.Random, lang: str) -> Draft:
    """MIST, Multi-turn Interactor Shift Tracking: a different person (clothes, hair, voice) takes over in turn 2,
    says their name and asks; the reply answers them, by name."""
    first, target = draw_items(rng, 2)
    voice_a, voice_b = rng.sample(VOICES, 2)
    name = pick(rng, NAMES[lang])
    objects = [first.spec("left"), target.spec("right")]
    first_q = by_lang(lang, f"What shape is the {first.colour.en} one?", f"{first.colour.zh}的那个是什么形状？")
    first_reply = by_lang(
        lang, f"The {first.colour.en} one is {article(first.shape.en)}.", f"{first.colour.zh}的那个是{first.shape.zh}。"
    )
    person_a = figure(rng, position="center")
    turn1 = base_scene(
        rng, camera="front", objects=objects, person=person_a, speech=[say(first_q, lang, voice=voice_a)]
    )
    # A different person (other clothes, hair and voice) takes over the call.
    person_b = figure(rng, position="center", expression="happy")
    person_b["shirt"] = pick(rng, [c for c in SHIRTS if c != person_a["shirt"]])
    person_b["hair"] = pick(rng, [c for c in HAIRS if c != person_a["hair"]])
    second_q = by_lang(
        lang,
        f"Hi, I'm {name}. What colour is the {target.shape.en}?",  # the change of speaker is seen and heard
        f"你好，我是{name}。那个{target.shape.zh}是什么颜色？",
    )
    turn2 = base_scene(
        rng, camera="front", objects=objects, person=person_b, speech=[say(second_q, lang, voice=voice_b)]
    )
    reference = by_lang(
        lang,
        f"Hi {name}! The {target.shape.en} is {target.colour.en}.",
        f"你好，{name}！那个{target.shape.zh}是{target.colour.zh}的。",
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Answers the new speaker's question: the {target.shape.en} is {target.colour.en}.",
            any_of=[target.colour.words(lang)],
        ),
        crit(2, f"Addresses the person who took over, {name}, by name.", any_of=[name]),
        crit(2, f"Names the {target.shape.en}.", any_of=[target.shape.words(lang)]),
    ]
    staging = {
        "camera": "front",
        "speakers": [
            {"voice": voice_a, "shirt": person_a["shirt"]},
            {"voice": voice_b, "shirt": person_b["shirt"], "name": name},
        ],
        "target": target.name("en"),
        "answer": target.colour.en,
    }
    return Draft([(turn1, first_reply), (turn2, None)], reference, rubric, ["video", "audio"], staging)
