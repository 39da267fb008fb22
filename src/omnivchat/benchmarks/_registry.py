"""The registry of benchmarks: by name (what a user types and a manifest records) and by manifest protocol
(how an existing run directory is recognised)."""

from __future__ import annotations

from pathlib import Path

from omnivchat._files import loads_json, read_text, validate_file
from omnivchat.benchmarks._protocol import Benchmark
from omnivchat.errors import OmnivchatError
from omnivchat.runs import Manifest

_REGISTRY: dict[str, Benchmark] = {}


class UnknownBenchmark(OmnivchatError):
    """A benchmark name, or a run directory, that no registered benchmark knows."""


def register(benchmark: Benchmark) -> Benchmark:
    """Add ``benchmark`` under its name (a second one with the same name replaces nothing: it is refused)."""
    if not isinstance(benchmark, Benchmark):
        raise TypeError(f"{benchmark!r} does not implement the Benchmark protocol")
    known = _REGISTRY.get(benchmark.name)
    if known is not None and known is not benchmark:
        raise ValueError(f"a benchmark named {benchmark.name!r} is already registered")
    _REGISTRY[benchmark.name] = benchmark
    return benchmark


def registered() -> dict[str, Benchmark]:
    """Every registered benchmark by name, in registration order."""
    return dict(_REGISTRY)


def get_benchmark(name: str) -> Benchmark:
    if name not in _REGISTRY:
        raise UnknownBenchmark(f"no benchmark named {name!r}; registered: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def _protocols() -> str:
    return ", ".join(p for b in _REGISTRY.values() for p in b.protocols)


def read_run_manifest(run_dir: Path) -> Manifest:
    """A run directory's manifest.json (any benchmark's: its protocol, its benchmark's name, and the benchmark's
    own fields, read with :meth:`Manifest.value`), or an error naming the file."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise UnknownBenchmark(
            f"{run_dir}: not a run directory (no manifest.json; expected manifest.json with protocol {_protocols()})"
        )
    try:
        data = loads_json(read_text(path, "manifest"))
    except ValueError as err:
        raise UnknownBenchmark(f"{path}: cannot read the manifest ({err})") from None
    if not isinstance(data, dict):
        raise UnknownBenchmark(f"{path}: not a run manifest (expected a JSON object)")
    return validate_file(Manifest, data, path, "run manifest", error=UnknownBenchmark)


def benchmark_of(run_dir: Path) -> Benchmark:
    """The benchmark that made ``run_dir``: by the manifest's ``benchmark`` name, else by its protocol (runs made
    before names were recorded)."""
    manifest = read_run_manifest(run_dir)
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
