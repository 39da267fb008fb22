"""The mini-bench builders' kit: word lists, scene pieces, rubric helpers and the :class:`Draft` they return.

A builder (one per subcategory, in the category modules) is a function ``(rng, lang) -> Draft``. It draws
everything from ``rng`` in a fixed order, so the same seed gives the same scene; the helpers here draw from it
the same way wherever they are called.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from omnivchat.bench import Check, Criterion

SIZE = (320, 180)  # small frames keep the whole bench rendering in seconds

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
        """The item as a renderer scene object at ``position`` (its timeline name: "red cube")."""
        return {
            "shape": self.shape.shape,
            "color": self.colour.css,
            "position": position,
            "size": size,
            "name": f"{self.colour.en} {self.shape.en}",
            **extra,
        }


def draw_items(rng: random.Random, n: int) -> list[Item]:
    """``n`` items with distinct colours and distinct shapes, so a colour or a shape names exactly one."""
    return [Item(c, s) for c, s in zip(rng.sample(COLOURS, n), rng.sample(SHAPES, n), strict=True)]


# ------------------------------------------------------------------------------------------- English words

# Spelling is not sound: these open with a consonant sound ("a unicorn", "a one-off") or a vowel one ("an hour").
_CONSONANT_SOUND = ("uni", "use", "usu", "uti", "eu", "ewe", "one", "once", "ufo")
_VOWEL_SOUND = ("hour", "honest", "honour", "honor", "heir")
_VOWEL_LETTERS = "AEFHILMNORSX"  # letters said with a vowel first when spelt out: "an LED", "an AI", "an X-ray"


def article(phrase: str) -> str:
    """``phrase`` with "a" or "an" in front, chosen by how its first word sounds: "an orange ball", "a unicorn",
    "an 8.0 s clip", "a 1.5 s clip", "an hour". Every English template that writes an indefinite article uses it."""
    word = phrase.split(" ", 1)[0].strip("\"'(")
    lower = word.lower()
    if word[:1].isdigit():
        digits = word.split(".", 1)[0].replace(",", "")
        # 11 and 18 and their thousands ("11,000") are said "eleven", "eighteen"; any other number by its first digit
        vowel = digits.startswith("8") or (len(digits) % 3 == 2 and digits[:2] in ("11", "18"))
    elif len(word) > 1 and word.isupper() and word.isalpha():
        vowel = word[0] in _VOWEL_LETTERS
    elif lower.startswith(_CONSONANT_SOUND):
        vowel = False
    elif lower.startswith(_VOWEL_SOUND):
        vowel = True
    else:
        vowel = lower[:1] in tuple("aeiou")
    return ("an " if vowel else "a ") + phrase


def plural(noun: str) -> str:
    """The English plural of a (regular) noun phrase: "red cube" -> "red cubes", "box" -> "boxes"."""
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + "s"


def pick(rng: random.Random, options: Sequence[Any]) -> Any:
    """One of ``options``, drawn with ``rng``."""
    return options[rng.randrange(len(options))]


# ------------------------------------------------------------------------------------------- rubric helpers


def gate(lang: str) -> Criterion:
    """Tier 0: the reply is in the user's language."""
    label = "English" if lang == "en" else "Chinese"
    return Criterion(tier=0, text=f"The reply is in {label}, the user's language.", check=Check(language=lang))


def crit(tier: int, text: str, **check: Any) -> Criterion:
    """A criterion with its machine check (every mini-bench criterion has one)."""
    return Criterion(tier=tier, text=text, check=Check(**check))


def by_lang(lang: str, en: Any, zh: Any) -> Any:
    """``en`` for an English instance, ``zh`` for a Mandarin one."""
    return en if lang == "en" else zh


def side_phrases(lang: str, side: str) -> list[str]:
    """Phrases that put something on the user's ``side``."""
    if lang == "en":
        return [f"on your {side}", f"to your {side}", f"your {side} side", f"your {side}-hand side"]
    zh = {"left": "左", "right": "右"}[side]
    return [f"你的{zh}边", f"你{zh}边", f"你的{zh}手边", f"你{zh}手边"]


def other_side(side: str) -> str:
    """``"right"`` for ``"left"`` and the other way round."""
    return "right" if side == "left" else "left"


def side_word(lang: str, side: str) -> str:
    """The word for ``side`` in ``lang`` ("left" / "左边")."""
    return side if lang == "en" else {"left": "左边", "right": "右边"}[side]


# ------------------------------------------------------------------------------------------- scenes


def base_scene(rng: random.Random, *, camera: str = "rear", floor: bool = True, **fields: Any) -> dict[str, Any]:
    """The common frame of a scene: size, backdrop, table, camera (with a FRONT/REAR CAM tag)."""
    scene: dict[str, Any] = {
        "size": list(SIZE),
        "seed": rng.randrange(1_000_000),
        "background": pick(rng, BACKGROUNDS),
        "camera": {"mode": camera, "positions": "user", "label": True},
    }
    if floor:
        scene["floor"] = pick(rng, FLOORS)
    scene.update(fields)
    return scene


def figure(rng: random.Random, **fields: Any) -> dict[str, Any]:
    """A person-like figure (the user, unless ``fields`` say otherwise) facing the camera, shirt and hair drawn."""
    return {
        "facing": "camera",
        "position": "center",
        "size": 0.8,
        "shirt": pick(rng, SHIRTS),
        "hair": pick(rng, HAIRS),
        **fields,
    }


def say(text: str, lang: str, **fields: Any) -> dict[str, Any]:
    """A speech line of the user, from 0.4 s."""
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
"""Builds one instance of a subcategory: ``(rng, language) -> Draft``."""
