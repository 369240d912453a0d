"""Statistics of timing samples.

Timing distributions are skewed and often multi-modal, so everything here is distribution-free:
the median with an order-statistic confidence interval, the IQR, a bootstrap interval for a ratio
of medians (speed-ups), and the Mann-Whitney U test for "did these two runs differ?".

What the harness uses while measuring is standard library only: importing this module loads no
numpy, so timing stays light. The bootstrap (reports, compare) imports numpy on its first call.
"""
from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from numpy.typing import NDArray

CONFIDENCE = 0.95
# "same speed": the best estimate within 1 ± 5% and the whole interval within 1 ± 10%. Between
# identical quiet runs a paired speed-up of two equally fast frameworks moved ±4% (torch against numpy,
# matmul n=1000 on a 2-core Zen 4: 0.966-1.038 over 5 runs), so a finer difference is not one the next
# run would repeat; an interval that reaches past 10% leaves a real difference possible
SAME_WITHIN = 0.05
_TAIL_SIGMAS = 8.0  # binomial mass further than this from the mean is negligible (< 1e-15)


def sorted_copy(samples: Sequence[float]) -> list[float]:
    """The samples as floats, sorted (a new list); ValueError when there are none."""
    data = sorted(map(float, samples))
    if not data:
        raise ValueError("no samples")
    return data


def quantile_presorted(data: Sequence[float] | NDArray[Any], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default), data already sorted."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within [0, 1], got {q}")
    position = q * (len(data) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(data) - 1)
    if position == lower or data[upper] == data[lower]:  # no interpolation: an infinite end stays inf, not nan
        return data[lower]
    return data[lower] + (data[upper] - data[lower]) * (position - lower)


def quantile(samples: Sequence[float], q: float) -> float:
    return quantile_presorted(sorted_copy(samples), q)


def median(samples: Sequence[float]) -> float:
    return quantile(samples, 0.5)


def quartiles(samples: Sequence[float]) -> tuple[float, float]:
    """(Q1, Q3): the 25th and 75th percentiles."""
    data = sorted_copy(samples)
    return quantile_presorted(data, 0.25), quantile_presorted(data, 0.75)


def iqr(samples: Sequence[float]) -> float:
    q1, q3 = quartiles(samples)
    return q3 - q1


def mean(samples: Sequence[float]) -> float:
    return _mean(sorted_copy(samples))


def stdev(samples: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0.0 for a single sample."""
    return _stdev(sorted_copy(samples))


def _mean(data: list[float]) -> float:
    return math.fsum(data) / len(data)


def _stdev(data: list[float]) -> float:
    if len(data) < 2:
        return 0.0
    centre = _mean(data)
    return math.sqrt(math.fsum((x - centre) ** 2 for x in data) / (len(data) - 1))


# -- confidence interval of the median ---------------------------------------------------------

def _binomial_half_cdf_terms(n: int, start: int, stop: int) -> list[float]:
    """P(B = k) for B ~ Binomial(n, 1/2), k in [start, stop); via lgamma, so any n works."""
    log_total = math.lgamma(n + 1) - n * math.log(2.0)
    return [math.exp(log_total - math.lgamma(k + 1) - math.lgamma(n - k + 1)) for k in range(start, stop)]


@lru_cache(maxsize=8192)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the order statistics bounding the median with >= `confidence`.

    The number of samples below the true median is Binomial(n, 1/2) whatever the distribution,
    so [x_(lo), x_(hi)] with hi = n-1-lo covers it with probability 1 - 2 P(B <= lo). The largest
    lo keeping that >= confidence is chosen. None when n is too small (n < 6 at 95%).
    """
    alpha_half = (1.0 - confidence) / 2.0
    start = max(0, math.floor(n / 2 - _TAIL_SIGMAS * math.sqrt(n) / 2))
    cdf, lo = 0.0, None
    for k, p in enumerate(_binomial_half_cdf_terms(n, start, n // 2 + 1), start=start):
        cdf += p
        if cdf > alpha_half:
            break
        lo = k
    if lo is None:
        return None
    return lo, n - 1 - lo


def median_ci_coverage(n: int, confidence: float = CONFIDENCE) -> float:
    """The exact coverage of `median_ci` for n continuous samples (>= confidence, or 0 if none)."""
    ranks = median_ci_ranks(n, confidence)
    if ranks is None:
        return 0.0
    below = sum(_binomial_half_cdf_terms(n, 0, ranks[0] + 1))
    return 1.0 - 2.0 * below


def median_ci_presorted(data: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free interval for the median of sorted data; (-inf, inf) if n is too small."""
    ranks = median_ci_ranks(len(data), confidence)
    if ranks is None:
        return -math.inf, math.inf
    return data[ranks[0]], data[ranks[1]]


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    return median_ci_presorted(sorted_copy(samples), confidence)


def relative_halfwidth(centre: float, low: float, high: float) -> float:
    """The larger distance from centre to an end, as a fraction of centre: "±x%" holds both ways."""
    if centre <= 0 or math.isinf(low) or math.isinf(high):
        return 0.0 if centre == low == high == 0 else math.inf
    return max(centre - low, high - centre) / centre


def rel_ci_halfwidth_presorted(data: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """Relative half-width of the median's interval for sorted data (cheap: used every sample)."""
    low, high = median_ci_presorted(data, confidence)
    return relative_halfwidth(quantile_presorted(data, 0.5), low, high)


# -- interval from batch medians (between-block variation) -----------------------------------

MIN_BATCHES, MAX_BATCHES = 5, 10


@functools.lru_cache(maxsize=64)  # asked once per summary with the same few (p, df)
def t_quantile(p: float, df: int) -> float:
    """Student's t quantile by the Cornish-Fisher expansion around the normal one (within 0.3% for
    df >= 4 at the 97.5th percentile: 2.769 for 2.776)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def batch_medians(samples_in_order: Sequence[float]) -> list[float]:
    """The medians of 5 to 10 consecutive groups of samples (time order kept); [] under 10 samples."""
    n = len(samples_in_order)
    batches = max(MIN_BATCHES, min(MAX_BATCHES, n // 4))
    if n < 2 * MIN_BATCHES:
        return []
    bounds = [round(i * n / batches) for i in range(batches + 1)]
    return [median(samples_in_order[a:b]) for a, b in zip(bounds, bounds[1:])]


def batch_ci_halfwidth(samples_in_order: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """Half-width of a t interval over batch medians (the batch-means method): drift and bursts that
    last longer than one sample move whole batches, which order statistics of the pooled samples,
    assuming independent samples, do not see. inf when there are too few samples for 5 batches."""
    medians = batch_medians(samples_in_order)
    if not medians:
        return math.inf
    k = len(medians)
    return t_quantile(0.5 + confidence / 2, k - 1) * _stdev(sorted(medians)) / math.sqrt(k)


# -- summary -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    """What a table shows for one set of samples (seconds), derived from the raw samples."""

    median_s: float
    iqr_s: float
    min_s: float
    mean_s: float
    stdev_s: float
    ci_low_s: float    # 95% interval of the median (order statistics), -inf/inf if n < 6
    ci_high_s: float
    n: int
    rel_ci_halfwidth: float  # max distance from the median to an interval end, / median
    q1_s: float = math.nan
    q3_s: float = math.nan
    max_s: float = math.nan
    ci_method: str = "order statistics"  # or "batch medians", when variation between batches is wider

    @property
    def rel_iqr(self) -> float:
        return self.iqr_s / self.median_s if self.median_s > 0 else math.inf


def summarize(samples: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """`samples` in the order they were taken: the interval is the wider of the order-statistic one
    and the one from batch medians (see `batch_ci_halfwidth`)."""
    data = sorted_copy(samples)
    median_s = quantile_presorted(data, 0.5)
    q1_s, q3_s = quantile_presorted(data, 0.25), quantile_presorted(data, 0.75)
    low_s, high_s = median_ci_presorted(data, confidence)
    batch_s, method = batch_ci_halfwidth(list(map(float, samples)), confidence), "order statistics"
    if math.isfinite(low_s) and math.isfinite(batch_s) and (median_s - batch_s < low_s or median_s + batch_s > high_s):
        # the t interval is symmetric and can reach below zero; the median lies below the fastest of
        # n samples with probability 2^-n only, so the low end stops there
        low_s = min(low_s, max(data[0], median_s - batch_s))
        high_s, method = max(high_s, median_s + batch_s), "batch medians"
    return Summary(
        median_s=median_s, iqr_s=q3_s - q1_s, min_s=data[0], mean_s=_mean(data), stdev_s=_stdev(data),
        ci_low_s=low_s, ci_high_s=high_s, n=len(data),
        rel_ci_halfwidth=relative_halfwidth(median_s, low_s, high_s),
        q1_s=q1_s, q3_s=q3_s, max_s=data[-1], ci_method=method,
    )


# -- ratio of medians (speed-ups) ----------------------------------------------------------------

@dataclass(frozen=True)
class RatioCI:
    """median(numerator) / median(denominator) with a percentile-bootstrap interval."""

    ratio: float
    low: float
    high: float
    confidence: float = CONFIDENCE

    def verdict(self, same_within: float = SAME_WITHIN) -> str:
        """Read as a speed-up (baseline time / candidate time): see `speedup_verdict`."""
        return speedup_verdict(self.low, self.high, ratio=self.ratio, same_within=same_within)


def _bootstrap_median(data: list[float], rng: random.Random) -> float:
    """The median of one bootstrap resample of sorted `data`, drawn in O(1), exactly.

    A resample is data[floor(n U)] for iid uniforms U, so its k-th smallest value is
    data[floor(n U_(k))], and the k-th of n sorted uniforms is Beta(k, n - k + 1). For even n
    the next one is the smallest of the n - k uniforms above U_(k). Same distribution as
    resampling and sorting, without the O(n log n) per resample.
    """
    n = len(data)
    k = (n + 1) // 2  # 1-based rank of the (lower) middle value
    u_k = rng.betavariate(k, n - k + 1)
    lower = data[min(n - 1, int(n * u_k))]
    if n % 2:
        return lower
    u_next = u_k + (1.0 - u_k) * (1.0 - rng.random() ** (1.0 / (n - k)))
    return (lower + data[min(n - 1, int(n * u_next))]) / 2


def speedup_verdict(low: float, high: float, *, ratio: float | None = None, same_within: float = SAME_WITHIN) -> str:
    """"faster" / "slower" / "same" / "inconclusive" from a speed-up `ratio` and its interval [low, high].

    A ratio inside 1 ± same_within is a difference too small to claim: "same" where the whole interval
    lies inside 1 ± 2 × same_within (a large difference is ruled out too), else "inconclusive". A ratio
    beyond that band is "faster" or "slower" where the interval lies wholly above or below 1, else
    "inconclusive": the measurement cannot tell, it does not say "no difference". Without a ratio, the
    interval's geometric middle stands for it.
    """
    point = math.sqrt(low * high) if ratio is None and low > 0 and math.isfinite(high) else ratio
    if point is not None and _within(point, same_within):
        return "same" if _within(low, 2 * same_within) and _within(high, 2 * same_within) else "inconclusive"
    if low > 1.0:
        return "faster"
    if high < 1.0:
        return "slower"
    return "inconclusive"


def _within(value: float, band: float) -> bool:
    return 1.0 / (1.0 + band) <= value <= 1.0 + band


# -- Mann-Whitney U ----------------------------------------------------------------------------

@dataclass(frozen=True)
class MannWhitney:
    """Two-sided Mann-Whitney U test of two runs' raw samples (a: baseline, b: candidate)."""

    u: float        # pairs with a > b (ties count 1/2): large when a's times tend to be larger
    z: float
    p_value: float
    n_a: int
    n_b: int

    def verdict(self, alpha: float = 0.05) -> str:
        """Candidate vs baseline: "faster" / "slower", or "same" (no difference detected at alpha)."""
        if self.p_value >= alpha:
            return "same"
        return "faster" if self.u > self.n_a * self.n_b / 2 else "slower"


def _average_ranks(values: list[float]) -> tuple[list[float], float]:
    """1-based ranks with ties given their average rank, and the tie term sum(t^3 - t)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    tie_term, start = 0.0, 0
    while start < len(order):
        stop = start
        while stop + 1 < len(order) and values[order[stop + 1]] == values[order[start]]:
            stop += 1
        for position in range(start, stop + 1):
            ranks[order[position]] = (start + stop) / 2 + 1
        size = stop - start + 1
        tie_term += size ** 3 - size
        start = stop + 1
    return ranks, tie_term


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Normal approximation with tie and continuity correction (as scipy's "asymptotic")."""
    n_a, n_b = len(a), len(b)
    if n_a == 0 or n_b == 0:
        raise ValueError("no samples")
    ranks, tie_term = _average_ranks([float(x) for x in a] + [float(x) for x in b])
    u_a = math.fsum(ranks[:n_a]) - n_a * (n_a + 1) / 2
    n = n_a + n_b
    variance = n_a * n_b / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if variance <= 0:  # every value tied: nothing distinguishes the runs
        return MannWhitney(u_a, 0.0, 1.0, n_a, n_b)
    sigma = math.sqrt(variance)
    distance = abs(u_a - n_a * n_b / 2)
    z = math.copysign(max(distance - 0.5, 0.0) / sigma, u_a - n_a * n_b / 2)
    p_value = min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))
    return MannWhitney(u_a, z, p_value, n_a, n_b)
