"""`omnivchat studio run --backend hosted` end to end over real HTTP: a Director and a Reviewer on a loopback
OpenAI-compatible server (answering as scripted), and Wan 2.6 on a loopback mock of DashScope's video API that
refuses one prompt (moderation: the script is rewritten) and fails one task (the clip is re-seeded). The cost and
the agent calls per accepted instance come out of the accounting."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from omnivchat.bench import load_bench
from omnivchat.benchmarks.native import BenchClipChecker
from omnivchat.cli import app
from omnivchat.studio.engine import read_trace
from omnivchat.testing import LoopbackServer
from omnivchat.testing._videos import VideoMockServer, VideoTask

from .test_engine import MULTI, SINGLE
from .test_hosted_agents import Scripted

KEY = "sk-dashscope-test-Hq7Wm2Lp9Xc4"


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from omnivchat.synth import render_clip

    spec = {"duration": 5.0, "size": [64, 36], "speech": [{"text": "What colour is the cube?", "language": "en"}]}
    return render_clip(spec, tmp_path_factory.mktemp("wan") / "clip.mp4", use_cache=False).path.read_bytes()


def _agents_file(tmp: Path, llm: LoopbackServer, videos: VideoMockServer) -> Path:
    path = tmp / "agents.toml"
    path.write_text(
        f"""
[director]
model = "director-llm"
base_url = "{llm.base_url}"
no_key = true

[reviewer]
model = "reviewer-omni"
base_url = "{llm.base_url}"
no_key = true
media_input = "video_url"

[renderer]
kind = "wan"
model = "wan2.6-t2v"
base_url = "{videos.url}"
api_key_env = "OMNIVCHAT_TEST_DASHSCOPE_KEY"
poll_interval_s = 0.01
timeout_s = 20
""",
        encoding="utf-8",
    )
    return path


def _configs(tmp: Path) -> list[str]:
    out = []
    for config in (SINGLE, MULTI):
        path = tmp / f"{config['code'].lower()}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        out += ["--config", str(path)]
    return out


def test_a_hosted_synthesis_with_a_moderation_refusal_and_a_failed_render(tmp_path, clip_bytes, monkeypatch):
    monkeypatch.setenv("OMNIVCHAT_TEST_DASHSCOPE_KEY", KEY)
    out = tmp_path / "bench"
    rules = Scripted()  # answers follow the attributes each request shows (MVMS samples 2 or 3 turns)
    with LoopbackServer(rules=rules) as llm, VideoMockServer(clip_bytes, api_key=KEY) as videos:
        videos.script(VideoTask(submit_refusal=True), VideoTask(outcome="fail"))
        agents = _agents_file(tmp_path, llm, videos)
        args = ["studio", "run", *_configs(tmp_path), "--n", "2", "--backend", "hosted", "--agents", str(agents)]
        result = CliRunner().invoke(app, [*args, "-o", str(out), "--concurrency", "1", "--no-progress"])
        submissions = len(videos.submissions())
    assert result.exit_code == 0, result.output
    printed = result.output
    assert "accepted 4 of 4" in printed
    per = re.search(
        r"per accepted instance: director ([\d.]+), renderer ([\d.]+), reviewer ([\d.]+) calls; "
        r"render cost \$([\d.]+)",
        printed,
    )
    assert per is not None, printed
    director, renderer, reviewer, cost = map(float, per.groups())
    assert renderer * 4 == submissions  # every render submitted once: a rerun of a call is never paid twice
    assert cost > 0 and director > reviewer > 0
    print(
        f"\nhosted mock run: per accepted instance {director} director, {renderer} renderer, {reviewer} "
        f"reviewer calls, ${cost:.4f} render cost"
    )

    traces = [read_trace(p) for p in sorted((out / "studio" / "traces").glob("*.json"))]
    renders = [(t.id, s.decision, s.summary) for t in traces for s in t.steps if s.module in ("8", "f")]
    refused = [r for r in renders if r[1] == "fail" and "DataInspectionFailed" in r[2]]
    failed = [r for r in renders if r[1] == "fail" and "DataInspectionFailed" not in r[2]]
    assert len(refused) == 1 and len(failed) == 1
    repairs = {k: sum(t.repairs.get(k, 0) for t in traces) for k in ("rewrite", "render")}
    assert repairs == {"rewrite": 1, "render": 1}
    assert KEY not in json.dumps([t.model_dump() for t in traces])
    assert KEY not in printed
    manifest = json.loads((out / "studio" / "manifest.json").read_text())
    assert manifest["agents"]["renderer"].startswith("wan:wan2.6-t2v") and KEY not in json.dumps(manifest)

    bench = load_bench(out, check_media=BenchClipChecker())
    assert len(bench.instances) == 4
    assert {len(i.turns) for i in bench.instances if i.subcategory == "MVMS"} <= {2, 3}
