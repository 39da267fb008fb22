"""The registry of benchmarks: by name (what a user types and a manifest records) and by manifest protocol
(how an existing run directory is recognised).

Benchmarks of other packages register through the entry-point group ``omnivchat.benchmarks``: each entry names a
Benchmark object (``mylab.bench:BENCHMARK``), or a module that calls :func:`register` when imported. They load
the first time the registry is read, so a lab ships its benchmark as a package, without forking omnivchat.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from omnivchat._files import loads_json, read_text, validate_file
from omnivchat.benchmarks._protocol import Benchmark
from omnivchat.errors import OmnivchatError
from omnivchat.runs import Manifest, RunError

ENTRY_POINTS = "omnivchat.benchmarks"
SHIPPED = "omnivchat"  # the package of the benchmarks omnivchat itself registers

_REGISTRY: dict[str, Benchmark[Any]] = {}
_PACKAGES: dict[str, str] = {}  # benchmark name -> the distribution that registered it
_plugins_loaded = False


class UnknownBenchmark(OmnivchatError):
    """A benchmark name, or a run directory, that no registered benchmark knows."""


class BenchmarkPluginError(OmnivchatError):
    """An installed package's ``omnivchat.benchmarks`` entry point that does not load, or is no benchmark."""


def register(benchmark: Benchmark[Any]) -> Benchmark[Any]:
    """Add ``benchmark`` under its name (a second one with the same name replaces nothing: it is refused)."""
    if not isinstance(benchmark, Benchmark):
        raise TypeError(f"{benchmark!r} does not implement the Benchmark protocol")
    known = _REGISTRY.get(benchmark.name)
    if known is not None and known is not benchmark:
        raise ValueError(f"a benchmark named {benchmark.name!r} is already registered")
    _REGISTRY[benchmark.name] = benchmark
    _PACKAGES.setdefault(benchmark.name, SHIPPED)
    return benchmark


def load_plugins(*, reload: bool = False) -> None:
    """Register the benchmarks of every installed ``omnivchat.benchmarks`` entry point (once; ``reload`` reads
    the entry points again, for packages installed since). A plugin that fails to load is an error naming it."""
    global _plugins_loaded
    if _plugins_loaded and not reload:
        return
    _plugins_loaded = True
    for point in entry_points(group=ENTRY_POINTS):
        package = point.dist.name if point.dist is not None else point.module
        before = set(_REGISTRY)
        try:
            loaded = point.load()
            if isinstance(loaded, Benchmark):
                register(loaded)
            elif not isinstance(loaded, ModuleType):
                raise TypeError(f"{point.value} is neither a Benchmark nor a module that registers one")
        except Exception as err:
            raise BenchmarkPluginError(
                f"benchmark plugin {point.name!r} of package {package} ({ENTRY_POINTS} entry point {point.value}) "
                f"does not load: {err}"
            ) from err
        for name in set(_REGISTRY) - before:
            _PACKAGES[name] = package


def registered() -> dict[str, Benchmark[Any]]:
    """Every registered benchmark by name, in registration order (omnivchat's, then the plugins')."""
    load_plugins()
    return dict(_REGISTRY)


def package_of(name: str) -> str:
    """The package a registered benchmark comes from: ``omnivchat``, or the distribution of its entry point."""
    get_benchmark(name)
    return _PACKAGES.get(name, SHIPPED)


def get_benchmark(name: str) -> Benchmark[Any]:
    load_plugins()
    if name not in _REGISTRY:
        raise UnknownBenchmark(f"no benchmark named {name!r}; registered: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def _protocols() -> str:
    return ", ".join(p for b in _REGISTRY.values() for p in b.protocols)


def read_run_manifest(run_dir: Path) -> Manifest:
    """A run directory's manifest.json (any benchmark's: its protocol, its benchmark's name, and the benchmark's
    own fields, read with :meth:`Manifest.value`), or a RunError naming the file (the directory is not a readable
    run: which benchmark made it is not the question yet)."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise RunError(
            f"{run_dir}: not a run directory (no manifest.json; expected manifest.json with protocol {_protocols()})"
        )
    try:
        data = loads_json(read_text(path, "manifest"))
    except ValueError as err:
        raise RunError(f"{path}: cannot read the manifest ({err})") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: not a run manifest (expected a JSON object)")
    return validate_file(Manifest, data, path, "run manifest", error=RunError)


def benchmark_of(run_dir: Path) -> Benchmark[Any]:
    """The benchmark that made ``run_dir``: by the manifest's ``benchmark`` name, else by its protocol (runs made
    before names were recorded)."""
    manifest = read_run_manifest(run_dir)
    load_plugins()
    name = manifest.benchmark
    if name is not None and name in _REGISTRY:
        return _REGISTRY[name]
    protocol = manifest.protocol  # the first native manifests had no protocol field: the native one
    for benchmark in _REGISTRY.values():
        if protocol in benchmark.protocols:
            return benchmark
    raise UnknownBenchmark(
        f"{run_dir / 'manifest.json'}: unknown protocol {protocol!r} (expected one of {_protocols()}); no registered "
        f"benchmark made it (registered: {', '.join(_REGISTRY)})"
    )
