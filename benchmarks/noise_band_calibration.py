"""Calibrates compare's pair noise band (report/compare/noise.py PAIR_MULTIPLIER) by simulation.

The pair band of a group of k specs is |median| + q·σ̂, σ̂ = 1.4826·MAD of the group's log ratios.
With q = 3 (the normal 99.7% point) a spec of an identical-runs pair crosses it far more often than
0.3%, because σ̂ from a handful of specs is itself uncertain (k = 6: 2.3% per spec). This finds, for
each group size, the q at which a spec of k identical-run specs (log ratios normal, equal spread)
crosses the band 0.27% of the time, and prints the table noise.py holds.

    python benchmarks/noise_band_calibration.py            # 1,000,000 groups per size, a minute
    python benchmarks/noise_band_calibration.py --check    # the shipped table against a fresh draw
"""
from __future__ import annotations

import argparse

import numpy as np

from accelbench.report.compare import noise

FALSE_RATE = 0.0027  # two-sided 3σ of a normal
SIZES = range(noise.MIN_GROUP_SPECS, noise.PAIR_TABLE_UP_TO + 1)


def multiplier(k: int, groups: int, rng: np.random.Generator) -> float:
    """The q at which FALSE_RATE of the specs of null groups of k lie beyond |median| + q·σ̂."""
    found = []
    for _ in range(max(1, groups // 100_000)):
        x = rng.standard_normal((min(groups, 100_000), k))
        centre = np.median(x, axis=1, keepdims=True)
        sigma = noise.ROBUST_SIGMA * np.median(np.abs(x - centre), axis=1, keepdims=True)
        found.append(((np.abs(x) - np.abs(centre)) / sigma).ravel())
    return float(np.quantile(np.concatenate(found), 1 - FALSE_RATE))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1_000_000, help="simulated groups per size")
    parser.add_argument("--check", action="store_true", help="compare with the table in noise.py")
    args = parser.parse_args()
    rng = np.random.default_rng(20261204)
    table = {k: round(multiplier(k, args.groups, rng), 2) for k in SIZES}
    if args.check:
        for k, q in table.items():
            print(f"k={k:3d}  simulated {q:6.2f}  shipped {noise.pair_multiplier(k):6.2f}")
        return 0
    print("PAIR_MULTIPLIER = {  # group size k -> q (benchmarks/noise_band_calibration.py)")
    items = [f"{k}: {q}" for k, q in table.items()]
    for start in range(0, len(items), 10):
        print("    " + ", ".join(items[start:start + 10]) + ",")
    print("}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
