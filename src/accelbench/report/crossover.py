"""Where a speed-up curve crosses 1: the problem size at which a device starts to beat the CPU.

Interpolated on log size and log speed-up, where speed-ups of matrix work grow as power laws, so
the estimate between two measured sizes is not biased towards the smaller one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from accelbench.timing.stats import RatioCI


@dataclass(frozen=True)
class Curve:
    """A speed-up against problem size, sizes ascending."""

    sizes: tuple[float, ...]
    ratios: tuple[RatioCI, ...]

    @property
    def verdicts(self) -> tuple[str, ...]:
        return tuple(r.verdict() for r in self.ratios)


@dataclass(frozen=True)
class Crossing:
    """The speed-up crosses 1 between sizes[index] (slower) and sizes[index + 1] (faster)."""

    size: float
    index: int
    supported: bool  # both neighbours' intervals exclude 1 (slower below, faster above)


def interpolate_crossing(size_a: float, ratio_a: float, size_b: float, ratio_b: float) -> float:
    """The size where the log-log line through (size_a, ratio_a), (size_b, ratio_b) reaches 1."""
    log_a, log_b = math.log(ratio_a), math.log(ratio_b)
    if log_a == log_b:
        return size_a
    t = -log_a / (log_b - log_a)
    return math.exp(math.log(size_a) + t * (math.log(size_b) - math.log(size_a)))


def find_crossing(curve: Curve) -> Crossing | None:
    """The first place where the speed-up goes from below 1 to at least 1, if any."""
    points = list(zip(curve.sizes, curve.ratios))
    for index, ((size_a, a), (size_b, b)) in enumerate(zip(points, points[1:])):
        if a.ratio < 1.0 <= b.ratio and a.ratio > 0 and size_a > 0:
            size = interpolate_crossing(size_a, a.ratio, size_b, b.ratio)
            supported = a.verdict() == "slower" and b.verdict() == "faster"
            return Crossing(size, index, supported)
    return None


def classify(curve: Curve) -> str:
    """'crosses' | 'faster_everywhere' | 'slower_everywhere' | 'unclear' from the verdicts."""
    verdicts = curve.verdicts
    if not verdicts:
        return "unclear"
    if all(v == "faster" for v in verdicts):
        return "faster_everywhere"
    if all(v == "slower" for v in verdicts):
        return "slower_everywhere"
    crossing = find_crossing(curve)
    return "crosses" if crossing and crossing.supported else "unclear"
