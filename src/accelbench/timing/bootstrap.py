"""Bootstrap intervals for ratios of medians (speed-ups), vectorised with numpy.

Each resampled median is drawn directly from the order statistics of uniforms (see
stats._bootstrap_median for the exact, one-at-a-time form), so thousands of resamples of tens of
thousands of ratios stay cheap. Imported on first use: the harness, timing, never loads numpy.
"""
from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache, partial
from typing import Any, Callable, Sequence

from accelbench.timing.stats import CONFIDENCE, RatioCI, sorted_copy, quantile_presorted


def ratio_of_medians_ci(numerator_s: Sequence[float], denominator_s: Sequence[float], *,
                        confidence: float = CONFIDENCE, resamples: int = 4000,
                        seed: int = 0) -> RatioCI:
    """Bootstrap each sample set independently; seeded, so the same inputs give the same interval.

    Cheap whatever the sample counts (each resampled median is drawn directly, vectorised), so
    many resamples are affordable: percentile ends then carry little Monte Carlo error.
    """
    return ratios_of_medians_ci([(numerator_s, denominator_s)], confidence=confidence,
                                resamples=resamples, seed=seed)[0]


RATIO_BLOCK = 256  # pairs bootstrapped together: 256 x 4000 ratios, 8 MB


def ratios_of_medians_ci(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], *,
                         confidence: float = CONFIDENCE, resamples: int = 4000,
                         seed: int = 0, meanwhile: Callable[[], None] = lambda: None) -> list[RatioCI]:
    """`ratio_of_medians_ci` of each (numerator, denominator) pair, the same intervals, in blocks:
    a report asks for tens of thousands, mostly sharing a baseline, so each sample set is sorted
    and bootstrapped once, and the ratios are sorted a block of pairs at a time. Many blocks are
    shared out over the usable cores (accelbench.forked); `meanwhile` runs here while they work."""
    from accelbench import forked

    parts = forked.worker_count(len(pairs) // (4 * RATIO_BLOCK))
    if not parts:
        done = _ratios_of_medians_ci(pairs, confidence, resamples, seed)
        meanwhile()
        return done
    bounds = [round(i * len(pairs) / parts) for i in range(parts + 1)]
    found = forked.forked_map(partial(_ratios_of_medians_ci, confidence=confidence, resamples=resamples, seed=seed),
                              [pairs[a:b] for a, b in zip(bounds, bounds[1:])], meanwhile)
    return [ratio for part in found for ratio in part]


def _ratios_of_medians_ci(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], confidence: float,
                          resamples: int, seed: int) -> list[RatioCI]:
    import numpy as np

    sorted_data: list[dict[int, Any]] = [{}, {}]  # per side: id of samples -> sorted numpy array
    uses: list[Counter[int]] = [Counter(), Counter()]
    points = []
    for pair in pairs:
        for side, samples in enumerate(pair):
            if id(samples) not in sorted_data[side]:
                sorted_data[side][id(samples)] = np.array(sorted_copy(samples))
            uses[side][id(samples)] += 1
        top, bottom = (sorted_data[side][id(samples)] for side, samples in enumerate(pair))
        points.append(float(quantile_presorted(top, 0.5)) / _ratio_denominator(float(quantile_presorted(bottom, 0.5))))
    shared: dict[tuple[int, int], Any] = {}  # resampled medians of sample sets in several pairs (baselines)

    def resampled(side: int, samples: Sequence[float], out) -> None:
        # separate streams per side, so equal sample counts do not get equal resampled ranks
        key = (side, id(samples))
        found = shared.get(key)
        if found is None:
            data = sorted_data[side][id(samples)]
            found = _bootstrap_medians(data, _bootstrap_ranks(len(data), resamples, seed, side))
            if uses[side][id(samples)] > 1:
                shared[key] = found
        out[...] = found

    alpha = 1.0 - confidence
    ends = [_interpolation(q, resamples) for q in (alpha / 2, 1 - alpha / 2)]
    low, high = np.empty(len(pairs)), np.empty(len(pairs))
    top_medians, bottom_medians = np.empty((RATIO_BLOCK, resamples)), np.empty((RATIO_BLOCK, resamples))
    for first in range(0, len(pairs), RATIO_BLOCK):
        block = pairs[first:first + RATIO_BLOCK]
        top, bottom = top_medians[:len(block)], bottom_medians[:len(block)]
        for row, (numerator, denominator) in enumerate(block):
            resampled(0, numerator, top[row])
            resampled(1, denominator, bottom[row])
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero denominator is set to inf just below
            ratios = np.divide(top, bottom, out=top)  # in place: the block's resampled medians are not needed again
        if (bottom <= 0).any():
            ratios[bottom <= 0] = np.inf
        ratios.sort(axis=1)  # a full sort: numpy's vectorised sort beats partition at these sizes
        done = slice(first, first + len(block))
        low[done], high[done] = (_interpolated(ratios, *end) for end in ends)
    return [RatioCI(p, lo, hi, confidence) for p, lo, hi in zip(points, low.tolist(), high.tolist())]


def _interpolation(q: float, n: int) -> tuple[int, int, float]:
    """quantile_presorted's ranks and weight for quantile q of n values."""
    position = q * (n - 1)
    lower = math.floor(position)
    return lower, min(lower + 1, n - 1), position - lower


def _interpolated(rows, lower: int, upper: int, weight: float):
    """quantile_presorted along each row of a sorted 2-D array."""
    import numpy as np

    below, above = rows[:, lower], rows[:, upper]
    if weight == 0:
        return below
    with np.errstate(invalid="ignore"):
        between = below + (above - below) * weight
    return np.where(above == below, below, between)  # equal (also both infinite): no interpolation


def _bootstrap_medians(data, ranks):
    """Resampled medians of sorted numpy `data`, given the (lower, upper) middle ranks drawn."""
    lower, upper = ranks
    if lower is upper:  # odd n: the middle value itself
        return data.take(lower)
    return (data.take(lower) + data.take(upper)) / 2


@lru_cache(maxsize=512)
def _bootstrap_ranks(n: int, resamples: int, seed: int, stream: int):
    """0-based ranks of the middle value(s) of `resamples` bootstrap resamples of n sorted values.

    `_bootstrap_median`, vectorised: the k-th smallest of n uniforms is Beta(k, n - k + 1), and
    for even n the next one lies above it by (1 - U_(k)) Beta(1, n - k). The ranks depend only on
    n and the seed, so they are drawn once and shared by every sample set of that size.
    """
    import numpy as np

    if n < 1:
        raise ValueError("no samples")
    rng = np.random.default_rng([seed % 2**64, stream])
    k = (n + 1) // 2
    u_k = rng.beta(k, n - k + 1, size=resamples)
    lower = np.minimum(n - 1, (n * u_k).astype(np.intp))
    lower.setflags(write=False)  # shared through the cache
    if n % 2:
        return lower, lower
    u_next = u_k + (1.0 - u_k) * rng.beta(1, n - k, size=resamples)
    upper = np.minimum(n - 1, (n * u_next).astype(np.intp))
    upper.setflags(write=False)
    return lower, upper


def _ratio_denominator(median_s: float) -> float:
    if median_s <= 0:
        raise ValueError("denominator median is not positive: a ratio of times needs times > 0")
    return median_s


def speedup_ci(baseline_s: Sequence[float], candidate_s: Sequence[float], **kwargs) -> RatioCI:
    """Speed-up of candidate over baseline (> 1: candidate faster), with its interval."""
    return ratio_of_medians_ci(baseline_s, candidate_s, **kwargs)
