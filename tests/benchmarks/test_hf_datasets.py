"""hf: local Hugging Face datasets (save_to_disk folders, a DatasetDict, a parquet snapshot, a hub cache tree, the
datasets cache, embedded media) written here with pyarrow around real rendered clips, run through eval, score,
export and ablate on the simulated route; bad input (a missing column, a corrupt parquet file, a missing split, a
missing media path, no pyarrow) is one clear error naming the file and row."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_factory import RED_SQUARE_SCENE
from typer.testing import CliRunner

from omnivchat.benchmarks import Benchmark, Source, get_benchmark
from omnivchat.benchmarks import _tables as tables
from omnivchat.benchmarks.hf import HF, HfError, load_hf, parse_columns
from omnivchat.cli import app

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

runner = CliRunner()
WIDE = {"COLUMNS": "200"}

SCENE = RED_SQUARE_SCENE
MAPPING = "question=Question,answer=Answer,video=video_path,options=Choice,category=Type,qid=id"
MEDIA = pa.struct([("bytes", pa.binary()), ("path", pa.string())])  # the datasets library's Video / Audio storage


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real rendered clip with speech (red.mp4) and its audio track alone (voice.wav)."""
    from omnivchat.media import export_audio
    from omnivchat.synth import render_clip

    root = tmp_path_factory.mktemp("hf-clips")
    render_clip(SCENE, root / "red.mp4")
    shutil.copyfile(export_audio(root / "red.mp4", fmt="wav"), root / "voice.wav")
    return root


def columns(n: int = 4, first: int = 0, video: str = "videos/red.mp4") -> dict[str, list[Any]]:
    """Rows as a benchmark on the hub writes them: options with letter prefixes, answers as letters or text."""
    ids = [f"q{first + k}" for k in range(n)]
    return {
        "id": ids,
        "Question": ["Which colour is the square?"] * n,
        "Choice": [["A. red", "B. blue", "C. green", "D. yellow"]] * n,
        "Answer": ["A" if k % 2 else "A. red" for k in range(n)],
        "Type": ["cross-modal" if k % 2 else "video-only" for k in range(n)],
        "requires": [["video", "audio"]] * n,
        "video_path": [video] * n,
    }


def put_clip(dataset: Path, clips: Path, where: str = "videos/red.mp4") -> None:
    (dataset / where).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(clips / "red.mp4", dataset / where)


def write_stream(path: Path, data: dict[str, list[Any]], schema: Any = None) -> None:
    """An Arrow IPC stream file, as the datasets library writes its .arrow files (two record batches)."""
    table = pa.table(data, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=max(1, table.num_rows // 2)):
            writer.write_batch(batch)


def save_to_disk(folder: Path, data: dict[str, list[Any]], split: str | None = None) -> None:
    """A folder as ``Dataset.save_to_disk`` leaves it: data-*.arrow (stream), state.json, dataset_info.json."""
    write_stream(folder / "data-00000-of-00001.arrow", data)
    state = {"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_fingerprint": "f00d", "_split": split}
    (folder / "state.json").write_text(json.dumps(state))
    (folder / "dataset_info.json").write_text(json.dumps({"features": {}}))


def save_dataset_dict(folder: Path, splits: dict[str, dict[str, list[Any]]]) -> None:
    for name, data in splits.items():
        save_to_disk(folder / name, data, split=name)
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": list(splits)}))


def write_parquet(path: Path, data: dict[str, list[Any]], schema: Any = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(data, schema=schema), str(path))


def eval_args(data: Path, run_dir: Path, *extra: str, model: str = "sim:healthy") -> list[str]:
    return ["eval", "--benchmark", "hf", "--data", str(data), "--model", model, "-o", str(run_dir), *extra]


def listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.lstat().st_mtime_ns for p in folder.rglob("*")}


def problem(source: Source) -> str:
    with pytest.raises(Exception) as caught:
        HF.load(source)
    assert isinstance(caught.value, HfError | tables.TablesError), caught.value
    return str(caught.value)


# --- the benchmark through the commands ----------------------------------------------------------------------


def test_hf_is_registered_and_says_it_downloads_nothing() -> None:
    assert get_benchmark("hf") is HF and isinstance(HF, Benchmark)
    assert HF.chance("mc4") == 0.25 and HF.chance("open") == 0.0
    assert "never downloaded" in HF.title
    shown = runner.invoke(app, ["eval", "--help"], env=WIDE)
    text = " ".join(shown.output.split())
    assert "--columns" in text and "--split" in text and "nothing is downloaded" in text
    assert "--columns" in runner.invoke(app, ["ablate", "--help"], env=WIDE).output


def test_a_dataset_dict_runs_through_eval_score_show_and_export(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    save_dataset_dict(data, {"train": columns(2, first=100), "test": columns(4)})
    put_clip(data, clips)
    before = listing(data)
    run_dir = tmp_path / "run"
    args = eval_args(data, run_dir, "--split", "test", "--columns", MAPPING, "--no-progress")
    result = runner.invoke(app, args, env=WIDE)
    assert result.exit_code == 0, result.output
    assert "4 done" in result.output

    manifest = json.loads((run_dir / "manifest.json").read_text())
    arrow = data / "test" / "data-00000-of-00001.arrow"
    assert manifest["protocol"] == "hf-run-v1" and manifest["benchmark"] == "hf"
    assert manifest["split"] == "test" and manifest["layout"] == "DatasetDict.save_to_disk"
    assert manifest["files"] == {"test/data-00000-of-00001.arrow": hashlib.sha256(arrow.read_bytes()).hexdigest()}
    assert manifest["data"] == str(data.resolve()) and manifest["items"] == {f"q{k}": "mc4" for k in range(4)}
    assert "question=Question" in manifest["columns"] and "requires=requires" in manifest["columns"]

    shown = runner.invoke(app, ["runs", "show", str(run_dir)], env=WIDE)
    assert shown.exit_code == 0 and "hf run of sim:healthy" in shown.output
    scored = runner.invoke(app, ["score", str(run_dir)], env=WIDE)
    assert scored.exit_code == 0, scored.output
    scores = json.loads((run_dir / "scores.json").read_text())
    assert scores["benchmark"] == "hf" and scores["complete"]
    assert scores["metrics"]["overall"]["n"] == 4 and scores["metrics"]["overall"]["accuracy"] == 1.0
    assert scores["metrics"]["category video-only"]["n"] == 2
    # "A. red" lost its prefix (the prompt adds letters) and the answer "A. red" became the letter A
    assert {i["detail"]["gold"] for i in scores["items"]} == {"A"}

    out = tmp_path / "export.json"
    exported = runner.invoke(app, ["export", str(run_dir), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert [r["reply"] for r in json.loads(out.read_text())["records"]] == ["The answer is A."] * 4

    again = runner.invoke(app, args, env=WIDE)
    assert again.exit_code == 0 and "0 requests sent" in again.output
    other = runner.invoke(app, eval_args(data, run_dir, "--split", "train", "--columns", MAPPING, "--no-progress"))
    assert other.exit_code == 2 and "holds a different run" in other.output  # another split is another run
    assert listing(data) == before  # nothing written into the dataset


def test_several_splits_need_split_and_a_missing_split_lists_them(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    save_dataset_dict(data, {"train": columns(2, first=100), "test": columns(2)})
    put_clip(data, clips)
    assert (
        problem(Source(data=data, options={"columns": MAPPING}))
        == f"{data}: 2 splits (train, test): choose one with --split"
    )
    assert problem(Source(data=data, options={"columns": MAPPING, "split": "validation"})) == (
        f"{data}: no split 'validation' (splits: train, test)"
    )
    result = runner.invoke(app, eval_args(data, tmp_path / "run", "--columns", MAPPING))
    assert result.exit_code == 2 and "choose one with --split" in result.output and "Traceback" not in result.output


def test_a_saved_dataset_with_constants_and_row_numbers_as_qids(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "saved"
    rows = columns(3)
    del rows["requires"], rows["id"], rows["Type"]
    save_to_disk(data, rows, split="test")
    put_clip(data, clips)
    mapping = (
        "question=Question,answer=Answer,video=video_path,options=Choice,requires:=video+audio,category:=audio-only"
    )
    loaded = HF.load(Source(data=data, options={"columns": mapping, "split": "test"}))
    assert [(i.qid, i.requires, i.category, i.gold) for i in loaded.items] == [
        (str(k), ("video", "audio"), "audio-only", "A") for k in range(3)
    ]
    assert loaded.layout == "Dataset.save_to_disk" and loaded.split == "test"
    assert {i.options for i in loaded.items} == {("red", "blue", "green", "yellow")}  # "A. " prefixes taken off
    assert loaded.columns.endswith(",category:=audio-only,requires:=video+audio")
    no_requires = problem(Source(data=data, options={"columns": "question=Question,answer=Answer,video=video_path"}))
    assert "map requires=COLUMN (or requires:=video+audio for every row) with --columns" in no_requires
    assert "the table's columns: Question, Choice, Answer, video_path" in no_requires
    unnamed = tmp_path / "unnamed"
    save_to_disk(unnamed, rows, split=None)
    put_clip(unnamed, clips)
    assert "leave out --split" in problem(Source(data=unnamed, options={"columns": mapping, "split": "test"}))
    assert len(HF.load(Source(data=unnamed, options={"columns": mapping})).items) == 3


def test_a_parquet_snapshot_names_its_splits_as_the_hub_does(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "snapshot"
    write_parquet(data / "data" / "test-00000-of-00002.parquet", columns(2))
    write_parquet(data / "data" / "test-00001-of-00002.parquet", columns(2, first=2))
    write_parquet(data / "data" / "train-00000-of-00001.parquet", columns(1, first=50))
    put_clip(data, clips)
    found = tables.find_dataset(data)
    assert list(found.splits) == ["test", "train"] and len(found.splits["test"]) == 2
    loaded = load_hf(Source(data=data, limit=3, options={"columns": MAPPING, "split": "test"}))
    assert [i.qid for i in loaded.items] == ["q0", "q1", "q2"]  # the shards in order, then --limit
    assert sorted(loaded.files) == ["data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet"]

    configs = tmp_path / "configs"  # <config>/<split>/0000.parquet (the hub's parquet conversion) and names
    write_parquet(configs / "mini" / "test" / "0000.parquet", columns(1))
    write_parquet(configs / "full" / "test-00000-of-00001.parquet", columns(2))
    write_parquet(configs / "full" / "dev.parquet", columns(1))
    assert list(tables.find_dataset(configs).splits) == ["full/test", "full/validation", "mini/test"]

    carded = tmp_path / "carded"  # README.md's configs, read first, as the hub does
    write_parquet(carded / "av_part1.parquet", columns(1))
    write_parquet(carded / "av_part2.parquet", columns(1, first=1))
    card = (
        "---\nlicense: apache-2.0\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n"
        "    path: av_part*.parquet\n---\n# Bench\n"
    )
    (carded / "README.md").write_text(card)
    put_clip(carded, clips)
    assert [i.qid for i in HF.load(Source(data=carded, options={"columns": MAPPING, "split": "test"})).items] == [
        "q0",
        "q1",
    ]


def test_a_hub_cache_tree_reads_the_snapshot_refs_main_names(clips: Path, tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "datasets--someone--avbench"
    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = repo / "snapshots" / revision
    blobs = repo / "blobs"
    blobs.mkdir(parents=True)
    write_parquet(tmp_path / "t.parquet", columns(2))
    for source, name in (
        (tmp_path / "t.parquet", "data/test-00000-of-00001.parquet"),
        (clips / "red.mp4", "videos/red.mp4"),
    ):
        blob = blobs / hashlib.sha256(source.read_bytes()).hexdigest()
        shutil.copyfile(source, blob)
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).symlink_to(os.path.relpath(blob, (snapshot / name).parent))
    (repo / "snapshots" / "old").mkdir()  # another revision, not the one refs/main names
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)

    run_dir = tmp_path / "run"
    result = runner.invoke(app, eval_args(repo, run_dir, "--columns", MAPPING, "--no-progress"), env=WIDE)
    assert result.exit_code == 0, result.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["revision"] == revision and manifest["layout"] == "hub cache"
    assert list(manifest["files"]) == ["data/test-00000-of-00001.parquet"]
    assert runner.invoke(app, ["score", str(run_dir)]).exit_code == 0

    assert "give one of datasets--someone--avbench" in problem(
        Source(data=tmp_path / "hub", options={"columns": MAPPING})
    )
    (repo / "refs" / "main").unlink()
    assert "no refs/main and 2 snapshots (0123456789abcdef0123456789abcdef01234567, old)" in problem(
        Source(data=repo, options={"columns": MAPPING})
    )


def test_the_datasets_cache_names_splits_from_its_info(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "datasets" / "someone___avbench" / "default" / "0.0.0" / "abc123"
    write_stream(data / "av-bench-test.arrow", columns(2))
    write_stream(data / "av-bench-validation-00000-of-00002.arrow", columns(1, first=10))
    write_stream(data / "av-bench-validation-00001-of-00002.arrow", columns(1, first=11))
    (data / "cache-5d1f.arrow").write_bytes(b"a .map() cache, not a split")
    (data / "dataset_info.json").write_text(json.dumps({"splits": {"test": {}, "validation": {}}}))
    put_clip(data, clips)
    found = tables.find_dataset(data)
    assert found.layout == "datasets cache" and list(found.splits) == ["test", "validation"]
    loaded = HF.load(Source(data=data, options={"columns": MAPPING, "split": "validation"}))
    assert [i.qid for i in loaded.items] == ["q10", "q11"]
    write_stream(data.parent / "def456" / "av-bench-test.arrow", columns(1))  # another build of the same dataset
    assert f"arrow files in 2 folders ({data}, {data.parent / 'def456'}): give one of them" in problem(
        Source(data=tmp_path / "datasets", options={"columns": MAPPING})
    )


def test_embedded_media_go_to_the_cache_never_to_the_dataset(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "embedded"
    video = (clips / "red.mp4").read_bytes()
    voice = (clips / "voice.wav").read_bytes()
    rows: dict[str, list[Any]] = {
        "qid": ["v1", "v2", "a1"],
        "question": ["What colour is the square?", "Which colour?", "What did the speaker ask about?"],
        "answer": ["red", "red", "the colour"],
        "requires": ["video+audio", "video", "audio"],
        "video": [{"bytes": video, "path": "red.mp4"}, {"bytes": video, "path": None}, None],
        "audio": [None, None, {"bytes": voice, "path": "voice.wav"}],
    }
    schema = pa.schema(
        [(k, pa.string()) for k in ("qid", "question", "answer", "requires")] + [("video", MEDIA), ("audio", MEDIA)]
    )
    write_parquet(data / "data" / "test-00000-of-00001.parquet", rows, schema)
    before = listing(data)
    run_dir = tmp_path / "run"
    result = runner.invoke(app, eval_args(data, run_dir, "--no-progress"), env=WIDE)
    assert result.exit_code == 0, result.output
    assert "3 done" in result.output
    loaded = HF.load(Source(data=data))
    cache = tables.cache_dir() / tables.EMBEDDED_DIR
    digest = hashlib.sha256(video).hexdigest()
    assert (
        [i.media for i in loaded.items]
        == [
            cache / digest[:2] / f"{digest}.mp4",
            cache / digest[:2] / f"{digest}.mp4",  # the same bytes: one file
            cache / hashlib.sha256(voice).hexdigest()[:2] / f"{hashlib.sha256(voice).hexdigest()}.wav",
        ]
    )
    assert [i.media_kind for i in loaded.items] == ["video", "video", "audio"]
    assert loaded.items[0].media.read_bytes() == video
    assert listing(data) == before
    scored = runner.invoke(app, ["score", str(run_dir)], env=WIDE)
    assert scored.exit_code == 0 and "accuracy 1.000" in scored.output

    inside = tmp_path / "inside"  # a media cache pointed into the dataset is refused
    write_parquet(inside / "data" / "test-00000-of-00001.parquet", rows, schema)
    os.environ["OMNIVCHAT_CACHE_DIR"], old = str(inside / "cache"), os.environ["OMNIVCHAT_CACHE_DIR"]
    try:
        assert "the media cache is inside the dataset" in problem(Source(data=inside))
    finally:
        os.environ["OMNIVCHAT_CACHE_DIR"] = old
    assert not (inside / "cache").exists()


def test_ablate_takes_columns_and_split(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    save_dataset_dict(data, {"train": columns(1, first=100), "test": columns(6)})
    put_clip(data, clips)
    out = tmp_path / "grid"
    args = ["ablate", "--benchmark", "hf", "--data", str(data), "--columns", MAPPING, "--split", "test"]
    result = runner.invoke(
        app, [*args, "--model", "sim:healthy", "-o", str(out), "--skip-self-check", "--no-progress"], env=WIDE
    )
    assert result.exit_code == 0, result.output
    grid = json.loads((out / "ablation.json").read_text())
    assert grid["diagnosis"]["chance"] == 0.25 and grid["bench"]["n_instances"] == 6
    assert json.loads((out / "both" / "manifest.json").read_text())["split"] == "test"


@pytest.mark.parametrize(
    ("options", "answer", "expected"),
    [
        (["A. red", "B. blue"], "B", (["red", "blue"], "B")),
        (["A. red", "B. blue"], "B. blue", (["red", "blue"], "B")),  # a prefixed option's whole text
        (["(A) red", "(B) blue"], "(B)", (["red", "blue"], "B")),
        ("['A) red', 'B) blue']", "blue", (["red", "blue"], "blue")),  # a list written as text
        (["red", "blue"], "B.", (["red", "blue"], "B")),
        (["A. red", "C. blue"], "A", (["A. red", "C. blue"], "A")),  # letters out of order: left as they are
        (["A man walks", "B-roll"], "A man walks", (["A man walks", "B-roll"], "A man walks")),
        ([1, 2, 3], "2", (["1", "2", "3"], "2")),
    ],
)
def test_options_lose_their_letter_prefixes(options: Any, answer: str, expected: tuple[list[str], str]) -> None:
    from omnivchat.benchmarks.hf import _options

    assert _options(options, answer) == expected


# --- bad input -----------------------------------------------------------------------------------------------


def test_a_missing_column_lists_the_tables_columns(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    write_parquet(data / "data" / "test-00000-of-00001.parquet", columns(2))
    put_clip(data, clips)
    text = problem(Source(data=data, options={"columns": "question=Questoin,answer=Answer,video=video_path"}))
    table = data / "data" / "test-00000-of-00001.parquet"
    assert text == (
        f"{table}: no column for question=Questoin; the table's columns: id, Question, Choice, Answer, Type, "
        "requires, video_path"
    )
    assert "map question=COLUMN, answer=COLUMN" in problem(Source(data=data, options={"columns": "video=video_path"}))
    result = runner.invoke(app, eval_args(data, tmp_path / "run", "--columns", "question=Questoin"), env=WIDE)
    assert result.exit_code == 2 and "no column for question=Questoin" in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("question", "'question' is not FIELD=COLUMN or FIELD:=VALUE"),
        ("questoin=Q", "unknown field 'questoin' (fields: qid, question, answer, options"),
        ("answer:=yes", "answer:=yes: only requires and category take a constant"),
        ("requires:=smell", "requires:=smell: give video, audio or video+audio"),
        ("question=A,question=B", "'question' is given twice"),
    ],
)
def test_a_bad_column_mapping_is_named(text: str, message: str) -> None:
    with pytest.raises(HfError, match="--columns") as caught:
        parse_columns(text)
    assert message in str(caught.value)


def test_a_corrupt_parquet_file_is_named(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    write_parquet(data / "data" / "test-00000-of-00002.parquet", columns(2))
    write_parquet(data / "data" / "test-00001-of-00002.parquet", columns(2, first=2))
    put_clip(data, clips)
    broken = data / "data" / "test-00001-of-00002.parquet"
    broken.write_bytes(broken.read_bytes()[: len(broken.read_bytes()) // 2])
    text = problem(Source(data=data, options={"columns": MAPPING}))
    assert text.startswith(f"{broken}: cannot read the parquet file (") and len(text.splitlines()) == 1
    junk = tmp_path / "junk"
    write_stream(junk / "x-test.arrow", columns(1))
    (junk / "x-test.arrow").write_bytes(b"not arrow at all")
    assert problem(Source(data=junk, options={"columns": MAPPING})).startswith(
        f"{junk / 'x-test.arrow'}: cannot read the arrow file"
    )


def test_a_missing_media_path_is_named_by_file_and_row(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    rows = columns(3)
    rows["video_path"][1] = "videos/gone.mp4"
    rows["video_path"][2] = None  # an empty cell: no media at all
    write_parquet(data / "data" / "test-00000-of-00001.parquet", rows)
    put_clip(data, clips)
    table = data / "data" / "test-00000-of-00001.parquet"
    lines = problem(Source(data=data, options={"columns": MAPPING})).splitlines()
    assert lines[0] == f"{table}: row 1 (qid 'q1'): video 'videos/gone.mp4' does not exist ({data / 'videos/gone.mp4'})"
    assert lines[1].startswith(f"{table}: row 2 (qid 'q2'): give exactly one of 'video'")
    assert lines[2].startswith("(columns read: qid=id,question=Question,answer=Answer,options=Choice,category=Type,")
    assert lines[2].endswith(f"media paths relative to {data})") and len(lines) == 3
    # a smoke run reads only its first rows; with --tasks every row is read and validated
    assert [i.qid for i in HF.load(Source(data=data, limit=1, options={"columns": MAPPING})).items] == ["q0"]
    assert "row 1 (qid 'q1')" in problem(Source(data=data, limit=1, tasks=("mc4",), options={"columns": MAPPING}))
    media = tmp_path / "media"  # --media: paths are relative to it instead
    put_clip(media, clips, "videos/gone.mp4")
    rows["video_path"][2] = "videos/red.mp4"
    write_parquet(data / "data" / "test-00000-of-00001.parquet", rows)
    put_clip(media, clips)
    assert len(HF.load(Source(data=data, media=media, options={"columns": MAPPING})).items) == 3


def test_duplicate_qids_across_shards_name_both_files(clips: Path, tmp_path: Path) -> None:
    data = tmp_path / "bench"
    write_parquet(data / "data" / "test-00000-of-00002.parquet", columns(1))
    write_parquet(data / "data" / "test-00001-of-00002.parquet", columns(1))
    put_clip(data, clips)
    first, second = (data / "data" / f"test-0000{k}-of-00002.parquet" for k in (0, 1))
    assert problem(Source(data=data, options={"columns": MAPPING})).splitlines()[0] == (
        f"{second}: row 0 (qid 'q0'): duplicate qid (also {first}: row 0)"
    )


def test_without_pyarrow_the_error_says_what_to_install(
    clips: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "bench"
    write_parquet(data / "data" / "test-00000-of-00001.parquet", columns(1))
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now raises ImportError
    text = problem(Source(data=data, options={"columns": MAPPING}))
    assert text == (
        "reading a Hugging Face dataset (parquet, arrow) needs pyarrow, which is not installed: "
        "pip install 'omnivchat[hf]' (in a clone of omnivchat: uv sync --extra hf)"
    )
    result = runner.invoke(app, eval_args(data, tmp_path / "run", "--columns", MAPPING), env=WIDE)
    assert result.exit_code == 2 and "pip install 'omnivchat[hf]'" in result.output


def test_no_dataset_here_says_what_was_expected(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert "no dataset here (expected dataset_dict.json or state.json" in problem(Source(data=tmp_path / "empty"))
    assert "no such dataset folder or file" in problem(Source(data=tmp_path / "nope"))
    (tmp_path / "notes.json").write_text("[]")
    assert "not a parquet or arrow file" in problem(Source(data=tmp_path / "notes.json"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "state.json").write_text("{not json")
    assert problem(Source(data=broken)).startswith(f"{broken / 'state.json'}: not valid JSON")


def test_the_datasets_library_save_to_disk_is_read(clips: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    data = tmp_path / "saved"
    test_rows = columns(3)
    del test_rows["Choice"]  # open answers this time, and one embedded sound through the Audio feature
    test_rows["Answer"] = ["red", "red", "the colour"]
    test = datasets.Dataset.from_dict(test_rows)
    voice = (clips / "voice.wav").read_bytes()
    test = test.add_column("sound", [None, None, {"bytes": voice, "path": "voice.wav"}])
    test = test.cast_column("sound", datasets.Audio(decode=False))
    train = datasets.Dataset.from_dict(columns(1, first=100))
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(data))
    put_clip(data, clips)
    mapping = "question=Question,answer=Answer,video=video_path,audio=sound,category=Type,qid=id"
    # a row with both a clip and a sound is refused (byo takes one); keep the sound row audio-only
    loaded_problem = problem(Source(data=data, options={"columns": mapping, "split": "test"}))
    assert "row 2 (qid 'q2'): give exactly one of 'video'" in loaded_problem
    test = test.map(lambda row: {"video_path": None if row["id"] == "q2" else row["video_path"]})
    test = test.map(lambda row: {"requires": ["audio"] if row["id"] == "q2" else row["requires"]})
    fresh = tmp_path / "fresh"
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(fresh))
    put_clip(fresh, clips)
    loaded = HF.load(Source(data=fresh, options={"columns": mapping, "split": "test"}))
    assert [(i.qid, i.task, i.media_kind) for i in loaded.items] == [
        ("q0", "open", "video"),
        ("q1", "open", "video"),
        ("q2", "open", "audio"),
    ]
    assert loaded.items[2].media.read_bytes() == voice


@pytest.mark.parametrize("pattern", ["/etc/*.parquet", "../outside/*.parquet", "sub/../../outside/*.parquet"])
def test_a_readme_config_pattern_outside_the_dataset_is_refused(tmp_path: Path, pattern: str) -> None:
    """A card's data_files pattern read tables outside the dataset folder ('..'), or crashed (an absolute pattern:
    NotImplementedError out of Path.glob)."""
    write_parquet(tmp_path / "outside" / "t.parquet", columns(1))
    carded = tmp_path / "carded"
    write_parquet(carded / "sub" / "t.parquet", columns(1))
    card = f"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: test\n    path: {pattern}\n---\n"
    (carded / "README.md").write_text(card)
    with pytest.raises(tables.TablesError, match="leaves the dataset folder") as caught:
        tables.find_dataset(carded)
    assert str(carded / "README.md") in str(caught.value)
