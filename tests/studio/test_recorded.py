"""Recorded dialogues (OmniVChat-Bench-Human, Appendix D.2): a manifest of real clips with captions, a scripted
Director, up to three rounds of generation, validation and refinement, a bench marked ``source: human``, traces
and resume through the run store."""

from __future__ import annotations

import copy
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from omnivchat._canonical import sha256_file
from omnivchat._files import OutputError
from omnivchat.bench import Check, Criterion, load_bench
from omnivchat.errors import OmnivchatError
from omnivchat.studio.engine import DirectorRequest
from omnivchat.studio.engine._answers import ReplyAnswer
from omnivchat.studio.recorded import (
    MAX_ROUNDS,
    PLACEHOLDER,
    RECORDED_MODULE,
    RecordedError,
    answer_problems,
    brand_in,
    hidden_source,
    import_recorded,
    load_recordings,
    read_recorded_trace,
    scrub_brands,
)

# ------------------------------------------------------------------------------------------- clips and answers


def _scene(text: str, language: str) -> dict[str, Any]:
    return {
        "duration": 2.0,
        "size": [160, 90],
        "objects": [{"shape": "square", "color": "red", "position": "left"}],
        "speech": [{"text": text, "language": language, "start": 0.2}],
    }


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real little recordings (speech in English and Mandarin) and broken ones, made once for the module."""
    from omnivchat import media
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("recordings")
    made = {
        "en": render_clip(_scene("Can you hear me?", "en"), root / "en.mp4").path,
        "zh": render_clip(_scene("能听到吗？", "zh"), root / "zh.mp4").path,
        "en2": render_clip(_scene("Which hand holds the square?", "en"), root / "en2.mp4").path,
    }
    made["noaudio"] = media.strip_audio(made["en"], out=root / "noaudio.mp4")
    made["silent"] = media.mute_audio(made["en"], out=root / "silent.mp4")
    made["novideo"] = media.export_audio(made["en"], fmt="m4a", out=root / "novideo.m4a")
    (root / "broken.mp4").write_bytes(b"not a clip at all" * 100)
    made["broken"] = root / "broken.mp4"
    return made


def _gate(language: str) -> dict[str, Any]:
    return {"tier": 0, "text": "The reply is in English." if language == "en" else "回复使用中文。"}


GOOD_EN: dict[str, Any] = {
    "reply": "Yes, I can hear you clearly. Go ahead!",
    "rubric": [
        _gate("en"),
        {"tier": 1, "text": "Confirms that it hears the user."},
        {"tier": 1, "text": "Does not claim to be a text-only system."},
        {"tier": 2, "text": "Invites the user to go on."},
    ],
}
GOOD_ZH: dict[str, Any] = {
    "reply": "能听到，很清楚。你说吧！",
    "rubric": [
        _gate("zh"),
        {"tier": 1, "text": "确认能听到用户的声音。"},
        {"tier": 2, "text": "邀请用户继续说。"},
    ],
}
# Two tier-0 criteria, a criterion pointing at the caption, and a brand name in the reply and a criterion.
BAD: dict[str, Any] = {
    "reply": "Yes, I can hear you. Enjoy your Starbucks!",
    "rubric": [
        _gate("en"),
        {"tier": 0, "text": "The reply is spoken English."},
        {"tier": 1, "text": "As the caption says, confirms that it hears the user."},
        {"tier": 2, "text": "Mentions the Starbucks cup."},
    ],
}


class Scripted:
    """A Director that answers each recording's round N with its script's N-th answer, and fails the test when
    asked for a round it has no answer for (a resumed import must replay, not ask)."""

    def __init__(self, script: dict[str, list[Any]], name: str = "scripted") -> None:
        self.script = script
        self.name = name
        self.requests: list[DirectorRequest] = []
        self._lock = threading.Lock()

    def ask(self, request: DirectorRequest) -> dict[str, Any] | str:
        assert request.module == RECORDED_MODULE
        with self._lock:
            self.requests.append(request)
        answers = self.script.get(request.payload["recording"], [])
        number = request.payload["round"]
        if number > len(answers):
            raise AssertionError(f"{request.payload['recording']}: round {number} was not expected to be asked")
        answer = answers[number - 1]
        if isinstance(answer, Exception):
            raise answer
        return copy.deepcopy(answer)

    def payloads(self, recording: str) -> list[dict[str, Any]]:
        return [r.payload for r in self.requests if r.payload["recording"] == recording]


def _manifest(path: Path, entries: list[dict[str, Any] | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _entry(id_: str, video: Path | str, language: str = "en", **extra: Any) -> dict[str, Any]:
    caption = (
        "A man at a desk with a Starbucks cup looks into the lens and asks whether he can be heard."
        if language == "en"
        else "一位女士坐在桌前，看着镜头问能不能听到她。"
    )
    transcript = "Can you hear me?" if language == "en" else "能听到吗？"
    return {
        "id": id_,
        "video": str(video),
        "subcategory": "ICC",
        "language": language,
        "caption": caption,
        "transcript": transcript,
        **extra,
    }


@pytest.fixture
def two(tmp_path: Path, clips: dict[str, Path]) -> Path:
    """A manifest of two recordings, r1 (English) and r2 (Mandarin), with clips beside it (relative paths)."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    shutil.copyfile(clips["en"], folder / "r1.mp4")
    shutil.copyfile(clips["zh"], folder / "r2.mp4")
    return _manifest(folder / "manifest.jsonl", [_entry("r1", "r1.mp4"), _entry("r2", "r2.mp4", "zh")])


# ------------------------------------------------------------------------------------------- the rounds


def test_a_bad_first_answer_is_refined_with_its_problems_and_imported_after_two_rounds(two: Path, tmp_path: Path):
    director = Scripted({"r1": [BAD, GOOD_EN], "r2": [GOOD_ZH]})
    out = tmp_path / "bench"
    summary = import_recorded(two, out, director)
    assert [(o.id, o.status, o.rounds) for o in summary.outcomes] == [("r1", "imported", 2), ("r2", "imported", 1)]
    assert summary.calls_made == 3 and summary.calls_replayed == 0 and summary.bench == out

    first, second = director.payloads("r1")
    assert "previous" not in first and "problems" not in first and first["round"] == 1
    assert first["language"] == "en" and first["transcript"] == "Can you hear me?"
    assert first["subcategory"]["code"] == "ICC" and first["subcategory"]["definition"]
    assert first["reply_requirements"] and all(isinstance(r, str) for r in first["reply_requirements"])
    assert "Starbucks" not in first["caption"] and f"a {PLACEHOLDER} cup" in first["caption"]  # scrubbed first
    assert second["round"] == 2 and second["previous"] == BAD
    fed = "\n".join(second["problems"])
    assert "2 tier-0 criteria" in fed
    assert "criterion 3 refers to the hidden caption ('caption')" in fed
    assert "the reference reply names the brand 'Starbucks'" in fed and "criterion 4 names the brand" in fed

    trace = read_recorded_trace(out / "recorded" / "traces" / "r1.json")
    assert trace.status == "imported" and [r.decision for r in trace.rounds] == ["refine", "accept"]
    assert trace.rounds[0].problems == second["problems"] and trace.rounds[1].problems == []
    assert trace.rounds[0].answer == BAD and trace.delivered == {"media/r1/turn1.mp4": str(two.parent / "r1.mp4")}

    bench = load_bench(out)
    r1, r2 = bench.instances
    assert (r1.id, r1.language, r1.source, r2.language, r2.source) == ("r1", "en", "human", "zh", "human")
    assert r1.reference == GOOD_EN["reply"] and [c.tier for c in r1.rubric] == [0, 1, 1, 2]
    assert r1.rubric[0].check == Check(language="en")  # the gate gets its machine check
    assert r1.meta["rounds"] == 2 and r2.meta["rounds"] == 1
    assert r1.meta["caption"].startswith("A man at a desk with a Starbucks cup")  # the caption as recorded
    assert r1.meta["transcript"] == "Can you hear me?" and r1.meta["turns"][0]["duration_s"] == pytest.approx(2.0)
    assert r1.meta["generator"]["trace"] == "recorded/traces/r1.json"


def test_three_bad_rounds_are_not_imported_reported_with_problems_and_nothing_half_written(two: Path, tmp_path: Path):
    director = Scripted({"r1": [BAD, BAD, {"reply": "Sure."}], "r2": [GOOD_ZH]})
    out = tmp_path / "bench"
    summary = import_recorded(two, out, director)
    r1, r2 = summary.outcomes
    assert (r1.status, r1.rounds, r2.status) == ("not imported", MAX_ROUNDS, "imported")
    assert any("the rubric has 0 criteria" in p for p in r1.problems)  # the last round's problems
    assert [p["round"] for p in director.payloads("r1")] == [1, 2, 3]
    trace = read_recorded_trace(out / "recorded" / "traces" / "r1.json")
    assert trace.status == "not imported" and trace.problems == list(r1.problems) and trace.delivered == {}
    assert [r.decision for r in trace.rounds] == ["refine", "refine", "not imported"]
    assert not (out / "media" / "r1").exists() and not (out / "recorded" / "accepted" / "r1.json").exists()
    assert [i.id for i in load_bench(out).instances] == ["r2"]


def test_nothing_imported_writes_no_bench(two: Path, tmp_path: Path):
    out = tmp_path / "bench"
    summary = import_recorded(two, out, Scripted({"r1": [BAD] * 3, "r2": ["not json"] * 3}))
    assert summary.bench is None and summary.count("not imported") == 2
    assert not (out / "bench.yaml").exists() and not (out / "instances.jsonl").exists()
    assert "the answer is not JSON" in summary.outcomes[1].problems[0]


def test_a_text_answer_holding_json_is_read(two: Path, tmp_path: Path):
    director = Scripted({"r1": [json.dumps(GOOD_EN)], "r2": [{"reply": "好的", "rubric": [{"tier": "x"}]}] * 3})
    summary = import_recorded(two, tmp_path / "bench", director)
    assert summary.outcomes[0].status == "imported"
    assert "does not fit" in summary.outcomes[1].problems[0] and "rubric[0].tier" in summary.outcomes[1].problems[0]


def test_a_multi_turn_recording_keeps_the_earlier_reply_and_shows_the_earlier_turns(
    tmp_path: Path, clips: dict[str, Path]
):
    turns = [
        {"video": str(clips["en"]), "caption": "A man waves at the camera.", "transcript": "Hi there.",
         "reply": "Hi! Good to see you."},
        {"video": str(clips["en2"]), "caption": "He holds a red square in his left hand.",
         "transcript": "Which hand holds the square?"},
    ]  # fmt: skip
    manifest = _manifest(tmp_path / "m.jsonl", [{"id": "m1", "subcategory": "MDCC", "language": "en", "turns": turns}])
    answer = {
        "reply": "The square is in your left hand.",
        "rubric": [_gate("en"), {"tier": 1, "text": "Says the left hand."}, {"tier": 2, "text": "Is brief."}],
    }
    director = Scripted({"m1": [answer]})
    out = tmp_path / "bench"
    import_recorded(manifest, out, director)
    (payload,) = director.payloads("m1")
    assert payload["caption"] == "He holds a red square in his left hand."
    assert payload["earlier_turns"] == [
        {"caption": "A man waves at the camera.", "transcript": "Hi there.", "reply": "Hi! Good to see you."}
    ]
    (instance,) = load_bench(out).instances
    assert [t.video for t in instance.turns] == ["media/m1/turn1.mp4", "media/m1/turn2.mp4"]
    assert instance.turns[0].reply == "Hi! Good to see you." and instance.turns[1].reply is None
    assert [t["caption"] for t in instance.meta["turns"]] == [turns[0]["caption"], turns[1]["caption"]]


# ------------------------------------------------------------------------------------------- each rule alone


def _answer(reply: str = GOOD_EN["reply"], rubric: list[dict[str, Any]] | None = None) -> ReplyAnswer:
    return ReplyAnswer.model_validate({"reply": reply, "rubric": GOOD_EN["rubric"] if rubric is None else rubric})


T1 = {"tier": 1, "text": "Confirms that it hears the user."}
T2 = {"tier": 2, "text": "Invites the user to go on."}
EN0 = _gate("en")

RULE_CASES: list[tuple[str, str, ReplyAnswer, str]] = [
    ("too few criteria", "en", _answer(rubric=[EN0, T1]), "the rubric has 2 criteria; it needs 3 to 5"),
    ("too many criteria", "en", _answer(rubric=[EN0, T1, T1, T1, T2, T2]), "the rubric has 6 criteria"),
    ("no tier 0", "en", _answer(rubric=[T1, T1, T2]), "0 tier-0 criteria"),
    ("two tier 0", "en", _answer(rubric=[EN0, EN0, T1]), "2 tier-0 criteria"),
    (
        "gate not about language",
        "en",
        _answer(rubric=[{"tier": 0, "text": "The reply is polite."}, T1, T2]),
        "criterion 1 (tier 0) is not the language criterion",
    ),
    ("gate names another language", "zh", _answer("能听到。", [EN0, T1, T2]), "is not the language criterion"),
    (
        "gate checks another language",
        "en",
        _answer(rubric=[{**EN0, "check": {"language": "zh"}}, T1, T2]),
        "its check asks for language 'zh', not 'en'",
    ),
    ("no tier 1", "en", _answer(rubric=[EN0, T2, T2]), "no tier-1 criterion"),
    ("tier gap", "en", _answer(rubric=[EN0, T1, {"tier": 3, "text": "Is warm."}]), "tier 2 is missing"),
    ("tier order", "en", _answer(rubric=[EN0, T2, T1]), "criterion 3 is tier 1 after tier 2"),
    ("caption", "en", _answer(rubric=[EN0, {"tier": 1, "text": "Matches the caption."}, T2]), "hidden caption"),
    ("transcript", "en", _answer(rubric=[EN0, {"tier": 1, "text": "Repeats the Transcript."}, T2]), "hidden"),
    ("script", "en", _answer(rubric=[EN0, {"tier": 1, "text": "Follows the script."}, T2]), "('script')"),
    ("as described", "en", _answer(rubric=[EN0, {"tier": 1, "text": "Names the cup as described."}, T2]), "hidden"),
    ("标注", "zh", _answer("能听到。", [_gate("zh"), {"tier": 1, "text": "与标注一致。"}, T2]), "('标注')"),
    ("字幕", "zh", _answer("能听到。", [_gate("zh"), {"tier": 1, "text": "复述字幕内容。"}, T2]), "('字幕')"),
    ("根据描述", "zh", _answer("能听到。", [_gate("zh"), {"tier": 1, "text": "根据描述回答。"}, T2]), "hidden"),
    ("brand in reply", "en", _answer("Enjoy your Starbucks coffee."), "the reference reply names the brand"),
    (
        "brand in criterion",
        "en",
        _answer(rubric=[EN0, {"tier": 1, "text": "Does not say it is ChatGPT."}, T2]),
        "criterion 2 names the brand 'ChatGPT'; write <brand> instead",
    ),
    ("trademark sign", "en", _answer("Try the Acme™ kettle."), "names the brand '™'"),
    (
        "brand in a check",
        "en",
        _answer(rubric=[EN0, {"tier": 1, "text": "Names the cup.", "check": {"none_of": ["Gemini"]}}, T2]),
        "criterion 2 names the brand 'Gemini'",
    ),
    ("Chinese brand", "zh", _answer("这是星巴克的杯子。", [_gate("zh"), T1, T2]), "names the brand '星巴克'"),
    ("empty reply", "en", _answer("   "), "the reference reply is empty"),
    ("silence marker", "en", _answer("[silence]"), "no spoken words"),
    ("silence marker zh", "zh", _answer("（沉默）", [_gate("zh"), T1, T2]), "no spoken words"),
    ("silence word", "en", _answer("Silence."), "no spoken words"),
    ("reply in another language", "en", _answer("能听到，你说吧。"), "the reference reply is in Chinese, not English"),
    (
        "reference misses its own check",
        "en",
        _answer(rubric=[EN0, {"tier": 1, "text": "Says left.", "check": {"any_of": ["left"]}}, T2]),
        "the reference misses criteria [2]",
    ),
]


@pytest.mark.parametrize(
    ("language", "answer", "expected"), [c[1:] for c in RULE_CASES], ids=[c[0] for c in RULE_CASES]
)
def test_each_rule_alone(language: str, answer: ReplyAnswer, expected: str):
    problems = answer_problems(answer, language)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("language", "answer"),
    [
        ("en", _answer()),
        ("zh", ReplyAnswer.model_validate(GOOD_ZH)),
        ("en", _answer("Your <brand> cup is on the left, and the apple is red.")),  # a placeholder; apple the fruit
        ("en", _answer(rubric=[EN0, {"tier": 1, "text": "Describes the cup and its description of the room."}, T2])),
        ("en", _answer(rubric=[{**EN0, "check": {"language": "en"}}, T1, T2, {"tier": 3, "text": "Is warm."}])),
        ("zh", _answer("<model_name>是你的助手，能听到。", [{"tier": 0, "text": "The reply is in Mandarin."}, T1, T2])),
        ("en", _answer("Mm, I'm listening, go on.", [EN0, T1, {**T1, "text": "Uses JavaScript and GPTQ words."}])),
    ],
)
def test_fit_answers_pass(language: str, answer: ReplyAnswer):
    assert answer_problems(answer, language) == []


def test_the_word_lists_and_scrubbing():
    assert hidden_source("Describes the red cup.") is None and hidden_source("Per the annotation, ...") == "annotation"
    assert brand_in("a GPT-4o model") == "GPT" and brand_in("GPTQ weights") is None and brand_in("an apple") is None
    assert brand_in("my iphone", ["iPhone"]) == "iPhone" and brand_in("Starbucks", ["Nike"]) is None
    assert scrub_brands("A Coca-Cola™ can and a 星巴克 cup") == f"A {PLACEHOLDER} can and a {PLACEHOLDER} cup"
    gate = Criterion(tier=0, text="The reply is in English.", check=Check(language="en"))
    assert answer_problems(ReplyAnswer(reply="Hello there.", rubric=[gate, *_answer().rubric[1:]]), "en") == []


# ------------------------------------------------------------------------------------------- the manifest


def _without(name: str) -> Any:
    return lambda c: {k: v for k, v in _entry("r2", c["en"]).items() if k != name}


def _clip_case(name: str) -> Any:
    return lambda c: _entry("r2", c[name])


def _turns(subcategory: str, *turns: dict[str, Any]) -> Any:
    def make(c: dict[str, Path]) -> dict[str, Any]:
        given = [{"video": str(c["en"]), **t} for t in turns]
        return {"id": "r2", "subcategory": subcategory, "language": "en", "turns": given}

    return make


MANIFEST_CASES: list[tuple[str, Any, str]] = [
    ("missing caption", _without("caption"), "2: caption: missing"),
    ("missing language", _without("language"), "2: language: missing"),
    ("missing id", _without("id"), "2: id: missing"),
    ("bad json", lambda c: '{"id": "r2", "video": ', "2: not JSON"),
    ("not an object", lambda c: "[1, 2]", "2: a recording is a JSON object, got list"),
    ("unknown subcategory", lambda c: _entry("r2", c["en"], subcategory="XYZ"), "2: subcategory: unknown subcategory"),
    ("unknown language", lambda c: _entry("r2", c["en"], language="fr"), "2: language: 'fr' is not one of en, zh"),
    ("unknown field", lambda c: _entry("r2", c["en"], captoin="x"), "2: captoin: not a field of a recording"),
    ("empty caption", lambda c: _entry("r2", c["en"], caption="  "), "2: caption: empty"),
    ("bad id", lambda c: _entry("../x", c["en"]), "2: id: '../x' must be"),
    ("duplicate id", lambda c: _entry("r1", c["en"]), "2: id: 'r1' repeats line 1"),
    ("missing clip", lambda c: _entry("r2", "nowhere.mp4"), "2: video: "),
    ("clip without audio", _clip_case("noaudio"), "no audio track; a recording's question is spoken"),
    ("clip with silent audio", _clip_case("silent"), "the audio track is silent"),
    ("clip without video", _clip_case("novideo"), "no video stream"),
    ("unreadable clip", _clip_case("broken"), "2: video: cannot read the clip"),
    (
        "two turns for a single-turn code",
        _turns("ICC", {"caption": "a", "reply": "b"}, {"caption": "c"}),
        "2: turns: ICC is single-turn but 2 turns are given",
    ),
    (
        "one turn for a multi-turn code",
        lambda c: _entry("r2", c["en"], subcategory="MDCC"),
        "2: turns: MDCC is multi-turn but only one turn",
    ),
    ("earlier turn without a reply", _turns("MDCC", {"caption": "a"}, {"caption": "b"}), "2: turns[0].reply: missing"),
    ("turn field missing", _turns("MDCC", {}, {"caption": "b"}), "2: turns[0].caption: missing"),
    (
        "last turn with a reply",
        _turns("MDCC", {"caption": "a", "reply": "x"}, {"caption": "b", "reply": "y"}),
        "2: turns[1].reply: the last turn's reply is what the import writes",
    ),
    (
        "video and turns",
        lambda c: {**_entry("r2", c["en"]), **_turns("MDCC", {"caption": "a", "reply": "x"}, {"caption": "b"})(c)},
        "2: video: give it inside each turn",
    ),
]


@pytest.mark.parametrize(("make", "expected"), [c[1:] for c in MANIFEST_CASES], ids=[c[0] for c in MANIFEST_CASES])
def test_manifest_errors_name_file_line_and_field(tmp_path: Path, clips: dict[str, Path], make: Any, expected: str):
    manifest = _manifest(tmp_path / "manifest.jsonl", [_entry("r1", clips["en"]), make(clips)])
    with pytest.raises(RecordedError) as caught:
        load_recordings(manifest)
    assert f"{manifest}:" in str(caught.value) and expected in str(caught.value), str(caught.value)
    out = tmp_path / "bench"
    with pytest.raises(RecordedError):
        import_recorded(manifest, out, Scripted({}))
    assert not out.exists()  # a bad manifest writes nothing


def test_every_problem_of_a_manifest_is_listed_at_once(tmp_path: Path, clips: dict[str, Path]):
    manifest = _manifest(
        tmp_path / "m.jsonl",
        ["{oops", _entry("r1", clips["noaudio"]), "", _entry("r2", clips["en"], language="de")],
    )
    with pytest.raises(RecordedError) as caught:
        load_recordings(manifest)
    assert [p.split(": ")[0] for p in caught.value.problems] == [f"{manifest}:1", f"{manifest}:2", f"{manifest}:4"]
    assert str(caught.value).startswith(f"{manifest}: 3 problems; nothing imported")


def test_an_empty_or_missing_manifest_is_refused(tmp_path: Path):
    with pytest.raises(RecordedError, match="no recordings"):
        load_recordings(_manifest(tmp_path / "empty.jsonl", [""]))
    with pytest.raises(RecordedError, match="cannot read the manifest"):
        load_recordings(tmp_path / "absent.jsonl")


def test_clip_paths_are_relative_to_the_manifest_or_absolute(two: Path, clips: dict[str, Path]):
    recordings = load_recordings(two)
    assert [r.final.path for r in recordings] == [two.parent / "r1.mp4", two.parent / "r2.mp4"]
    assert recordings[0].final.sha256 == sha256_file(clips["en"]) and recordings[1].language == "zh"


# ------------------------------------------------------------------------------------------- the output


def test_the_bench_validates_and_the_clips_are_byte_identical_copies_with_the_originals_untouched(
    two: Path, tmp_path: Path
):
    from omnivchat.benchmarks.native import BenchClipChecker

    originals = [two.parent / "r1.mp4", two.parent / "r2.mp4"]
    before = [(sha256_file(p), p.stat().st_mtime_ns) for p in originals]
    out = tmp_path / "bench"
    import_recorded(two, out, Scripted({"r1": [GOOD_EN], "r2": [GOOD_ZH]}))
    bench = load_bench(out, check_media=BenchClipChecker())
    assert {i.source for i in bench.instances} == {"human"} and bench.info.languages == {"en": 1, "zh": 1}
    assert bench.info.subcategories == {"ICC": 2}
    for original, (digest, mtime), instance in zip(originals, before, bench.instances, strict=True):
        copied = out / instance.turns[0].video
        assert sha256_file(copied) == digest and (original.stat().st_mtime_ns, sha256_file(original)) == (mtime, digest)
    assert sorted(p.name for p in (out / "media" / "r1").iterdir()) == ["turn1.mp4"]
    assert json.loads((out / "instances.jsonl").read_text().splitlines()[0])["source"] == "human"


def test_resume_replays_the_calls_already_made(two: Path, tmp_path: Path):
    out = tmp_path / "bench"
    # r1 stops at round 2 (the Director fails for good); r2 is imported.
    failing = Scripted({"r1": [BAD, OmnivchatError("the provider is down")], "r2": [GOOD_ZH]})
    summary = import_recorded(two, out, failing)
    assert [o.status for o in summary.outcomes] == ["failed", "imported"] and not summary.complete
    assert "the provider is down" in summary.outcomes[0].problems[0]
    assert not (out / "recorded" / "traces" / "r1.json").exists()

    # The rerun asks round 2 only: round 1 comes from the store (asking it again would fail the test).
    resumed = Scripted({"r1": [AssertionError("round 1 asked again"), GOOD_EN]})
    summary = import_recorded(two, out, resumed)
    assert [(o.status, o.already) for o in summary.outcomes] == [("imported", False), ("imported", True)]
    assert (summary.calls_made, summary.calls_replayed) == (1, 1)
    assert [p["round"] for p in resumed.payloads("r1")] == [2] and resumed.payloads("r2") == []
    assert [r.replayed for r in read_recorded_trace(out / "recorded" / "traces" / "r1.json").rounds] == [True, False]
    finished = (out / "instances.jsonl").read_bytes()

    # A finished import repeated adds nothing and asks nothing.
    summary = import_recorded(two, out, Scripted({}))
    assert all(o.already for o in summary.outcomes) and (summary.calls_made, summary.calls_replayed) == (0, 0)
    assert (out / "instances.jsonl").read_bytes() == finished

    # Killed before its trace was written: everything is replayed, nothing asked; a lost bench clip comes back.
    (out / "recorded" / "traces" / "r1.json").unlink()
    (out / "media" / "r2" / "turn1.mp4").unlink()
    summary = import_recorded(two, out, Scripted({}))
    assert (summary.calls_made, summary.calls_replayed) == (0, 2)
    assert (out / "instances.jsonl").read_bytes() == finished and (out / "media" / "r2" / "turn1.mp4").is_file()


def test_an_edited_recording_is_imported_again_and_a_given_up_one_retried_by_another_director(
    two: Path, tmp_path: Path
):
    out = tmp_path / "bench"
    import_recorded(two, out, Scripted({"r1": [BAD] * 3, "r2": [GOOD_ZH]}))
    # The same Director gave r1 up: a rerun with it asks nothing.
    again = import_recorded(two, out, Scripted({}))
    assert [(o.status, o.already) for o in again.outcomes] == [("not imported", True), ("imported", True)]
    # Another Director tries r1 again.
    summary = import_recorded(two, out, Scripted({"r1": [GOOD_EN]}, name="another"))
    assert summary.outcomes[0].status == "imported" and summary.calls_made == 1
    # A corrected caption is a different recording: imported again, the old record gone.
    lines = two.read_text().splitlines()
    entry = json.loads(lines[1])
    entry["caption"] = "一位女士坐在桌前，问能不能听到她。"
    two.write_text("\n".join([lines[0], json.dumps(entry, ensure_ascii=False)]) + "\n")
    summary = import_recorded(two, out, Scripted({"r2": [GOOD_ZH]}, name="another"))
    assert [o.already for o in summary.outcomes] == [True, False]
    assert load_bench(out).get("r2").meta["caption"] == entry["caption"]


def test_an_output_folder_holding_something_else_is_refused(two: Path, tmp_path: Path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not empty and is not an import of recorded dialogues"):
        import_recorded(two, taken, Scripted({}))
    assert sorted(p.name for p in taken.iterdir()) == ["notes.txt"]
    studio = tmp_path / "studio-run"
    (studio / "studio").mkdir(parents=True)
    (studio / "studio" / "manifest.json").write_text("{}")
    with pytest.raises(OutputError):
        import_recorded(two, studio, Scripted({}))
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        import_recorded(two, afile, Scripted({}))


def test_a_rerun_with_other_brands_is_refused(two: Path, tmp_path: Path):
    out = tmp_path / "bench"
    import_recorded(two, out, Scripted({"r1": [GOOD_EN], "r2": [GOOD_ZH]}))
    with pytest.raises(RecordedError, match="brands differ"):
        import_recorded(two, out, Scripted({}), brands=["Acme"])


def test_a_custom_brand_list_is_enforced_and_scrubbed(two: Path, tmp_path: Path):
    acme = {**GOOD_EN, "reply": "Yes, I hear you, Acme fan!"}
    director = Scripted({"r1": [acme, GOOD_EN], "r2": [GOOD_ZH]})
    import_recorded(two, tmp_path / "bench", director, brands=["Acme", "Starbucks"])
    _, second = director.payloads("r1")
    assert second["problems"] == [f"the reference reply names the brand 'Acme'; write {PLACEHOLDER} instead"]


def test_a_second_writer_is_refused_by_the_lock(two: Path, tmp_path: Path):
    from omnivchat.runs import run_lock

    out = tmp_path / "bench"
    out.mkdir()
    held, done = threading.Event(), threading.Event()

    def writer() -> None:  # the lock is re-entrant for its own thread, so another thread holds it
        with run_lock(out, "someone else"):
            held.set()
            done.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        held.wait(10)
        with pytest.raises(OmnivchatError, match="someone else"):
            import_recorded(two, out, Scripted({}))
    finally:
        done.set()
        thread.join()
    assert not (out / "recorded").exists()


# ------------------------------------------------------------------------------------------- the command line


def _cli() -> typer.Typer:
    from omnivchat.cli._app import Commands
    from omnivchat.cli.studio_import import import_command

    app = typer.Typer(cls=Commands)
    app.command("import-recorded")(import_command)

    @app.command("noop")
    def _noop() -> None:  # a second command keeps Typer from collapsing the group
        pass

    return app


def test_the_command_needs_a_hosted_director(two: Path, tmp_path: Path):
    out = tmp_path / "bench"
    result = CliRunner().invoke(_cli(), ["import-recorded", str(two), "-o", str(out)])
    assert result.exit_code == 2 and "needs a Director: give --agents FILE" in result.output
    assert not out.exists()


def test_the_command_runs_with_the_hosted_director_of_an_agents_file(two: Path, tmp_path: Path):
    """The Director of --agents answers over real HTTP (a loopback server answering a valid reply and rubric)."""
    import json

    from omnivchat.testing import Behaviour, LoopbackServer

    def answer(body: dict) -> Behaviour:
        user = body["messages"][-1]["content"]
        zh = "## Language of the dialogue\nzh" in (user if isinstance(user, str) else json.dumps(user))
        reply = "能听到，请说吧。" if zh else "Yes, I can hear you. Go ahead."
        rubric = [
            {"tier": 0, "text": "The reply is in Chinese." if zh else "The reply is in English."},
            {"tier": 1, "text": "Confirms that the user can be heard."},
            {"tier": 2, "text": "Invites the user to go on."},
        ]
        return Behaviour(text=json.dumps({"reply": reply, "rubric": rubric}, ensure_ascii=False))

    out = tmp_path / "bench"
    with LoopbackServer(rules=answer) as server:
        agents = tmp_path / "agents.toml"
        agents.write_text(f'[director]\nmodel = "director-llm"\nbase_url = "{server.base_url}"\nno_key = true\n')
        result = CliRunner().invoke(_cli(), ["import-recorded", str(two), "-o", str(out), "--agents", str(agents)])
        sent = server.requests
    assert sent, "the Director was asked over HTTP"
    assert "You are the Director" in json.dumps(sent[0].json)
    assert result.exit_code == 0, result.output
    assert "imported 2 of 2 recording(s)" in result.output


def test_the_command_checks_a_manifest_without_writing(two: Path, tmp_path: Path, clips: dict[str, Path]):
    result = CliRunner().invoke(_cli(), ["import-recorded", str(two), "--check"])
    assert result.exit_code == 0 and "2 recording(s), 2 clip(s): all readable, with sound" in result.output
    bad = _manifest(tmp_path / "bad.jsonl", [_entry("r1", clips["noaudio"])])
    result = CliRunner().invoke(_cli(), ["import-recorded", str(bad), "--check"])
    assert result.exit_code == 2 and f"{bad}:1: video:" in result.output


def test_the_command_prints_each_recording_a_summary_and_what_it_wrote(
    two: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from omnivchat.cli.studio_import import run_import

    out = tmp_path / "bench"
    director = Scripted({"r1": [BAD, GOOD_EN], "r2": [{"reply": "好"}] * 3})
    run_import(two, out, director_factory=lambda agents: director, concurrency=1)
    printed = " ".join(capsys.readouterr().out.split())
    assert "imported r1 (2 rounds)" in printed
    assert "not imported r2 after 3 rounds: the rubric has 0 criteria" in printed
    assert "imported 1 of 2 recording(s); 1 not imported, 0 failed" in printed
    assert "Director calls: 5 made, 0 answered from the run store" in printed
    assert f"wrote {out} (bench.yaml, instances.jsonl, media/" in printed
    run_import(two, out, director_factory=lambda agents: Scripted({}))
    printed = " ".join(capsys.readouterr().out.split())
    assert "already imported r1 (2 rounds)" in printed and "0 made" in printed


def test_the_command_exits_1_when_nothing_is_imported(two: Path, tmp_path: Path):
    from omnivchat.cli.studio_import import run_import

    with pytest.raises(typer.Exit) as caught:
        run_import(
            two, tmp_path / "bench", director_factory=lambda agents: Scripted({"r1": [BAD] * 3, "r2": [BAD] * 3})
        )
    assert caught.value.exit_code == 1


def test_the_instructions_name_the_rules_and_the_answer_shape():
    from omnivchat.studio.recorded import RECORDED_REPLY_INSTRUCTIONS as text

    for phrase in ("3 to 5", "tier-0", "tier-1", PLACEHOLDER, '"reply"', '"rubric"', "caption"):
        assert phrase in text
