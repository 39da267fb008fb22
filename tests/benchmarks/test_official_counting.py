"""Each public benchmark's own published counting rule (benchmarks._official), reported beside the strict headline:
one test per rule, on the real Video-MME template (its example responses) and real OmniBench and WorldSense rows
from ../shared/realdata (skipped when absent), and `score` printing the figure labelled as the benchmark's."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from bench_factory import realdata
from typer.testing import CliRunner

from omnivchat.benchmarks._choice import parse_strict
from omnivchat.benchmarks._official import OFFICIAL, Answered, official_figure, official_gold
from omnivchat.benchmarks.mcq import OFFICIAL_METRIC
from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()


def template_questions() -> list[dict[str, Any]]:
    """The 9 questions of Video-MME's evaluation/output_test_template.json with their example responses (the file
    has trailing commas, so it is not JSON as it stands)."""
    text = realdata("videomme/output_test_template.json").read_text()
    videos = json.loads(re.sub(r",(\s*[}\]])", r"\1", text))
    return [q for v in videos for q in v["questions"]]


def answered(question: dict[str, Any], reply: str | None = None) -> Answered:
    options = tuple(o[3:] for o in question["options"])
    reply = question["response"] if reply is None else reply
    return Answered(reply, question["answer"], options, parse_strict(reply, "ABCD", options))


def test_video_mme_reads_answer_c_as_a_and_leaves_unparsed_replies_out() -> None:
    questions = template_questions()
    rule = OFFICIAL["videomme"]
    # the template's own example "Answer: C. Jade." is A to the official script (the A of "Answer"); C to us
    jade = next(q for q in questions if q["response"] == "Answer: C. Jade.")
    assert rule.read(jade["response"], ()) == "A" and answered(jade).strict == "C"
    assert rule.read("Based on the video, C", ()) == "B" and rule.read("I cannot determine.", ()) is None
    rows = [answered(q) for q in questions] + [answered(questions[0], "I cannot say.")]
    figure = official_figure(rule, rows, failed=0)
    # right under the script: every response but 001-2 (D for A), 002-3 (D for B) and the Jade one
    assert (figure["correct"], figure["counted"], figure["of"]) == (6, 9, 10)
    assert figure["unparsed left out"] == 1 and figure["accuracy"] == pytest.approx(6 / 9)
    assert figure["counting"] == "as the official Video-MME script counts"
    assert figure["read otherwise than the strict parse"] == 1  # Jade: A, not C ("I cannot say.": none by both)
    strict_right = sum(r.strict == r.gold for r in rows)
    assert strict_right == 7  # our headline: 7 of 10, the unparsed reply in the denominator as wrong


def test_lvomnibench_reads_i_cannot_determine_as_c_and_leaves_unparsed_and_failed_out() -> None:
    questions = template_questions()
    rule = OFFICIAL["lvomnibench"]
    assert rule.read("I cannot determine", ()) == "C" and rule.read("Based on the video, C", ()) == "C"
    assert rule.read("Answer: C", ()) == "C" and rule.read("The answer", ()) == "E"  # the first A-F: "THE"
    assert rule.read("", ()) is None
    rows = [answered(q) for q in questions] + [answered(questions[0], "")]
    figure = official_figure(rule, rows, failed=2)
    assert (figure["correct"], figure["counted"], figure["of"]) == (7, 9, 12)
    assert figure["unparsed left out"] == 1 and figure["failed left out"] == 2


def test_daily_omni_drops_failed_items_and_counts_unread_replies_wrong() -> None:
    questions = template_questions()
    rule = OFFICIAL["dailyomni"]
    assert rule.read("Based on the video, C", ()) == "C"  # the last standalone letter (the oldest script: B)
    assert rule.read("<think>A seems right</think>\nAnswer: D", ()) == "D"
    assert rule.read("<answer>b</answer>", ()) == "B" and rule.read("I cannot determine", ()) is None
    rows = [answered(q) for q in questions] + [answered(questions[0], "I cannot determine")]
    figure = official_figure(rule, rows, failed=3)
    assert (figure["correct"], figure["counted"], figure["of"]) == (7, 10, 13)
    assert figure["failed left out"] == 3 and figure["unparsed counted wrong"] == 1


def omnibench_rows() -> dict[int, dict[str, Any]]:
    lines = realdata("omnibench/dataset/batch-5_1142_20240817.excerpt.jsonl").read_text().splitlines()
    return {row["index"]: row for row in map(json.loads, lines)}


def test_omnibench_reads_its_gold_letter_from_the_answer_text_and_counts_every_item() -> None:
    rows = omnibench_rows()
    rule = OFFICIAL["omnibench"]
    six = rows[6]  # answer "A man is answering some questions", the third option: our gold is C
    options = tuple(six["options"])
    gold = "ABCD"[options.index(six["answer"])]
    assert gold == "C" and official_gold(rule, gold, options) == "A"  # the script's gold: the "A " of "A man"
    assert official_gold(rule, "D", tuple(rows[515]["options"])) == "A"  # "A cotton hat."
    # "The animal is yawning.": four words and no letter mark, which the script's parser cannot read (its assertion
    # would stop it): our gold is kept
    assert rule.read(rows[797]["answer"], tuple(rows[797]["options"])) is None
    assert official_gold(rule, "D", tuple(rows[797]["options"])) == "D"
    assert rule.read(rows[7]["answer"], tuple(rows[7]["options"])) == "D"  # six words: found by its text
    assert rule.read("Based on the video, C", options) == "C"
    items = [
        Answered("C", gold, options, "C"),  # right to us, wrong to the script
        Answered("A", gold, options, "A"),  # wrong to us, right to the script
        Answered("I am not sure.", gold, options, None),  # no letter: wrong, in the denominator
    ]
    figure = official_figure(rule, items, failed=1)
    assert (figure["correct"], figure["counted"], figure["of"]) == (1, 4, 4)
    assert figure["failed counted wrong"] == 1 and figure["unparsed counted wrong"] == 1


def test_av_odyssey_turns_an_empty_reply_into_a() -> None:
    rule = OFFICIAL["avodyssey"]
    assert rule.read("Based on the video, C", ()) == "B" and rule.read("Answer: C", ()) == "A"
    assert rule.read("(C)", ()) == "C" and rule.read("", ()) is None
    options = ("Left", "Right", "Both", "Neither")
    items = [Answered("", "A", options, None), Answered("", "B", options, None), Answered("C.", "C", options, "C")]
    figure = official_figure(rule, items, failed=0)
    assert (figure["correct"], figure["counted"]) == (2, 3)  # the empty reply is A: right where the gold is A
    assert figure["read as A for want of a letter"] == 2


def test_worldsense_vlmevalkit_reads_the_first_capital_after_its_prefixes() -> None:
    data = json.loads(realdata("worldsense/worldsense_qa.excerpt.json").read_text())
    task = data["UYkFSXsh"]["task0"]  # three candidates
    options = tuple(c[3:] for c in task["candidates"])
    rule = OFFICIAL["worldsense"]
    assert rule.read("Based on the video, C", options) == "B"  # the B of "Based": the gold here, by accident
    assert rule.read("Answer: C", options) == "C"  # "Answer:" is one of its prefixes
    items = [Answered("Based on the video, C", task["answer"], options, "C"), Answered("No idea.", "B", options, None)]
    figure = official_figure(rule, items, failed=0)
    assert (figure["correct"], figure["counted"], figure["unparsed counted wrong"]) == (1, 2, 1)


def test_every_public_benchmark_has_a_rule() -> None:
    """Each multiple-choice benchmark omnivchat ships declares its published rule (McqBenchmark's ``official``)."""
    from omnivchat.benchmarks import package_of, registered
    from omnivchat.benchmarks.mcq import McqBenchmark

    shipped = {n: b for n, b in registered().items() if isinstance(b, McqBenchmark) and package_of(n) == "omnivchat"}
    assert set(shipped) == set(OFFICIAL)
    assert all(b.official is OFFICIAL[n] for n, b in shipped.items())


def test_score_prints_the_official_figure_beside_the_headline(tmp_path: Path) -> None:
    """Video-MME run on the real template's questions (our own clip in place of each video), answered with the
    template's own example responses by a loopback server; `score` prints the strict headline and, labelled,
    the figure as the official script counts it; scores.json holds it beside the headline."""
    from omnivchat.synth import render_clip

    data = realdata("videomme/videomme_flat_from_template.jsonl")
    media = tmp_path / "media"
    media.mkdir()
    clip = tmp_path / "clip.mp4"
    scene = {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": "square", "color": "red", "position": "left"}],
        "speech": [{"text": "Which one?", "language": "en", "start": 0.1}],
    }
    render_clip(scene, clip)
    for line in data.read_text().splitlines():
        shutil.copyfile(clip, media / f"{json.loads(line)['videoID']}.mp4")
    responses = {q["question"]: q["response"] for q in template_questions()}

    def rules(request: dict[str, Any]) -> Behaviour:
        text = message_text(request)
        return Behaviour(text=next(r for q, r in responses.items() if q in text))

    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "videomme", "--data", str(data), "--media", str(media), "-o", str(run_dir)]
    with LoopbackServer(rules=rules) as server:
        model = ["--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--base-url", server.base_url, "--no-key"]
        result = runner.invoke(app, [*args, *model, "--no-progress"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    scored = runner.invoke(app, ["score", str(run_dir)], env={"COLUMNS": "300"})
    assert scored.exit_code == 0, scored.output
    out = " ".join(scored.output.split())
    assert "overall: accuracy 0.778 (7 of 9 right)" in out
    assert f"{OFFICIAL_METRIC}: as the official Video-MME script counts: 0.667 (6 of 9 counted)" in out
    assert "0 unparsed left out of 9, 0 failed left out of 9, 1 reply read otherwise than the strict parse" in out
    assert "ci_low" not in out and "se_clustered" not in out
    metrics = json.loads((run_dir / "scores.json").read_text())["metrics"]
    assert metrics["overall"]["accuracy"] == pytest.approx(7 / 9)  # the headline stays ours
    figure = metrics[OFFICIAL_METRIC]
    assert figure["accuracy"] == pytest.approx(6 / 9) and figure["counting"].startswith("as the official Video-MME")
    items = {i["key"]: i for i in json.loads((run_dir / "scores.json").read_text())["items"]}
    assert items["002-1"]["detail"]["official"] == "A" and items["002-1"]["detail"]["strict"] == "C"

    from omnivchat.report import build_report

    html = build_report([run_dir], tmp_path / "report.html").read_text(encoding="utf-8")
    assert "as the official Video-MME script counts" in html and OFFICIAL_METRIC in html
