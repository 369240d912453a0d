"""Where a measurement's steady state begins, seen in its samples.

The harness's warm-up phase stops on a short clock budget (0.15 s in quick rigor). Warm-up that
outlasts it (a JIT's second tier, a cache or a clock still settling, a runtime's worker threads
waking up) shows as a run of slow first samples, which widens the interval and reads as drift: on a
quiet 2-core Zen 4 a third of the quick suite's results were timed twice, often for a slow start.

MSER, the marginal standard error rule (White, "An effective truncation heuristic for bias
reduction in simulation output", Simulation 69(6), 1997), picks the start d that minimises the
standard error of the mean of the samples after it, with d in the first half. MSER alone cuts
stationary noise too (10-29% of iid runs of 10-300 samples with 5-10% jitter or two modes), so the
run before d counts as warm-up only when it is slower than what follows, by more than 3% (medians)
and beyond chance (Mann-Whitney p < 0.01). Warm-up makes work faster: a fast start (a clock boost
that later fades) is never cut away. Measured on 600 synthetic runs a case (see
tests/unit/test_steady_state.py): stationary noise is cut in at most 3.3% of runs (two modes), and
then without moving the median; a start 20% slow for 5 of 17 samples is found in 84% of runs, one
25-30% slow for 10-20 of 55-94 samples in 98-100%.
"""
from __future__ import annotations

import math
from typing import Sequence

from accelbench.timing import stats

MIN_SAMPLES = 6          # fewer: no rule can tell a transient from noise
MAX_SHARE = 0.5          # MSER's own bound: the steady state is at least the second half
MIN_SLOWER = 0.03        # the cut-away run's median at least 3% slower than the rest's
MAX_P_VALUE = 0.01       # ... and not by chance (Mann-Whitney, two-sided)
MIN_CUT = 2              # one slow first sample barely moves a median; a test needs two


def mser_start(samples_in_order: Sequence[float]) -> int:
    """MSER's truncation point: argmin over d <= n/2 of sum((x_i - mean)^2 for i >= d) / (n - d)^2."""
    n = len(samples_in_order)
    if n < MIN_SAMPLES:
        return 0
    scale = stats.median(samples_in_order) or 1.0
    values = [x / scale for x in samples_in_order]  # relative: sums of squares keep their precision
    best_d, best_z = 0, math.inf
    total = total_sq = 0.0
    suffix: list[tuple[float, float]] = [(0.0, 0.0)] * (n + 1)
    for i in range(n - 1, -1, -1):
        total += values[i]
        total_sq += values[i] * values[i]
        suffix[i] = (total, total_sq)
    for d in range(int(n * MAX_SHARE) + 1):
        kept = n - d
        s1, s2 = suffix[d]
        z = max(s2 - s1 * s1 / kept, 0.0) / (kept * kept)
        if z < best_z * (1 - 1e-12):
            best_d, best_z = d, z
    return best_d


def settled_start(samples_in_order: Sequence[float]) -> int:
    """How many first samples were still warm-up: MSER's point, kept only where the samples before
    it are slower than those after it, by more than MIN_SLOWER (medians) and beyond chance.
    0: steady from the start."""
    d = mser_start(samples_in_order)
    if d < MIN_CUT:
        return 0
    before, after = samples_in_order[:d], samples_in_order[d:]
    if stats.median(before) <= (1 + MIN_SLOWER) * stats.median(after):
        return 0
    return d if stats.mann_whitney(before, after).p_value < MAX_P_VALUE else 0


def slower_by(samples_in_order: Sequence[float], start: int) -> float:
    """How much slower the cut-away run was than the steady samples (medians): 0.25 for 25%."""
    if start <= 0 or start >= len(samples_in_order):
        return 0.0
    after = stats.median(samples_in_order[start:])
    return stats.median(samples_in_order[:start]) / after - 1 if after > 0 else 0.0
