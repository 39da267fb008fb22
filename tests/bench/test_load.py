"""Loading, validating and saving bench directories: every problem named by file, line and field."""

import json

import pytest
from bench_factory import instance

from omnivchat.bench import BenchError, Instance, load_bench, save_bench


def problems_of(path) -> list[str]:
    with pytest.raises(BenchError) as info:
        load_bench(path)
    return info.value.problems


def test_valid_single_and_multi_turn(make_bench):
    root = make_bench([instance("a1"), instance("b2", "DSLP-VCC-MDCC", turns=3, language="zh", requires=["audio"])])
    bench = load_bench(root)
    assert [i.id for i in bench.instances] == ["a1", "b2"]
    multi = bench.get("b2")
    assert multi.subcategory == "MDCC"  # full path stored as the short code
    assert multi.is_multi_turn and not bench.get("a1").is_multi_turn
    assert [t.reply for t in multi.turns] == ["reply 1", "reply 2", None]
    assert multi.tiers == [0, 1, 2]
    assert multi.requires == ["audio"] and bench.get("a1").requires is None
    assert bench.media_path(multi.turns[0]) == root / "media/b2/turn1.mp4"
    assert isinstance(multi, Instance)


def test_save_and_reload_round_trip(make_bench, tmp_path):
    root = make_bench([instance("a1"), instance("b2", "MVMS", turns=2, language="zh")])
    bench = load_bench(root)
    save_bench(bench)
    text = (root / "bench.yaml").read_text()
    assert "en: 1" in text and "zh: 1" in text and "SVMR: 1" in text
    again = load_bench(root)
    assert again.instances == bench.instances
    assert again.info.subcategories == {"MVMS": 1, "SVMR": 1}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (instance(subcategory="XYZ"), "instances.jsonl:1: subcategory: unknown subcategory 'XYZ'"),
        (
            instance(rubric=[{"tier": 0, "text": "The reply is in English."}]),
            "instances.jsonl:1: rubric: rubric has no criterion outside tier 0",
        ),
        (
            instance(rubric=[{"tier": 1, "text": "Says the door is open."}]),
            "instances.jsonl:1: rubric: rubric has no tier-0 language gate",
        ),
        (
            instance(
                rubric=[
                    {"tier": 0, "text": "In English."},
                    {"tier": 0, "text": "In Chinese."},
                    {"tier": 1, "text": "y"},
                ]
            ),
            "instances.jsonl:1: rubric: rubric has 2 tier-0 criteria; it needs exactly one, the language gate",
        ),
        (
            instance(rubric=[{"tier": 0, "text": "x"}, {"tier": 2, "text": "y"}, {"tier": 1, "text": "z"}]),
            "instances.jsonl:1: rubric: tiers out of order: criterion 3 is tier 1 after tier 2",
        ),
        (
            instance(turns=[{"video": "/data/clip.mp4"}]),
            "instances.jsonl:1: turns[0].video: media path '/data/clip.mp4' is absolute",
        ),
        (
            instance(turns=[{"video": "media/../../secret.mp4"}]),
            "instances.jsonl:1: turns[0].video: media path 'media/../../secret.mp4' escapes the bench directory",
        ),
        (
            instance("m1", "MDCC", turns=[{"video": "media/m1/turn1.mp4"}, {"video": "media/m1/turn2.mp4"}]),
            "instances.jsonl:1: turns: non-final turn(s) 1 need a reference reply",
        ),
        (instance("s1", "SVMR", turns=2), "instances.jsonl:1: turns: SVMR is single-turn but has 2 turns"),
        (instance("m2", "MRR", turns=1), "instances.jsonl:1: turns: MRR is multi-turn but has only one turn"),
        (instance(language="English"), "instances.jsonl:1: language: language 'English' is not a language code"),
        (instance(id_="a b"), "instances.jsonl:1: id: id 'a b' must be letters"),
        (instance(colour="red"), "instances.jsonl:1: colour: Extra inputs are not permitted"),
        (instance(rubric=[{"tier": -1, "text": "x"}]), "instances.jsonl:1: rubric[0].tier: Input should be"),
        (instance(requires=["smell"]), "instances.jsonl:1: requires[0]: Input should be 'video' or 'audio'"),
        ("{not json", "instances.jsonl:1: not valid JSON"),
        ("[1, 2]", "instances.jsonl:1: must be a JSON object, got list"),
    ],
)
def test_each_validation_error_names_file_line_and_field(make_bench, row, message):
    found = problems_of(make_bench([row]))
    assert any(p.startswith(message) for p in found), found


def test_missing_media_file(make_bench):
    root = make_bench([instance("a1")])
    (root / "media/a1/turn1.mp4").unlink()
    assert problems_of(root) == ["instances.jsonl:1: turns[0].video: missing media file 'media/a1/turn1.mp4'"]


def test_symlink_escaping_the_bench_is_refused(make_bench, tmp_path):
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"clip")
    root = make_bench([instance("a1")])
    clip = root / "media/a1/turn1.mp4"
    clip.unlink()
    clip.symlink_to(outside)
    assert problems_of(root) == [
        "instances.jsonl:1: turns[0].video: media path 'media/a1/turn1.mp4' escapes the bench directory"
    ]


def test_duplicate_ids(make_bench):
    root = make_bench([instance("a1"), instance("b2"), instance("a1")])
    assert problems_of(root) == ["instances.jsonl:3: id: duplicate id 'a1' (first on line 1)"]


def test_all_problems_listed_at_once_never_half_loaded(make_bench):
    rows = [instance("ok1"), instance("bad1", subcategory="NOPE"), "oops", instance("ok1"), instance(language="")]
    found = problems_of(make_bench(rows))
    assert [p.split(":")[1] for p in found] == ["2", "3", "4", "5"]
    with pytest.raises(BenchError, match="4 problem"):
        load_bench(make_bench(rows))


def test_bench_yaml_problems(make_bench, tmp_path):
    assert problems_of(make_bench([instance()], info="name: [unclosed\n"))[0].startswith("bench.yaml:2: not valid YAML")
    assert problems_of(make_bench([instance()], info="version: 2\n")) == ["bench.yaml: name: Field required"]
    assert problems_of(make_bench([instance()], info="- a\n- b\n")) == [
        "bench.yaml: must be a mapping with at least 'name'"
    ]
    stale = "name: t\nsubcategories: {SVMR: 2}\n"
    assert problems_of(make_bench([instance()], info=stale))[0].startswith("bench.yaml: subcategories")
    (tmp_path / "bench" / "bench.yaml").unlink()
    assert problems_of(tmp_path / "bench")[0] == "bench.yaml: missing (it holds the bench name and version)"


def test_not_a_directory_and_empty(tmp_path, make_bench):
    assert problems_of(tmp_path / "nowhere") == ["not a directory"]
    root = make_bench([])
    (root / "instances.jsonl").write_text("\n\n")
    assert problems_of(root) == ["instances.jsonl: no instances"]


def test_instance_json_shape_matches_design(make_bench):
    """The example of DESIGN.md loads as written."""
    design = {
        "id": "085b292a",
        "subcategory": "SVMR",
        "language": "en",
        "source": "synthetic",
        "turns": [{"video": "media/085b292a/turn1.mp4"}],
        "reference": "The one on your left is closed. The door on your right is open.",
        "rubric": [
            {"tier": 0, "text": "The reply is in English."},
            {"tier": 1, "text": "Says the door on the user's left is closed."},
            {"tier": 2, "text": "Answers briefly."},
            {"tier": 3, "text": "Adds that the other door is open."},
        ],
        "requires": ["video", "audio"],
        "meta": {"domain": "office", "camera": "walking selfie", "transcript": "..."},
    }
    bench = load_bench(make_bench([design]))
    assert json.loads(bench.instances[0].model_dump_json())["rubric"][3]["tier"] == 3
