"""The loaded subcategory configurations are exactly what they were before the shared attribute pools moved to
one file: every shipped config against the dump of today's loaded values (tests/studio/data/loaded_configs.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from omnivchat.studio.config import load_all

FIXTURE = json.loads((Path(__file__).parent / "data" / "loaded_configs.json").read_text(encoding="utf-8"))
LOADED = {c.code: c for c in load_all()}


def test_the_same_subcategories_load() -> None:
    assert sorted(LOADED) == sorted(FIXTURE)


@pytest.mark.parametrize("code", sorted(FIXTURE))
def test_a_loaded_config_is_unchanged(code: str) -> None:
    assert LOADED[code].model_dump(mode="json") == FIXTURE[code]


def test_the_shared_lists_are_written_once() -> None:
    """Every shipped file takes the 22 domains from the pools file instead of repeating them."""
    from omnivchat.studio.config import POOLS_FILE, SHIPPED_DIR

    for path in SHIPPED_DIR.glob("[!_]*.yaml"):
        assert "domain: {$pool: domain}" in path.read_text(encoding="utf-8"), path.name
    assert "parenting:" in POOLS_FILE.read_text(encoding="utf-8")


def test_an_unknown_pool_is_one_clear_error(tmp_path: Path) -> None:
    from omnivchat.studio.config import SHIPPED_DIR, ConfigError, load_config

    text = (SHIPPED_DIR / "icc.yaml").read_text(encoding="utf-8")
    path = tmp_path / "icc.yaml"
    path.write_text(text.replace("{$pool: domain}", "{$pool: domains}"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"icc\.yaml: unknown pool 'domains'"):
        load_config(path)
