"""Bursts: a cluster of samples far slower than the median, the mark of a machine that was busy
part of the time (another process taking the core for a while), which a median and its interval
computed as if every sample came from one distribution would hide."""
from __future__ import annotations

from typing import Sequence

from accelbench.timing import stats
from accelbench.verdict import BURSTS, Caveat

BURST_FRACTION = 0.25   # a sample 25% slower than the median is not timing jitter on a quiet core
BURST_SHARE = 0.05      # ... and 5% of the samples that slow is a mixture, not a stray interrupt
BURST_MIN_SAMPLES = 3


def slow_samples(median_s: float, samples_s: Sequence[float]) -> list[float]:
    return [s for s in samples_s if s > median_s * (1 + BURST_FRACTION)]


def burst_warnings(summary: stats.Summary, samples_s: Sequence[float]) -> list[Caveat]:
    """One warning when a cluster of samples lies far above the median."""
    if summary.median_s <= 0 or not samples_s:
        return []
    slow = slow_samples(summary.median_s, samples_s)
    share = len(slow) / len(samples_s)
    if len(slow) < BURST_MIN_SAMPLES or share < BURST_SHARE:
        return []
    typical = stats.median(slow) / summary.median_s - 1
    return [Caveat(f"bursts: {len(slow)} of {len(samples_s)} samples ({share:.0%}) are {typical:.0%} slower than the "
            f"median (something took the CPU or device part of the time: another process, or on a virtual "
            f"machine the host; the interference figures say which they saw)",
                   BURSTS, {"slow_samples": len(slow), "samples": len(samples_s), "slower": typical})]
