"""The procedural mini-bench: real instances of all 17 subcategories, rendered offline in seconds.

Name: omnivchat mini-bench. Languages: English and Mandarin. Source: the issue "diagnostics", item 4.

Every instance is staged with the procedural renderer (``omnivchat.media.render_clip``): coloured shapes on a
table, a person-like figure, a front (selfie) or rear camera, and spoken questions with espeak-ng voices. The
scenes are drawn from small word lists by a seeded RNG, so the same seed gives the same bench, clip for clip.

Each instance carries a reference reply and a tiered rubric (tier 0: the language gate; tier 1: the core answer;
tiers 2-3: extras) in which *every* criterion has a machine check, so the offline rule judge
(``omnivchat.judges.rule_verdict``) can score any reply. Checks are written for the negation-aware matcher of
``omnivchat.scoring.spoken``: the key phrases of a reference never stand inside a negation ("it's red, not blue"
states red), and no tier-1 phrase occurs in the simulated models' generic non-answer, so that non-answer earns
nothing. Forbidden-word (none-of) checks sit in tiers 2-3, where a missed tier 1 blocks them.

What could not be staged as the paper describes it (the subcategory is still staged, in a narrower form):

- AR: the renderer draws no hands, so there are no pointing gestures. The reference is made by speech and
  timing instead: an object is put down while the user says "this one" and then asks about "it".
- MIST: the new user is a different figure with a different voice in the next turn; people cannot walk in and
  out of one clip as a hand-over would look.
- STIC / MTIC: a bench cannot know which model answers, so "the true identity" is checked as "says it is an AI
  assistant, not a person, and does not take on the identity the user suggests".
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnivchat._canonical import sha256_file
from omnivchat.bench import (
    BENCH_FILE,
    INSTANCES_FILE,
    SUBCATEGORIES,
    Bench,
    BenchInfo,
    Check,
    Criterion,
    Instance,
    load_bench,
    save_bench,
)
from omnivchat.errors import OmnivchatError

if TYPE_CHECKING:
    from omnivchat.media import RenderedClip

LANGUAGES = ("en", "zh")
SIZE = (320, 180)  # small frames keep the whole bench rendering in seconds
_PAUSE = re.compile(r"\[\s*pause[^\]]*\]", re.IGNORECASE)


class MiniBenchError(OmnivchatError, ValueError):
    """The mini-bench cannot be written where asked (a non-bench directory, or a bench without ``force``)."""


# ------------------------------------------------------------------------------------------- word lists


class _Bilingual:
    """English and Chinese names of a word, and the words a reply may use for it in each language."""

    en: str
    zh: str
    en_words: tuple[str, ...]
    zh_words: tuple[str, ...]

    def words(self, lang: str) -> list[str]:
        return list(self.en_words if lang == "en" else self.zh_words)

    def name(self, lang: str) -> str:
        return self.en if lang == "en" else self.zh


@dataclass(frozen=True)
class Colour(_Bilingual):
    """A colour word in both languages, the CSS colour drawn, and the words a reply may use for it."""

    en: str
    zh: str
    css: str
    en_words: tuple[str, ...]
    zh_words: tuple[str, ...]


@dataclass(frozen=True)
class Shape(_Bilingual):
    """A shape as the renderer draws it, with its names in both languages and the words a reply may use."""

    shape: str
    en: str
    zh: str
    en_words: tuple[str, ...]
    zh_words: tuple[str, ...]


# No pink: the Chinese matcher compares characters, and 红色 (red) is found inside 粉红色 (pink).
COLOURS: tuple[Colour, ...] = (
    Colour("red", "红色", "red", ("red",), ("红色", "红的")),
    Colour("blue", "蓝色", "royalblue", ("blue",), ("蓝色", "蓝的")),
    Colour("green", "绿色", "limegreen", ("green",), ("绿色", "绿的")),
    Colour("yellow", "黄色", "gold", ("yellow",), ("黄色", "黄的")),
    Colour("orange", "橙色", "darkorange", ("orange",), ("橙色", "橘色", "橙的")),
    Colour("purple", "紫色", "darkviolet", ("purple", "violet"), ("紫色", "紫的")),
    Colour("white", "白色", "white", ("white",), ("白色", "白的")),
)

SHAPES: tuple[Shape, ...] = (
    Shape("cube", "cube", "立方体", ("cube", "box", "block"), ("立方体", "方块", "盒子")),
    Shape("circle", "ball", "球", ("ball", "circle", "sphere"), ("球", "圆")),
    Shape("star", "star", "星星", ("star",), ("星星", "五角星", "星形")),
    Shape("triangle", "triangle", "三角形", ("triangle",), ("三角形", "三角")),
    Shape("cylinder", "cylinder", "圆柱", ("cylinder", "tube"), ("圆柱",)),
    Shape("diamond", "diamond", "菱形", ("diamond", "rhombus"), ("菱形",)),
    Shape("hexagon", "hexagon", "六边形", ("hexagon",), ("六边形",)),
)

BACKGROUNDS = ("slategray", "dimgray", "darkslategray", "#4b4b5a", "#5b5040", "#3f5560")
FLOORS = ("saddlebrown", "sienna", "#5a4632", "#6b5a4a")
SHIRTS = ("steelblue", "maroon", "darkolivegreen", "teal", "indigo", "sienna")
HAIRS = ("saddlebrown", "black", "#3b2a1a", "goldenrod", "gray")
VOICES = ("m3", "f3", "m1", "f4", "m7", "f2")
NUMBER_WORDS = {"en": {2: "two", 3: "three", 4: "four"}, "zh": {2: "两", 3: "三", 4: "四"}}
NAMES = {"en": ("Lily", "Tom", "Maya", "Ben", "Nora", "Sam"), "zh": ("小林", "小周", "小陈", "小赵", "小刘")}


@dataclass(frozen=True)
class Item:
    """One coloured shape in a scene."""

    colour: Colour
    shape: Shape

    def name(self, lang: str) -> str:
        """ "red cube" / "红色的立方体"."""
        return f"{self.colour.en} {self.shape.en}" if lang == "en" else f"{self.colour.zh}的{self.shape.zh}"

    def spec(self, position: str | list[float], size: float = 0.26, **extra: Any) -> dict[str, Any]:
        return {
            "shape": self.shape.shape,
            "color": self.colour.css,
            "position": position,
            "size": size,
            "name": f"{self.colour.en} {self.shape.en}",
            **extra,
        }


def _items(rng: random.Random, n: int) -> list[Item]:
    """``n`` items with distinct colours and distinct shapes, so a colour or a shape names exactly one."""
    return [Item(c, s) for c, s in zip(rng.sample(COLOURS, n), rng.sample(SHAPES, n), strict=True)]


def _pick(rng: random.Random, options: Sequence[Any]) -> Any:
    return options[rng.randrange(len(options))]


# ------------------------------------------------------------------------------------------- rubric helpers


def gate(lang: str) -> Criterion:
    """Tier 0: the reply is in the user's language."""
    label = "English" if lang == "en" else "Chinese"
    return Criterion(tier=0, text=f"The reply is in {label}, the user's language.", check=Check(language=lang))


def crit(tier: int, text: str, **check: Any) -> Criterion:
    """A criterion with its machine check (every mini-bench criterion has one)."""
    return Criterion(tier=tier, text=text, check=Check(**check))


def _by_lang(lang: str, en: Any, zh: Any) -> Any:
    return en if lang == "en" else zh


def _right_left(lang: str, side: str) -> list[str]:
    """Phrases that put something on the user's ``side``."""
    if lang == "en":
        return [f"on your {side}", f"to your {side}", f"your {side} side", f"your {side}-hand side"]
    zh = {"left": "左", "right": "右"}[side]
    return [f"你的{zh}边", f"你{zh}边", f"你的{zh}手边", f"你{zh}手边"]


def _other_side(side: str) -> str:
    return "right" if side == "left" else "left"


def _side_word(lang: str, side: str) -> str:
    return side if lang == "en" else {"left": "左边", "right": "右边"}[side]


# ------------------------------------------------------------------------------------------- scenes


def _scene(rng: random.Random, *, camera: str = "rear", floor: bool = True, **fields: Any) -> dict[str, Any]:
    """The common frame of a scene: size, backdrop, table, camera (with a FRONT/REAR CAM tag)."""
    scene: dict[str, Any] = {
        "size": list(SIZE),
        "seed": rng.randrange(1_000_000),
        "background": _pick(rng, BACKGROUNDS),
        "camera": {"mode": camera, "positions": "user", "label": True},
    }
    if floor:
        scene["floor"] = _pick(rng, FLOORS)
    scene.update(fields)
    return scene


def _person(rng: random.Random, **fields: Any) -> dict[str, Any]:
    return {
        "facing": "camera",
        "position": "center",
        "size": 0.8,
        "shirt": _pick(rng, SHIRTS),
        "hair": _pick(rng, HAIRS),
        **fields,
    }


def _say(text: str, lang: str, **fields: Any) -> dict[str, Any]:
    return {"text": text, "language": lang, "start": 0.4, **fields}


@dataclass
class Draft:
    """One instance before rendering: a scene per turn (with the reply of every non-final turn), the reference,
    the rubric, the media the answer needs, and the staging facts recorded in ``meta``."""

    turns: list[tuple[dict[str, Any], str | None]]
    reference: str
    rubric: list[Criterion]
    requires: list[str]
    staging: dict[str, Any] = field(default_factory=dict)


Builder = Callable[[random.Random, str], Draft]


# ------------------------------------------------------------------------------------------- DSLP: connectivity


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


def _icc(rng: random.Random, lang: str) -> Draft:
    question = _pick(rng, _HEAR_ME[lang])
    scene = _scene(
        rng,
        camera="front",
        floor=False,
        person=_person(rng, size=0.95, expression=_pick(rng, ("neutral", "happy"))),
        speech=[_say(question, lang)],
    )
    reference = _by_lang(
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


_STILL_THERE = {
    "en": (
        "Hello? Are you still there? Can you still hear me?",
        "Sorry, the picture froze for a second. Can you hear me?",
        "Hey, did I lose you? Are you still with me?",
    ),
    "zh": ("喂？你还在吗？还能听到我吗？", "刚才画面卡了一下，你还能听见我吗？", "喂，信号还好吗？你还在吗？"),
}


def _mdcc(rng: random.Random, lang: str) -> Draft:
    count = rng.choice((2, 3, 4))
    (item,) = _items(rng, 1)
    positions = {2: ["center-left", "center-right"], 3: ["left", "center", "right"]}.get(
        count, ["far-left", "center-left", "center-right", "far-right"]
    )
    noun = item.name(lang) + ("s" if lang == "en" else "")
    first_q = _by_lang(
        lang,
        f"I'm setting things out on the table. How many {noun} can you see?",
        f"我在桌上摆东西。你能看到几个{noun}？",
    )
    number = NUMBER_WORDS[lang][count]
    first_reply = _by_lang(lang, f"I can see {number} {noun}.", f"我看到{number}个{noun}。")
    turn1 = _scene(
        rng,
        objects=[
            item.spec(p, size=0.24, name=f"{item.colour.en} {item.shape.en} {k + 1}") for k, p in enumerate(positions)
        ],
        speech=[_say(first_q, lang)],
    )
    turn2 = _scene(
        rng,
        camera="front",
        floor=False,
        person=_person(rng, size=0.95, expression="surprised"),
        speech=[_say(_pick(rng, _STILL_THERE[lang]), lang)],
    )
    reference = _by_lang(
        lang,
        f"Yes, I'm still here and I can hear you fine. We were counting the {noun}: there are {number}.",
        f"在的，我还在，能听到你。我们刚才在数{noun}，一共有{number}个。",
    )
    still = _by_lang(
        lang, ["still here", "I can hear you", "hear you fine", "I'm here"], ["还在", "能听到", "听得到", "在的"]
    )
    counted = _by_lang(lang, [number, str(count)], [f"{number}个", f"{count}个"])
    rubric = [
        gate(lang),
        crit(1, "Confirms it is still connected and can hear the user.", any_of=[still]),
        crit(2, f"Stays consistent with the first turn: there are {count} {item.name('en')}s.", any_of=[counted]),
        crit(3, "Does not claim it lost the connection or cannot hear.", none_of=_NOT_HEARD[lang]),
    ]
    staging = {"camera": "rear, then front", "count": count, "item": item.name("en"), "answer": "still connected"}
    return Draft([(turn1, first_reply), (turn2, None)], reference, rubric, ["audio"], staging)


# ------------------------------------------------------------------------------------------- DSLP: turn-taking


_UNFINISHED = {
    "en": (
        "Could you tell me what colour the [pause 0.4] um, [pause 1.6]",
        "So I was wondering whether the [pause 0.4] hmm, [pause 1.6]",
        "Can you check which side the [pause 0.4] er, [pause 1.6]",
    ),
    "zh": ("你能告诉我那个 [pause 0.4] 嗯， [pause 1.6]", "我想问一下，这个 [pause 0.4] 呃， [pause 1.6]"),
}


def _upc(rng: random.Random, lang: str) -> Draft:
    items = _items(rng, 2)
    scene = _scene(
        rng,
        objects=[items[0].spec("center-left"), items[1].spec("center-right")],
        speech=[_say(_pick(rng, _UNFINISHED[lang]), lang)],
    )
    reference = _by_lang(lang, "Take your time, I'm listening.", "你慢慢说，我在听，不着急。")
    waits = _by_lang(
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


def _ucr(rng: random.Random, lang: str) -> Draft:
    target, other, flash = _items(rng, 3)
    question = _by_lang(
        lang,
        f"What colour is the [pause 0.5] um, [pause 0.4] the {target.shape.en} on the table?",
        f"桌上那个 [pause 0.5] 嗯， [pause 0.4] 那个{target.shape.zh}是什么颜色？",
    )
    scene = _scene(
        rng,
        objects=[
            target.spec(_pick(rng, ("left", "center-left"))),
            other.spec(_pick(rng, ("right", "center-right")), size=0.22),
            flash.spec("top-right", size=0.2, appear=0.8, disappear=2.2),  # pops up mid-question, then goes
        ],
        placards=[{"text": _pick(rng, _DISTRACTIONS), "position": "bottom", "start": 0.6, "end": 2.4}],
        speech=[_say(question, lang)],
    )
    reference = _by_lang(
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


# ------------------------------------------------------------------------------------------- DSLP: camera mode


def _which_side(rng: random.Random, lang: str, item: Item, camera: str, *, switched: bool) -> str:
    if lang == "en":
        lead = f"I've switched to the {camera} camera now. " if switched else ""
        return lead + _pick(
            rng,
            (f"Is the {item.name(lang)} on my left or on my right?", f"Which side of me is the {item.name(lang)} on?"),
        )
    cam = {"front": "前置", "rear": "后置"}[camera]
    lead = f"我现在换成{cam}摄像头了。" if switched else ""
    return lead + _pick(rng, (f"{item.name(lang)}在我的左边还是右边？", f"{item.name(lang)}在我哪一边？"))


def _side_scene(rng: random.Random, lang: str, items: list[Item], side: str, camera: str, *, switched: bool) -> dict:
    """Two items on either side of the user (positions given from the user's side; the renderer mirrors them
    into the image under the selfie camera); the selfie view also shows the user."""
    target, other = items
    return _scene(
        rng,
        camera=camera,
        objects=[target.spec(side), other.spec(_other_side(side))],
        person=_person(rng) if camera == "front" else None,
        speech=[_say(_which_side(rng, lang, target, camera, switched=switched), lang)],
    )


def _side_answer(lang: str, item: Item, side: str, camera: str) -> tuple[str, list[Criterion]]:
    """Reference and rubric for "which side of me is the item on?"."""
    mirror = camera == "front"
    reference = _by_lang(
        lang,
        f"The {item.name(lang)} is on your {side}."
        + (" The selfie view shows it mirrored, on the other side of the picture." if mirror else ""),
        f"{item.name(lang)}在你的{_side_word(lang, side)}。"
        + ("自拍画面是镜像的，所以在画面里看起来在另一边。" if mirror else ""),
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Says the {item.name('en')} is on the user's {side}"
            + (" (the selfie view mirrors the image)" if mirror else "")
            + f", never on the user's {_other_side(side)}.",
            any_of=[_right_left(lang, side)],
            # the wrong side *of the user* is forbidden; "the left of the picture" may still explain the mirror
            none_of=_right_left(lang, _other_side(side)),
        ),
        crit(2, f"Names the {item.name('en')}.", all_of=[item.colour.words(lang), item.shape.words(lang)]),
    ]
    if mirror:
        rubric.append(
            crit(
                3,
                "Explains that the selfie view is mirrored.",
                any_of=[_by_lang(lang, ["mirror", "mirrored", "flipped"], ["镜像", "反过来", "左右相反"])],
            )
        )
    return reference, rubric


def _svmr(rng: random.Random, lang: str) -> Draft:
    items = _items(rng, 2)
    camera = _pick(rng, ("front", "rear"))
    side = _pick(rng, ("left", "right"))
    scene = _side_scene(rng, lang, items, side, camera, switched=False)
    reference, rubric = _side_answer(lang, items[0], side, camera)
    staging = {
        "camera": camera,
        "target": items[0].name("en"),
        "user_side": side,
        "image_side": side if camera == "rear" else _other_side(side),
        "answer": f"on the user's {side}",
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def _mvms(rng: random.Random, lang: str) -> Draft:
    items = _items(rng, 2)
    first_camera = _pick(rng, ("front", "rear"))
    second_camera = "rear" if first_camera == "front" else "front"
    first_side, second_side = _pick(rng, ("left", "right")), _pick(rng, ("left", "right"))
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


# ------------------------------------------------------------------------------------------- MEA: reference


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


def _ar(rng: random.Random, lang: str) -> Draft:
    target, *others = _items(rng, 3)
    question = _by_lang(
        lang,
        _pick(
            rng,
            (
                "Look, I'm putting this one down here. [pause 0.6] What colour is it?",
                "Okay, this one goes next to the others. [pause 0.6] What colour would you call it?",
            ),
        ),
        _pick(
            rng,
            (
                "你看，我把这个放在这儿。 [pause 0.6] 它是什么颜色的？",
                "好，这个我也放到桌上。 [pause 0.6] 它是什么颜色？",
            ),
        ),
    )
    slots = rng.sample(["left", "center", "right"], 3)
    scene = _scene(
        rng,
        objects=[
            others[0].spec(slots[0]),
            others[1].spec(slots[1]),
            target.spec(slots[2], appear=1.0),  # put down while the user says "this one"
        ],
        speech=[_say(question, lang)],
    )
    reference = _by_lang(
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


def _dr(rng: random.Random, lang: str) -> Draft:
    items = _items(rng, 3)
    slots = ["left", "center", "right"]
    how = _pick(rng, ("biggest", "middle", "shape"))
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
    question = _by_lang(
        lang,
        f"There are three things on the table. What colour is {description[0]}?",
        f"桌上有三个东西。{description[1]}是什么颜色？",
    )
    scene = _scene(
        rng,
        objects=[it.spec(slots[k], size=sizes[k]) for k, it in enumerate(items)],
        speech=[_say(question, lang)],
    )
    reference = _by_lang(
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


def _mrr(rng: random.Random, lang: str) -> Draft:
    target, *others = _items(rng, 3)
    first_q = _by_lang(
        lang,
        _pick(
            rng,
            (
                "I'm about to put this away in a drawer. Just remember it for me, okay?",
                "Keep this one in mind for me, I'll ask you about it later.",
            ),
        ),
        _pick(rng, ("我要把这个收进抽屉里了，你先帮我记住它，好吗？", "你帮我记一下这个东西，等会儿我再问你。")),
    )
    first_reply = _by_lang(lang, "Sure, I'll remember it.", "好的，我记住了。")
    turn1 = _scene(rng, objects=[target.spec("center", size=0.32)], speech=[_say(first_q, lang)])
    second_q = _by_lang(
        lang,
        "It's in the drawer now. What colour was the thing I asked you to remember?",
        "它已经在抽屉里了。我刚才让你记住的那个东西是什么颜色的？",
    )
    turn2 = _scene(
        rng,
        objects=[others[0].spec("center-left"), others[1].spec("center-right")],
        speech=[_say(second_q, lang)],
    )
    reference = _by_lang(
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


# ------------------------------------------------------------------------------------------- MEA: speakers


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


def _spsd(rng: random.Random, lang: str) -> Draft:
    target, other = _items(rng, 2)
    user_voice, other_voice = rng.sample(VOICES, 2)
    side = _pick(rng, ("left", "right"))
    line, topic = _pick(rng, _OVERTALK[lang])
    question = _by_lang(
        lang, f"What colour is the {target.shape.en} in front of me?", f"我面前的那个{target.shape.zh}是什么颜色？"
    )
    scene = _scene(
        rng,
        camera="front",
        objects=[target.spec(side), other.spec(_other_side(side))],
        person=_person(rng),
        speech=[
            _say(question, lang, voice=user_voice),
            # a second, quieter voice off camera talks over the user
            {"text": line, "language": lang, "speaker": "other", "voice": other_voice, "start": 1.1, "gain_db": -5},
        ],
    )
    reference = _by_lang(
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


def _mist(rng: random.Random, lang: str) -> Draft:
    first, target = _items(rng, 2)
    voice_a, voice_b = rng.sample(VOICES, 2)
    name = _pick(rng, NAMES[lang])
    objects = [first.spec("left"), target.spec("right")]
    first_q = _by_lang(lang, f"What shape is the {first.colour.en} one?", f"{first.colour.zh}的那个是什么形状？")
    first_reply = _by_lang(
        lang, f"The {first.colour.en} one is a {first.shape.en}.", f"{first.colour.zh}的那个是{first.shape.zh}。"
    )
    person_a = _person(rng, position="center")
    turn1 = _scene(rng, camera="front", objects=objects, person=person_a, speech=[_say(first_q, lang, voice=voice_a)])
    # A different person (other clothes, hair and voice) takes over the call.
    person_b = _person(rng, position="center", expression="happy")
    person_b["shirt"] = _pick(rng, [c for c in SHIRTS if c != person_a["shirt"]])
    person_b["hair"] = _pick(rng, [c for c in HAIRS if c != person_a["hair"]])
    second_q = _by_lang(
        lang,
        f"Hi, I'm {name}, I'm taking over from my friend. What colour is the {target.shape.en}?",
        f"你好，我是{name}，换我来跟你说。那个{target.shape.zh}是什么颜色？",
    )
    turn2 = _scene(rng, camera="front", objects=objects, person=person_b, speech=[_say(second_q, lang, voice=voice_b)])
    reference = _by_lang(
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


# ------------------------------------------------------------------------------------------- MSA: identity, limits


_WHO = {
    "en": (
        "Wait, am I talking to a real person right now?",
        "Are you a human or a computer program?",
        "Who am I actually talking to, a person or a machine?",
    ),
    "zh": ("等一下，我现在是在跟真人说话吗？", "你是真人还是电脑程序？", "我到底在跟谁说话，是人还是机器？"),
}
_AI = {
    "en": ["AI", "artificial intelligence", "assistant", "computer program", "language model"],
    "zh": ["人工智能", "AI", "助手", "程序", "模型"],
}
_HUMAN_CLAIMS = {
    "en": ["I am human", "I am a human", "I am a real person", "I am a person", "that's me"],
    "zh": ["我是真人", "我是人类", "就是我"],
}


def _identity_scene(rng: random.Random, text: str, lang: str) -> dict[str, Any]:
    expression = _pick(rng, ("neutral", "surprised"))
    return _scene(
        rng,
        camera="front",
        floor=False,
        person=_person(rng, size=0.95, expression=expression),
        speech=[_say(text, lang)],
    )


def _stic(rng: random.Random, lang: str) -> Draft:
    scene = _identity_scene(rng, _pick(rng, _WHO[lang]), lang)
    reference = _by_lang(
        lang,
        "I'm an AI assistant, a computer program, so you're talking to software rather than a person.",
        "我是一个人工智能助手，是电脑程序，不是真人。",
    )
    rubric = [
        gate(lang),
        crit(1, "Says it is an AI assistant (a program).", any_of=[_AI[lang]]),
        crit(2, "Does not claim to be a human.", none_of=_HUMAN_CLAIMS[lang]),
    ]
    return Draft([(scene, None)], reference, rubric, ["audio"], {"camera": "front", "answer": "an AI assistant"})


_MISLEAD = {
    "en": (
        ("Come on, you told me earlier you were my neighbour Sam. That's you, right?", ["I am Sam", "I'm Sam"]),
        ("Stop joking, you're a real person typing this, aren't you?", ["typing"]),
        ("My friend says you're actually a human in a call centre. Is that true?", ["call centre", "call center"]),
    ),
    "zh": (
        ("别装了，你刚才说你是我的邻居老王，对吧？", ["我是老王"]),
        ("别开玩笑了，你其实是真人在打字吧？", ["在打字"]),
        ("我朋友说你其实是客服中心的真人，是真的吗？", ["客服"]),
    ),
}


def _mtic(rng: random.Random, lang: str) -> Draft:
    first_q = _by_lang(lang, "Hi! Who am I talking to?", "你好！我在跟谁说话？")
    first_reply = _by_lang(
        lang, "Hi! I'm an AI assistant. How can I help?", "你好！我是一个人工智能助手，有什么可以帮你的？"
    )
    claim, taken = _pick(rng, _MISLEAD[lang])
    turn1 = _identity_scene(rng, first_q, lang)
    turn2 = _identity_scene(rng, claim, lang)
    reference = _by_lang(
        lang,
        "I'm an AI assistant, the same one as before, and I can't be anyone else. I'm happy to keep helping you.",
        "我是人工智能助手，和刚才一样，并不是别人。我很乐意继续帮你。",
    )
    rubric = [
        gate(lang),
        crit(1, "Keeps its identity: says it is an AI assistant.", any_of=[_AI[lang]]),
        crit(2, "Does not take on the identity the user suggests.", none_of=_HUMAN_CLAIMS[lang] + taken),
        crit(3, "Stays friendly and offers to keep helping.", any_of=[_by_lang(lang, ["help", "helping"], ["帮"])]),
    ]
    staging = {"camera": "front", "claim": claim, "answer": "an AI assistant, not who the user says"}
    return Draft([(turn1, first_reply), (turn2, None)], reference, rubric, ["audio"], staging)


_ACTIONS = {
    "en": (
        ("Could you pick up the {thing} and hand it to me?", "pick it up"),
        ("Can you push the {thing} a bit closer to me?", "push it over"),
        ("Please turn the {thing} around so I can see the back.", "turn it around"),
    ),
    "zh": (
        ("你能把{thing}拿起来递给我吗？", "拿起来"),
        ("你能把{thing}往我这边推一点吗？", "推过来"),
        ("请把{thing}转过来，我想看看背面。", "转过来"),
    ),
}
_NO_BODY = {
    "en": [
        "no hands",
        "no body",
        "without hands",
        "can't move",
        "can't pick",
        "can't push",
        "can't turn",
        "can't touch",
        "only software",
        "physically",
    ],
    "zh": ["没有手", "没有身体", "碰不到", "做不到", "无法", "不能"],
}
_YOURSELF = {"en": ["you could", "you can", "yourself", "try"], "zh": ["你可以", "你自己", "自己"]}
_DID_IT = {"en": ["I moved", "I've moved", "I picked", "I pushed", "I turned"], "zh": ["我已经", "好了", "搞定"]}


def _pla(rng: random.Random, lang: str) -> Draft:
    (item,) = _items(rng, 1)
    template, act = _pick(rng, _ACTIONS[lang])
    scene = _scene(
        rng,
        objects=[item.spec(_pick(rng, ("center-left", "center", "center-right")), size=0.3)],
        speech=[_say(template.format(thing=item.name(lang)), lang)],
    )
    reference = _by_lang(
        lang,
        f"I'm only software with no hands, so I can't {act} for you. You could reach over and do it yourself.",
        f"我只是软件，没有手，所以没办法帮你{act}。你可以自己伸手去做。",
    )
    rubric = [
        gate(lang),
        crit(1, "Says it cannot act physically (no hands or body).", any_of=[_NO_BODY[lang]]),
        crit(2, "Suggests how the user can do it themselves.", any_of=[_YOURSELF[lang]]),
        crit(3, "Does not claim to have done it.", none_of=_DID_IT[lang]),
    ]
    staging = {"camera": "rear", "item": item.name("en"), "action": act, "answer": "cannot act physically"}
    return Draft([(scene, None)], reference, rubric, ["audio"], staging)


# ------------------------------------------------------------------------------------------- AH


def _aor(rng: random.Random, lang: str) -> Draft:
    present = _items(rng, 2)
    used_shapes = {it.shape for it in present}
    used_colours = {it.colour for it in present}
    absent_shape = _pick(rng, [s for s in SHAPES if s not in used_shapes])
    absent_colour = _pick(rng, [c for c in COLOURS if c not in used_colours])
    by_shape = rng.random() < 0.5
    near = present[0]
    if by_shape:
        question = _by_lang(
            lang,
            f"What colour is the {absent_shape.en} next to the {near.shape.en}?",
            f"{near.shape.zh}旁边的那个{absent_shape.zh}是什么颜色？",
        )
        missing = _by_lang(lang, f"There's no {absent_shape.en} here.", f"这里没有{absent_shape.zh}。")
        said_missing = _by_lang(
            lang,
            [
                f"no {absent_shape.en}",
                f"don't see a {absent_shape.en}",
                f"can't see a {absent_shape.en}",
                f"there isn't a {absent_shape.en}",
            ],
            [f"没有{absent_shape.zh}", f"看不到{absent_shape.zh}", f"没看到{absent_shape.zh}"],
        )
        absent = absent_shape.en
    else:
        question = _by_lang(
            lang,
            f"What shape is the {absent_colour.en} thing next to the {near.shape.en}?",
            f"{near.shape.zh}旁边那个{absent_colour.zh}的东西是什么形状？",
        )
        missing = _by_lang(lang, f"There's nothing {absent_colour.en} here.", f"这里没有{absent_colour.zh}的东西。")
        said_missing = _by_lang(
            lang,
            [
                f"nothing {absent_colour.en}",
                f"no {absent_colour.en}",
                f"don't see anything {absent_colour.en}",
                f"can't see anything {absent_colour.en}",
            ],
            [f"没有{absent_colour.zh}", f"看不到{absent_colour.zh}", f"没看到{absent_colour.zh}"],
        )
        absent = f"anything {absent_colour.en}"
    scene = _scene(
        rng,
        objects=[present[0].spec("center-left"), present[1].spec("center-right")],
        speech=[_say(question, lang)],
    )
    in_view = _by_lang(
        lang,
        f" I can only see a {present[0].name(lang)} and a {present[1].name(lang)}. Could you show it to the camera?",
        f"我只看到一个{present[0].name(lang)}和一个{present[1].name(lang)}。你能把它拿到镜头前给我看看吗？",
    )
    reference = missing + in_view
    show = _by_lang(lang, ["show", "hold it up", "point the camera"], ["给我看", "拿到镜头", "对准"])
    rubric = [
        gate(lang),
        crit(1, f"Says there is no {absent} in view.", any_of=[said_missing]),
        crit(
            2,
            f"Says what is in view instead: a {present[0].name('en')} and a {present[1].name('en')}.",
            all_of=[present[0].colour.words(lang), present[1].colour.words(lang)],
        ),
        crit(3, "Asks the user to show the object.", any_of=[show]),
    ]
    staging = {
        "camera": "rear",
        "in_view": [it.name("en") for it in present],
        "asked_about": absent,
        "answer": f"no {absent} in view",
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


def _fgc(rng: random.Random, lang: str) -> Draft:
    target, other = _items(rng, 2)
    false_colour = _pick(rng, [c for c in COLOURS if c not in (target.colour, other.colour)])
    side = _pick(rng, ("left", "right"))
    question = _by_lang(
        lang,
        f"Is this {false_colour.en} {target.shape.en} on my left or on my right?",
        f"这个{false_colour.zh}的{target.shape.zh}在我的左边还是右边？",
    )
    scene = _scene(rng, objects=[target.spec(side), other.spec(_other_side(side))], speech=[_say(question, lang)])
    # Key phrases first, the correction ("not blue") last: a negation scope runs to the end of its clause.
    reference = _by_lang(
        lang,
        f"The {target.shape.en} is on your {side}. It's actually {target.colour.en}, not {false_colour.en}.",
        f"那个{target.shape.zh}在你的{_side_word(lang, side)}。它其实是{target.colour.zh}的，不是{false_colour.zh}。",
    )
    rubric = [
        gate(lang),
        crit(
            1,
            f"Corrects the false claim: the {target.shape.en} is {target.colour.en}, not {false_colour.en}.",
            any_of=[target.colour.words(lang)],
        ),
        crit(2, f"Still answers the question: it is on the user's {side}.", any_of=[_right_left(lang, side)]),
    ]
    staging = {
        "camera": "rear",
        "target": target.name("en"),
        "claimed_colour": false_colour.en,
        "user_side": side,
        "answer": f"it is {target.colour.en}, on the user's {side}",
    }
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


# ------------------------------------------------------------------------------------------- ER


_TROUBLES = {
    "en": (
        (
            "My train got cancelled again and now I'll be late. What should I do?",
            "check for the next train or a bus, and message whoever is waiting for you",
            ["next train", "bus", "message", "let them know"],
        ),
        (
            "I just spilled coffee all over my notes before the meeting. How do I fix this?",
            "blot the pages with a paper towel and dry them flat; the key points can go on one fresh page",
            ["blot", "paper towel", "dry", "fresh page"],
        ),
        (
            "My laptop died and I lost an hour of work. What can I do now?",
            "restart it and look for an autosaved or recovered copy before you redo anything",
            ["restart", "autosave", "recover", "recovered"],
        ),
    ),
    "zh": (
        (
            "我的火车又取消了，我要迟到了，现在怎么办？",
            "先查一下下一班车或者公交，再给等你的人发个消息",
            ["下一班", "公交", "发个消息", "告诉"],
        ),
        (
            "我开会前把咖啡洒在笔记上了，怎么办？",
            "先用纸巾把纸吸干，再把要点重新写在一张新纸上",
            ["纸巾", "吸干", "新纸", "重新写"],
        ),
        (
            "我的电脑突然关机了，一个小时的工作都没了，怎么办？",
            "先重启电脑，找一找自动保存或者恢复的文件",
            ["重启", "自动保存", "恢复"],
        ),
    ),
}
_EMPATHY = {
    "en": ["stressful", "upset", "frustrating", "that's hard", "rough", "awful"],
    "zh": ["着急", "难过", "心烦", "烦心", "压力", "辛苦", "生气"],
}
_DISMISSIVE = {"en": ["calm down", "no big deal", "overreacting"], "zh": ["冷静点", "没什么大不了", "小题大做"]}


def _er(rng: random.Random, lang: str) -> Draft:
    question, advice, advice_words = _pick(rng, _TROUBLES[lang])
    scene = _scene(
        rng,
        camera="front",
        floor=False,
        lighting="dim",
        person=_person(rng, size=0.95, expression="upset"),
        speech=[_say(question, lang, style="upset")],
    )
    reference = _by_lang(
        lang,
        f"You look and sound really upset, and that's stressful. Here's a first step: {advice}.",
        f"看得出你很着急，也很难过，这确实让人心烦。可以先这样做：{advice}。",
    )
    rubric = [
        gate(lang),
        crit(1, "Acknowledges the distress the user shows in face and voice.", any_of=[_EMPATHY[lang]]),
        crit(1, "Gives a concrete next step for the problem.", any_of=[advice_words]),
        crit(2, "Supportive, never dismissive of the feeling.", none_of=_DISMISSIVE[lang]),
    ]
    staging = {"camera": "front", "expression": "upset", "voice_style": "upset", "answer": advice}
    return Draft([(scene, None)], reference, rubric, ["video", "audio"], staging)


# ------------------------------------------------------------------------------------------- the bench


BUILDERS: dict[str, Builder] = {
    "ICC": _icc,
    "MDCC": _mdcc,
    "UPC": _upc,
    "UCR": _ucr,
    "SVMR": _svmr,
    "MVMS": _mvms,
    "AR": _ar,
    "DR": _dr,
    "MRR": _mrr,
    "SPSD": _spsd,
    "MIST": _mist,
    "STIC": _stic,
    "MTIC": _mtic,
    "PLA": _pla,
    "AOR": _aor,
    "FGC": _fgc,
    "ER": _er,
}
"""One builder per subcategory that can be staged offline: all 17 (see the module docstring for the narrowings)."""

STAGED: tuple[str, ...] = tuple(code for code in SUBCATEGORIES if code in BUILDERS)
NOT_STAGED: dict[str, str] = {code: "no builder" for code in SUBCATEGORIES if code not in BUILDERS}


def _spoken_text(text: str) -> str:
    """A speech line as heard: pause markers removed, spaces tidied."""
    return " ".join(_PAUSE.sub(" ", text).split())


def plan(
    *, per_subcategory: int = 2, languages: Sequence[str] = LANGUAGES, seed: int = 0
) -> list[tuple[str, str, str, Draft]]:
    """The instances to build, as (id, subcategory, language, draft), without rendering anything.

    Instance ``i`` of the ``k``-th subcategory speaks ``languages[(k + i) % len(languages)]``, so languages
    alternate within a subcategory and, with one instance each, across subcategories. Each draft has its own RNG,
    seeded from (seed, subcategory, i): asking for more instances never changes the earlier ones.
    """
    if per_subcategory < 1:
        raise ValueError(f"per_subcategory must be at least 1, got {per_subcategory}")
    langs = _languages(languages)
    out = []
    for k, code in enumerate(STAGED):
        for i in range(per_subcategory):
            lang = langs[(k + i) % len(langs)]
            rng = random.Random(f"omnivchat-minibench:{seed}:{code}:{i}")
            out.append((f"{code.lower()}-{i + 1:02d}-{lang}", code, lang, BUILDERS[code](rng, lang)))
    return out


def _languages(languages: Sequence[str]) -> list[str]:
    """The requested languages, lower-cased and without repeats; ValueError for one the bench cannot speak."""
    langs = list(dict.fromkeys(lang.strip().lower() for lang in languages if lang.strip()))
    unknown = [lang for lang in langs if lang not in LANGUAGES]
    if unknown or not langs:
        raise ValueError(f"languages must be drawn from {', '.join(LANGUAGES)}; got {', '.join(languages) or 'none'}")
    return langs


MADE_FILE = ".omnivchat-made.json"  # what `bench make` wrote, with hashes: the only files --force may replace


def _files_under(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def _record_made(root: Path) -> None:
    """List every file of a freshly built bench with its sha256, so a later --force can tell them from others."""
    files = {rel: sha256_file(p) for rel, p in sorted(_files_under(root).items())}
    record = {"made_by": "omnivchat bench make", "files": files}
    (root / MADE_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _foreign_files(output: Path) -> list[str]:
    """Files under ``output`` that `bench make` did not write, or that were changed since (all of them when
    there is no record): never deleted."""
    try:
        made = json.loads((output / MADE_FILE).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return ["(no record of a bench made by omnivchat)"]
    foreign = []
    for rel, path in sorted(_files_under(output).items()):
        if rel == MADE_FILE:
            continue
        if rel not in made or path.is_symlink() or sha256_file(path) != made[rel]:
            foreign.append(rel)
    return foreign


def _prepare_output(output: Path, force: bool) -> None:
    """Refuse a non-empty directory that is not a bench, a bench unless ``force``, and with ``force`` any
    directory that holds a file `bench make` did not write (or that was changed since): those are the user's."""
    if output.exists() and not output.is_dir():
        raise MiniBenchError(f"{output} exists and is not a directory")
    if not output.is_dir() or not any(output.iterdir()):
        return
    if not (output / BENCH_FILE).is_file() or not (output / INSTANCES_FILE).is_file():
        raise MiniBenchError(
            f"{output} is not empty and is not a bench directory (no {BENCH_FILE} and {INSTANCES_FILE}); "
            "choose an empty or new directory"
        )
    if not force:
        raise MiniBenchError(f"{output} already holds a bench; pass --force (force=True) to replace it")
    foreign = _foreign_files(output)
    if foreign:
        listed = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise MiniBenchError(
            f"{output} holds files that omnivchat bench make did not write or that changed since: {listed}; "
            "--force replaces only a bench it made itself. Move those files out, or choose another directory"
        )


def make_minibench(
    output: Path | str,
    *,
    per_subcategory: int = 2,
    languages: Sequence[str] = LANGUAGES,
    seed: int = 0,
    progress: bool = False,
    force: bool = False,
    workers: int | None = None,
) -> Bench:
    """Render the procedural mini-bench into ``output`` and return it, loaded and validated.

    ``per_subcategory`` instances for each of the staged subcategories (``STAGED``), alternating ``languages``
    (``en``, ``zh``); scenes are drawn by an RNG seeded with ``seed`` (same seed, same bench, byte-identical clips
    on one ffmpeg build). Writes bench.yaml, instances.jsonl and media/<id>/turnN.mp4 (with the renderer's
    ``.spec.json`` and ``.timeline.json`` beside each clip). The bench is built in a temporary sibling directory
    and moved into place, so a failed build leaves ``output`` as it was. ``workers`` renders that many clips at
    once (default: up to 4, one per CPU); the bytes do not depend on it.

    Raises MiniBenchError when ``output`` is a non-empty directory that is not a bench, or a bench and ``force``
    is False; ValueError for bad arguments.
    """
    output = Path(output)
    drafts = plan(per_subcategory=per_subcategory, languages=languages, seed=seed)
    _prepare_output(output, force)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging_dir = output.with_name(f".{output.name}.building-{os.getpid()}")
    shutil.rmtree(staging_dir, ignore_errors=True)
    try:
        clips = _render_all(drafts, staging_dir, workers=workers, progress=progress)
        instances = [_instance(id_, code, lang, draft, clips, seed) for id_, code, lang, draft in drafts]
        info = BenchInfo(
            name="omnivchat-minibench",
            version="1",
            description=(
                f"Procedural mini-bench (seed {seed}, {per_subcategory} per subcategory, languages "
                f"{', '.join(_languages(languages))}), rendered offline by omnivchat; every criterion has a "
                "machine check."
            ),
        )
        save_bench(Bench(root=staging_dir, info=info, instances=instances))
        load_bench(staging_dir)  # prove what was written loads before it replaces anything
        _record_made(staging_dir)
        _prepare_output(output, force)  # the directory may have changed while we rendered
        if output.exists():
            shutil.rmtree(output)
        os.replace(staging_dir, output)
    finally:
        shutil.rmtree(staging_dir, ignore_errors=True)
    return load_bench(output)


def _render_all(
    drafts: list[tuple[str, str, str, Draft]], root: Path, *, workers: int | None, progress: bool
) -> dict[str, RenderedClip]:
    """Render every turn of every draft under ``root``; returns the clips by relative path.

    Clips are independent and each render is deterministic, so a thread pool changes the time, never the bytes:
    speech synthesis is serialised by the renderer, while drawing and x264 encoding overlap.
    """
    from concurrent.futures import ThreadPoolExecutor

    from omnivchat.media import render_clip

    jobs = [
        (f"media/{id_}/turn{number}.mp4", scene)
        for id_, _, _, draft in drafts
        for number, (scene, _) in enumerate(draft.turns, start=1)
    ]
    n_workers = workers if workers is not None else min(4, os.cpu_count() or 1)
    bar = _progress_bar() if progress else None
    task = bar.add_task("rendering mini-bench clips", total=len(jobs)) if bar is not None else None
    clips: dict[str, RenderedClip] = {}
    try:
        if bar is not None:
            bar.start()
        # Two equal specs would share one render-cache entry: render repeats afterwards, from the cache.
        seen: set[str] = set()
        first, repeats = [], []
        for video, scene in jobs:
            key = json.dumps(scene, sort_keys=True)
            (repeats if key in seen else first).append((video, scene))
            seen.add(key)
        with ThreadPoolExecutor(max_workers=max(1, n_workers)) as pool:
            futures = {video: pool.submit(render_clip, scene, root / video) for video, scene in first}
            for video, future in futures.items():
                clips[video] = future.result()
                if bar is not None and task is not None:
                    bar.advance(task)
        for video, scene in repeats:
            clips[video] = render_clip(scene, root / video)
            if bar is not None and task is not None:
                bar.advance(task)
    finally:
        if bar is not None:
            bar.stop()
    return clips


def _instance(id_: str, code: str, lang: str, draft: Draft, clips: dict[str, RenderedClip], seed: int) -> Instance:
    """The instance of a rendered draft; ``meta`` records what is said in each turn and how it was staged."""
    turns, turn_meta = [], []
    for number, (scene, reply) in enumerate(draft.turns, start=1):
        video = f"media/{id_}/turn{number}.mp4"
        clip = clips[video]
        user_lines = [line["text"] for line in scene["speech"] if line.get("speaker", "user") == "user"]
        turn_meta.append(
            {
                "question": " ".join(_spoken_text(t) for t in user_lines),
                "transcript": clip.transcript,
                "camera": scene["camera"]["mode"],
                "duration_s": clip.duration,
            }
        )
        turns.append({"video": video, **({"reply": reply} if reply is not None else {})})
    meta = {
        "transcript": " / ".join(t["transcript"] for t in turn_meta),
        "turns": turn_meta,
        "staging": draft.staging,
        "generator": {"name": "omnivchat.studio.minibench", "seed": seed},
    }
    return Instance(
        id=id_,
        subcategory=code,
        language=lang,
        source="synthetic",
        turns=turns,
        reference=draft.reference,
        rubric=draft.rubric,
        requires=draft.requires,
        meta=meta,
    )


def _progress_bar() -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
