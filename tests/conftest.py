"""Shared fixtures: a private media cache, and a small bench of real rendered clips (made once per session)."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from omnivchat.bench import Bench, BenchInfo, Instance, load_bench, save_bench

# A shell that starts the tests in the background (`pytest ... &` in a script, a CI runner's job) leaves SIGINT
# ignored, and every child inherits that: the tests that press Ctrl-C on a real process would see it ignored. The
# tests' processes get the default, as a terminal's foreground job has (a handled signal is reset at exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The commands the tests start (python -m omnivchat ..., pytest's workers) keep the project's bytecode: where the
# environment sets PYTHONDONTWRITEBYTECODE (as these machines do), each of them compiled every module of src again.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores this process may use. Many tests wait on servers, child processes
    and signals, so a third worker on 2 cores keeps both busy (measured: 335 s with 2 workers, 285 s with 3)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # not on macOS
    return cores + 1


def pytest_runtest_setup(item: pytest.Item) -> None:
    """`@pytest.mark.extra("hf", "huggingface_hub")`: without the module, the test skips and says how to install
    it, in a clone and from the registry. Each test states its own need, so a fresh clone's plain `uv sync` passes
    or skips every test with no list kept elsewhere."""
    for mark in item.iter_markers("extra"):
        name, module = mark.args
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"needs {module}: `uv sync --extra {name}` in a clone, or pip install 'omnivchat[{name}]'")


# Property tests check behaviour, never speed: no per-example deadline on shared, noisy machines.
settings.register_profile("omnivchat", deadline=None)
settings.load_profile("omnivchat")


@pytest.fixture(scope="session", autouse=True)
def _private_media_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Derived clips go to a session temp dir, never to ~/.cache."""
    old = os.environ.get("OMNIVCHAT_CACHE_DIR")
    os.environ["OMNIVCHAT_CACHE_DIR"] = str(tmp_path_factory.mktemp("omnivchat-cache"))
    yield
    if old is None:
        os.environ.pop("OMNIVCHAT_CACHE_DIR", None)
    else:
        os.environ["OMNIVCHAT_CACHE_DIR"] = old


def _scene(text: str, language: str = "en", **extra: object) -> dict:
    return {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": "square", "color": "red", "position": "left"}],
        "speech": [{"text": text, "language": language, "start": 0.2}],
        **extra,
    }


def _rubric(language: str = "en") -> list[dict]:
    return [
        {"tier": 0, "text": f"The reply is in {language}."},
        {"tier": 1, "text": "Answers the question."},
        {"tier": 2, "text": "Is brief."},
    ]


SMALL_BENCH = [
    ("s1", "SVMR", "en", [_scene("Is the red square on my left?", camera="front")], ["video", "audio"]),
    ("s2", "ICC", "zh", [_scene("能听到吗？", "zh")], ["audio"]),
    ("s3", "AOR", "en", [_scene("Where is the green ball?")], ["video", "audio"]),
    ("m1", "MDCC", "en", [_scene("How many squares?"), _scene("Are you still there?")], None),
]


def make_small_bench(root: Path) -> Bench:
    """Four instances (one multi-turn) with real speech, rendered by the procedural renderer."""
    from omnivchat.synth import render_clip

    instances = []
    for id_, sub, language, scenes, requires in SMALL_BENCH:
        turns = []
        for n, scene in enumerate(scenes, start=1):
            video = f"media/{id_}/turn{n}.mp4"
            render_clip(scene, root / video)
            turns.append({"video": video, **({"reply": "There is one square."} if n < len(scenes) else {})})
        instances.append(
            Instance.model_validate(
                {
                    "id": id_,
                    "subcategory": sub,
                    "language": language,
                    "turns": turns,
                    "reference": f"reference reply for {id_}",
                    "rubric": _rubric(language),
                    "requires": requires,
                }
            )
        )
    save_bench(Bench(root=root, info=BenchInfo(name="small"), instances=instances))
    return load_bench(root)


@pytest.fixture(scope="session")
def small_bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pristine rendered bench; copy it (see `small_bench`) before changing anything in it."""
    root = tmp_path_factory.mktemp("small-bench") / "bench"
    make_small_bench(root)
    return root


@pytest.fixture
def small_bench(small_bench_dir: Path, tmp_path: Path) -> Bench:
    """A private copy of the rendered bench, safe to modify."""
    import shutil

    copy = tmp_path / "bench"
    shutil.copytree(small_bench_dir, copy)
    return load_bench(copy)


CHECKED = [  # (id, subcategory, requires, question, reference, key phrase only the reference holds)
    ("c1", "SVMR", ["video", "audio"], "Is the red square on my left?", "The red square is on your right.", "right"),
    (
        "c2",
        "AOR",
        ["video", "audio"],
        "Where is the green ball?",
        "I don't see a green ball, only a red square.",
        "red square",
    ),
    ("c3", "DR", ["video", "audio"], "Which one is bigger?", "The red square is the bigger one.", "bigger one"),
    ("c4", "ICC", ["audio"], "Can you hear me?", "Yes, I can hear you clearly.", "hear you"),
    ("c5", "UCR", ["audio"], "What is two plus two?", "Two plus two is four.", "four"),
    ("c6", "FGC", ["video", "audio"], "Look at my blue square.", "That square is red, not blue.", "is red"),
    ("c7", "PLA", ["audio"], "Push the box for me.", "I can't push things; you could slide it yourself.", "slide it"),
    (
        "c8",
        "ER",
        ["video", "audio"],
        "I feel awful today.",
        "I'm sorry you feel awful; want to talk about it?",
        "talk about it",
    ),
]


def make_checked_bench(root: Path) -> Bench:
    """Eight single-turn instances whose criteria all carry machine checks, with real rendered clips."""
    from omnivchat.synth import render_clip

    instances = []
    for id_, sub, requires, question, reference, key in CHECKED:
        video = f"media/{id_}/turn1.mp4"
        render_clip(_scene(question), root / video)
        rubric = [
            {"tier": 0, "text": "English.", "check": {"language": "en"}},
            {"tier": 1, "text": "Gives the answer.", "check": {"any_of": [key]}},
        ]
        instances.append(
            Instance.model_validate(
                {
                    "id": id_,
                    "subcategory": sub,
                    "language": "en",
                    "turns": [{"video": video}],
                    "reference": reference,
                    "rubric": rubric,
                    "requires": requires,
                }
            )
        )
    save_bench(Bench(root=root, info=BenchInfo(name="checked"), instances=instances))
    return load_bench(root)


@pytest.fixture(scope="session")
def checked_bench(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    return make_checked_bench(tmp_path_factory.mktemp("checked-bench") / "bench")
