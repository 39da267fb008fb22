"""Benchmarks of other packages: an installed distribution's ``omnivchat.benchmarks`` entry point registers its
benchmark, and ``omnivchat benchmarks`` lists it with its package (a plugin laid out in a temporary folder)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from omnivchat.benchmarks import (
    BenchmarkPluginError,
    _registry,
    get_benchmark,
    load_plugins,
    package_of,
    registered,
)
from omnivchat.cli import app

runner = CliRunner()

PLUGIN = """
from omnivchat.benchmarks import Item


class LabBench:
    name = "labbench"
    title = "Lab bench: a benchmark shipped in its own package"
    protocols = ("labbench-run-v1",)
    sampling = {}

    def chance(self, task):
        return 0.5

    def load(self, source):
        return []

    def items(self, dataset, options):
        return [Item(str(n), "qa", row) for n, row in enumerate(dataset)]

    def manifest(self, dataset, route, options):
        return {"protocol": self.protocols[0], "benchmark": self.name}

    def request(self, dataset, item, options, work_dir, meta):
        raise NotImplementedError

    def score(self, dataset, run_dir, options):
        raise NotImplementedError


BENCHMARK = LabBench()
"""


def _install(root: Path, module: str, source: str, entry: str, dist: str = "lab-bench") -> None:
    """A distribution as pip would leave it: the module, and a dist-info with its entry points."""
    (root / f"{module}.py").write_text(source)
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[omnivchat.benchmarks]\n{entry}\n")


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary site folder on sys.path; the registry as it was is restored after the test."""
    registered()  # the shipped ones (and any installed plugin) first
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    monkeypatch.setattr(_registry, "_PACKAGES", dict(_registry._PACKAGES))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("labbench_")]:
        del sys.modules[name]


def test_an_installed_plugin_registers_and_is_listed_with_its_package(plugins: Path) -> None:
    _install(plugins, "labbench_plugin", PLUGIN, "labbench = labbench_plugin:BENCHMARK")
    load_plugins(reload=True)
    assert get_benchmark("labbench").chance("qa") == 0.5
    assert package_of("labbench") == "lab-bench" and package_of("omnivchat") == "omnivchat"
    listed = runner.invoke(app, ["benchmarks"], env={"COLUMNS": "250"})
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if "labbench " in line)
    assert "lab-bench" in row and "labbench-run-v1" in row
    assert "package" in listed.output


def test_a_plugin_module_that_registers_itself_is_attributed_to_its_package(plugins: Path) -> None:
    source = PLUGIN + "\nfrom omnivchat.benchmarks import register\nregister(BENCHMARK)\n"
    _install(plugins, "labbench_module", source, "labbench = labbench_module", dist="lab-module")
    load_plugins(reload=True)
    assert "labbench" in registered() and package_of("labbench") == "lab-module"


def test_a_plugin_that_does_not_load_is_named(plugins: Path) -> None:
    _install(plugins, "labbench_broken", "raise ImportError('no torch here')\n", "broken = labbench_broken:X")
    with pytest.raises(BenchmarkPluginError, match=r"plugin 'broken' of package lab-bench .* no torch here"):
        load_plugins(reload=True)


OPTIONS_PLUGIN = """
from types import MappingProxyType

from omnivchat.benchmarks import OptionsModel, read_options


class LabOptions(OptionsModel):
    split: str = "test"
    shots: int = 0


class OptionsBench:
    name = "labopts"
    title = "Lab bench with options of its own"
    protocols = ("labopts-run-v1",)
    sampling = {}
    option_models = MappingProxyType({"load": LabOptions})

    def chance(self, task):
        return 0.5

    def load(self, source):
        return read_options(self, "load", source.options, LabOptions)

    def items(self, dataset, options):
        return []

    def manifest(self, dataset, route, options):
        return {"protocol": self.protocols[0], "benchmark": self.name}

    def request(self, dataset, item, options, work_dir, meta):
        raise NotImplementedError

    def score(self, dataset, run_dir, options):
        raise NotImplementedError


BENCHMARK = OptionsBench()
"""


def test_a_plugin_declaring_its_own_options_receives_them_validated(plugins: Path) -> None:
    from omnivchat.benchmarks import BenchmarkOptionError, OwnOptions, Source, check_options

    _install(plugins, "labbench_options", OPTIONS_PLUGIN, "labopts = labbench_options:BENCHMARK", dist="lab-opts")
    load_plugins(reload=True)
    bench = get_benchmark("labopts")
    assert isinstance(bench, OwnOptions)
    loaded = bench.load(Source(data=plugins, options={"split": "dev", "shots": 3}))
    assert type(loaded).__name__ == "LabOptions" and (loaded.split, loaded.shots) == ("dev", 3)
    assert bench.load(Source(data=plugins)).split == "test"  # its own default
    with pytest.raises(
        BenchmarkOptionError, match=r"^the labopts benchmark: --split \(eval\): Input should be a valid string"
    ):
        bench.load(Source(data=plugins, options={"split": ["dev"]}))
    with pytest.raises(
        BenchmarkOptionError, match=r"^the labopts benchmark does not take --asr \(score\): it takes no options"
    ):
        check_options(bench, "score", {"asr": "whisper"})
    # Through the CLI: a flag it does not take is refused naming it and what it takes, before anything is written.
    refused = runner.invoke(
        app,
        ["eval", "--benchmark", "labopts", "--data", str(plugins), "--model", "sim:healthy", "--columns", "q=Q",
         "-o", str(plugins / "run")],
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert refused.exit_code != 0 and not (plugins / "run").exists()
    said = " ".join(refused.output.split())
    assert "the labopts benchmark does not take --columns (eval): it takes --split, --shots" in said


# A multiple-choice benchmark in a package of its own, on omnivchat's public kit: a reader, its prompt card in
# labmcq/cards/, its published counting rule (its scorer takes the first capital A-D: "Based on..." is B).
MCQ_PLUGIN = """
import json
import re
from pathlib import Path

from omnivchat.benchmarks import Source, register
from omnivchat.benchmarks.mcq import (
    McqBenchmark, McqMedia, OfficialRule, Release, add_item, gold_letter, inside, option_texts, text_field,
)


def read(source: Source) -> Release:
    path = Path(source.data)
    release = Release(path=path, media_root=Path(source.media or path.parent))
    for n, row in enumerate(json.loads(path.read_text()), start=1):
        problems = []
        where = f"{path}: item {n}"
        options = option_texts(row.get("options"), problems, prefixed=False)
        add_item(
            release, where, problems,
            id=text_field(row, "id", problems),
            question=text_field(row, "question", problems),
            options=options,
            gold=gold_letter(row, "answer", options, problems),
            media=McqMedia("video", (inside(release.media_root, row["video"], problems, "video"),), ()),
            cluster=row["video"],
            breakdown={"skill": (row["skill"],)},
        )
    return release


def first_capital(reply, options=()):
    found = re.search("[ABCD]", reply)
    return found.group() if found else None


BENCHMARK = register(McqBenchmark(
    name="labmcq",
    title="Lab MCQ: four-way questions on a clip, from a lab's own package",
    read=read,
    breakdowns=("skill",),
    group="skill",
    official=OfficialRule(
        counting="as Lab MCQ's own script counts", source="lab/labmcq score.py", read=first_capital,
        unparsed="left out", failed="left out",
    ),
))
"""

CARD = "Question: {question}\n{options}\nAnswer with the letter ({letters}) only."


def _install_package(root: Path, package: str, files: dict[str, str], entry: str, dist: str) -> None:
    for relative, text in files.items():
        target = root / package / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[omnivchat.benchmarks]\n{entry}\n")


def test_a_multiple_choice_plugin_runs_from_the_list_to_its_scores(plugins: Path, small_bench, tmp_path) -> None:
    """`benchmarks` lists it, `eval` finds its card beside it, `score` prints the headline and its own counting."""
    from omnivchat.testing import Behaviour, LoopbackServer, message_text

    for name in [m for m in sys.modules if m == "labmcq" or m.startswith("labmcq.")]:
        del sys.modules[name]
    _install_package(
        plugins, "labmcq", {"__init__.py": MCQ_PLUGIN, "cards/labmcq.txt": CARD}, "labmcq = labmcq", "lab-mcq"
    )
    load_plugins(reload=True)
    listed = runner.invoke(app, ["benchmarks"], env={"COLUMNS": "250"})
    assert listed.exit_code == 0, listed.output
    assert "lab-mcq" in next(line for line in listed.output.splitlines() if "labmcq " in line)

    clip = small_bench.media_path(small_bench.instances[0].turns[-1])
    data = tmp_path / "release" / "questions.json"
    data.parent.mkdir()
    (data.parent / "clip.mp4").write_bytes(clip.read_bytes())
    questions = [
        {"id": "q1", "question": "What shape is on the left?", "options": ["circle", "square", "star", "heart"],
         "answer": "B", "video": "clip.mp4", "skill": "shapes"},
        {"id": "q2", "question": "What colour is it?", "options": ["blue", "green", "red", "black"],
         "answer": "C", "video": "clip.mp4", "skill": "colours"},
        {"id": "q3", "question": "How many objects?", "options": ["one", "two", "three", "four"],
         "answer": "A", "video": "clip.mp4", "skill": "counting"},
    ]  # fmt: skip
    data.write_text(json.dumps(questions))
    replies = {"left": "B", "colour": "Based on the video, C", "many": "I cannot tell."}

    def rules(request: dict[str, Any]) -> Behaviour:
        text = message_text(request)
        assert text.startswith("Question: ") and text.endswith("Answer with the letter (A, B, C or D) only.")
        return Behaviour(text=next(r for k, r in replies.items() if k in text))

    run_dir = tmp_path / "run"
    args = ["eval", "--benchmark", "labmcq", "--data", str(data), "-o", str(run_dir), "--no-progress"]
    with LoopbackServer(rules=rules) as server:
        model = ["--model", "Qwen/Qwen3-Omni-30B-A3B-Instruct", "--base-url", server.base_url, "--no-key"]
        result = runner.invoke(app, [*args, *model], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["benchmark"] == "labmcq" and manifest["prompt_card"]["source"].endswith("labmcq/cards/labmcq.txt")

    scored = runner.invoke(app, ["score", str(run_dir)], env={"COLUMNS": "300"})
    assert scored.exit_code == 0, scored.output
    out = " ".join(scored.output.split())
    assert "overall: accuracy 0.667 (2 of 3 right)" in out  # "Based on the video, C" is C; "I cannot tell." wrong
    assert "as Lab MCQ's own script counts: 0.500 (1 of 2 counted)" in out  # "Based..." is B; "I cannot..." out


def test_a_multiple_choice_plugin_without_its_card_says_where_it_looked(plugins: Path, tmp_path) -> None:
    for name in [m for m in sys.modules if m == "labmcq" or m.startswith("labmcq.")]:
        del sys.modules[name]
    _install_package(plugins, "labmcq", {"__init__.py": MCQ_PLUGIN}, "labmcq = labmcq", "lab-mcq")
    load_plugins(reload=True)
    data = tmp_path / "questions.json"
    row = {"id": "q1", "question": "Which?", "options": ["a", "b"], "answer": "A", "video": "clip.mp4", "skill": "s"}
    data.write_text(json.dumps([row]))
    result = runner.invoke(
        app, ["eval", "--benchmark", "labmcq", "--data", str(data), "--model", "sim:healthy", "-o", str(tmp_path / "r")]
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output and not isinstance(result.exception, FileNotFoundError)
    flat = " ".join(result.output.split())
    assert "labmcq/cards/labmcq.txt: cannot read the benchmark's prompt card (no such file)" in flat, flat
    assert "--prompts FILE" in flat
