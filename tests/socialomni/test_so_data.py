"""SocialOmni loaders on small files in the released formats (fixtures/so_mini: invented content, placeholder
clips), count checks, gold labels, participants, and media paths that must stay inside the media root."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path

import pytest

from omnivchat.socialomni._data import (
    HOW_COUNT,
    WHEN_COUNT,
    WHO_COUNT,
    SocialOmniError,
    WhenItem,
    WhoItem,
    file_sha256,
    how_items,
    load_when,
    load_who,
    resolve_media,
    source_hash,
)

ROOT = Path(__file__).parent / "fixtures" / "so_mini"
LEVEL1 = ROOT / "data" / "level_1" / "dataset.json"
LEVEL2 = ROOT / "data" / "level_2" / "annotations_200.json"


def _who_records() -> list[dict]:
    return json.loads(LEVEL1.read_text(encoding="utf-8"))


def _when_records() -> list[dict]:
    return json.loads(LEVEL2.read_text(encoding="utf-8"))["data"]


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def _media_root(tmp_path: Path) -> Path:
    """A media root with one placeholder clip per level under data/<level>/videos/."""
    root = tmp_path / "media"
    for level, name in (("level_1", "clip.mp4"), ("level_2", "clip.mp4")):
        folder = root / "data" / level / "videos"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"placeholder")
    return root


# ------------------------------------------------------------------------------------------------ Who


def test_load_who_fixture_with_limit() -> None:
    items = load_who(LEVEL1, ROOT, limit=5)
    assert [i.id for i in items] == ["1", "2", "3", "4", "5"]
    assert [i.gold for i in items] == ["B", "A", "D", "C", "A"]
    # from 0:02 to 0:08; at 0:05; at the 2th and 6th second; from the 15th to the 20th second; full-width colons
    assert [i.cutoff for i in items] == [8.0, 5.0, 6.0, 20.0, 9.0]
    assert items[1].options[0] == "A.The woman holding the umbrella"
    assert all(isinstance(i, WhoItem) and i.video.is_file() for i in items)
    assert items[0].video == (ROOT / "data" / "level_1" / "videos" / "video_1.mp4").resolve()
    # transcripts are reference fields: never part of an item
    assert "asr_content" not in WhoItem.model_fields


def test_load_who_limit_takes_the_first_items() -> None:
    assert [i.id for i in load_who(LEVEL1, ROOT, limit=2)] == ["1", "2"]
    assert len(load_who(LEVEL1, ROOT, limit=50)) == 5


def test_load_who_count_check_without_limit() -> None:
    with pytest.raises(SocialOmniError, match=r"expected 2000 Who items, found 5") as info:
        load_who(LEVEL1, ROOT)
    assert str(LEVEL1) in str(info.value)


def test_load_who_full_count_passes(tmp_path: Path) -> None:
    root = _media_root(tmp_path)
    base = _who_records()[0]
    records = [{**base, "id": n, "video_path": "clip.mp4"} for n in range(1, WHO_COUNT + 1)]
    items = load_who(_write(tmp_path / "dataset.json", records), root)
    assert len(items) == WHO_COUNT and items[-1].id == str(WHO_COUNT)


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
def test_limit_must_be_a_positive_integer(limit: object) -> None:
    with pytest.raises(SocialOmniError, match="limit"):
        load_who(LEVEL1, ROOT, limit=limit)  # type: ignore[arg-type]
    with pytest.raises(SocialOmniError, match="limit"):
        load_when(LEVEL2, ROOT, limit=limit)  # type: ignore[arg-type]


def test_who_problems_are_all_listed_in_one_error(tmp_path: Path) -> None:
    records = _who_records()
    records[0]["question"] = "What happened from 0:02 to 0:08 and from 0:10 to 0:12?"  # two intervals
    records[1]["correct_answer"] = "E"
    records[2]["options"] = records[2]["options"][:3]
    records[3]["video_path"] = "missing.mp4"
    records[4]["id"] = 1  # duplicate
    path = _write(tmp_path / "dataset.json", records)
    with pytest.raises(SocialOmniError) as info:
        load_who(path, ROOT, limit=5)
    problems = info.value.problems
    assert len(problems) == 4  # the question's two intervals are item 1's own error, not the file's (below)
    assert all(p.startswith(str(path)) for p in problems)
    text = str(info.value)
    assert "item 1: question" not in text
    assert "item 2: correct_answer" in text
    assert "item 3: options" in text
    assert "item 4: video_path" in text and "missing.mp4" in text
    assert "item 1: id: duplicate id" in text


def test_an_unreadable_cutoff_is_the_items_problem_not_the_files(tmp_path: Path) -> None:
    who = _who_records()
    who[0]["question"] = "What happened from 0:02 to 0:08 and from 0:10 to 0:12?"  # two intervals
    who[1]["question"] = "Who spoke sometime?"
    items = load_who(_write(tmp_path / "dataset.json", who), ROOT, limit=3)
    assert [i.cutoff for i in items] == [None, None, 6.0] and items[2].problem is None
    assert items[0].problem is not None and "'from 0:02 to 0:08', 'from 0:10 to 0:12'" in items[0].problem
    assert items[1].problem is not None and items[1].problem.startswith("question: ")
    when = _when_records()
    when[0]["question_1"]["timestamp"] = "-3"
    when[1]["question_1"]["timestamp"] = "0"
    items_2 = load_when(_write(tmp_path / "a.json", when), ROOT, limit=3)
    assert [i.timestamp for i in items_2] == [None, None, 62.5]
    assert items_2[0].problem == "question_1.timestamp: timestamp '-3': negative"
    assert items_2[1].problem == "question_1.timestamp: '0': cut-off must be > 0"


def test_who_file_must_be_a_list(tmp_path: Path) -> None:
    with pytest.raises(SocialOmniError, match="expected a list"):
        load_who(_write(tmp_path / "d.json", {"data": _who_records()}), ROOT, limit=1)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(SocialOmniError, match="cannot read"):
        load_who(tmp_path / "absent.json", ROOT, limit=1)
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(SocialOmniError, match="not JSON"):
        load_when(bad, ROOT, limit=1)


# ------------------------------------------------------------------------------------------------ When / How


def test_load_when_fixture() -> None:
    items = load_when(LEVEL2, ROOT, limit=5)
    assert [i.id for i in items] == ["video_0001", "video_0002", "video_0003", "video_0004", "video_0005"]
    # gold = option_<correct_answer>.upper(): "Yes"/"No" casing, and options listed NO-first in video_0005
    assert [i.gold for i in items] == ["YES", "NO", "YES", "NO", "YES"]
    # "27", "00:17:00", "01:02:50" (hundredths), the number 12, "0:45"
    assert [i.timestamp for i in items] == [27.0, 17.0, 62.5, 12.0, 45.0]
    assert [i.participant for i in items] == [
        "the man in the blue shirt",
        "Anna",
        "the woman on the left",
        "Mr. Okafor",
        "the chef",
    ]
    assert items[0].reference == "Sure, I can carry that box for you."
    assert items[1].reference == ""
    assert items[4].how_question == "what should the chef say?"
    # media found in each layout: data/level_2/videos/, level_2/, and the root
    assert items[0].video == (ROOT / "data" / "level_2" / "videos" / "video_0001.mp4").resolve()
    assert items[3].video == (ROOT / "level_2" / "video_0004.mp4").resolve()
    assert items[4].video == (ROOT / "video_0005.mp4").resolve()
    assert all(isinstance(i, WhenItem) for i in items)


def test_load_when_accepts_a_bare_list(tmp_path: Path) -> None:
    path = _write(tmp_path / "list.json", _when_records())
    assert load_when(path, ROOT, limit=5) == load_when(LEVEL2, ROOT, limit=5)


def test_how_items_are_the_gold_yes_items() -> None:
    items = load_when(LEVEL2, ROOT, limit=5)
    assert [i.id for i in how_items(items)] == ["video_0001", "video_0003", "video_0005"]
    assert [i.id for i in how_items(items, limit=2)] == ["video_0001", "video_0003"]
    # a limited When selection may hold fewer gold-YES items than the limit: How looks past it when given all
    assert [i.id for i in how_items(load_when(LEVEL2, ROOT, limit=2), limit=2)] == ["video_0001"]


def test_load_when_count_check_without_limit() -> None:
    with pytest.raises(SocialOmniError, match=r"expected 200 When items with 128 gold YES, found 5 items with 3"):
        load_when(LEVEL2, ROOT)


def _level2_file(tmp_path: Path, n_yes: int, n: int = WHEN_COUNT) -> Path:
    base = _when_records()
    records = []
    for k in range(n):
        record = copy.deepcopy(base[0] if k < n_yes else base[1])
        record["video_id"] = f"video_{k + 1:04d}"
        record["video_file"] = "clip.mp4"
        records.append(record)
    return _write(tmp_path / "annotations_200.json", {"dataset_name": "t", "total_items": n, "data": records})


def test_load_when_full_counts(tmp_path: Path) -> None:
    root = _media_root(tmp_path)
    items = load_when(_level2_file(tmp_path, HOW_COUNT), root)
    assert len(items) == WHEN_COUNT and len(how_items(items)) == HOW_COUNT
    with pytest.raises(SocialOmniError, match="found 200 items with 127 gold YES"):
        load_when(_level2_file(tmp_path, HOW_COUNT - 1), root)
    with pytest.raises(SocialOmniError, match="found 199 items with 128 gold YES"):
        load_when(_level2_file(tmp_path, HOW_COUNT, n=199), root)


def test_total_items_must_match(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.json", {"dataset_name": "t", "total_items": 9, "data": _when_records()})
    with pytest.raises(SocialOmniError, match=r"total_items: says 9 but 'data' holds 5"):
        load_when(path, ROOT, limit=5)


def test_participant_parse_failure_names_file_item_and_field(tmp_path: Path) -> None:
    records = _when_records()
    records[1]["question_2"]["question"] = "What would Anna say next?"
    path = _write(tmp_path / "a.json", records)
    with pytest.raises(SocialOmniError) as info:
        load_when(path, ROOT, limit=5)
    assert info.value.problems == [
        f"{path}: item video_0002: question_2.question: expected 'What should <participant> say?', "
        "found 'What would Anna say next?'"
    ]


def test_when_problems_are_all_listed(tmp_path: Path) -> None:
    records = _when_records()
    records[1]["question_2"]["question"] = "Anna?"
    records[2]["question_1"]["correct_answer"] = "C"
    records[3]["question_1"]["option_B"] = "MAYBE"
    records[4]["video_file"] = "../video_0005.mp4"
    path = _write(tmp_path / "a.json", records)
    with pytest.raises(SocialOmniError) as info:
        load_when(path, ROOT, limit=5)
    text = str(info.value)
    assert len(info.value.problems) == 4  # an unreadable timestamp is the item's own error (test above)
    assert "item video_0002: question_2.question" in text
    assert "item video_0003: question_1.correct_answer: expected A or B" in text
    assert "item video_0004: question_1.option_B: expected YES or NO, found 'MAYBE'" in text
    assert "item video_0005: video_file" in text and "'..'" in text


# ------------------------------------------------------------------------------------------------ media


def test_resolve_media_lookup_order(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for sub in ("data/level_1/videos", "data/level_1", "level_1/videos", "level_1", "."):
        (root / sub).mkdir(parents=True, exist_ok=True)
        (root / sub / "v.mp4").write_bytes(sub.encode())
    order = ["data/level_1/videos", "data/level_1", "level_1/videos", "level_1", "."]
    for sub in order:
        found = resolve_media(root, "level_1", "v.mp4")
        assert found.read_bytes() == sub.encode()
        found.unlink()
    with pytest.raises(SocialOmniError, match="not found"):
        resolve_media(root, "level_1", "v.mp4")


def test_resolve_media_accepts_subfolders(tmp_path: Path) -> None:
    clip = tmp_path / "data" / "level_2" / "videos" / "sub" / "x.mp4"
    clip.parent.mkdir(parents=True)
    clip.write_bytes(b"x")
    assert resolve_media(tmp_path, "level_2", "sub/x.mp4") == clip.resolve()


@pytest.mark.parametrize("name", ["/etc/passwd", "C:\\clips\\a.mp4", "\\\\server\\share\\a.mp4"])
def test_resolve_media_rejects_absolute_paths(name: str) -> None:
    with pytest.raises(SocialOmniError, match="absolute"):
        resolve_media(ROOT, "level_1", name)


@pytest.mark.parametrize("name", ["../so_mini/video_0005.mp4", "data/../video_0005.mp4", "..\\x.mp4"])
def test_resolve_media_rejects_dotdot(name: str) -> None:
    with pytest.raises(SocialOmniError, match=r"'\.\.'"):
        resolve_media(ROOT, "level_2", name)


@pytest.mark.parametrize("name", ["", "   ", None, 7])
def test_resolve_media_rejects_empty_names(name: object) -> None:
    with pytest.raises(SocialOmniError, match="empty"):
        resolve_media(ROOT, "level_1", name)  # type: ignore[arg-type]


def test_resolve_media_rejects_directories(tmp_path: Path) -> None:
    (tmp_path / "data" / "level_1" / "videos" / "dir.mp4").mkdir(parents=True)
    with pytest.raises(SocialOmniError, match="not a file"):
        resolve_media(tmp_path, "level_1", "dir.mp4")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_media_path_escapes_are_all_listed(tmp_path: Path) -> None:
    root = _media_root(tmp_path)
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"secret")
    (root / "data" / "level_1" / "videos" / "link.mp4").symlink_to(outside)
    inner = root / "data" / "level_1" / "videos" / "inner.mp4"
    inner.symlink_to(root / "data" / "level_1" / "videos" / "clip.mp4")
    base = _who_records()[0]
    names = ["/abs/clip.mp4", "../outside.mp4", "link.mp4", "nowhere.mp4", "inner.mp4", "clip.mp4"]
    records = [{**base, "id": k, "video_path": name} for k, name in enumerate(names)]
    path = _write(tmp_path / "dataset.json", records)
    with pytest.raises(SocialOmniError) as info:
        load_who(path, root, limit=len(names))
    problems = info.value.problems
    assert len(problems) == 4  # a symlink inside the root and a plain clip are fine
    assert "item 0: video_path" in problems[0] and "absolute" in problems[0]
    assert "item 1: video_path" in problems[1] and "'..'" in problems[1]
    assert "item 2: video_path" in problems[2] and "outside" in problems[2]
    assert "item 3: video_path" in problems[3] and "not found" in problems[3]


def test_missing_media_root_is_one_problem(tmp_path: Path) -> None:
    with pytest.raises(SocialOmniError) as info:
        load_who(LEVEL1, tmp_path / "nope", limit=5)
    assert len(info.value.problems) == 1 and "not a directory" in str(info.value)


# ------------------------------------------------------------------------------------------------ hashes


def test_hashes(tmp_path: Path) -> None:
    assert file_sha256(LEVEL1) == hashlib.sha256(LEVEL1.read_bytes()).hexdigest()
    assert source_hash(LEVEL2) == hashlib.sha256(LEVEL2.read_bytes()).hexdigest()
    with pytest.raises(SocialOmniError, match="cannot read"):
        source_hash(tmp_path / "absent.json")
