"""`omnivchat data get` and `eval --data hf://`: real huggingface_hub downloads from a loopback stand-in of the hub
(omnivchat.testing.HubServer), repositories built at test time in the shape of the real releases (field names and
layouts as in shared/realdata; our own content; clips made with ffmpeg), laid out, hash-checked and loaded by the
readers; gated, corrupt, cut, offline, short of disk and foreign-folder cases refused or handled as documented."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks.download import MARKER, RELEASES, DownloadError, get, parse_hf
from omnivchat.cli import app
from omnivchat.media import ffmpeg_exe
from omnivchat.testing import HubRepo, HubServer

needs_hf = pytest.mark.extra("hf", "huggingface_hub")

runner = CliRunner()


# --- media and repositories in the releases' shapes ---------------------------------------------------------------


def ffmpeg(*args: str) -> None:
    subprocess.run([ffmpeg_exe(), "-nostdin", "-v", "error", "-y", *args], check=True)


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("hub-media")
    ffmpeg(
        "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000",
        "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", str(root / "clip.mp4"),
    )  # fmt: skip
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=330:sample_rate=16000", "-t", "1", str(root / "voice.wav"))
    return {"mp4": (root / "clip.mp4").read_bytes(), "wav": (root / "voice.wav").read_bytes()}


def tar_of(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_of(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def dailyomni_repo(m: dict[str, bytes]) -> HubRepo:
    """qa.json (the real file's keys) and Videos.tar with Videos/<id>/<id>_video.mp4 and _audio.wav."""
    ids = ("Ec_lQgZ9wlg", "qF_bybWcUoE")
    rows = [
        {
            "Question": f"What happens first in clip {n}?",
            "Choice": ["A. A tone", "B. A word", "C. Silence", "D. Music"],
            "Answer": "A",
            "video_id": vid,
            "Type": "Event Sequence",
            "content_parent_category": "Lifestyle",
            "content_fine_category": "None",
            "video_category": "Howto & Style",
            "video_duration": "30s",
        }
        for n, vid in enumerate(ids)
    ]
    videos = {f"Videos/{v}/{v}_video.mp4": m["mp4"] for v in ids} | {f"Videos/{v}/{v}_audio.wav": m["wav"] for v in ids}
    return HubRepo(
        {
            "qa.json": json.dumps(rows, indent=1).encode(),
            "Videos.tar": tar_of(videos),
            "README.md": b"# Daily-Omni\n",
            "example_videos/x/x_video.mp4": m["mp4"],  # not needed by the reader: never fetched
        },
        commit="1" * 40,
    )


def worldsense_repo(m: dict[str, bytes]) -> HubRepo:
    """worldsense_qa.json keyed by video id (task0.. with candidates "A. ...") and worldsense_videos_N.zip."""
    qa = {
        vid: {
            "video_id": vid,
            "video_duration": "60s",
            "duration": "<1min",
            "domain": "Music",
            "sub_category": "Covers",
            "audio_class": ["Music"],
            "video_caption": "A test pattern with a tone.",
            "task0": {
                "task_domain": "Recognition",
                "task_type": "Audio Recognition",
                "question": "What sound plays?",
                "answer": "B",
                "candidates": ["A. Speech.", "B. A tone.", "C. Drums.", "D. Nothing."],
            },
        }
        for vid in ("dvOkwKAs", "UYkFSXsh")
    }
    return HubRepo(
        {
            "worldsense_qa.json": json.dumps(qa).encode(),
            "worldsense_videos_0.zip": zip_of({"videos/dvOkwKAs.mp4": m["mp4"]}),
            "worldsense_videos_1.zip": zip_of({"videos/UYkFSXsh.mp4": m["mp4"]}),
            "worldsense_subtitles.zip": zip_of({"dvOkwKAs.srt": b"1\n00:00:00,000 --> 00:00:01,000\nhi\n"}),
        },
        commit="2" * 40,
    )


def lvomnibench_repo(m: dict[str, bytes]) -> HubRepo:
    """data.json (question_id an integer, options with letters) and videos/<video_id>.mp4."""
    rows = [
        {
            "question_id": n,
            "video_id": f"video_{n}",
            "question": "What is heard?",
            "options": ["A. A tone", "B. Speech", "C. Music", "D. Silence"],
            "correct_option": "A",
            "question_type": "Sound Inference",
            "audio_type": "Sound",
            "difficulty": "Low",
            "video_category": "Record",
        }
        for n in (1, 2)
    ]
    return HubRepo(
        {"data.json": json.dumps(rows).encode(), **{f"videos/video_{n}.mp4": m["mp4"] for n in (1, 2)}},
        commit="3" * 40,
    )


def videomme_repo(m: dict[str, bytes]) -> HubRepo:
    """videomme/test-00000-of-00001.parquet (the hub's row layout) and videos_chunked_NN.zip of <videoID>.mp4."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {
            "video_id": f"00{n}",
            "duration": "short",
            "domain": "Knowledge",
            "sub_category": "Humanity & History",
            "url": f"https://www.youtube.com/watch?v=vid{n}",
            "videoID": f"vid{n}",
            "question_id": f"00{n}-1",
            "task_type": "Counting Problem",
            "question": "How many tones are heard?",
            "options": ["A. One.", "B. Two.", "C. Three.", "D. None."],
            "answer": "A",
        }
        for n in (1, 2)
    ]
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return HubRepo(
        {
            "videomme/test-00000-of-00001.parquet": buf.getvalue(),
            "videos_chunked_01.zip": zip_of({"data/vid1.mp4": m["mp4"], "data/vid2.mp4": m["mp4"]}),
            "subtitle.zip": zip_of({"vid1.srt": b"1\n00:00:00,000 --> 00:00:01,000\nhi\n"}),
        },
        commit="5" * 40,
    )


def quiz_repo(m: dict[str, bytes]) -> HubRepo:
    """A dataset of one's own on the hub, in the parquet layout the hub writes (data/test-*.parquet) with its clip."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "id": ["q0", "q1"],
            "Question": ["What is heard?"] * 2,
            "Choice": [["A. A tone", "B. Speech", "C. Music", "D. Silence"]] * 2,
            "Answer": ["A", "A"],
            "video_path": ["clips/tone.mp4"] * 2,
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return HubRepo({"data/test-00000-of-00001.parquet": buf.getvalue(), "clips/tone.mp4": m["mp4"]}, commit="6" * 40)


@pytest.fixture(scope="module")
def omni_media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A short mp3 and a small png, as OmniBench's mm_data holds."""
    root = tmp_path_factory.mktemp("omni-media")
    ffmpeg(
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:sample_rate=16000",
        "-t",
        "1",
        "-c:a",
        "libmp3lame",
        str(root / "a.mp3"),
    )
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", str(root / "i.png"))
    return {"mp3": (root / "a.mp3").read_bytes(), "png": (root / "i.png").read_bytes()}


def omnibench_rows(m: dict[str, bytes]) -> list[dict[str, object]]:
    """Rows in the shape of the real release (the fields of the GitHub JSON-lines file, the names of its files),
    with the media embedded as the hub's ``datasets`` library stores them: a struct {bytes, path}. Two rows share
    one picture, as questions on the same image do."""
    rows: list[dict[str, object]] = []
    for index, audio_type, image in (
        (2, "speech", "6-0044.png"),
        (6, "sound event", "6-0044.png"),
        (7, "music", "9_001.png"),
    ):
        options = ["A tone plays.", "Someone speaks.", "Drums play.", "Nothing is heard."]
        audio = f"{index}-0001.mp4.mp3"
        rows.append(
            {
                "index": index,
                "task type": "Action and Activity",
                "audio type": audio_type,
                "question": "What is heard while the picture shows?",
                "options": options,
                "answer": options[0],
                "audio_path": audio,
                "image_path": image,
                "audio content": "A: (a tone)",
                "image content": "A test pattern of coloured bars.",
                "audio": {"bytes": m["mp3"], "path": audio},
                "image": {"bytes": m["png"], "path": image},
            }
        )
    return rows


def omnibench_parquet(rows: list[dict[str, object]], without: str = "") -> bytes:
    """The hub's parquet: small row groups (read one at a time), the ``datasets`` features in the metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    media = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields = [(k, pa.large_string() if k != "index" else pa.int64()) for k in rows[-1] if k not in ("audio", "image")]
    fields = [(k, t) for k, t in fields if k != without]
    schema = pa.schema(
        [(k, pa.list_(pa.string()) if k == "options" else t) for k, t in fields] + [("audio", media), ("image", media)]
    )
    features = {"audio": {"_type": "Audio"}, "image": {"_type": "Image"}}
    schema = schema.with_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf, row_group_size=2)
    return buf.getvalue()


def omnibench_repo(m: dict[str, bytes]) -> HubRepo:
    """m-a-p/OmniBench as the hub holds it: data/train-*.parquet (push_to_hub's names) and a card."""
    return HubRepo(
        {"data/train-00000-of-00001.parquet": omnibench_parquet(omnibench_rows(m)), "README.md": b"# OmniBench\n"},
        commit="7" * 40,
    )


@pytest.fixture
def hub(
    media: dict[str, bytes], omni_media: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> HubServer:
    repos = {
        "liarliar/Daily-Omni": dailyomni_repo(media),
        "honglyhly/WorldSense": worldsense_repo(media),
        "KD-TAO/LVOmniBench": lvomnibench_repo(media),
        "lmms-lab/Video-MME": videomme_repo(media),
        "someone/av-quiz": quiz_repo(media),
        "m-a-p/OmniBench": omnibench_repo(omni_media),
    }
    with HubServer(repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        monkeypatch.setenv("OMNIVCHAT_CACHE_DIR", str(tmp_path / "omnivchat-cache"))
        monkeypatch.delenv("HF_TOKEN", raising=False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


def quiet(line: str) -> None:
    pass


# --- downloads validated by the readers -------------------------------------------------------------------------


@needs_hf
def test_dailyomni_tar_is_unpacked_into_the_readers_layout_and_loads(hub: HubServer, tmp_path: Path) -> None:
    out = tmp_path / "Daily-Omni"
    done = get("dailyomni", out, say=quiet)
    assert (out / "Videos/Ec_lQgZ9wlg/Ec_lQgZ9wlg_audio.wav").is_file() and (out / "qa.json").is_file()
    assert done.commit == "1" * 40 and done.files == 2
    fetched = {r.path for r in hub.downloads()}
    assert not any("example_videos" in p or "README" in p for p in fetched)  # only what the reader needs
    marker = json.loads((out / MARKER).read_text())
    assert marker["complete"] and "Videos/qF_bybWcUoE/qF_bybWcUoE_video.mp4" in marker["made"]
    # the CLI reports it; a second run of the same set finds everything in place and fetches nothing
    before = len(hub.downloads())
    result = runner.invoke(app, ["data", "get", "dailyomni", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "loaded by the reader" in result.output and len(hub.downloads()) == before


@needs_hf
def test_worldsense_zips_and_lvomnibench_files_download_and_load(hub: HubServer, tmp_path: Path) -> None:
    get("worldsense", tmp_path / "WorldSense", say=quiet)
    assert (tmp_path / "WorldSense/videos/UYkFSXsh.mp4").is_file()
    assert not (tmp_path / "WorldSense/dvOkwKAs.srt").exists()  # the subtitles are not read: not fetched
    get("lvomnibench", tmp_path / "LVOmniBench", say=quiet)
    assert (tmp_path / "LVOmniBench/videos/video_2.mp4").read_bytes() == hub.repos["KD-TAO/LVOmniBench"].files[
        "videos/video_2.mp4"
    ]


@needs_hf
def test_videomme_parquet_and_zipped_videos_download_and_load(hub: HubServer, tmp_path: Path) -> None:
    done = get("videomme", tmp_path / "Video-MME", say=quiet)
    assert (tmp_path / "Video-MME/data/vid2.mp4").is_file() and not (tmp_path / "Video-MME/vid1.srt").exists()
    assert done.data == tmp_path / "Video-MME"


def files_in(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")}


@needs_hf
def test_omnibench_parquet_with_embedded_media_is_converted_into_the_readers_layout(
    hub: HubServer, omni_media: dict[str, bytes], tmp_path: Path
) -> None:
    from omnivchat.benchmarks import Source, get_benchmark

    out = tmp_path / "OmniBench"
    done = get("omnibench", out, say=quiet)
    lines = [json.loads(x) for x in (out / "dataset/batch-5_1142_20240817.jsonl").read_text().splitlines()]
    assert [r["index"] for r in lines] == [2, 6, 7] and "audio" not in lines[0] and "image" not in lines[0]
    assert lines[1]["audio content"] == "A: (a tone)" and lines[2]["options"][0] == lines[2]["answer"]
    assert (out / "mm_data/audio/6-0001.mp4.mp3").read_bytes() == omni_media["mp3"]
    assert sorted(p.name for p in (out / "mm_data/image").iterdir()) == ["6-0044.png", "9_001.png"]
    assert not (out / "data").exists()  # the parquet stays in the hub cache: only the layout is in DIR
    marker = json.loads((out / MARKER).read_text())
    assert marker["complete"] and "mm_data/image/9_001.png" in marker["made"] and done.files == 1
    items = get_benchmark("omnibench").load(Source(data=out)).items
    assert [i.id for i in items] == ["2", "6", "7"]
    # a rerun fetches nothing and writes nothing in DIR but its marker
    before, fetched = files_in(out), len(hub.downloads())
    result = runner.invoke(app, ["data", "get", "omnibench", "-o", str(out)])
    assert result.exit_code == 0 and "loaded by the reader" in result.output, result.output
    after = files_in(out)
    assert len(hub.downloads()) == fetched
    assert {k: v for k, v in after.items() if k != MARKER} == {k: v for k, v in before.items() if k != MARKER}


@needs_hf
def test_eval_with_hf_data_converts_omnibench_and_runs(hub: HubServer, tmp_path: Path) -> None:
    args = ["eval", "--benchmark", "omnibench", "--data", "hf://m-a-p/OmniBench", "--model", "sim:healthy"]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "ran 3 items" in result.output and "3 done" in result.output


@needs_hf
def test_an_omnibench_row_without_its_media_is_refused_naming_its_index(
    hub: HubServer, omni_media: dict[str, bytes], tmp_path: Path
) -> None:
    repo = hub.repos["m-a-p/OmniBench"]
    rows = omnibench_rows(omni_media)
    rows[1]["audio"] = {"bytes": b"", "path": None}
    repo.files["data/train-00000-of-00001.parquet"] = omnibench_parquet(rows)
    with pytest.raises(DownloadError, match=r"row 1 \(index 6\): the 'audio' cell has no embedded bytes"):
        get("omnibench", tmp_path / "ob", say=quiet)
    assert json.loads((tmp_path / "ob" / MARKER).read_text())["complete"] is False
    assert list((tmp_path / "ob/dataset").iterdir()) == []  # no JSON-lines file, not even half of one
    # two rows naming one picture with different bytes: refused; a name leaving DIR: refused
    rows = omnibench_rows(omni_media)
    rows[1]["image"] = {"bytes": omni_media["png"] + b"x", "path": "6-0044.png"}
    repo.files["data/train-00000-of-00001.parquet"] = omnibench_parquet(rows)
    repo.commit = "8" * 40
    with pytest.raises(DownloadError, match=r"\(index 6\): mm_data/image/6-0044.png is named by an earlier row"):
        get("omnibench", tmp_path / "ob", say=quiet)
    rows = omnibench_rows(omni_media)
    rows[2]["audio_path"] = "../../escaped.mp3"
    repo.files["data/train-00000-of-00001.parquet"] = omnibench_parquet(rows)
    repo.commit = "9" * 40
    with pytest.raises(DownloadError, match=r"\(index 7\): audio_path: 'mm_data/audio/../../escaped.mp3' would land"):
        get("omnibench", tmp_path / "ob", say=quiet)
    assert not (tmp_path / "escaped.mp3").exists()
    # a row without its name field is named by its cell's own path; without either, refused
    rows = omnibench_rows(omni_media)
    del rows[0]["audio_path"]
    repo.files["data/train-00000-of-00001.parquet"] = omnibench_parquet(rows, without="audio_path")
    repo.commit = "c" * 40
    get("omnibench", tmp_path / "named-by-cell", say=quiet)
    first = json.loads((tmp_path / "named-by-cell/dataset/batch-5_1142_20240817.jsonl").read_text().splitlines()[0])
    assert (
        first["audio_path"] == "2-0001.mp4.mp3" and (tmp_path / "named-by-cell/mm_data/audio/2-0001.mp4.mp3").is_file()
    )
    rows[0]["audio"] = {"bytes": omni_media["mp3"], "path": None}
    repo.files["data/train-00000-of-00001.parquet"] = omnibench_parquet(rows, without="audio_path")
    repo.commit = "d" * 40
    with pytest.raises(DownloadError, match=r"row 0 \(index 2\): no 'audio_path' to name its audio file"):
        get("omnibench", tmp_path / "unnamed", say=quiet)
    # the hub fixed: the same folder resumes the conversion and loads
    repo.files["data/train-00000-of-00001.parquet"] = omnibench_parquet(omnibench_rows(omni_media))
    repo.commit = "a" * 40
    get("omnibench", tmp_path / "ob", say=quiet)


@needs_hf
def test_omnibench_conversion_never_overwrites_a_file_it_did_not_make(
    hub: HubServer, omni_media: dict[str, bytes], tmp_path: Path
) -> None:
    out = tmp_path / "ob"
    get("omnibench", out, say=quiet)
    marker = json.loads((out / MARKER).read_text())
    marker["made"].remove("mm_data/audio/7-0001.mp4.mp3")  # as if the user had put it there
    (out / MARKER).write_text(json.dumps(marker))
    (out / "mm_data/audio/7-0001.mp4.mp3").write_bytes(b"mine")
    rows = omnibench_rows(omni_media)
    rows[0]["question"] = "What plays?"
    repo = hub.repos["m-a-p/OmniBench"]
    repo.files["data/train-00000-of-00001.parquet"], repo.commit = omnibench_parquet(rows), "b" * 40  # converted anew
    with pytest.raises(DownloadError, match=r"index 7\): .*7-0001.mp4.mp3 exists and was not made by this download"):
        get("omnibench", out, say=quiet)
    assert (out / "mm_data/audio/7-0001.mp4.mp3").read_bytes() == b"mine"


@needs_hf
def test_a_download_the_reader_refuses_is_not_done(hub: HubServer, tmp_path: Path) -> None:
    repo = hub.repos["KD-TAO/LVOmniBench"]
    rows = json.loads(repo.files["data.json"])
    rows[1]["correct_option"] = "F"
    repo.files["data.json"] = json.dumps(rows).encode()
    with pytest.raises(DownloadError, match=r"its reader refuses it: .*data.json.*'F'"):
        get("lvomnibench", tmp_path / "lv", say=quiet)
    assert json.loads((tmp_path / "lv" / MARKER).read_text())["complete"] is False


# --- refusals -----------------------------------------------------------------------------------------------------


@needs_hf
@pytest.mark.parametrize("bad", ["Videos.tar", "qa.json"])
def test_a_file_that_does_not_match_the_hubs_hash_is_refused_by_name(hub: HubServer, tmp_path: Path, bad: str) -> None:
    hub.repos["liarliar/Daily-Omni"].corrupt.add(bad)
    kind = "sha256" if bad.endswith(".tar") else "git blob id"
    with pytest.raises(DownloadError, match=rf"dailyomni: {bad} from liarliar/Daily-Omni@1+: {kind} \w+ is not"):
        get("dailyomni", tmp_path / "d", say=quiet)
    # the corrupt copy left the cache: once the hub serves the right bytes, a rerun succeeds
    hub.repos["liarliar/Daily-Omni"].corrupt.clear()
    get("dailyomni", tmp_path / "d", say=quiet)


@needs_hf
def test_a_gated_set_says_what_to_accept_and_where(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = hub.repos["liarliar/Daily-Omni"]
    repo.gated = True
    token = "hf_" + "x" * 30  # built at run time: a key-like string never sits in a fixture
    page = f"{hub.endpoint}/datasets/liarliar/Daily-Omni"
    with pytest.raises(DownloadError, match=rf"is gated \(no HF_TOKEN\): log in at {page}, accept its conditions"):
        get("dailyomni", tmp_path / "d", say=quiet)
    monkeypatch.setenv("HF_TOKEN", token)
    with pytest.raises(DownloadError) as err:
        get("dailyomni", tmp_path / "d", say=quiet)
    assert f"log in at {page}, accept" in str(err.value) and "not in the authorized list" in str(err.value)
    assert token not in str(err.value)
    result = runner.invoke(app, ["data", "get", "dailyomni", "-o", str(tmp_path / "d")])
    assert result.exit_code == 2 and "accept its conditions" in result.output
    repo.granted_tokens = frozenset({token})
    get("dailyomni", tmp_path / "d", say=quiet)


@needs_hf
def test_short_of_disk_space_is_refused_before_any_download(hub: HubServer, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match=r"not enough free disk space .* needed .* 1 B free"):
        get("dailyomni", tmp_path / "d", disk_free=lambda _: 1, say=quiet)
    assert hub.downloads() == []


@needs_hf
def test_an_existing_foreign_folder_is_refused_and_left_untouched(hub: HubServer, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(DownloadError, match=r"not empty and is not an earlier download of dailyomni"):
        get("dailyomni", out, say=quiet)
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and hub.requests == []
    # a download of another set is foreign too
    get("lvomnibench", tmp_path / "lv", say=quiet)
    with pytest.raises(DownloadError, match="not an earlier download of dailyomni"):
        get("dailyomni", tmp_path / "lv", say=quiet)


@needs_hf
def test_an_archive_member_that_would_land_outside_dir_is_refused(hub: HubServer, tmp_path: Path) -> None:
    hub.repos["liarliar/Daily-Omni"].files["Videos.tar"] = tar_of({"../escaped.mp4": b"x"})
    with pytest.raises(DownloadError, match=r"Videos.tar: member: '../escaped.mp4' would land outside"):
        get("dailyomni", tmp_path / "d", say=quiet)
    assert not (tmp_path / "escaped.mp4").exists()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        link = tarfile.TarInfo("Videos/a/a_video.mp4")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    hub.repos["liarliar/Daily-Omni"].files["Videos.tar"] = buf.getvalue()
    hub.repos["liarliar/Daily-Omni"].commit = "4" * 40  # new content is a new commit
    with pytest.raises(DownloadError, match=r"member 'Videos/a/a_video.mp4' is not a regular file"):
        get("dailyomni", tmp_path / "d2", say=quiet)
    ws = hub.repos["honglyhly/WorldSense"]
    ws.files["worldsense_videos_0.zip"] = zip_of({"videos/../../zipped.mp4": b"x"})
    with pytest.raises(DownloadError, match=r"worldsense_videos_0.zip: member: 'videos/../../zipped.mp4' would land"):
        get("worldsense", tmp_path / "ws", say=quiet)
    assert not (tmp_path / "zipped.mp4").exists() and not (tmp_path / "ws/videos").exists()


@needs_hf
def test_a_listed_path_that_would_land_outside_dir_is_refused_before_any_download(
    hub: HubServer, tmp_path: Path
) -> None:
    hub.repos["KD-TAO/LVOmniBench"].files["videos/../../evil.mp4"] = b"x"
    with pytest.raises(DownloadError, match=r"KD-TAO/LVOmniBench lists: 'videos/../../evil.mp4' would land outside"):
        get("lvomnibench", tmp_path / "lv", say=quiet)
    assert hub.downloads() == []
    hub.repos["liarliar/Daily-Omni"].files["Videos.tar"] = tar_of({MARKER: b"{}"})
    with pytest.raises(DownloadError, match=r"'.omnivchat-download.json' would replace this download's own"):
        get("dailyomni", tmp_path / "d", say=quiet)


@needs_hf
def test_an_unknown_name_or_a_bad_hf_address_is_one_line() -> None:
    with pytest.raises(DownloadError, match="no download for 'mmlu'; there is one for worldsense, dailyomni"):
        get("mmlu", Path("x"), say=quiet)
    for bad in ("hf://justname", "hf://a/b@", "hf://a/b/c", "https://x/y"):
        with pytest.raises(DownloadError, match="is not hf://ORG/NAME"):
            parse_hf(bad)
    assert parse_hf("hf:/org/name@v1.0") == ("org/name", "v1.0")  # a Path collapses '//'


def test_without_huggingface_hub_the_error_says_how_to_install_it(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # `import huggingface_hub` now raises ImportError
    with pytest.raises(
        DownloadError,
        match=r"dailyomni: downloading needs huggingface_hub: pip install 'omnivchat\[hf\]' "
        r"\(in a clone of omnivchat: uv sync --extra hf\)",
    ):
        get("dailyomni", tmp_path / "d", say=quiet)


def test_the_command_line_starts_without_importing_huggingface_hub() -> None:
    code = "import sys, omnivchat.cli, omnivchat.benchmarks.download; assert 'huggingface_hub' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@needs_hf
def test_every_release_entry_is_a_registered_benchmark() -> None:
    from omnivchat.benchmarks import get_benchmark

    assert set(RELEASES) == {
        "worldsense",
        "dailyomni",
        "omnibench",
        "avodyssey",
        "videomme",
        "lvomnibench",
        "socialomni",
    }
    for release in RELEASES.values():
        assert get_benchmark(release.name) and release.patterns and "/" in release.repo


# --- resuming, hf:// on eval, offline ----------------------------------------------------------------------------


@needs_hf
def test_a_cut_download_resumes_where_it_stopped(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 1024)  # small reads, so the cut lands after some
    repo = hub.repos["liarliar/Daily-Omni"]
    repo.cut_once["Videos.tar"] = 4096
    get("dailyomni", tmp_path / "d", say=quiet)
    ranges = [r.range for r in hub.downloads() if r.path.startswith("/cdn/")]
    assert ranges == [None, "bytes=4096-"]  # the second request asked only for the rest
    tar_sha = hashlib.sha256(repo.files["Videos.tar"]).hexdigest()
    assert (Path(os.environ["HF_HUB_CACHE"]) / "datasets--liarliar--Daily-Omni/blobs" / tar_sha).is_file()


@needs_hf
def test_a_download_stopped_midway_resumes_file_by_file(hub: HubServer, tmp_path: Path) -> None:
    """huggingface_hub 2.4 downloads into a per-process temporary file, so a new run resumes by file: what is in
    the cache or already laid out is not fetched again."""
    repo = hub.repos["honglyhly/WorldSense"]
    repo.failing.add("worldsense_videos_1.zip")
    with pytest.raises(DownloadError, match=r"worldsense: .* answered 403 for .*worldsense_videos_1.zip: Forbidden"):
        get("worldsense", tmp_path / "ws", say=quiet)
    assert (tmp_path / "ws/videos/dvOkwKAs.mp4").is_file()  # the first archive was unpacked
    repo.failing.clear()
    hub.requests.clear()
    get("worldsense", tmp_path / "ws", say=quiet)
    assert {r.path.rsplit("/", 1)[-1] for r in hub.downloads()} == {
        hashlib.sha256(repo.files["worldsense_videos_1.zip"]).hexdigest()
    }


@needs_hf
def test_eval_of_a_dataset_without_an_entry_downloads_the_whole_repository(hub: HubServer, tmp_path: Path) -> None:
    columns = "question=Question,answer=Answer,video=video_path,options=Choice,qid=id,requires:=video+audio"
    args = ["eval", "--benchmark", "hf", "--data", "hf://someone/av-quiz@main", "--columns", columns]
    result = runner.invoke(app, [*args, "--model", "sim:healthy", "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "2 done" in result.output
    files = hub.repos["someone/av-quiz"].files.values()  # both LFS files fetched: the whole repository
    assert {r.path.rsplit("/", 1)[-1] for r in hub.downloads()} == {hashlib.sha256(f).hexdigest() for f in files}


@needs_hf
def test_eval_with_hf_data_downloads_then_runs_offline_from_the_cache(hub: HubServer, tmp_path: Path) -> None:
    spec = "hf://liarliar/Daily-Omni"
    result = runner.invoke(
        app, ["eval", "--benchmark", "dailyomni", "--data", spec, "--model", "sim:healthy", "-o", str(tmp_path / "r1")]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r1/manifest.json").read_text())
    assert "ran 2 items" in result.output and "2 done" in result.output
    assert "--data hf://liarliar/Daily-Omni: " in " ".join(result.output.split())
    assert "hf-data/liarliar--Daily-Omni/" + "1" * 40 in json.dumps(manifest)
    # offline, in a fresh process (huggingface_hub reads HF_HUB_OFFLINE at import), the hub unreachable
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    for args in (
        ["eval", "--benchmark", "dailyomni", "--data", spec, "--model", "sim:healthy"],
        ["data", "get", "dailyomni"],
    ):
        out = tmp_path / f"offline-{args[0]}-{len(args)}"
        proc = subprocess.run(
            [sys.executable, "-m", "omnivchat.cli", *args, "-o", str(out)], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "offline-data-3/Videos/Ec_lQgZ9wlg/Ec_lQgZ9wlg_video.mp4").is_file()
