"""DSLP (Dialogue-State & Link Perception): builders for ICC, MDCC (connectivity), UPC, UCR (turn-taking),
SVMR and MVMS (camera mode: the user's left and right under the selfie and the rear camera).
"""

from __future__ import annotations

import random
from typing import Any, cast

from omnivchat.bench import Criterion
from omnivchat.studio.minibench._kit import (
    NUMBER_WORDS,
    Draft,
    Item,
    base_scene,
    by_lang,
    crit,
    draw_items,
    figure,
    gate,
    other_side,
    pick,
    plural,
    say,
    side_phrases,
    side_word,
)

_HEAR_ME = {
    "en": ("Hello? Can you hear me?", "Hi there, can you hear me okay?", "Hey, is this working? Can you hear me?"),
    "zh": ("喂，你好，能听到我说话吗？", "你好，你能听见我吗？", "喂？你听得到我吗？"),
}
_HEARD = {
    "en": ["I can hear you", "hear you clearly", "hear you fine", "hear you well", "loud and clear"],
    "zh": ["能听到", "听得到", "听得见", "能听见", "听得很清楚"],
}
_GO_ON = {
    "en": ["go ahead", "what can I do", "how can I help", "what would you like"],
    "zh": ["请说", "请讲", "说吧", "有什么可以帮"],
}
_NOT_HEARD = {"en": ["can't hear", "breaking up", "no sound"], "zh": ["听不到", "听不见", "听不清"]}


def build_icc(rng: random.Random, lang: str) -> Draft:
    """ICC, Initial Connectivity Confirmation: the user, face to the selfie camera, asks whether the assistant can
    hear them; the answer is yes, and an invitation to go on."""
    question = pick(rng, _HEAR_ME[lang])
    scene = base_scene(
        rng,
        camera="front",
        floor=False,
        person=figure(rng, size=0.95, expression=pick(rng, ("neutral", "happy"))),
        speech=[say(question, lang)],
    )
    reference = by_lang(
        lang,
        "Yes, I can hear you clearly. Go ahead, what can I do for you?",
        "能听到，声音很清楚。请说吧，有什么可以帮你的？",
    )
    rubric = [
        gate(lang),
        crit(1, "Confirms that it can hear the user.", any_of=[_HEARD[lang]]),
        crit(2, "Invites the user to go on with the request.", any_of=[_GO_ON[lang]]),
        crit(3, "Does not claim a bad connection or that it cannot hear.", none_of=_NOT_HEARD[lang]),
    ]
    staging = {"camera": "front", "answer": "yes, it can hear the user"}
    return Draft([(scene, None)], reference, rubric, ["audio"], staging)


# ------------------------------------------------------------------------------------------- connectivity


_STILL_THERE = {
    "en": (
        "Hello? Are you still there? Can you still hear me?",
        "Sorry, the picture froze for a second. Can you hear me?",
        "Hey, did I lose you? Are you still with me?",
    ),
    "zh": ("喂？你还在吗？还能听到我吗？", "刚才画面卡了一下，你还能听见我吗？", "喂，信号还好吗？你还在吗？"),
}


def build_mdcc(rng: random.Random, lang: str) -> Draft:
    """MDCC, Mid-Dialogue Connectivity Confirmation: turn 1 counts identical items on the table; in turn 2 the user,
    now on the selfie camera, asks whether the assistant is still there, and the count must stay the same."""
    count = rng.choice((2, 3, 4))
    (item,) = draw_items(rng, 1)
    positions = {2: ["center-left", "center-right"], 3: ["left", "center", "right"]}.get(
        count, ["far-left", "center-left", "center-right", "far-right"]
    )
    noun = plural(item.name(lang)) if lang == "en" else item.name(lang)
    first_q = by_lang(
        lang,
        f"I'm setting things out on the table. How many {noun} can you see?",
        f"我在桌上摆东西。你能看到几个{noun}？",
    )
    number = NUMBER_WORDS[lang][count]
    first_reply = by_lang(lang, f"I can see {number} {noun}.", f"我看到{number}个{noun}。")
    turn1 = base_scene(
        rng,
        objects=[
            item.spec(p, size=0.24, name=f"{item.colour.en} {item.shape.en} {k + 1}") for k, p in enumerate(positions)
        ],
        speech=[say(first_q, lang)],
    )
    turn2 = base_scene(
        rng,
        camera="front",
        floor=False,
        person=figure(rng, size=0.95, expression="surprised"),
        speech=[say(pick(rng, _STILL_THERE[lang]), lang)],
    )
    reference = by_lang(
        lang,
        f"Yes, I'm still here and I can hear you fine. We were counting the {noun}: there are {number}.",
        f"在的，我还在，能听到你。我们刚才在数{noun}，一共有{number}个。",
    )
    still = by_lang(
        lang, ["still here", "I can hear you", "hear you fine", "I'm here"], ["还在", "能听到", "听得到", "在的"]
    )
    counted = by_lang(lang, [number, str(count)], [f"{number}个", f"{count}个"])
    rubric = [
        gate(lang),
        crit(1, "Confirms it is still connected and can hear the user.", any_of=[still]),
        crit(
            2, f"Stays consistent with the first turn: there are {count} {plural(item.name('en'))}.", any_of=[counted]
        ),
        crit(3, "Does not claim it lost the connection or cannot hear.", none_of=_NOT_HEARD[lang]),
    ]
    staging = {"camera": "rear, then front", "count": count, "item": item.name("en"), "answer": "still connected"}
    return Draft([(turn1, first_reply), (turn2, None)], reference, rubric, ["audio"], staging)


# ------------------------------------------------------------------------------------------- turn-taking


_UNFINISHED = {
    "en": (
        "Could you tell me what colour the [pause 0.4] um, [pause 1.6]",
        "So I was wondering whether the [pause 0.4] hmm, [pause 1.6]",
        "Can you check which side the [pause 0.4] er, [pause 1.6]",
    ),
    "zh": ("你能告诉我那个 [pause 0.4] 嗯， [pause 1.6]", "我想问一下，这个 [pause 0.4] 呃， [pause 1.6]"),
}


def build_upc(rng: random.Random, lang: str) -> Draft:
    """UPC, User Paused but not Completed: the question trails off into a filler and a long pause; the reply waits
    and names none of the colours in view."""
    items = draw_items(rng, 2)
    scene = base_scene(
        rng,
        objects=[items[0].spec("center-left"), items[1].spec("center-right")],
        speech=[say(pick(rng, _UNFINISHED[lang]), lang)],
    )
    reference = by_lang(lang, "Take your time, I'm listening.", "你慢慢说，我在听，不着急。")
    waits = by_lang(
        lang,
        ["take your time", "go on", "I'm listening", "finish your question", "whenever you're ready"],
        ["慢慢说", "我在听", "请继续", "你继续"],
    )
    guesses = [w for it in items for w in it.colour.words(lang)]
    rubric = [
        gate(lang),
        crit(1, "Waits for the user to finish instead of answering a question never completed.", any_of=[waits]),
        crit(2, "Does not guess an answer: names none of the colours in view.", none_of=guesses),
    ]
    staging = {"camera": "rear", "items": [i.name("en") for i in items], "answer": "wait for the user to finish"}
    return Draft([(scene, None)], reference, rubric, ["audio"], staging)


_DISTRACTIONS = ("NEW MESSAGE", "LOW BATTERY", "INCOMING CALL")


def build_ucr(rng: random.Random, lang: str) -> Draft:
    """UCR, User Completed Request: a question with hesitations, completed, while an object and a notification
    flash up mid-question; the reply answers the question, not the distraction."""
    target, other, flash = draw_items(rng, 3)
    question = by_lang(
        lang,
        f"What colour is the [pause 0.5] um, [pause 0.4] the {target.shape.en} on the table?",
        f"桌上那个 [pause 0.5] 嗯， [pause 0.4] 那个{target.shape.zh}是什么颜色？",
    )
    scene = base_scene(
        rng,
        objects=[
            target.spec(pick(rng, ("left", "center-left"))),
            other.spec(pick(rng, ("right", "center-right")), size=0.22),
            flash.spec("top-right", size=0.2, appear=0.8, disappear=2.2),  # pops up mid-question, then goes
        ],
        placards=[{"text": pick(rng, _DISTRACTIONS), "position": "bottom", "start": 0.6, "end": 2.4}],
        speech=[say(question, lang)],
    )
    reference = by_lang(
        lang,
        f"The {target.shape.en} is {target.colour.en}.",
        f"那个{target.shape.zh}是{target.colour.zh}的。",
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Answers the completed question: the {target.shape.en} is {target.colour.en}.",
            any_of=[target.colour.words(lang)],
        ),
        crit(2, f"Names the {target.shape.en} it answers about.", any_of=[target.shape.words(lang)]),
        crit(
            2,
            f"Is not thrown by the {flash.name('en')} that flashed up: does not give its colour.",
            none_of=flash.colour.words(lang),
        ),
    ]
    staging = {
        "camera": "rear",
        "target": target.name("en"),
        "distractor": flash.name("en"),
        "answer": target.colour.en,
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


# ------------------------------------------------------------------------------------------- camera mode


def _which_side(rng: random.Random, lang: str, item: Item, *, switched: bool) -> str:
    if lang == "en":
        lead = "Okay, look again now. " if switched else ""  # the new camera mode is for the model to see
        return lead + str(
            pick(
                rng,
                (
                    f"Is the {item.name(lang)} on my left or on my right?",
                    f"Which side of me is the {item.name(lang)} on?",
                ),
            )
        )
    lead = "好，现在再看一下。" if switched else ""
    return cast("str", lead + pick(rng, (f"{item.name(lang)}在我的左边还是右边？", f"{item.name(lang)}在我哪一边？")))


def _side_scene(
    rng: random.Random, lang: str, items: list[Item], side: str, camera: str, *, switched: bool
) -> dict[str, Any]:
    """Two items on either side of the user (positions given from the user's side; the renderer mirrors them
    into the image under the selfie camera); the selfie view also shows the user."""
    target, other = items
    return base_scene(
        rng,
        camera=camera,
        objects=[target.spec(side), other.spec(other_side(side))],
        person=figure(rng) if camera == "front" else None,
        speech=[say(_which_side(rng, lang, target, switched=switched), lang)],
    )


def _side_answer(lang: str, item: Item, side: str, camera: str) -> tuple[str, list[Criterion]]:
    """Reference and rubric for "which side of me is the item on?"."""
    mirror = camera == "front"
    reference = by_lang(
        lang,
        f"The {item.name(lang)} is on your {side}."
        + (" The selfie view shows it mirrored, on the other side of the picture." if mirror else ""),
        f"{item.name(lang)}在你的{side_word(lang, side)}。"
        + ("自拍画面是镜像的，所以在画面里看起来在另一边。" if mirror else ""),
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Says the {item.name('en')} is on the user's {side}"
            + (" (the selfie view mirrors the image)" if mirror else "")
            + f", never on the user's {other_side(side)}.",
            any_of=[side_phrases(lang, side)],
            # the wrong side *of the user* is forbidden; "the left of the picture" may still explain the mirror
            none_of=side_phrases(lang, other_side(side)),
        ),
        crit(2, f"Names the {item.name('en')}.", all_of=[item.colour.words(lang), item.shape.words(lang)]),
    ]
    if mirror:
        rubric.append(
            crit(
                3,
                "Explains that the selfie view is mirrored.",
                any_of=[by_lang(lang, ["mirror", "mirrored", "flipped"], ["镜像", "反过来", "左右相反"])],
            )
        )
    return reference, rubric


def build_svmr(rng: random.Random, lang: str) -> Draft:
    """SVMR, Single-turn Visual Mode Recognition: which side of the user an item is on, under the selfie camera
    (mirrored) or the rear one."""
    items = draw_items(rng, 2)
    camera = pick(rng, ("front", "rear"))
    side = pick(rng, ("left", "right"))
    scene = _side_scene(rng, lang, items, side, camera, switched=False)
    reference, rubric = _side_answer(lang, items[0], side, camera)
    staging = {
        "camera": camera,
        "target": items[0].name("en"),
        "user_side": side,
        "image_side": side if camera == "rear" else other_side(side),
        "answer": f"on the user's {side}",
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def build_mvms(rng: random.Random, lang: str) -> Draft:
    """MVMS, Multi-turn Visual Mode Switching: the SVMR question in two turns, the camera switched in between."""
    items = draw_items(rng, 2)
    first_camera = pick(rng, ("front", "rear"))
    second_camera = "rear" if first_camera == "front" else "front"
    first_side, second_side = pick(rng, ("left", "right")), pick(rng, ("left", "right"))
    turn1 = _side_scene(rng, lang, items, first_side, first_camera, switched=False)
    first_reply, _ = _side_answer(lang, items[0], first_side, first_camera)
    turn2 = _side_scene(rng, lang, items, second_side, second_camera, switched=True)
    reference, rubric = _side_answer(lang, items[0], second_side, second_camera)
    staging = {
        "camera": f"{first_camera}, then {second_camera}",
        "target": items[0].name("en"),
        "user_sides": [first_side, second_side],
        "answer": f"on the user's {second_side}",
    }
    return Draft([(turn1, first_reply), (turn2, None)], reference, rubric, ["video", "audio"], staging)
