"""Speed of ``omnivchat.studio.sampling.sample_assignments`` (Eq. 7, Appendix C.2.1) on a space it cannot enumerate.

Measures, in one run:

- large: 10^4 distinct draws from a 10^10-assignment space (10 attributes x 10 values, 2 preference rules,
  1 exclusion), sampled by rejection without listing the space (target: about a second on 2 cores);
- small: 10^3 draws from a 6^5 = 7,776-assignment space with the same kind of rules, enumerated (Eq. 7 applied
  literally to every assignment);
- the ratio of the two per-draw times (large / small), which cancels most of the machine's speed.

Times are the median of a few repeats, each with a different seed. Never asserts.

Run: ``uv run python perf/perf_sampling.py [--json]``
"""

from __future__ import annotations

import argparse
import json
import os

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Mapping  # noqa: E402

from omnivchat.studio import sampling  # noqa: E402

REPEATS = 5
TARGET_S = 1.0

Predicate = Callable[[Mapping[str, str]], bool]


def space(n_attrs: int, n_values: int) -> dict[str, dict[str, float]]:
    return {f"a{i}": {f"v{j}": 1.0 / n_values for j in range(n_values)} for i in range(n_attrs)}


PREFS: list[tuple[Predicate, float]] = [
    (lambda a: a["a0"] == "v0", 4.0),
    (lambda a: a["a1"] in ("v1", "v2") and a["a2"] != "v3", 2.5),
]
EXCL: list[Predicate] = [lambda a: a["a3"] == "v3" and a["a4"] == "v4"]


def timed(attrs: dict[str, dict[str, float]], n: int) -> float:
    """Median seconds for one call drawing n assignments."""
    sampling.sample_assignments(attrs, n, preferences=PREFS, exclusions=EXCL, seed=0)  # warm-up (numpy import)
    times = []
    for seed in range(1, REPEATS + 1):
        start = time.perf_counter()
        sampling.sample_assignments(attrs, n, preferences=PREFS, exclusions=EXCL, seed=seed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = p.parse_args()

    large_attrs, large_n = space(10, 10), 10_000
    small_attrs, small_n = space(5, 6), 1_000
    large_s = timed(large_attrs, large_n)
    small_s = timed(small_attrs, small_n)
    large_per = large_s / large_n
    small_per = small_s / small_n
    result = {
        "large_space": 10**10,
        "large_draws": large_n,
        "large_s": round(large_s, 4),
        "large_draws_per_s": round(large_n / large_s),
        "small_space": 6**5,
        "small_draws": small_n,
        "small_s": round(small_s, 4),
        "small_draws_per_s": round(small_n / small_s),
        "per_draw_ratio_large_over_small": round(large_per / small_per, 3),
        "target_s": TARGET_S,
        "enumerate_limit": sampling.ENUMERATE_LIMIT,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result))
        return
    ok = "ok" if large_s <= TARGET_S else "ABOVE TARGET"
    print(f"sample_assignments, median of {REPEATS} seeds, {os.cpu_count()} CPUs")
    print(
        f"  large (rejection):   {large_n:>6} draws from 10^10 assignments  {large_s:7.3f} s  "
        f"{large_n / large_s:>9.0f} draws/s   target ~{TARGET_S:.0f} s: {ok}"
    )
    print(
        f"  small (enumerated):  {small_n:>6} draws from {6**5:>5} assignments   {small_s:7.3f} s  "
        f"{small_n / small_s:>9.0f} draws/s"
    )
    print(f"  per-draw time, large / small: {large_per / small_per:.2f}")


if __name__ == "__main__":
    main()
