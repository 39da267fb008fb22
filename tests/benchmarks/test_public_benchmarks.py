"""The public omni benchmarks (WorldSense, Daily-Omni, OmniBench, AV-Odyssey, Video-MME, LVOmniBench): small
releases in each released format (the real field names, our own content) on real rendered clips, loaded, refused
when bad (one line per problem naming file and item), run through eval / score / export / ablate on the simulated
route and on a loopback OpenAI-compatible server, with the clip's soundtrack checked where the release keeps it
apart, strict parsing as the headline, unparsed replies in the denominator, and clustered intervals checked by
hand."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from omnivchat.benchmarks import Benchmark, ScoreOptions, Source, get_benchmark
from omnivchat.benchmarks._choice import clustered_accuracy
from omnivchat.benchmarks.mcq import McqError, load_card, mcq_metrics, score_reply
from omnivchat.cli import app
from omnivchat.media import export_audio, probe, strip_audio
from omnivchat.scoring.statistics import bootstrap_interval, cluster_bootstrap_interval, clustered_se
from omnivchat.testing import Behaviour, LoopbackServer, message_text

runner = CliRunner()
NAMES = ("worldsense", "dailyomni", "omnibench", "avodyssey", "videomme", "lvomnibench")
MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"  # served by a loopback server: the clip goes with its audio inside


def scene(color: str, shape: str, text: str) -> dict[str, Any]:
    return {
        "size": [160, 90],
        "background": "navy",
        "objects": [{"shape": shape, "color": color, "position": "left"}],
        "speech": [{"text": text, "language": "en", "start": 0.1}],
    }


@dataclass(frozen=True)
class Clips:
    red: Path  # a rendered clip with speech
    blue: Path
    mute: Path  # the red clip without its audio stream
    wav: Path  # the red clip's soundtrack alone
    mp3: Path
    png: Path
    jpg: Path


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Clips:
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("public-clips")
    red, blue = root / "red.mp4", root / "blue.mp4"
    render_clip(scene("red", "square", "Which colour?"), red)
    render_clip(scene("blue", "circle", "What shape?"), blue)
    Image.new("RGB", (120, 80), (200, 60, 40)).save(root / "still.png")
    Image.new("RGB", (64, 48), (40, 180, 90)).save(root / "still.jpg")
    return Clips(
        red=red,
        blue=blue,
        mute=strip_audio(red, out=root / "mute.mp4"),
        wav=export_audio(red, fmt="wav", out=root / "voice.wav"),
        mp3=export_audio(red, fmt="mp3", out=root / "voice.mp3"),
        png=root / "still.png",
        jpg=root / "still.jpg",
    )


def place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def write_jsonl(path: Path, rows: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


# --- the releases: each benchmark's own file layout and field names, our own content ------------------------


def worldsense_rows() -> dict[str, Any]:
    def task(q: str, answer: str, domain: str, kind: str) -> dict[str, Any]:
        options = ["A. Red", "B. Blue", "C. A square", "D. A circle"]
        return {"question": q, "candidates": options, "answer": answer, "task_domain": domain, "task_type": kind}

    return {
        "vidA": {
            "duration": "<1min",
            "domain": "Sports",
            "sub_category": "Basketball",
            "audio_class": ["Speech", "Event"],
            "video_caption": "A red square while someone asks a question.",
            "task0": task("What colour is the shape?", "A", "Recognition", "Attribute Recognition"),
            "task1": task("What shape is on screen?", "C", "Reasoning", "Hallucination"),
        },
        "vidB": {
            "duration": "1-2min",
            "domain": "Music",
            "sub_category": "Concert",
            "audio_class": ["Music"],
            "task0": task("Which colour is shown?", "B", "Recognition", "Attribute Recognition"),
        },
    }


def dailyomni_rows() -> list[dict[str, Any]]:
    def row(vid: str, q: str, answer: str, kind: str, duration: str) -> dict[str, Any]:
        options = ["A. Applause", "B. A voice", "C. Drums", "D. Silence"]
        base = {"Question": q, "Choice": options, "Answer": answer, "video_id": vid, "Type": kind}
        return {**base, "video_category": "Education", "video_duration": duration}

    return [
        row("abcDEF12345", "What is heard while the square shows?", "B", "AV Event Alignment", "30s"),
        row("abcDEF12345", "What comes first?", "B", "Event Sequence", "30s"),
        row("xyzXYZ98765", "What sound plays?", "B", "Reasoning", "60s"),
    ]


def omnibench_rows() -> list[dict[str, Any]]:
    def row(index: int, answer: str, audio: str, image: str, kind: str) -> dict[str, Any]:
        options = ["He sits.", "She sings.", "A man is speaking.", "They eat."]
        return {
            "index": index,
            "task type": "Action and Activity",
            "audio type": kind,
            "question": "What is happening?",
            "options": options,
            "answer": answer,
            "audio_path": audio,
            "image_path": image,
            "audio content": "Which colour?",
            "image content": "A red picture.",
        }

    # "A man is speaking." is option C: the gold is its position, never the "A" its text starts with.
    return [row(7, "A man is speaking.", "7.mp3", "7.png", "speech"), row(8, "She sings.", "7.mp3", "8.jpg", "music")]


def avodyssey_rows() -> list[dict[str, Any]]:
    options = ["A. [img1] left", "B. [img1] right", "C. both", "D. neither"]
    return [
        {
            "question_id": "t3_0001",
            "question_type_id": 3,
            "data_type": "image",
            "subfield": "Timbre",
            "question": "[audio1] [audio2] Which picture matches the second recording? [img1] [img2]",
            "options": options,
            "answer": "A",
            "image_path": ["t3/0001_1.png", "t3/0001_2.jpg"],
            "video_path": [],
            "audio_path": ["t3/0001_1.wav", "t3/0001_2.mp3"],
        },
        {
            "question_id": "t9_0002",
            "question_type_id": 9,
            "data_type": "video",
            "subfield": "Space",
            "question": "[video1] Where does the sound [audio1] come from?",
            "options": ["A. left", "B. right", "C. above", "D. nowhere"],
            "answer": "A",
            "image_path": [],
            "video_path": ["t9/0002.mp4"],
            "audio_path": ["t9/0002.wav"],
        },
        {
            "question_id": "t4_0003",
            "question_type_id": 4,
            "data_type": "image",
            "subfield": "Tone",
            "question": "[img1] [audio1] Is the tone high?",
            "options": ["A. yes", "B. no", "C. unsure", "D. none"],
            "answer": "B",
            "image_path": ["t3/0001_1.png"],
            "video_path": ["t9/0002.mp4"],  # images and a video: refused, counted
            "audio_path": ["t9/0002.wav"],
        },
    ]


def videomme_rows() -> list[dict[str, Any]]:
    def row(vid: str, youtube: str, n: int, answer: str, task: str) -> dict[str, Any]:
        return {
            "video_id": vid,
            "duration": "short",
            "domain": "Life Record",
            "sub_category": "Food",
            "url": f"https://www.youtube.com/watch?v={youtube}",
            "videoID": youtube,
            "question_id": f"{vid}-{n}",
            "task_type": task,
            "question": "Which colour is the shape?",
            "options": ["A. Red.", "B. Blue.", "C. Green.", "D. Black."],
            "answer": answer,
        }

    return [row("001", "Zz9Yy8Xx7Ww", 1, "A", "Counting Problem"), row("002", "Qq1Ww2Ee3Rr", 1, "B", "OCR Problems")]


def lvomnibench_rows() -> list[dict[str, Any]]:
    def row(vid: str, options: list[str], answer: str, kind: str) -> dict[str, Any]:
        base = {"video_id": vid, "question": "What is said?", "options": options, "correct_option": answer}
        return {**base, "question_type": kind, "audio_type": "speech", "difficulty": "hard", "video_category": "sports"}

    return [
        row("video_1", ["A. Which colour?", "B. Hello.", "C. Goodbye.", "D. Nothing."], "A", "temporal"),
        row("video_1", ["Red", "Blue", "Green"], "A", "counting"),  # three bare options: mc3
        row("video_2", ["Circle", "Square", "Star"], "A", "counting"),
    ]


@dataclass(frozen=True)
class Spec:
    name: str
    annotations: str  # the annotations file, relative to the release folder
    rows: Callable[[], Any]
    write: Callable[[Path, Any], None]
    media: Callable[[Path, Clips], None]  # lays out the release's media under the release folder
    n_items: int


def worldsense_media(root: Path, c: Clips) -> None:
    place(c.red, root / "videos" / "vidA.mp4")
    place(c.blue, root / "videos" / "vidB.mp4")
    place(c.mute, root / "videos" / "mute.mp4")


def dailyomni_media(root: Path, c: Clips) -> None:
    for vid in ("abcDEF12345", "xyzXYZ98765", "nowav"):
        place(c.mute, root / "Videos" / vid / f"{vid}_video.mp4")
        if vid != "nowav":
            place(c.wav, root / "Videos" / vid / f"{vid}_audio.wav")


def omnibench_media(root: Path, c: Clips) -> None:
    place(c.mp3, root / "mm_data" / "audio" / "7.mp3")
    place(c.png, root / "mm_data" / "image" / "7.png")
    place(c.jpg, root / "mm_data" / "image" / "8.jpg")
    place(c.png, root / "mm_data" / "audio" / "picture.mp3")  # an "audio" file with no sound


def avodyssey_media(root: Path, c: Clips) -> None:
    place(c.png, root / "t3" / "0001_1.png")
    place(c.jpg, root / "t3" / "0001_2.jpg")
    place(c.wav, root / "t3" / "0001_1.wav")
    place(c.mp3, root / "t3" / "0001_2.mp3")
    place(c.mute, root / "t9" / "0002.mp4")
    place(c.wav, root / "t9" / "0002.wav")


def videomme_media(root: Path, c: Clips) -> None:
    place(c.red, root / "data" / "Zz9Yy8Xx7Ww.mp4")  # the unzipped videos' folder
    place(c.blue, root / "Qq1Ww2Ee3Rr.mp4")
    place(c.mute, root / "mute.mp4")


def lvomnibench_media(root: Path, c: Clips) -> None:
    place(c.red, root / "videos" / "video_1.mp4")
    place(c.blue, root / "videos" / "video_2.mp4")
    place(c.mute, root / "videos" / "mute.mp4")


SPECS = {
    s.name: s
    for s in (
        Spec("worldsense", "worldsense_qa.json", worldsense_rows, write_json, worldsense_media, 3),
        Spec("dailyomni", "qa.json", dailyomni_rows, write_json, dailyomni_media, 3),
        Spec("omnibench", "dataset/batch-5_1142_20240817.jsonl", omnibench_rows, write_jsonl, omnibench_media, 2),
        Spec("avodyssey", "av_odyssey.parquet", avodyssey_rows, write_parquet, avodyssey_media, 2),
        Spec("videomme", "videomme/test-00000-of-00001.parquet", videomme_rows, write_parquet, videomme_media, 2),
        Spec("lvomnibench", "data.json", lvomnibench_rows, write_json, lvomnibench_media, 3),
    )
}


@pytest.fixture(scope="module")
def releases(clips: Clips, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each benchmark's release folder, laid out as released."""
    folders = {}
    for name, spec in SPECS.items():
        root = tmp_path_factory.mktemp(name)
        spec.media(root, clips)
        spec.write(root / spec.annotations, spec.rows())
        folders[name] = root
    return folders


def bad_release(releases: dict[str, Path], name: str, rows: Any) -> Path:
    """An annotations file beside the good one (so media resolve alike), holding ``rows``."""
    spec = SPECS[name]
    good = releases[name] / spec.annotations
    path = good.with_name("bad" + good.suffix)
    spec.write(path, rows)
    return path


def run_eval(name: str, data: Path, run_dir: Path, *extra: str, model: str = "sim:healthy") -> Any:
    args = ["eval", "--benchmark", name, "--data", str(data), "--model", model, "-o", str(run_dir), "--no-progress"]
    return runner.invoke(app, [*args, *extra], env={"COLUMNS": "200"})


# --- loading -------------------------------------------------------------------------------------------------


def test_each_benchmark_is_registered_with_chance_one_over_k() -> None:
    for name in NAMES:
        benchmark = get_benchmark(name)
        assert isinstance(benchmark, Benchmark) and benchmark.name == name
        assert benchmark.chance("mc4") == 0.25 and benchmark.chance("mc3") == pytest.approx(1 / 3)
    listed = runner.invoke(app, ["benchmarks"], env={"COLUMNS": "250"})
    assert all(name in listed.output for name in NAMES)


def test_worldsense_reads_videos_tasks_and_multi_label_classes(releases: dict[str, Path]) -> None:
    data = get_benchmark("worldsense").load(Source(data=releases["worldsense"]))
    assert [(i.id, i.gold, i.task, i.cluster) for i in data.items] == [
        ("vidA/task0", "A", "mc4", "vidA"),
        ("vidA/task1", "C", "mc4", "vidA"),
        ("vidB/task0", "B", "mc4", "vidB"),
    ]
    first = data.items[0]
    assert first.options == ("Red", "Blue", "A square", "A circle")  # the released "A. " prefixes stripped
    assert first.breakdown["audio_class"] == ("Speech", "Event") and first.breakdown["duration"] == ("<1min",)
    assert first.media.layout == "video" and first.media.visuals[0].name == "vidA.mp4"  # found under videos/
    assert data.card.source == "omnivchat:benchmarks/cards/worldsense.txt"


def test_omnibench_gold_is_the_answer_position_never_its_first_letter(releases: dict[str, Path]) -> None:
    data = get_benchmark("omnibench").load(Source(data=releases["omnibench"] / SPECS["omnibench"].annotations))
    assert [(i.id, i.gold) for i in data.items] == [("7", "C"), ("8", "B")]  # "A man is speaking." is C
    assert data.items[0].media.layout == "images+audio"
    assert data.media_root == releases["omnibench"] / "mm_data"


def test_avodyssey_refuses_an_item_with_images_and_a_video_and_counts_it(releases: dict[str, Path]) -> None:
    data = get_benchmark("avodyssey").load(Source(data=releases["avodyssey"]))
    assert [(i.id, i.media.layout, len(i.media.visuals), len(i.media.audios)) for i in data.items] == [
        ("t3_0001", "images+audio", 2, 2),
        ("t9_0002", "video+audio", 1, 1),
    ]
    assert data.items[0].media.visual_tags == ("[img1]", "[img2]")
    assert data.items[0].breakdown == {"subfield": ("Timbre",), "question_type_id": ("3",)}
    assert data.refused == {"t4_0003": "images and a video in one item: one clip cannot show both honestly"}


def test_lvomnibench_strips_prefixes_only_when_every_option_has_one(releases: dict[str, Path]) -> None:
    data = get_benchmark("lvomnibench").load(Source(data=releases["lvomnibench"]))
    assert [(i.id, i.task, i.options[0]) for i in data.items] == [
        ("video_1-1", "mc4", "Which colour?"),
        ("video_1-2", "mc3", "Red"),
        ("video_2-1", "mc3", "Circle"),
    ]
    only = get_benchmark("lvomnibench").load(Source(data=releases["lvomnibench"], tasks=("mc3",), limit=1))
    assert [i.id for i in only.items] == ["video_1-2"]


def test_a_parquet_release_is_read_with_its_media_folder(releases: dict[str, Path]) -> None:
    data = get_benchmark("videomme").load(Source(data=releases["videomme"]))
    assert [(i.id, i.cluster, i.media.visuals[0].parent.name) for i in data.items] == [
        ("001-1", "Zz9Yy8Xx7Ww", "data"),
        ("002-1", "Qq1Ww2Ee3Rr", releases["videomme"].name),
    ]


def _drop(rows: Any, key: str) -> Any:
    rows[0].pop(key)
    return rows


def _set(rows: Any, key: str, value: Any, index: int = 0) -> Any:
    rows[index][key] = value
    return rows


def _ws(mutate: Callable[[dict[str, Any]], None]) -> Callable[[], Any]:
    def make() -> Any:
        rows = worldsense_rows()
        mutate(rows)
        return rows

    return make


BAD = [
    # (benchmark, rows, what the one line says)
    (
        "worldsense",
        _ws(lambda r: r["vidA"]["task0"].pop("question")),
        "video 'vidA' task0: missing or empty 'question'",
    ),
    ("worldsense", _ws(lambda r: r["vidA"]["task1"].update(answer="E")), "video 'vidA' task1: 'answer' 'E' is not one"),
    ("worldsense", _ws(lambda r: r.update(vidC=r.pop("vidB"))), "video 'vidC' task0: video"),
    ("worldsense", _ws(lambda r: r.update(mute=r.pop("vidB"))), "video 'mute' task0: video"),
    ("dailyomni", lambda: _drop(dailyomni_rows(), "Choice"), "item 0 (id 'abcDEF12345-1'): 'Choice' must be"),
    ("dailyomni", lambda: _set(dailyomni_rows(), "Answer", "Z"), "item 0 (id 'abcDEF12345-1'): 'Answer' 'Z'"),
    ("dailyomni", lambda: _set(dailyomni_rows(), "video_id", "nowav", 2), "item 2 (id 'nowav-1'): audio"),
    ("omnibench", lambda: _set(omnibench_rows(), "answer", "He stands."), "line 1 (index 7): 'answer' 'He stands.'"),
    ("omnibench", lambda: _set(omnibench_rows(), "image_path", "none.png"), "line 1 (index 7): image"),
    ("omnibench", lambda: _set(omnibench_rows(), "audio_path", "picture.mp3", 1), "line 2 (index 8): audio"),
    ("omnibench", lambda: _set(omnibench_rows(), "audio_path", "../../x.mp3"), "'../../x.mp3' leaves the media"),
    ("avodyssey", lambda: _set(avodyssey_rows(), "audio_path", []), "row 0 (question_id 't3_0001'): no audio"),
    ("avodyssey", lambda: _set(avodyssey_rows(), "image_path", ["/etc/x.png"]), "'/etc/x.png' leaves the media"),
    ("avodyssey", lambda: _set(avodyssey_rows(), "options", ["x", "y", "z", "w"]), "lacks its letter prefix 'A'"),
    (
        "videomme",
        lambda: _set(videomme_rows(), "videoID", None),
        "row 0 (question_id '001-1'): missing or empty 'videoID'",
    ),
    ("videomme", lambda: _set(videomme_rows(), "videoID", "mute", 1), "row 1 (question_id '002-1'): video"),
    ("lvomnibench", lambda: _set(lvomnibench_rows(), "correct_option", "D", 1), "item 1 (id 'video_1-2'): "),
    ("lvomnibench", lambda: _set(lvomnibench_rows(), "video_id", "video_9", 2), "item 2 (id 'video_9-1'): video"),
]


@pytest.mark.parametrize(("name", "rows", "message"), BAD, ids=[f"{b[0]}-{n}" for n, b in enumerate(BAD)])
def test_a_bad_release_is_refused_naming_the_file_and_the_item(
    releases: dict[str, Path], name: str, rows: Callable[[], Any], message: str
) -> None:
    path = bad_release(releases, name, rows())
    with pytest.raises(McqError) as caught:
        get_benchmark(name).load(Source(data=path))
    lines = str(caught.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: ") and message in lines[0], lines


def test_missing_media_and_silent_videos_say_what_is_wrong(releases: dict[str, Path]) -> None:
    rows = worldsense_rows()
    rows["mute"] = rows.pop("vidB")
    rows["vidC"] = rows.pop("vidA")
    path = bad_release(releases, "worldsense", rows)
    with pytest.raises(McqError) as caught:
        get_benchmark("worldsense").load(Source(data=path))
    lines = str(caught.value).splitlines()
    assert len(lines) == 3  # every problem, one line each: two questions on the missing video, one on the silent
    assert all("video 'vidC'" in line and "no such file" in line for line in lines[1:])
    assert "mute.mp4 has no audio stream" in lines[0] and "would reach the model silent" in lines[0]


def test_a_smoke_run_checks_only_the_media_of_its_own_items(releases: dict[str, Path]) -> None:
    rows = worldsense_rows()
    rows["vidC"] = rows.pop("vidB")  # its video is missing, but it is not among the first two items
    path = bad_release(releases, "worldsense", rows)
    data = get_benchmark("worldsense").load(Source(data=path, limit=2))
    assert [i.id for i in data.items] == ["vidA/task0", "vidA/task1"] and len(data.media_sha256) == 1
    rows["vidA"]["task0"].pop("answer")  # a field problem anywhere is still refused
    with pytest.raises(McqError, match="video 'vidA' task0: missing or empty 'answer'"):
        get_benchmark("worldsense").load(Source(data=bad_release(releases, "worldsense", rows), limit=1))


def test_whole_file_problems_are_one_line() -> None:
    with pytest.raises(McqError, match="no such file"):
        get_benchmark("dailyomni").load(Source(data=Path("/nowhere/qa.json")))


def test_the_full_avodyssey_release_with_embedded_media_is_refused_with_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "av_odyssey_part1.parquet"
    write_parquet(path, [{"question_id": "q", "image_1": {"bytes": b"x", "path": "a.png"}, "audio_1": {"bytes": b"y"}}])
    with pytest.raises(McqError, match="AV_Odyssey_Bench_LMMs_Eval") as caught:
        get_benchmark("avodyssey").load(Source(data=path))
    assert str(caught.value).startswith(str(path))


# --- prompt cards --------------------------------------------------------------------------------------------


def test_cards_ask_for_the_letter_only_and_a_bad_card_is_named(releases: dict[str, Path], tmp_path: Path) -> None:
    data = get_benchmark("worldsense").load(Source(data=releases["worldsense"]))
    text = data.card.render(data.items[0])
    assert text.endswith("Reply with the letter of the one correct option (A, B, C or D) and nothing else.")
    assert "Question: What colour is the shape?\nOptions:\nA. Red\nB. Blue\nC. A square\nD. A circle" in text
    assert "{media}" not in text and "\n\n" not in text  # no legend for a plain video: its line is left out
    bad = tmp_path / "card.txt"
    bad.write_text("Answer {question} please.")
    with pytest.raises(McqError, match=r"needs \{options\}") as caught:
        load_card(bad, "worldsense.txt")
    assert str(caught.value).startswith(str(bad))
    bad.write_text("{question}\n{options}\n{reasoning}")
    with pytest.raises(McqError, match=r"unknown field \{reasoning\}"):
        load_card(bad, "worldsense.txt")


# --- runs ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_eval_score_show_and_export_on_the_simulated_route(
    releases: dict[str, Path], tmp_path: Path, name: str
) -> None:
    run_dir = tmp_path / "run"
    result = run_eval(name, releases[name], run_dir)
    assert result.exit_code == 0, result.output
    n = SPECS[name].n_items
    assert f"{n} done" in result.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["benchmark"] == name and manifest["protocol"] == f"{name}-run-v1"
    assert len(manifest["items"]) == n and set(manifest["media_sha256"]) == set(manifest["items"])
    card = manifest["prompt_card"]
    assert card["source"] == f"omnivchat:benchmarks/cards/{name}.txt" and len(card["sha256"]) == 64

    shown = runner.invoke(app, ["runs", "show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and f"{name} run of sim:healthy" in shown.output

    scored = runner.invoke(app, ["score", str(run_dir)], env={"COLUMNS": "250"})
    assert scored.exit_code == 0, scored.output
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["benchmark"] == name and scores["complete"]
    overall = scores["metrics"]["overall"]
    assert overall["n"] == n and overall["accuracy"] == 1.0 and overall["unparsed"] == 0
    assert overall["clusters"] == len({i["detail"]["cluster"] for i in scores["items"]})
    assert {i["detail"]["strict"] for i in scores["items"]} == {i["detail"]["gold"] for i in scores["items"]}

    out = tmp_path / "export.json"
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    records = json.loads(out.read_text())["records"]
    assert len(records) == n and all(r["reply"].startswith("The answer is ") for r in records)
    again = run_eval(name, releases[name], run_dir)
    assert again.exit_code == 0 and "0 requests sent" in again.output


def test_breakdowns_are_per_value_and_multi_label_items_count_in_each(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    assert run_eval("worldsense", releases["worldsense"], run_dir, model="sim:video-blind").exit_code == 0
    metrics = get_benchmark("worldsense").score(None, run_dir, ScoreOptions()).metrics
    assert metrics["overall"]["accuracy"] == 0.0 and metrics["overall"]["unparsed"] == 0  # wrong, and parsed
    assert metrics["audio_class: Speech"]["n"] == 2 and metrics["audio_class: Event"]["n"] == 2
    assert metrics["audio_class: Music"]["n"] == 1
    assert [k for k in metrics if k.startswith("duration")] == ["duration: <1min", "duration: 1-2min"]
    assert metrics["task_domain: Recognition"]["n"] == 2 and metrics["task_domain: Recognition"]["clusters"] == 2


def test_a_composed_clip_carries_the_released_soundtrack_to_the_model(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    """Daily-Omni's mp4 is silent here; the wav must reach the model inside the clip (the peers' chat wrappers
    drop it). The request's video is decoded back and probed."""
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="B")) as server:
        result = run_eval(
            "dailyomni", releases["dailyomni"], run_dir, "--base-url", server.base_url, "--no-key", model=MODEL
        )
        assert result.exit_code == 0, result.output
        sent = server.chat_requests
    assert len(sent) == 3
    content = sent[0].json["messages"][-1]["content"]
    video = next(p for p in content if p.get("type") == "video_url")["video_url"]["url"]
    clip = tmp_path / "sent.mp4"
    clip.write_bytes(base64.b64decode(video.split(",", 1)[1]))
    info = probe(clip)
    assert info.has_video and info.has_audio and not info.is_silent
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["delivery"]["layouts"]["video+audio"]["items"] == 3
    assert set(manifest["media_sha256"]["abcDEF12345-1"]) == {
        "abcDEF12345/abcDEF12345_video.mp4",
        "abcDEF12345/abcDEF12345_audio.wav",
    }
    assert list((run_dir / "clips").rglob("*.mp4"))  # composed in the run's work dir


def test_avodyssey_tells_the_model_when_each_tagged_part_plays(releases: dict[str, Path], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="A")) as server:
        assert (
            run_eval(
                "avodyssey", releases["avodyssey"], run_dir, "--base-url", server.base_url, "--no-key", model=MODEL
            ).exit_code
            == 0
        )
        texts = [message_text(r.json) for r in server.chat_requests]
    images = next(t for t in texts if "[img2]" in t)
    assert "In the clip: [img1] is on screen from 0.0 s to 2.0 s; [img2] is on screen from 2.0 s to 4.0 s; " in images
    assert "[audio1] plays from 0.0 s to " in images and "[audio2] plays from 2." in images
    video = next(t for t in texts if "[video1]" in t)
    assert "the video's own sound, if any, is replaced" in video
    scores = get_benchmark("avodyssey").score(None, run_dir, ScoreOptions())
    assert scores.metrics["refused (not sent, in no denominator)"]["count"] == 1
    assert scores.metrics["overall"]["n"] == 2 and scores.complete


def test_strict_parse_is_the_headline_and_unparsed_replies_stay_in_the_denominator(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    replies = {
        "What colour is the shape?": "Based on the video, the answer is A.",  # right (A)
        "What shape is on screen?": "Based on what I can hear, it is hard to say.",  # unparsed: never B
        "Which colour is shown?": "Based on the video, the answer is B.",  # right (B)
    }

    def rules(request: dict[str, Any]) -> Behaviour:
        text = message_text(request)
        return Behaviour(text=next(reply for q, reply in replies.items() if q in text))

    run_dir = tmp_path / "run"
    with LoopbackServer(rules=rules) as server:
        result = run_eval(
            "worldsense", releases["worldsense"], run_dir, "--base-url", server.base_url, "--no-key", model=MODEL
        )
    assert result.exit_code == 0, result.output
    scores = get_benchmark("worldsense").score(None, run_dir, ScoreOptions())
    by_id = {i.key: i for i in scores.items}
    assert by_id["vidA/task0"].detail["strict"] == "A" and by_id["vidA/task0"].score == 1.0
    assert by_id["vidA/task1"].detail["strict"] is None and by_id["vidA/task1"].score == 0.0
    assert by_id["vidA/task1"].reason == "unparsed (counts as wrong)"
    overall = scores.metrics["overall"]
    assert (overall["n"], overall["correct"], overall["unparsed"]) == (3, 2, 1)
    # by hand: y = (1, 0, 1) in clusters (vidA, vidA, vidB); mean 2/3; cluster residual sums -1/3 and 1/3;
    # Var = G/(G-1) * sum / n^2 = 2 * (2/9) / 9, SE = 2/9; the naive SE is sqrt(1/3)/sqrt(3) = 1/3
    assert overall["accuracy"] == pytest.approx(2 / 3)
    assert overall["se_clustered"] == pytest.approx(2 / 9) and overall["se_naive"] == pytest.approx(1 / 3)
    assert overall["clusters"] == 2
    low, high = cluster_bootstrap_interval([1.0, 0.0, 1.0], ["vidA", "vidA", "vidB"])
    assert (overall["ci_low"], overall["ci_high"]) == (low, high)


def test_a_prompt_card_file_changes_the_request_and_the_manifest(releases: dict[str, Path], tmp_path: Path) -> None:
    card = tmp_path / "card.txt"
    card.write_text("MY CARD. {question}\n{options}\nOne letter ({letters}), {{braces}} kept.\n")
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="A")) as server:
        url = server.base_url
        result = run_eval(
            "omnibench",
            releases["omnibench"],
            run_dir,
            "--prompts",
            str(card),
            "--base-url",
            url,
            "--no-key",
            model=MODEL,
        )
        assert result.exit_code == 0, result.output
        texts = [message_text(r.json) for r in server.chat_requests]
    assert texts[0] == (
        "MY CARD. What is happening?\nA. He sits.\nB. She sings.\nC. A man is speaking.\nD. They eat.\n"
        "One letter (A, B, C or D), {braces} kept."
    )
    manifest = json.loads((run_dir / "manifest.json").read_text())
    used = card.read_text().removesuffix("\n")
    assert manifest["prompt_card"] == {"source": str(card), "sha256": hashlib.sha256(used.encode()).hexdigest()}
    other = run_eval("omnibench", releases["omnibench"], run_dir, model="sim:healthy")
    assert other.exit_code != 0  # the default card (and another model) make another run: refused, not mixed


def test_ablate_uses_one_over_k_for_the_task(releases: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "grid"
    args = ["ablate", "--benchmark", "lvomnibench", "--data", str(releases["lvomnibench"]), "--task", "mc3"]
    result = runner.invoke(
        app,
        [*args, "--model", "sim:healthy", "-o", str(out), "--skip-self-check", "--no-progress"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    grid = json.loads((out / "ablation.json").read_text())
    assert grid["diagnosis"]["chance"] == pytest.approx(1 / 3)
    assert grid["diagnosis"]["means"]["both"] == 1.0 and grid["diagnosis"]["means"]["neither"] == 0.0


def test_the_harness_self_check_passes_on_a_composed_benchmark(releases: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "grid"
    args = ["ablate", "--benchmark", "omnibench", "--data", str(releases["omnibench"]), "--model", "sim:healthy"]
    result = runner.invoke(app, [*args, "-o", str(out), "--no-progress"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "self-check passed" in result.output
    assert json.loads((out / "ablation.json").read_text())["diagnosis"]["chance"] == 0.25


# --- parsing and the maths, by hand --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "strict"),
    [
        ("Based on the video, the answer is C.", "C"),
        ("Based on the video, I cannot tell.", None),  # "Based" is never B, "I" is the pronoun
        ("B", "B"),
        ("(D) A circle", "D"),
        ("A or C", None),
        ("C. A square", "C"),  # the letter and its text agree
        ("B. A square", None),  # they disagree: two options stated
    ],
)
def test_replies_parse_strictly(reply: str, strict: str | None) -> None:
    meta = {"gold": "C", "letters": "ABCD", "options": ["Blue", "Green", "A square", "A circle"], "cluster": "v"}
    result = score_reply("k", "mc4", reply, meta)
    assert result.detail["strict"] == strict and result.score == float(strict == "C")
    assert result.detail["unparsed"] is (strict is None)


def test_clustered_se_and_cluster_bootstrap_by_hand() -> None:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    clusters = ["a", "a", "b", "b", "c", "c"]
    # mean 1/2; cluster residual sums 0, +1, -1; Var = 3/2 * 2 / 36 = 1/12
    assert clustered_se(values, clusters) == pytest.approx(np.sqrt(1 / 12))
    figure = clustered_accuracy(values, clusters, unparsed=1)
    assert figure.se_naive == pytest.approx(np.sqrt(0.3 / 6)) and figure.clusters == 3 and figure.unparsed == 1
    draws = np.random.default_rng(0).integers(0, 3, size=(2000, 3))
    means = np.array([1.0, 2.0, 0.0])[draws].sum(axis=1) / 6.0
    assert (figure.ci_low, figure.ci_high) == tuple(np.quantile(means, [0.025, 0.975]))
    singletons = [str(k) for k in range(6)]  # one item per cluster: the plain bootstrap and the usual SE
    assert cluster_bootstrap_interval(values, singletons) == pytest.approx(bootstrap_interval(values))
    assert clustered_se(values, singletons) == pytest.approx(np.std(values, ddof=1) / np.sqrt(6))
    assert clustered_se([1.0, 0.0], ["a", "a"]) is None  # one cluster: its variance is unknown
    assert cluster_bootstrap_interval([1.0, 0.0], ["a", "a"]) == (None, None)  # not a zero-width interval


def test_metrics_leave_failed_items_out_and_count_unparsed_in() -> None:
    from omnivchat.benchmarks import ItemResult

    meta: dict[str, Any] = {"gold": "A", "letters": "ABCD", "options": ["w", "x", "y", "z"], "cluster": "v1"}
    meta["breakdown"] = {"Type": ["Reasoning"]}
    items = [
        score_reply("1", "mc4", "A", meta),
        score_reply("2", "mc4", "no idea", {**meta, "cluster": "v2"}),
        ItemResult(key="3", task="mc4", score=None, reason="request failed: timeout"),
    ]
    metrics = mcq_metrics(items, ("Type",))
    assert (metrics["overall"]["n"], metrics["overall"]["unparsed"]) == (2, 1)
    assert metrics["Type: Reasoning"]["accuracy"] == 0.5
    assert metrics["lenient (not the headline)"]["n"] == 2


def test_clips_cut_by_the_route_duration_limit_are_counted_beside_the_scores(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    """A long video cut to the route's duration limit was answered from its start only: the scores say so."""
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text(f"{MODEL}:\n  limits:\n    max_duration_s: 0.5\n")
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="A")) as server:
        result = run_eval(
            "worldsense",
            releases["worldsense"],
            run_dir,
            "--base-url",
            server.base_url,
            "--no-key",
            "--defaults",
            str(defaults),
            model=MODEL,
        )
    assert result.exit_code == 0, result.output
    scores = get_benchmark("worldsense").score(None, run_dir, ScoreOptions())
    cut = scores.metrics["clips cut to the route's duration limit"]
    assert cut["count"] == len(scores.items) > 0
    assert all(" s)" in entry for entry in cut["items"])


def test_judge_on_a_benchmark_without_judges_says_so_and_claims_no_verdicts(
    releases: dict[str, Path], tmp_path: Path
) -> None:
    """`judge` on a multiple-choice run sends and writes nothing: it once still printed "wrote verdicts under"."""
    run_dir = tmp_path / "run"
    assert run_eval("dailyomni", releases["dailyomni"], run_dir).exit_code == 0
    judges = tmp_path / "judges.toml"
    judges.write_text('[judges.a]\nmodel = "judge-a"\nbase_url = "http://127.0.0.1:9/v1"\n[panels]\ndefault = ["a"]\n')
    for extra in ([], ["--dry-run"]):
        result = runner.invoke(app, ["judge", str(run_dir), "--judges", str(judges), *extra], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "dailyomni needs no judges" in result.output and "wrote verdicts" not in result.output


def test_resuming_on_another_server_is_refused_not_silently_re_sent(releases: dict[str, Path], tmp_path: Path) -> None:
    """The run's identity names its endpoint and route settings (as the native bench's does): another host would
    make every request key new and re-send, and re-pay, every item."""
    run_dir = tmp_path / "run"
    with LoopbackServer(Behaviour(text="A")) as server:
        first = run_eval(
            "dailyomni", releases["dailyomni"], run_dir, "--base-url", server.base_url, "--no-key", model=MODEL
        )
        assert first.exit_code == 0, first.output
        sent = len(server.chat_requests)
        other = server.base_url.replace("127.0.0.1", "localhost")
        again = run_eval("dailyomni", releases["dailyomni"], run_dir, "--base-url", other, "--no-key", model=MODEL)
        assert again.exit_code != 0
        assert "endpoint" in " ".join(again.output.split())
        assert len(server.chat_requests) == sent


@pytest.mark.parametrize(
    ("video_id", "message"),
    [
        ("../abcDEF12345", "video_id '../abcDEF12345/../abcDEF12345_video.mp4' leaves the media folder"),
        ("/etc", "video_id '/etc//etc_video.mp4' leaves the media folder"),
        ("sub/abcDEF12345", "no such file"),
    ],
)
def test_a_daily_omni_video_id_with_a_slash_is_the_item_s_problem_not_a_crash(
    releases: dict[str, Path], video_id: str, message: str
) -> None:
    """The audio path was made with Path.with_name, which raised a bare ValueError for an id holding a '/'."""
    path = bad_release(releases, "dailyomni", _set(dailyomni_rows(), "video_id", video_id))
    with pytest.raises(McqError) as caught:
        get_benchmark("dailyomni").load(Source(data=path))
    first = str(caught.value).splitlines()[0]
    assert first.startswith(f"{path}: item 0 (id '{video_id}-1')") or video_id in first, first
    assert message in str(caught.value)


@pytest.mark.parametrize("name", NAMES)
def test_an_annotations_file_nested_too_deeply_is_one_clear_error(
    releases: dict[str, Path], name: str, tmp_path: Path
) -> None:
    """JSON nested past Python's recursion limit raised a bare RecursionError out of every reader."""
    for suffix in (".json", ".jsonl"):
        path = releases[name] / f"deep{suffix}"
        path.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
        with pytest.raises(McqError, match=f"{path}.*not valid JSON"):
            get_benchmark(name).load(Source(data=path))


def test_the_report_shows_the_cost_of_a_public_benchmark_run(releases: dict[str, Path], tmp_path: Path) -> None:
    from omnivchat.report import build_report

    defaults = tmp_path / "prices.yaml"
    defaults.write_text(f"{MODEL}:\n  price:\n    input_per_mtok: 100\n    output_per_mtok: 200\n")
    run_dir = tmp_path / "run"
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    with LoopbackServer(Behaviour(text="A", usage=usage)) as server:
        args = ("--base-url", server.base_url, "--no-key", "--defaults", str(defaults))
        result = run_eval("worldsense", releases["worldsense"], run_dir, *args, model=MODEL)
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["score", str(run_dir)]).exit_code == 0
    html = build_report([run_dir], tmp_path / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="costs">') : html.index("</section>", html.index('<section id="costs">'))]
    n = len(get_benchmark("worldsense").score(None, run_dir, ScoreOptions()).items)
    assert f"${0.2 * n:.4f}" in section and "store.sqlite" in section


def test_eval_lists_the_composed_clips_among_what_it_wrote(releases: dict[str, Path], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = run_eval("dailyomni", releases["dailyomni"], run_dir)
    assert result.exit_code == 0, result.output
    wrote = " ".join(result.output.split())
    assert f"{run_dir / 'store.sqlite'}" in wrote and f"{run_dir / 'clips'}/" in wrote
    assert (run_dir / "clips").is_dir()
