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
