"""byo: a bring-your-own JSON benchmark run through eval, score, export and ablate on real rendered clips, with its
multiple-choice parsing (strict headline, lenient apart), unknown categories relabelled cross-modal, unparsed
replies counted, and one-line errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_factory import RED_SQUARE_SCENE
from typer.testing import CliRunner

from omnivchat.benchmarks import Benchmark, ScoreOptions, Source, get_benchmark
from omnivchat.benchmarks._choice import parse_lenient, parse_strict
from omnivchat.benchmarks.byo import BYO, ByoError, _score_reply, load_byo
from omnivchat.cli import app
from omnivchat.scoring.statistics import bootstrap_interval

runner = CliRunner()

SCENE = RED_SQUARE_SCENE


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with one real rendered clip (media/red.mp4) and a stand-in audio file (media/voice.wav)."""
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("byo")
    render_clip(SCENE, root / "media" / "red.mp4")
    (root / "media" / "voice.wav").write_bytes(b"RIFF")
    return root


def write(root: Path, rows: Any, name: str = "bench.json") -> Path:
    path = root / name
    path.write_text(json.dumps(rows))
    return path


def open_rows() -> list[dict[str, Any]]:
    return [
        {
            "qid": "q1",
            "question": "What colour is the square?",
            "answer": "red",
            "requires": ["video", "audio"],
            "category": "cross-modal",
            "video": "media/red.mp4",
        },
        {
            "qid": "q2",
            "question": "How many squares are there?",
            "answer": "one",
            "requires": ["video"],
            "category": "video-only",
            "video": "media/red.mp4",
        },
        {
            "qid": "q3",
            "question": "What did the speaker ask about?",
            "answer": "the colour",
            "requires": ["audio"],
            "category": "counting",  # unknown: scored as cross-modal, on purpose
            "video": "media/red.mp4",
        },
        {
            "qid": "q4",
            "question": "Where is the square?",
            "answer": "on the left",
            "requires": ["video"],
            "video": "media/red.mp4",  # no category: cross-modal too
        },
    ]


def mc_rows() -> list[dict[str, Any]]:
    options = ["red", "blue", "green", "yellow"]
    return [
        {
            "qid": f"m{n}",
            "question": "Which colour is the square?",
            "options": options,
            "answer": "A" if n % 2 else "red",  # a letter or the option's text
            "requires": ["video", "audio"],
            "category": "cross-modal" if n % 2 else "video-only",
            "video": "media/red.mp4",
        }
        for n in range(6)
    ]


def test_byo_is_registered_with_its_chance_levels() -> None:
    assert get_benchmark("byo") is BYO and isinstance(BYO, Benchmark)
    assert BYO.chance("mc4") == 0.25 and BYO.chance("mc5") == 0.2
    assert BYO.chance("open") == 0.0  # no guess states an open answer


def test_eval_score_show_and_export_open_answers(clips: Path, tmp_path: Path) -> None:
    data = write(clips, open_rows(), "open.json")
    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", "sim:healthy", "-o", str(run_dir)]
    result = runner.invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "4 done" in result.output

    shown = runner.invoke(app, ["runs", "show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "byo run of sim:healthy" in shown.output

    scored = runner.invoke(app, ["score", str(run_dir)], env={"COLUMNS": "200"})
    assert scored.exit_code == 0, scored.output
    # in words, never raw keys (ci_low, given)
    assert "overall: accuracy 1.000 (4 of 4 right), 95% interval 1.000 to 1.000, 0 unparsed" in scored.output
    assert "relabelled: 2 items of an unknown category, scored as cross-modal (given as: None, counting)" in (
        scored.output
    )
    assert "ci_low" not in scored.output and "to cross-modal, given" not in scored.output
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["schema"] == "omnivchat-benchmark-scores-v1" and scores["benchmark"] == "byo"
    metrics = scores["metrics"]
    assert metrics["category cross-modal"]["n"] == 3 and metrics["category cross-modal"]["accuracy"] == 1.0
    assert metrics["category video-only"]["n"] == 1
    assert metrics["relabelled"]["count"] == 2 and metrics["relabelled"]["given"] == "None, counting"
    assert {i["group"] for i in scores["items"]} == {"cross-modal", "video-only"}

    out = tmp_path / "export.json"
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert [r["reply"] for r in json.loads(out.read_text())["records"]] == ["red", "one", "the colour", "on the left"]

    again = runner.invoke(app, [*args, "--no-progress"])
    assert again.exit_code == 0 and "0 requests sent" in again.output


def test_a_blind_model_scores_wrong_answers_as_wrong(clips: Path, tmp_path: Path) -> None:
    data = write(clips, mc_rows(), "mc.json")
    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", "sim:video-blind", "-o", str(run_dir)]
    assert runner.invoke(app, [*args, "--no-progress"]).exit_code == 0
    scores = BYO.score(None, run_dir, ScoreOptions())
    assert scores.complete and scores.metrics["overall"]["accuracy"] == 0.0
    assert {i.detail["strict"] for i in scores.items} == {"B"}  # its wrong reply parses, and is wrong
    assert scores.metrics["overall"]["unparsed"] == 0


def test_ablate_uses_the_multiple_choice_chance_level(clips: Path, tmp_path: Path) -> None:
    data = write(clips, mc_rows(), "mc.json")
    out = tmp_path / "grid"
    args = ["ablate", "--benchmark", "byo", "--data", str(data), "--model", "sim:healthy", "-o", str(out)]
    result = runner.invoke(app, [*args, "--skip-self-check", "--no-progress"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    grid = json.loads((out / "ablation.json").read_text())
    assert grid["diagnosis"]["chance"] == 0.25
    assert grid["diagnosis"]["means"]["both"] == 1.0 and grid["diagnosis"]["means"]["neither"] == 0.0
    assert (out / "both" / "scores.json").is_file()


@pytest.mark.parametrize(
    ("reply", "strict", "lenient"),
    [
        ("B", "B", "B"),
        ("Based on the video, B.", "B", "B"),
        ("Based on the video, the square is blue.", "B", "B"),  # the option's text
        ("Based on what I see it is hard to say.", None, None),  # "Based" is never B, "I" is a pronoun
        ("(C)", "C", "C"),
        ("The answer is D", "D", "D"),
        ("A is correct.", "A", "A"),
        ("A big square is on the left, so C.", "C", "C"),  # "A big" is the article
        ("B or C, I cannot tell.", None, "B"),  # two letters: unparsed strictly
        ("It is not blue, it is red.", "A", "A"),  # negation-aware option text
        ("B. red", None, "B"),  # letter and text disagree
        ("b", None, "B"),  # lowercase only leniently
        ("Option: c, I think", None, "C"),
        ("", None, None),
    ],
)
def test_multiple_choice_parsing(reply: str, strict: str | None, lenient: str | None) -> None:
    options = ("red", "blue", "green", "yellow")
    assert parse_strict(reply, "ABCD", options) == strict
    assert parse_lenient(reply, "ABCD", options) == lenient


def test_stored_replies_count_unparsed_as_wrong_and_lenient_apart() -> None:
    meta = {"gold": "B", "letters": "ABCD", "options": ["red", "blue", "green", "yellow"], "category": "audio-only"}
    meta["given_category"] = "audio-only"
    unparsed, loose = _score_reply("m1", "mc4", "B or C", meta)
    assert unparsed.score == 0.0 and unparsed.detail["unparsed"] and "unparsed" in unparsed.reason
    assert loose == 1.0  # leniently right: reported apart, never the headline
    right, _ = _score_reply("m2", "mc4", "Based on the video, B.", meta)
    assert right.score == 1.0 and not right.detail["relabelled"]
    open_meta = {"gold": None, "answer": "23", "category": "cross-modal", "given_category": "misc"}
    assert _score_reply("o1", "open", "Uh, twenty-three.", open_meta)[0].score == 1.0
    assert _score_reply("o2", "open", "Not twenty-three.", open_meta)[0].score == 0.0
    empty, _ = _score_reply("o3", "open", "  ", open_meta)
    assert empty.score == 0.0 and empty.detail["unparsed"] and empty.detail["relabelled"]


def test_bootstrap_interval_is_seeded() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    low, high = bootstrap_interval(values)
    assert (low, high) == bootstrap_interval(values)
    assert low is not None and high is not None and 0.0 <= low <= 4 / 6 <= high <= 1.0
    assert bootstrap_interval([]) == (None, None)


def test_load_keeps_bare_letters_tasks_and_audio_items(clips: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"qid": 1, "question": "Which?", "answer": "C", "requires": ["video"], "video": "media/red.mp4"},
        {"qid": "a", "question": "Heard?", "answer": "yes", "requires": ["audio"], "audio": "media/voice.wav"},
    ]
    data = load_byo(write(clips, rows, "mixed.json"))
    assert [(i.qid, i.task, i.gold, i.media_kind) for i in data.items] == [
        ("1", "mc5", "C", "video"),
        ("a", "open", None, "audio"),
    ]
    only = BYO.load(Source(data=clips / "mixed.json", tasks=("open",)))
    assert [i.qid for i in only.items] == ["a"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"qid": "1"}, "expected a JSON list of items, got dict"),
        ([], "the list of items is empty"),
        (["x"], "item 0: expected an object, got str"),
        ([{"question": "Q?", "answer": "cat", "requires": ["video"], "video": "media/red.mp4"}], "item 0: missing"),
        (
            [{"qid": "1", "answer": "cat", "requires": ["video"], "video": "media/red.mp4"}],
            "(qid '1'): missing or empty 'question'",
        ),
        ([{"qid": "1", "question": "Q?", "answer": "cat", "video": "media/red.mp4"}], "missing or empty 'requires'"),
        ([{"qid": "1", "question": "Q?", "answer": "cat", "requires": ["smell"], "video": "media/red.mp4"}], "'smell'"),
        (
            [{"qid": "1", "question": "Q?", "answer": "cat", "requires": ["video"], "video": "media/nope.mp4"}],
            "does not exist",
        ),
        ([{"qid": "1", "question": "Q?", "answer": "cat", "requires": ["video"]}], "give exactly one of 'video'"),
        (
            [{"qid": "1", "question": "Q?", "answer": "cat", "requires": ["video"], "audio": "media/voice.wav"}],
            "cannot require 'video'",
        ),
        (
            [
                {
                    "qid": "1",
                    "question": "Q?",
                    "answer": "Z",
                    "options": ["x", "y"],
                    "requires": ["video"],
                    "video": "media/red.mp4",
                }
            ],
            "neither an option letter",
        ),
    ],
)
def test_bad_files_are_named_one_line_per_problem(clips: Path, rows: Any, message: str) -> None:
    path = write(clips, rows, "bad.json")
    with pytest.raises(ByoError) as caught:
        load_byo(path)
    text = str(caught.value)
    assert message in text and str(path) in text and len(text.splitlines()) == 1


def test_duplicates_and_every_problem_are_listed(clips: Path) -> None:
    row = {"qid": "1", "question": "Q?", "answer": "cat", "requires": ["video"], "video": "media/red.mp4"}
    bad = {**row, "qid": "2", "requires": "video"}
    path = write(clips, [row, dict(row), bad], "dup.json")
    with pytest.raises(ByoError) as caught:
        load_byo(path)
    lines = str(caught.value).splitlines()
    assert lines == [
        f"{path}: item 1 (qid '1'): duplicate qid (also item 0)",
        f"{path}: item 2 (qid '2'): missing or empty 'requires' (a list of 'video' and/or 'audio')",
    ]
    result = runner.invoke(
        app, ["eval", "--benchmark", "byo", "--data", str(path), "--model", "sim:healthy", "-o", str(clips / "r")]
    )
    assert result.exit_code != 0 and "duplicate qid" in result.output
