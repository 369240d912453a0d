"""Checks for statistical outputs: several conditions, each an error against a limit, all must hold.

A Monte Carlo estimate cannot match its exact value to a fixed relative tolerance: it is right when
it lies within a few standard errors of it. Each condition is kept as a relative error against a
relative limit (absolute where the exact value is 0); the Check carries the condition closest to
(or furthest past) its limit, and the detail names every condition, so a failure says which one
and by how much. An output found on another device than asked fails too, as make_check does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from accelbench.results import Check

# an estimate further than this many standard errors from the truth fails: with a fixed seed the
# chance that a correct implementation lands there is about 7e-6 per condition
STANDARD_ERRORS_LIMIT = 4.5


@dataclass
class Conditions:
    """Conditions a result must meet; `check()` turns them into one Check."""

    what: str
    items: list[tuple[str, float, float, str]] = field(default_factory=list)  # name, error, limit, text

    def within(self, name: str, error: float, limit: float, text: str = "") -> "Conditions":
        """error <= limit (NaN fails); `text` is shown with the numbers."""
        self.items.append((name, float(error), float(limit), text))
        return self

    def standard_errors(self, name: str, estimate: float, exact: float, standard_error: float,
                        limit_se: float = STANDARD_ERRORS_LIMIT) -> float:
        """|estimate - exact| <= limit_se standard errors; returns the distance in standard errors.

        Kept as a relative error against a relative limit (limit_se·SE/|exact|; absolute where the
        exact value is 0), so Check.max_rel_error means what it means for every other workload.
        """
        distance = abs(estimate - exact) / standard_error if standard_error > 0 else math.inf
        if estimate == exact:
            distance = 0.0
        scale = abs(exact) or 1.0
        self.within(name, abs(estimate - exact) / scale, limit_se * standard_error / scale,
                    f"{estimate:.6g} vs exact {exact:.6g}: {distance:.2f} SE of {standard_error:.3g}, "
                    f"limit {limit_se:g} SE")
        return distance

    def check(self, device_seen: str, device_asked: str) -> Check:
        failed = [item[0] for item in self.items if not item[1] <= item[2]]
        parts = [f"{name}: {text}" if text else f"{name}: {error:.3g} (limit {limit:.3g})"
                 for name, error, limit, text in self.items]
        if device_seen != device_asked:
            failed.insert(0, "device")
            parts.insert(0, f"ran on {device_seen}, asked for {device_asked}")
        worst = max(self.items, key=_severity) if self.items else ("", 0.0, 1.0, "")
        verdict = "FAILED " + ", ".join(failed) if failed else "passed"
        detail = f"{self.what}: {verdict}; " + "; ".join(parts)
        return Check(passed=not failed, max_rel_error=worst[1], tolerance=worst[2], detail=detail,
                     device_seen=device_seen, failed_conditions=tuple(failed))


def _severity(item: tuple[str, float, float, str]) -> float:
    error, limit = item[1], item[2]
    if not error <= limit:
        return math.inf if math.isnan(error) else error / limit if limit > 0 else math.inf
    return error / limit if limit > 0 else 0.0


def binomial_standard_error(probability: float, trials: int) -> float:
    """SE of a proportion estimated from `trials` Bernoulli draws with this success probability."""
    return math.sqrt(max(probability * (1.0 - probability), 0.0) / trials)


def relative_error(value: float, reference: float) -> float:
    if reference == 0:
        return abs(value)
    return abs(value - reference) / abs(reference)
