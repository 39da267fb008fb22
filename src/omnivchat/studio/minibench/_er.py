"""ER (Emotion Recognition): the builder for ER, an upset user (face and voice) with a practical problem."""

from __future__ import annotations

import random

from omnivchat.studio.minibench._kit import (
    Draft,
    base_scene,
    by_lang,
    crit,
    figure,
    gate,
    pick,
    say,
)

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


def build_er(rng: random.Random, lang: str) -> Draft:
    """ER, Emotion Recognition: an upset user (face, dim light, upset voice) with a practical problem; the reply
    acknowledges the feeling and gives a next step."""
    question, advice, advice_words = pick(rng, _TROUBLES[lang])
    scene = base_scene(
        rng,
        camera="front",
        floor=False,
        lighting="dim",
        person=figure(rng, size=0.95, expression="upset"),
        speech=[say(question, lang, style="upset")],
    )
    reference = by_lang(
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
