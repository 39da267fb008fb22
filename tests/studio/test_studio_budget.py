"""`studio run --budget` (issue 17): the hosted synthesis on loopback servers counts what each agent call cost (the
Director's and Reviewer's usage at their prices, each render at the renderer's), stops once the next call would
pass the budget (exit 3, the budget named, instances left not run), and a rerun with a larger budget finishes
without paying again for what was made."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.runs import RunStore, tally
from omnivchat.testing import LoopbackServer
from omnivchat.testing._videos import VideoMockServer

from .test_hosted_agents import Scripted
from .test_hosted_run import KEY, _configs

PRICE = "price = { input_per_mtok = 1.0, output_per_mtok = 2.0 }"


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from omnivchat.synth import render_clip

    spec = {"duration": 5.0, "size": [64, 36], "speech": [{"text": "What colour is the cube?", "language": "en"}]}
    return render_clip(spec, tmp_path_factory.mktemp("wan") / "clip.mp4", use_cache=False).path.read_bytes()


def _agents_file(tmp: Path, llm: LoopbackServer, videos: VideoMockServer, *, priced: bool = True) -> Path:
    path = tmp / "agents.toml"
    price = PRICE if priced else ""
    path.write_text(
        f"""
[director]
model = "director-llm"
base_url = "{llm.base_url}"
no_key = true
{price}

[reviewer]
model = "reviewer-omni"
base_url = "{llm.base_url}"
no_key = true
media_input = "video_url"
{price}

[renderer]
kind = "wan"
model = "wan2.6-t2v"
base_url = "{videos.url}"
api_key_env = "OMNIVCHAT_TEST_DASHSCOPE_KEY"
poll_interval_s = 0.01
timeout_s = 20
price_per_s = 0.1
""",
        encoding="utf-8",
    )
    return path


def test_studio_budget_stops_then_resumes(tmp_path, clip_bytes, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_TEST_DASHSCOPE_KEY", KEY)
    out = tmp_path / "bench"
    with LoopbackServer(rules=Scripted()) as llm, VideoMockServer(clip_bytes, api_key=KEY) as videos:
        agents = _agents_file(tmp_path, llm, videos)
        args = ["studio", "run", *_configs(tmp_path), "--n", "2", "--backend", "hosted", "--agents", str(agents)]
        args += ["-o", str(out), "--concurrency", "1", "--no-progress"]
        stopped = CliRunner().invoke(app, [*args, "--budget", "1.2"])
        renders_first = len(videos.submissions())
        with RunStore(out / "studio" / "calls.sqlite") as store:
            first = tally(store.cost_rows()).total
        resumed = CliRunner().invoke(app, [*args, "--budget", "100"])
        renders = len(videos.submissions())
    assert stopped.exit_code == 3, stopped.output
    assert "budget $1.2000 reached" in stopped.output and "not sent (not run, not failed)" in stopped.output
    assert "cost of this invocation's agent calls: $" in stopped.output
    assert 1 <= renders_first <= 3  # $0.50 a render (5 s at $0.10/s): stopped part-way
    assert first.spent_usd <= 1.2 + 0.01 and first.n_unknown == 0  # LLM calls cost a fraction of a cent here
    assert resumed.exit_code == 0, resumed.output
    assert "accepted 4 of 4" in resumed.output
    with RunStore(out / "studio" / "calls.sqlite") as store:
        total = tally(store.cost_rows()).total
    renders_priced = 0.5 * renders  # every render submitted once, at its price, and counted once
    assert total.spent_usd == pytest.approx(renders_priced, abs=0.05)


def test_studio_budget_needs_prices(tmp_path, clip_bytes, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_TEST_DASHSCOPE_KEY", KEY)
    with LoopbackServer(rules=Scripted()) as llm, VideoMockServer(clip_bytes, api_key=KEY) as videos:
        agents = _agents_file(tmp_path, llm, videos, priced=False)
        args = ["studio", "run", *_configs(tmp_path), "--n", "1", "--backend", "hosted", "--agents", str(agents)]
        result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "b"), "--budget", "5", "--no-progress"])
        assert llm.count == 0 and not videos.submissions()
    assert result.exit_code == 2
    assert "--budget needs a price for director-llm (the Director: give it a price in the agents file)" in result.output
