"""Build the example bench in examples/bench: eight instances with clips rendered by omnivchat's offline renderer.

Run it with `uv run python examples/make_example_bench.py [OUTPUT_DIR]`. Rendering is deterministic, so running it again
rewrites the same files. The scenes, questions, reference replies and rubrics are written for this project in
the style of the paper's worked examples (Appendix F); `examples/hits.jsonl` holds one illustrative grading of
an imagined model's replies, so `omnivchat score` has something to score.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from omnivchat.bench import Bench, BenchInfo, Instance, load_bench, save_bench
from omnivchat.synth import render_clip

ROOT = Path(__file__).parent / "bench"


def person(**kw: Any) -> dict[str, Any]:
    return {"facing": "camera", "position": "center", "size": 0.95, **kw}


def criterion(tier: int, text: str, **check: Any) -> dict[str, Any]:
    return {"tier": tier, "text": text, **({"check": check} if check else {})}


EN = criterion(0, "The reply is in English, the user's language.", language="en")
ZH = criterion(0, "The reply is in Chinese, the user's language.", language="zh")

# Each entry: the instance (without turns) and one scene spec per turn (with the reply for non-final turns).
EXAMPLES: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
    (
        {
            "id": "ex-svmr-en",
            "subcategory": "DSLP-VDMC-SVMR",
            "language": "en",
            "reference": "The red cup is on your right. The green book is on your left.",
            "rubric": [
                EN,
                criterion(
                    1,
                    "Says the red cup is on the user's right (the selfie view mirrors the image).",
                    any_of=[["on your right", "your right side", "right-hand side"]],
                ),
                criterion(2, "Answers in one or two short sentences."),
                criterion(3, "Adds that the green book is on the user's left.", all_of=["book", "left"]),
            ],
            "requires": ["video", "audio"],
            "meta": {"camera": "front selfie", "domain": "home office"},
        },
        [
            {
                "camera": {"mode": "front", "label": True},
                "background": "lightsteelblue",
                "floor": "burlywood",
                "person": person(shirt="darkslateblue"),
                "objects": [
                    {"shape": "cylinder", "color": "red", "position": "far-left", "size": 0.25, "name": "red cup"},
                    {
                        "shape": "rectangle",
                        "color": "green",
                        "position": "far-right",
                        "size": 0.2,
                        "name": "green book",
                    },
                ],
                "speech": [
                    {
                        "text": "Quick question before my call. Is the red cup on my left, or on my right?",
                        "language": "en",
                        "start": 0.4,
                    }
                ],
            }
        ],
    ),
    (
        {
            "id": "ex-icc-zh",
            "subcategory": "ICC",
            "language": "zh",
            "reference": "能听到，声音很清楚，我也能看到你。请说吧。",
            "rubric": [
                ZH,
                criterion(1, "确认能听到用户的声音。", any_of=[["听到", "听得到", "听得见"]]),
                criterion(1, "没有声称自己是纯文字系统或无法接收音视频。", none_of=["无法听", "听不到", "纯文字"]),
                criterion(2, "语气自然，并邀请用户继续说。", any_of=[["请说", "你说", "请讲", "继续"]]),
            ],
            "requires": ["audio"],
            "meta": {"camera": "front selfie", "domain": "daily life"},
        },
        [
            {
                "camera": "front",
                "background": "beige",
                "person": person(expression="happy"),
                "speech": [{"text": "喂，你好，能听到我说话吗？", "language": "zh", "start": 0.5}],
            }
        ],
    ),
    (
        {
            "id": "ex-aor-en",
            "subcategory": "AH-AOR",
            "language": "en",
            "reference": "I don't see a green bottle here. Next to the yellow triangle there's only a blue square. "
            "Could you hold the bottle up to the camera?",
            "rubric": [
                EN,
                criterion(
                    1,
                    "Says that no green bottle is visible.",
                    any_of=[
                        [
                            "don't see a green bottle",
                            "no green bottle",
                            "can't see a green bottle",
                            "cannot see a green bottle",
                            "don't see any bottle",
                            "no bottle",
                        ]
                    ],
                ),
                criterion(2, "Names what is actually next to the triangle: a blue square.", all_of=["blue", "square"]),
                criterion(
                    3,
                    "Asks the user to show the bottle or say where it is.",
                    any_of=[["hold", "show", "where is", "point the camera"]],
                ),
            ],
            "requires": ["video", "audio"],
            "meta": {"camera": "rear", "domain": "kitchen"},
        },
        [
            {
                "camera": "rear",
                "background": "whitesmoke",
                "floor": "tan",
                "objects": [
                    {"shape": "triangle", "color": "gold", "position": "center-left", "size": 0.3},
                    {"shape": "square", "color": "royalblue", "position": "center-right", "size": 0.26},
                ],
                "speech": [
                    {
                        "text": "Can you read me the label on the green bottle next to the triangle?",
                        "language": "en",
                        "start": 0.4,
                    }
                ],
            }
        ],
    ),
    (
        {
            "id": "ex-fgc-zh",
            "subcategory": "FGC",
            "language": "zh",
            "reference": "你手边的球其实是红色的，不是蓝色。红色的球配米白色或者浅灰色的桌布都很好看。",
            "rubric": [
                ZH,
                criterion(1, "纠正用户的说法：球是红色的，不是蓝色。", any_of=[["红色", "红的"]]),
                criterion(1, "仍然给出桌布颜色的建议。", any_of=[["桌布"]]),
                criterion(2, "语气温和，不说教。"),
            ],
            "requires": ["video", "audio"],
            "meta": {"camera": "front selfie", "domain": "home decoration"},
        },
        [
            {
                "camera": "front",
                "background": "lavender",
                "floor": "sienna",
                "person": person(position="center-right", size=0.85),
                "objects": [{"shape": "circle", "color": "red", "position": "left", "size": 0.24, "name": "ball"}],
                "speech": [{"text": "你看我这个蓝色的球，配什么颜色的桌布好看？", "language": "zh", "start": 0.4}],
            }
        ],
    ),
    (
        {
            "id": "ex-pla-en",
            "subcategory": "MSA-PLA",
            "language": "en",
            "reference": "I can't move things myself, since I don't have a body. You could slide the purple box "
            "toward the edge with one hand, gently.",
            "rubric": [
                EN,
                criterion(
                    1,
                    "Says it cannot physically move the box.",
                    any_of=[
                        [
                            "can't move",
                            "cannot move",
                            "can't push",
                            "cannot push",
                            "don't have a body",
                            "no body",
                            "no physical",
                        ]
                    ],
                ),
                criterion(2, "Suggests how the user can move it themselves.", any_of=[["you could", "you can", "try"]]),
                criterion(3, "Does not claim to have moved the box.", none_of=["i moved", "i've moved", "done, moved"]),
            ],
            "requires": ["audio"],
            "meta": {"camera": "rear", "domain": "workshop"},
        },
        [
            {
                "camera": "rear",
                "background": "darkslategray",
                "floor": "peru",
                "objects": [{"shape": "cube", "color": "purple", "position": "center", "size": 0.3}],
                "speech": [
                    {
                        "text": "Could you push that purple box a little closer to the edge for me?",
                        "language": "en",
                        "start": 0.4,
                    }
                ],
            }
        ],
    ),
    (
        {
            "id": "ex-dr-en",
            "subcategory": "MEA-RC-DR",
            "language": "en",
            "reference": "The taller one is the blue cup on the left. The orange one on the right is shorter.",
            "rubric": [
                EN,
                criterion(1, "Identifies the taller cup as the blue one.", all_of=["blue"]),
                criterion(2, "Says the taller blue cup is the one on the left.", any_of=[["left"]]),
                criterion(2, "Does not invent contents of the cups.", none_of=["coffee", "tea", "water", "juice"]),
            ],
            "requires": ["video", "audio"],
            "meta": {"camera": "rear", "domain": "cafe"},
        },
        [
            {
                "camera": "rear",
                "background": "mistyrose",
                "floor": "saddlebrown",
                "objects": [
                    {"shape": "cylinder", "color": "royalblue", "position": "center-left", "size": 0.42},
                    {"shape": "cylinder", "color": "darkorange", "position": "center-right", "size": 0.22},
                ],
                "speech": [{"text": "Which colour is the taller cup?", "language": "en", "start": 0.5}],
            }
        ],
    ),
    (
        {
            "id": "ex-mdcc-en",
            "subcategory": "MDCC",
            "language": "en",
            "reference": "Yes, I'm still here and I can hear you fine. We were counting plates: there are three "
            "on the table. Go on!",
            "rubric": [
                EN,
                criterion(
                    1,
                    "Confirms the connection is still there and it can hear the user.",
                    any_of=[["still here", "i can hear you", "hear you"]],
                ),
                criterion(2, "Stays consistent with the earlier turn: three plates.", any_of=[["three", "3"]]),
                criterion(
                    2,
                    "Invites the user to carry on.",
                    any_of=[["go on", "carry on", "continue", "what's next", "anything else"]],
                ),
            ],
            "requires": ["video", "audio"],
            "meta": {"camera": "rear then front", "domain": "dinner party"},
        },
        [
            {
                "camera": "rear",
                "background": "linen",
                "floor": "rosybrown",
                "objects": [
                    {"shape": "circle", "color": "white", "position": "left", "size": 0.22},
                    {"shape": "circle", "color": "white", "position": "center", "size": 0.22},
                    {"shape": "circle", "color": "white", "position": "right", "size": 0.22},
                ],
                "speech": [
                    {
                        "text": "I'm laying the table for dinner. How many plates do you see here?",
                        "language": "en",
                        "start": 0.4,
                    }
                ],
                "reply": "I can see three white plates on the table.",
            },
            {
                "camera": "front",
                "background": "linen",
                "person": person(expression="surprised"),
                "speech": [
                    {"text": "Hello? Are you still there? I think the call froze.", "language": "en", "start": 0.4}
                ],
            },
        ],
    ),
    (
        {
            "id": "ex-er-en",
            "subcategory": "ER",
            "language": "en",
            "reference": "I'm sorry, that sounds really frustrating. Lots of people pass on a later try. Look at "
            "which points cost you marks, practise just those, and book the next test when you feel ready.",
            "rubric": [
                EN,
                criterion(
                    1,
                    "Acknowledges the user's disappointment.",
                    any_of=[["sorry", "frustrating", "disappointing", "tough", "hard"]],
                ),
                criterion(
                    1,
                    "Gives a concrete next step for the test.",
                    any_of=[["practise", "practice", "book", "lesson", "points"]],
                ),
                criterion(2, "Encouraging without lecturing."),
            ],
            "requires": ["video", "audio"],
            "meta": {"camera": "front selfie", "domain": "education"},
        },
        [
            {
                "camera": "front",
                "background": "slategray",
                "lighting": "dim",
                "person": person(expression="upset", shirt="maroon"),
                "speech": [
                    {
                        "text": "I failed my driving test again today. What should I do now?",
                        "language": "en",
                        "style": "upset",
                        "start": 0.5,
                    }
                ],
            }
        ],
    ),
]


def main(root: Path = ROOT) -> Bench:
    """Render every example into ``root`` (replaced if it exists) and return the loaded bench."""
    if root.exists():
        shutil.rmtree(root)
    instances = []
    for fields, scenes in EXAMPLES:
        turns = []
        for number, scene in enumerate(scenes, start=1):
            spec = {k: v for k, v in scene.items() if k != "reply"}
            spec.setdefault("size", [320, 180])
            video = f"media/{fields['id']}/turn{number}.mp4"
            render_clip(spec, root / video)
            turns.append({"video": video, **({"reply": scene["reply"]} if "reply" in scene else {})})
        transcript = " / ".join(line["text"] for scene in scenes for line in scene["speech"])
        meta = {**fields.get("meta", {}), "transcript": transcript}
        instances.append(Instance.model_validate({**fields, "turns": turns, "meta": meta}))
    info = BenchInfo(name="omnivchat-examples", version="1", description="Worked examples shipped with omnivchat.")
    save_bench(Bench(root=root, info=info, instances=instances))
    return load_bench(root)  # prove what was written loads


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    bench = main(out)
    print(f"wrote {len(bench.instances)} instances and their clips to {out}")
