"""AH (Anti-Hallucination): builders for AOR (an object asked about is not in view) and FGC (the user's
description of a visible object is false).
"""

from __future__ import annotations

import random

from omnivchat.studio.minibench._kit import (
    COLOURS,
    SHAPES,
    Draft,
    article,
    base_scene,
    by_lang,
    crit,
    draw_items,
    gate,
    other_side,
    pick,
    say,
    side_phrases,
    side_word,
)


def build_aor(rng: random.Random, lang: str) -> Draft:
    """AOR, Absent Object Recognition: a question about a shape or a colour that is not in view; the reply says so
    and what is in view."""
    present = draw_items(rng, 2)
    used_shapes = {it.shape for it in present}
    used_colours = {it.colour for it in present}
    absent_shape = pick(rng, [s for s in SHAPES if s not in used_shapes])
    absent_colour = pick(rng, [c for c in COLOURS if c not in used_colours])
    by_shape = rng.random() < 0.5
    near = present[0]
    if by_shape:
        question = by_lang(
            lang,
            f"What colour is the {absent_shape.en} next to the {near.shape.en}?",
            f"{near.shape.zh}旁边的那个{absent_shape.zh}是什么颜色？",
        )
        missing = by_lang(lang, f"There's no {absent_shape.en} here.", f"这里没有{absent_shape.zh}。")
        said_missing = by_lang(
            lang,
            [
                f"no {absent_shape.en}",
                f"don't see {article(absent_shape.en)}",
                f"can't see {article(absent_shape.en)}",
                f"there isn't {article(absent_shape.en)}",
            ],
            [f"没有{absent_shape.zh}", f"看不到{absent_shape.zh}", f"没看到{absent_shape.zh}"],
        )
        absent = f"no {absent_shape.en}"
    else:
        question = by_lang(
            lang,
            f"What shape is the {absent_colour.en} thing next to the {near.shape.en}?",
            f"{near.shape.zh}旁边那个{absent_colour.zh}的东西是什么形状？",
        )
        missing = by_lang(lang, f"There's nothing {absent_colour.en} here.", f"这里没有{absent_colour.zh}的东西。")
        said_missing = by_lang(
            lang,
            [
                f"nothing {absent_colour.en}",
                f"no {absent_colour.en}",
                f"don't see anything {absent_colour.en}",
                f"can't see anything {absent_colour.en}",
            ],
            [f"没有{absent_colour.zh}", f"看不到{absent_colour.zh}", f"没看到{absent_colour.zh}"],
        )
        absent = f"nothing {absent_colour.en}"
    scene = base_scene(
        rng,
        objects=[present[0].spec("center-left"), present[1].spec("center-right")],
        speech=[say(question, lang)],
    )
    in_view = by_lang(
        lang,
        f" I can only see {article(present[0].name(lang))} and {article(present[1].name(lang))}."
        " Could you show it to the camera?",
        f"我只看到一个{present[0].name(lang)}和一个{present[1].name(lang)}。你能把它拿到镜头前给我看看吗？",
    )
    reference = missing + in_view
    show = by_lang(lang, ["show", "hold it up", "point the camera"], ["给我看", "拿到镜头", "对准"])
    rubric = [
        gate(lang),
        crit(1, f"Says there is {absent} in view.", any_of=[said_missing]),
        crit(
            2,
            f"Says what is in view instead: {article(present[0].name('en'))} and {article(present[1].name('en'))}.",
            all_of=[present[0].colour.words(lang), present[1].colour.words(lang)],
        ),
        crit(3, "Asks the user to show the object.", any_of=[show]),
    ]
    staging = {
        "camera": "rear",
        "in_view": [it.name("en") for it in present],
        "asked_about": absent_shape.en if by_shape else f"something {absent_colour.en}",
        "answer": f"{absent} in view",
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def build_fgc(rng: random.Random, lang: str) -> Draft:
    """FGC, False Given-Claim Correction: the user names a visible object with the wrong colour; the reply corrects
    the colour and still answers which side it is on."""
    target, other = draw_items(rng, 2)
    false_colour = pick(rng, [c for c in COLOURS if c not in (target.colour, other.colour)])
    side = pick(rng, ("left", "right"))
    question = by_lang(
        lang,
        f"Is this {false_colour.en} {target.shape.en} on my left or on my right?",
        f"这个{false_colour.zh}的{target.shape.zh}在我的左边还是右边？",
    )
    scene = base_scene(rng, objects=[target.spec(side), other.spec(other_side(side))], speech=[say(question, lang)])
    # Key phrases first, the correction ("not blue") last: a negation scope runs to the end of its clause.
    reference = by_lang(
        lang,
        f"The {target.shape.en} is on your {side}. It's actually {target.colour.en}, not {false_colour.en}.",
        f"那个{target.shape.zh}在你的{side_word(lang, side)}。它其实是{target.colour.zh}的，不是{false_colour.zh}。",
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Corrects the false claim: the {target.shape.en} is {target.colour.en}, not {false_colour.en}.",
            any_of=[target.colour.words(lang)],
        ),
        crit(2, f"Still answers the question: it is on the user's {side}.", any_of=[side_phrases(lang, side)]),
    ]
    staging = {
        "camera": "rear",
        "target": target.name("en"),
        "claimed_colour": false_colour.en,
        "user_side": side,
        "answer": f"it is {target.colour.en}, on the user's {side}",
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)
