"""A Monte Carlo workload's timed calls judged as statistics: every call's estimate, and their spread.

Each timed call draws afresh, so each returns a new estimate with the standard error its own sums
imply. One estimate within 4.5 of those standard errors says little about the number of draws: a
backend that draws half as many and scales its sums up lands there as often. Its estimates scatter
√2 times as far as they claim, though, and over many timed calls that shows: with the exact value
known, Σ ((estimate − exact) / SE)² over k calls follows a χ² law with k degrees of freedom, and
twice that when half the draws are made. The audited timing (runner/block_audit.py) judges every
call of a judged block; `spread_check` decides on all of them together.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from accelbench.results import Check
from accelbench.workloads.base import Prepared

SPREAD_P = 1e-4      # a spread this unlikely for honest draws, either way, fails
SPREAD_MIN_CALLS = 20  # the χ² approximation and the test need this many estimates
# estimates the audit gathers before it stops: with 150, half the draws (χ² twice its law) fail at
# p < 1e-4 in 99.8% of measurements (2·χ²_150 beyond the 1 - 1e-4 quantile of χ²_150, about 220)
SPREAD_WANTED = 150
# one estimate alone fails beyond this many of its standard errors: among 150 honest ones, one beyond
# 4.5 (the single call's limit, 7e-6 each) came once in a thousand measurements; beyond 5.5, once in 2e5
SINGLE_LIMIT_SE = 5.5
# estimates that repeat another's to the bit, in float32 or float64 sums, where 2^20 independent draws
# gave 300 distinct of 300 (float32 and float64; bfloat16's coarse sums gave 10 distinct of 300, so
# it is not judged so): at least this many, and this share, mean reused results or draws
REPEATS_MIN, REPEATS_SHARE = 3, 0.05
FINE_DTYPES = ("float64", "float32")


def chi2_upper(x: float, k: int) -> float:
    """P(χ²_k > x), Wilson–Hilferty's normal approximation (good to a few % of p for k ≥ 20)."""
    if k <= 0:
        return 1.0
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass
class DrawSpread:
    """Each judged estimate's distance from the exact value in its own standard errors."""

    what: str
    distances: list[float] = field(default_factory=list)
    fine: bool = True  # sums fine enough that independent estimates never repeat to the bit

    def add(self, distance: float) -> None:
        if math.isfinite(distance):
            self.distances.append(distance)

    def check(self, device_seen: str) -> Check:
        k = len(self.distances)
        repeats = k - len(set(self.distances))
        if self.fine and repeats >= max(REPEATS_MIN, REPEATS_SHARE * k):
            return Check(False, math.inf, 1.0, f"{self.what}: {repeats} of {k} timed calls' estimates repeat another's "
                                               "exactly, though each call draws afresh: results reused or draws "
                                               "repeated", device_seen)
        if k < SPREAD_MIN_CALLS:
            return Check(True, 0.0, 0.0, f"{self.what}: {k} estimates judged, too few to judge their spread",
                         device_seen)
        x = sum(d * d for d in self.distances)
        ratio = x / k
        upper, lower = chi2_upper(x, k), 1.0 - chi2_upper(x, k)
        said = (f"{self.what}: {k} timed calls' estimates scatter {math.sqrt(ratio):.2f}× as far from the exact value "
                f"as their own standard errors say (χ² {x:.0f} on {k}")
        if upper < SPREAD_P:
            return Check(False, ratio, 1.0, f"{said}, p = {upper:.1e}): fewer draws than counted, or draws that "
                                             "are not independent", device_seen)
        if lower < SPREAD_P:
            return Check(False, ratio, 1.0, f"{said}, p = {lower:.1e} that honest draws scatter this little): "
                                             "estimates repeated or smoothed", device_seen)
        return Check(True, ratio, 1.0, f"{said}): as independent draws of the count said do", device_seen)


def audited_draws(prepared: Prepared, distance: Callable[[Any], float], what: str,
                  located: Callable[[Any], str], dtype: str = "float64") -> Prepared:
    """`prepared` (a workload drawing afresh each call) with every timed call's output kept until the
    block ends and judged then, each within its standard errors and all together by their spread."""
    kept: list[Any] = []
    spread = DrawSpread(what, fine=dtype in FINE_DTYPES)
    judge = prepared.check_output
    compute = prepared.compute
    assert judge is not None, "a Monte Carlo workload judges its outputs"

    def timed() -> Any:
        output = compute()
        # an output buffer the backend writes again in a later call holds that call's estimate by the
        # time the block ends: judged once, as the last call that wrote it (a reused OpenCL buffer once
        # counted one estimate up to 27 times, and its spread read as "estimates repeated")
        kept[:] = [k for k in kept if k is not output]
        kept.append(output)
        return output

    def before_block(calls: int) -> None:
        kept.clear()  # nothing to change: every call draws afresh

    def check_output(last: Any) -> Check:
        outputs = kept or [last]
        checks = []
        for output in outputs:
            check, away = judge(output), distance(output)
            spread.add(away)
            if not check.passed and away <= SINGLE_LIMIT_SE and check.failed_conditions == ("price",):
                # past one call's limit, not past many calls' (the spread decides on all of them)
                check = dataclasses.replace(check, passed=True, failed_conditions=(), detail=check.detail.replace(
                    "FAILED price", f"passed within {SINGLE_LIMIT_SE:g} SE of {len(spread.distances)} estimates"))
            checks.append(check)
        failed = [c for c in checks if not c.passed]
        return (failed or checks)[-1]

    def together() -> Check:
        return spread.check(located(kept[-1]) if kept else "")

    return dataclasses.replace(prepared, compute=timed, before_block=before_block, check_output=check_output,
                               judged_together=together,
                               more_judged=lambda: max(0, SPREAD_WANTED - len(spread.distances)))
