"""The 5 categories, 6 groups and 17 subcategories (Section 3, Appendix D.4-D.5)."""

import pytest

from omnivchat.bench import CATEGORIES, GROUPS, MULTI_TURN_EXTENSIONS, SUBCATEGORIES, resolve_subcategory


def test_counts_and_kinds():
    assert list(CATEGORIES) == ["DSLP", "MEA", "MSA", "AH", "ER"]
    assert set(GROUPS) == {"VCC", "VTT", "VDMC", "RC", "SDI", "IC"}
    assert len(SUBCATEGORIES) == 17
    multi = {code for code, s in SUBCATEGORIES.items() if s.kind == "multi"}
    assert multi == {"MDCC", "MVMS", "MRR", "MIST", "MTIC"}
    assert all(s.description and s.name for s in SUBCATEGORIES.values())


def test_paths_follow_the_paper():
    paths = {s.path for s in SUBCATEGORIES.values()}
    for path in ("DSLP-VDMC-SVMR", "MEA-RC-MRR", "MSA-IC-STIC", "MSA-PLA", "AH-AOR", "AH-FGC", "ER", "DSLP-VTT-UPC"):
        assert path in paths
    for s in SUBCATEGORIES.values():
        if s.group:
            assert GROUPS[s.group].category == s.category


def test_single_to_multi_pairs():
    assert MULTI_TURN_EXTENSIONS == {
        "MDCC": ("ICC",),
        "MVMS": ("SVMR",),
        "MRR": ("AR", "DR"),
        "MIST": ("SPSD",),
        "MTIC": ("STIC",),
    }
    for multi, singles in MULTI_TURN_EXTENSIONS.items():
        assert SUBCATEGORIES[multi].kind == "multi"
        assert all(SUBCATEGORIES[s].kind == "single" for s in singles)
        assert {SUBCATEGORIES[s].group for s in singles} == {SUBCATEGORIES[multi].group}


@pytest.mark.parametrize("name", ["SVMR", "svmr", "DSLP-VDMC-SVMR", " dslp-vdmc-svmr "])
def test_resolve_codes_and_paths(name):
    assert resolve_subcategory(name).code == "SVMR"


def test_resolve_unknown():
    with pytest.raises(KeyError, match="unknown subcategory 'DSLP-SVMR'"):
        resolve_subcategory("DSLP-SVMR")


def test_the_taxonomy_is_unchanged() -> None:
    """The taxonomy read from the subcategory files is the one written in code before (tests/bench/data)."""
    import dataclasses
    import json
    from pathlib import Path

    saved = json.loads((Path(__file__).parent / "data" / "taxonomy.json").read_text(encoding="utf-8"))
    assert [dict(dataclasses.asdict(s), path=s.path) for s in SUBCATEGORIES.values()] == saved["subcategories"]
    assert {k: list(v) for k, v in MULTI_TURN_EXTENSIONS.items()} == saved["multi_turn_extensions"]
    assert [dataclasses.asdict(c) for c in CATEGORIES.values()] == saved["categories"]
    assert [dataclasses.asdict(g) for g in GROUPS.values()] == saved["groups"]
