"""The taxonomy is the subcategory files: a new file is a new subcategory with no code change, and a file that
contradicts the taxonomy is refused before any agent call (paid calls)."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from bench_factory import instance
from pydantic import ValidationError

import omnivchat.bench._taxonomy as taxonomy
from omnivchat.bench import (
    MULTI_TURN_EXTENSIONS,
    SUBCATEGORIES,
    Instance,
    TaxonomyError,
    add_subcategory,
    check_subcategory,
    resolve_subcategory,
    taxonomy_header,
)
from omnivchat.studio.config import SHIPPED_DIR, ConfigError, load_config, read_config_data
from omnivchat.studio.engine import Agents, studio_run

ICC = read_config_data(SHIPPED_DIR / "icc.yaml")
MULTI = {"turns": "multi", "attributes": {**ICC["attributes"], "turns": ICC["attributes"]["language"]}}
NEW = {**copy.deepcopy(ICC), "code": "NCC", "name": "Nightly Connectivity Check", "summary": "Answers a late check."}


@pytest.fixture
def restored_taxonomy() -> Iterator[None]:
    """The process's taxonomy as it was, after a test that adds to it."""
    saved = [(table, dict(table)) for table in (SUBCATEGORIES, MULTI_TURN_EXTENSIONS, taxonomy._BY_PATH)]
    yield
    for table, contents in saved:
        table.clear()
        table.update(contents)  # type: ignore[attr-defined]


def _write(folder: Path, data: dict[str, Any], name: str) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_a_new_subcategory_file_from_a_temp_folder(tmp_path: Path, restored_taxonomy: None) -> None:
    path = _write(tmp_path, NEW, "ncc.yaml")
    config = load_config(path)  # checked against the taxonomy, not added to it
    assert config.code == "NCC" and "NCC" not in SUBCATEGORIES
    with pytest.raises(TaxonomyError, match="unknown subcategory 'NCC'"):
        check_subcategory(config.code, config.category, config.turns, str(path))
    with pytest.raises(ValidationError, match="NCC"):
        Instance.model_validate(instance(subcategory="NCC"))

    sub = add_subcategory(taxonomy_header(path), str(path))  # what the shipped folder's files get on import
    assert (sub.path, sub.kind, sub.description) == ("DSLP-VCC-NCC", "single", "Answers a late check.")
    assert list(SUBCATEGORIES)[-1] == "NCC" and resolve_subcategory("dslp-vcc-ncc") is sub
    assert Instance.model_validate(instance(subcategory="NCC")).subcategory == "NCC"
    assert check_subcategory(config.code, config.category, config.turns, str(path)) is sub


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"category": "MEA"}, "category"),  # a known code moved to another category
        (MULTI, "turns"),
        ({"group": "VTT"}, "group"),
        ({**NEW, "category": "XX"}, "category"),  # a new code in no category
        ({**NEW, "group": "RC"}, "group"),  # a group of another category
        ({**NEW, **MULTI, "extends": ["MDCC"]}, "extends"),  # extends a multi-turn subcategory
        ({**NEW, "summary": ""}, "summary"),
    ],
)
def test_a_file_that_contradicts_the_taxonomy_is_refused(tmp_path: Path, change: dict[str, Any], key: str) -> None:
    path = _write(tmp_path, {**copy.deepcopy(ICC), **change}, "bad.yaml")
    with pytest.raises(ConfigError, match=rf"{re.escape(str(path))}: {key}:"):
        load_config(path)


class _NoCalls:
    """An agent that fails the test when anything is asked of it."""

    name = "no-calls"

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"an agent was called ({attr}) before the taxonomy check")


def test_studio_run_checks_the_taxonomy_before_any_agent_call(tmp_path: Path) -> None:
    moved = load_config("ICC").model_copy(update={"category": "MEA"})
    agents = Agents(director=_NoCalls(), renderer=_NoCalls(), reviewer=_NoCalls())  # type: ignore[arg-type]
    out = tmp_path / "out"
    with pytest.raises(TaxonomyError, match="category: ICC is in category DSLP"):
        studio_run([moved], out, agents, n=1)
    assert not out.exists()
