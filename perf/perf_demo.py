"""How long ``omnivchat demo`` takes cold and warm; prints the figures measured in one run.

- cold: ``omnivchat demo -o NEW --no-progress`` with a new, empty ``OMNIVCHAT_CACHE_DIR`` and a new, empty
  ``PYTHONPYCACHEPREFIX`` (so every module is compiled to bytecode, as on the first run after a fresh install;
  ``PYTHONDONTWRITEBYTECODE`` is unset, so the bytecode is written as a first run writes it);
- installed: the same with a new, empty cache but the bytecode the install left, in this environment as it is
  (where PYTHONDONTWRITEBYTECODE is set, a module the install did not compile is compiled again on every start):
  what a user's first demo after `uv sync` costs;
- warm: the same command into another new directory, with the cache and the bytecode the cold run left.

Each run is its own process, timed from start to exit (wall) and by the CPU time it and its children used (user +
sys, which a busy machine disturbs less). Target: cold <= 20 s on 2 cores.

Run: ``uv run python perf/perf_demo.py [--json] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_COLD_S = 20.0


def timed_demo(output: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the demo process and its children) of one demo into ``output``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "omnivchat", "demo", "-o", str(output), "--no-progress"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"omnivchat demo failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="run in this new directory and keep it (default: a temporary one)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="perf-demo-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["OMNIVCHAT_CACHE_DIR"] = str(root / "cache")
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        cold_s, cold_cpu = timed_demo(root / "cold", env)
        warm_s, warm_cpu = timed_demo(root / "warm", env)
        installed = {**os.environ, "OMNIVCHAT_CACHE_DIR": str(root / "cache-installed")}
        installed_s, installed_cpu = timed_demo(root / "installed", installed)

    figures = {
        "cold_s": round(cold_s, 2),
        "cold_cpu_s": round(cold_cpu, 2),
        "installed_s": round(installed_s, 2),
        "installed_cpu_s": round(installed_cpu, 2),
        "warm_s": round(warm_s, 2),
        "warm_cpu_s": round(warm_cpu, 2),
        "cold_vs_target": round(cold_s / TARGET_COLD_S, 3),
        "cold_vs_warm": round(cold_s / warm_s, 3),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"demo cold: {cold_s:.1f} s (CPU {cold_cpu:.1f} s) = {figures['cold_vs_target']} of the "
        f"{TARGET_COLD_S:g} s target"
    )
    print(
        f"demo first run after install (empty caches, the install's bytecode): {installed_s:.1f} s "
        f"(CPU {installed_cpu:.1f} s) = {installed_s / TARGET_COLD_S:.3f} of the target"
    )
    print(f"demo warm: {warm_s:.1f} s (CPU {warm_cpu:.1f} s); cold / warm = {figures['cold_vs_warm']}")
    print(f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
