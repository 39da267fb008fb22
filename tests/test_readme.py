"""The README's examples run as written: its judges file loads, and every judge in it resolves to a server."""

from __future__ import annotations

import re
from pathlib import Path

from omnivchat.judges import judge_route, load_judges

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_judges_file_resolves_every_judge(tmp_path, monkeypatch):
    block = re.search(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert block is not None, "the README shows a judges file"
    path = tmp_path / "judges.toml"
    path.write_text(block.group(1), encoding="utf-8")
    config = load_judges(path)
    assert config.panel("default")
    for spec in config.judges.values():
        monkeypatch.setenv(spec.api_key_env, "test-token-not-a-key")
        route = judge_route(spec)
        assert route.endpoint.startswith("https://") and route.endpoint.endswith("/chat/completions"), spec.name
