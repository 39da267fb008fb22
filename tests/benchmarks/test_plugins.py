"""Benchmarks of other packages: an installed distribution's ``omnivchat.benchmarks`` entry point registers its
benchmark, and ``omnivchat benchmarks`` lists it with its package (a plugin laid out in a temporary folder)."""

from __future__ import annotations

import sys
from pathlib import Path

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
