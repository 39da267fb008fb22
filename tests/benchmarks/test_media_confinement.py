"""Media stay inside their dataset: a byo or hf item whose media path leads outside the data's folder (an absolute
path, '..', a symlink to a file elsewhere) is refused in one line naming the file and item, as the native bench
refuses its clips; a symlink inside the folder is fine; --media-root allows one more folder, recorded in the
manifest; a hub cache's links into its blobs and media a table embeds are unaffected."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from bench_factory import RED_SQUARE_SCENE
from typer.testing import CliRunner

from omnivchat._files import PathOutside, confine, path_escape
from omnivchat.benchmarks import Source
from omnivchat.benchmarks.byo import BYO, ByoError
from omnivchat.cli import app

runner = CliRunner()
WIDE = {"COLUMNS": "300"}
SCENE = RED_SQUARE_SCENE


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real rendered clip, somewhere no dataset of these tests lives."""
    from omnivchat.synth import render_clip

    return render_clip(SCENE, tmp_path_factory.mktemp("elsewhere") / "red.mp4").path


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A readable file outside every dataset: what a hostile dataset would have omnivchat upload."""
    path = tmp_path / "private" / "home-video.mp4"
    path.parent.mkdir()
    path.write_bytes(b"private bytes")
    return path


def byo_file(folder: Path, video: str, **extra: Any) -> Path:
    row = {"qid": "q1", "question": "What colour?", "answer": "red", "requires": ["video"], "video": video, **extra}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bench.json"
    path.write_text(json.dumps([row]))
    return path


def refusal(source: Source) -> str:
    with pytest.raises(ByoError) as caught:
        BYO.load(source)
    return str(caught.value)


def test_the_shared_check_resolves_symlinks_and_names_how_a_path_leaves(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "media").mkdir(parents=True)
    assert confine(home, "media/../media/a.mp4") == (home / "media" / "a.mp4").resolve()  # '..' that stays inside
    (home / "out.mp4").symlink_to(tmp_path / "x.mp4")
    for value, reason in (("/etc/hosts", "an absolute path"), ("../x.mp4", "'..'"), ("out.mp4", "a symlink to")):
        with pytest.raises(PathOutside) as caught:
            confine(home, value)
        assert caught.value.reason.startswith(reason) and str(caught.value).startswith(f"{value!r} is outside {home}")
    assert confine(home, "out.mp4", [tmp_path]) == tmp_path / "x.mp4"  # allowed once its folder is
    with pytest.raises(PathOutside, match="not a usable path"):
        confine(home, "a\x00b.mp4")
    assert [path_escape(v) for v in ("C:\\clips\\a.mp4", "~/a.mp4", "a\\..\\..\\b", "media/a.mp4")] == [
        "an absolute path",
        "an absolute path",
        "'..'",
        None,
    ]


@pytest.mark.parametrize("how", ["absolute", "dotdot", "symlink"])
def test_byo_refuses_media_outside_its_folder_naming_the_item(tmp_path: Path, secret: Path, how: str) -> None:
    folder = tmp_path / "dataset"
    if how == "absolute":
        value, reason = str(secret), "an absolute path"
    elif how == "dotdot":
        value, reason = "../private/home-video.mp4", "'..'"
    else:
        (folder / "media").mkdir(parents=True)
        (folder / "media" / "clip.mp4").symlink_to(secret)
        value, reason = "media/clip.mp4", f"a symlink to {secret}"
    data = byo_file(folder, value)
    message = refusal(Source(data=data))
    assert message == (
        f"{data}: item 0 (qid 'q1'): video {value!r} is outside {folder.resolve()} ({reason}): media must stay in "
        "the dataset's folder (allow one with --media-root)"
    )
    assert BYO.load(Source(data=data, media_roots=(secret.parent,))).items[0].media.resolve() == secret


def test_a_symlink_inside_the_folder_is_allowed(tmp_path: Path, clip: Path) -> None:
    folder = tmp_path / "dataset"
    (folder / "store").mkdir(parents=True)
    shutil.copyfile(clip, folder / "store" / "red.mp4")
    (folder / "media").mkdir()
    (folder / "media" / "red.mp4").symlink_to(folder / "store" / "red.mp4")
    loaded = BYO.load(Source(data=byo_file(folder, "media/red.mp4")))
    assert loaded.items[0].media == folder / "media" / "red.mp4"


def test_eval_refuses_before_sending_and_media_root_allows_it_in_the_manifest(tmp_path: Path, clip: Path) -> None:
    data = byo_file(tmp_path / "dataset", str(clip))
    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(data), "--model", "sim:healthy", "-o", str(run_dir)]
    refused = runner.invoke(app, [*args, "--no-progress"], env=WIDE)
    assert refused.exit_code == 2 and "is outside" in refused.output and "(qid 'q1')" in refused.output
    assert "Traceback" not in refused.output and not (run_dir / "manifest.json").exists()

    allowed = runner.invoke(app, [*args, "--media-root", str(clip.parent), "--no-progress"], env=WIDE)
    assert allowed.exit_code == 0, allowed.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["media_roots"] == [str(clip.parent.resolve())]
    again = runner.invoke(app, [*args, "--no-progress"], env=WIDE)  # without the root: refused, even to resume
    assert again.exit_code == 2 and "is outside" in again.output


def test_a_run_without_media_root_records_none(tmp_path: Path, clip: Path) -> None:
    folder = tmp_path / "dataset"
    folder.mkdir()
    shutil.copyfile(clip, folder / "red.mp4")
    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "byo", "--data", str(byo_file(folder, "red.mp4")), "--model", "sim:healthy"]
    assert runner.invoke(app, [*args, "-o", str(run_dir), "--no-progress"]).exit_code == 0
    assert "media_roots" not in json.loads((run_dir / "manifest.json").read_text())  # older runs still resume


def test_media_root_is_checked_before_anything_runs(tmp_path: Path, clip: Path) -> None:
    data = byo_file(tmp_path / "dataset", "red.mp4")
    base = ["--data", str(data), "--model", "sim:healthy", "--no-progress"]
    not_a_folder = runner.invoke(
        app, ["eval", "--benchmark", "byo", *base, "-o", str(tmp_path / "r1"), "--media-root", str(clip)], env=WIDE
    )
    assert not_a_folder.exit_code == 2 and f"--media-root {clip}: not a folder" in not_a_folder.output
    other = runner.invoke(
        app, ["eval", "--benchmark", "omnivchat", *base, "-o", str(tmp_path / "r2"), "--media-root", str(tmp_path)]
    )
    assert other.exit_code == 2 and "--media-root is for --benchmark byo or hf" in other.output
    ablate = runner.invoke(
        app,
        ["ablate", "--benchmark", "worldsense", *base, "-o", str(tmp_path / "a"), "--media-root", str(tmp_path)],
        env=WIDE,
    )
    assert ablate.exit_code == 2 and "--media-root is for --benchmark byo or hf" in ablate.output
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())


# --- hf ------------------------------------------------------------------------------------------------------


def test_hf_refuses_cell_paths_outside_its_folders_and_keeps_embedded_media(
    tmp_path: Path, clip: Path, secret: Path
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from omnivchat.benchmarks.hf import HF, HfError

    data = tmp_path / "dataset"
    (data / "videos").mkdir(parents=True)
    shutil.copyfile(clip, data / "videos" / "red.mp4")
    (data / "videos" / "link.mp4").symlink_to(secret)
    cells = [str(secret), "../private/home-video.mp4", "videos/link.mp4", "videos/red.mp4", None]
    media = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    embedded = [None, None, None, None, {"bytes": clip.read_bytes(), "path": "red.mp4"}]
    table = pa.table(
        {
            "qid": [f"q{k}" for k in range(5)],
            "question": ["What colour?"] * 5,
            "answer": ["red"] * 5,
            "requires": ["video"] * 5,
            "video_path": cells,
            "video": embedded,
        },
        schema=pa.schema([*((k, pa.string()) for k in ("qid", "question", "answer", "requires", "video_path"))]).append(
            pa.field("video", media)
        ),
    )
    (data / "data").mkdir()
    file = data / "data" / "test-00000-of-00001.parquet"
    pq.write_table(table, str(file))

    mapping = "video=video_path"
    with pytest.raises(HfError) as caught:
        HF.load(Source(data=data, options={"columns": mapping}))
    lines = str(caught.value).splitlines()
    home = data.resolve()
    assert lines[:3] == [
        f"{file}: row 0 (qid 'q0'): video {str(secret)!r} is outside {home} (an absolute path): media must stay in "
        "the dataset's folder (allow one with --media-root)",
        f"{file}: row 1 (qid 'q1'): video '../private/home-video.mp4' is outside {home} ('..'): media must stay in "
        "the dataset's folder (allow one with --media-root)",
        f"{file}: row 2 (qid 'q2'): video 'videos/link.mp4' is outside {home} (a symlink to {secret}): media must "
        "stay in the dataset's folder (allow one with --media-root)",
    ]
    allowed = HF.load(Source(data=data, media_roots=(secret.parent,), limit=4, options={"columns": mapping}))
    assert [i.media.resolve() for i in allowed.items] == [secret, secret, secret, (data / "videos/red.mp4").resolve()]
    assert allowed.media_roots == (secret.parent,)

    # Media a table embeds are written to the media cache by omnivchat itself: never refused.
    from omnivchat.benchmarks import _tables

    only_embedded = tmp_path / "embedded"
    (only_embedded / "data").mkdir(parents=True)
    pq.write_table(table.slice(4), str(only_embedded / "data" / "test-00000-of-00001.parquet"))
    loaded = HF.load(Source(data=only_embedded, options={"columns": "video=video"}))
    cached = loaded.items[0].media
    assert (
        cached.is_relative_to(_tables.cache_dir() / _tables.EMBEDDED_DIR) and cached.read_bytes() == clip.read_bytes()
    )
