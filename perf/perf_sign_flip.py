"""The paired comparison's statistics on a full bench; prints ratios measured in one run.

N paired gated-rubric scores (values in thirds, about half the items tied) go through:

1. the sign-flip permutation test, ``omnivchat.scoring.sign_flip_test`` (numpy, 10,000 sampled patterns), against
   ``scipy.stats.permutation_test`` on the same non-zero differences and pattern count: the ratio scipy / ours and
   both p-values (they agree to Monte Carlo error);
2. the whole ``compare_paired`` (bootstrap interval, t-test, sign-flip test): seconds at N.

    uv run python perf/perf_sign_flip.py [-n 2800]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np
from scipy.stats import permutation_test

from omnivchat.scoring import compare_paired, sign_flip_test
from omnivchat.scoring._paired import PERMUTATION_RESAMPLES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2800, help="paired items (the paper's bench has 2,800)")
    args = parser.parse_args()
    rng = random.Random(1)
    a = [rng.choice([0, 1 / 3, 2 / 3, 1]) for _ in range(args.n)]
    b = [min(1.0, max(0.0, x + rng.choice([-1 / 3, 0, 0, 1 / 3]))) for x in a]
    d = [y - x for x, y in zip(a, b, strict=True)]
    nonzero = np.asarray([x for x in d if x != 0])

    started = time.perf_counter()
    ours = sign_flip_test(d)
    t_ours = time.perf_counter() - started
    started = time.perf_counter()
    theirs = permutation_test(
        (nonzero,),
        np.mean,
        permutation_type="samples",
        vectorized=True,
        n_resamples=PERMUTATION_RESAMPLES,
        batch=1000,
        rng=np.random.default_rng(0),
    )
    t_scipy = time.perf_counter() - started
    print(f"sign-flip test, N={args.n} ({len(nonzero)} non-zero differences, {PERMUTATION_RESAMPLES} patterns):")
    print(
        f"  ours {t_ours:.2f} s, scipy.stats.permutation_test {t_scipy:.2f} s: ratio scipy/ours {t_scipy / t_ours:.1f}"
    )
    print(f"  p: ours {ours.p:.4f}, scipy {float(theirs.pvalue):.4f}")

    started = time.perf_counter()
    result = compare_paired(a, b)
    print(f"compare_paired, N={args.n}: {time.perf_counter() - started:.2f} s ({result.verdict})")


if __name__ == "__main__":
    main()
