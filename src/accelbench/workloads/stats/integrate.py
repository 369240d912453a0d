"""Numerical integration of the standard normal density over [0, 2]: trapezoid and Simpson rules.

    ∫₀² φ(x) dx = erf(√2) / 2 = 0.47724986805182...   (exact, from math.erf)

The grid points are made on the device in chunks (memory stays bounded at 10⁹ points); each chunk's
weighted sum is reduced there. The check allows the rule's own truncation error (trapezoid:
(b−a)·h²·max|f″|/12, Simpson: (b−a)·h⁴·max|f⁗|/180) plus a rounding allowance for the dtype, so
it fails on a wrong rule or a broken reduction, not on float32 being float32. The error against the
exact value is the figure the report shows next to points/s: float32 keeps about 7 significant
digits of float64's 16 here (`correct_digits`), which a normalising constant may or may not afford.
The timed calls alternate between upper limits (2, 2 + 1/64, ...; runner/audit.py): each limit has
its own exact value, so a result cached from another call fails. φ's second and fourth derivatives
are largest at 0, so the truncation bounds hold for every upper limit.
"""
from __future__ import annotations

import math

import numpy as np

from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.rotation import Variant
from accelbench.workloads.stats.arrays import ACCELERATOR_CHUNK_ELEMENTS, chunk_counts, map_chunks
from accelbench.workloads.stats.base import QUICK_DTYPES, JudgedRotation, StatsWorkload, base_metrics
from accelbench.workloads.stats.checking import Conditions, relative_error

LOWER, UPPER = 0.0, 2.0
UPPER_STEP = 1.0 / 64  # input set k integrates up to UPPER + k·UPPER_STEP


def exact_integral(upper: float = UPPER) -> float:
    return math.erf(upper / math.sqrt(2.0)) / 2.0 - math.erf(LOWER / math.sqrt(2.0)) / 2.0


def upper_limit(key: int) -> float:
    return UPPER + key * UPPER_STEP


EXACT = exact_integral()
RULES = ("trapezoid", "simpson")
# max |f''| and max |f''''| of φ on [0, 2], both at x = 0: φ(0) and 3·φ(0)
PHI0 = 1.0 / math.sqrt(2.0 * math.pi)
DERIVATIVE_BOUND = {"trapezoid": PHI0, "simpson": 3.0 * PHI0}
# per point: x = a + h·i (2), x² (1), scale (1), exp (1), the weight (2), multiply-add into the sum (2)
FLOPS_PER_POINT = 9
# rounding allowance in units of the dtype's epsilon: a few for the result and the grid, plus a
# random walk over √(points/1024) for sums accumulated in sequence (a kernel's work-item adds
# points/work-items values one by one); never above 2%, where a quadrature stops being an answer
ROUNDING_ULPS = 8.0
ROUNDING_CAP = 0.02
EPSILON = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}
QUICK_INTERVALS = [1 << 20]
DEFAULT_INTERVALS = [10**6, 10**7]  # up to 10**9 with --sizes (chunked: memory stays flat)


def truncation_bound(rule: str, intervals: int, upper: float = UPPER) -> float:
    width = upper - LOWER
    h = width / intervals
    if rule == "trapezoid":
        return width * h * h * DERIVATIVE_BOUND[rule] / 12.0
    return width * h**4 * DERIVATIVE_BOUND[rule] / 180.0


def rounding_allowance(dtype: str, intervals: int, upper: float = UPPER) -> float:
    ulps = ROUNDING_ULPS + math.sqrt((intervals + 1) / 1024)
    return min(ulps * EPSILON[dtype], ROUNDING_CAP) * exact_integral(upper)


def density(xp, x):
    return xp.exp(-0.5 * x * x)  # 1/√(2π) is applied once, to the sum


def chunk_function(ops, rule: str, dtype: str):
    """(first index, 0..count-1 as integers, step h) -> the chunk's weighted sum; jitted on jax (h is
    an argument, so another upper limit does not compile again)."""
    def chunk_sum(start, offsets, h):
        index = offsets + start
        x = LOWER + h * ops.astype(index, dtype)
        # trapezoid: weight 1 inside; Simpson: 4 at odd, 2 at even points (the ends are fixed after)
        weight = 1.0 if rule == "trapezoid" else ops.astype(2 + 2 * (index % 2), dtype)
        return (weight * density(ops.xp, x)).sum()
    return ops.jit(chunk_sum)


def weighted_sum(ops, chunk_sum, offsets, rule: str, intervals: int, dtype: str, upper: float = UPPER):
    """h-scaled quadrature sum over the grid, in `dtype`, on the device (one 0-d array).

    `offsets` is 0..chunk-1 on the device (made once): each chunk adds its first index to it."""
    h = (upper - LOWER) / intervals
    parts = map_chunks(ops, lambda piece: chunk_sum(piece[0], offsets if piece[1] == offsets.shape[0]
                                                    else offsets[:piece[1]], h),
                       list(chunk_counts(intervals + 1, offsets.shape[0])))
    total = ops.stack(parts).sum() if len(parts) > 1 else parts[0]
    ends = density(ops.xp, ops.arange(0, 2, dtype) * (upper - LOWER) + LOWER).sum()
    if rule == "trapezoid":
        return (total - 0.5 * ends) * (h * PHI0)
    return (total - ends) * (h * PHI0 / 3.0)


class Integrate(StatsWorkload):
    name = "integrate"
    description = "trapezoid and Simpson rules for ∫₀² φ(x)dx over 10⁶–10⁹ points, chunked, vs erf"
    size_param, size_unit = "n", "intervals"
    item_unit = "points"
    default_dtypes = ("float64", "float32", "bfloat16")
    has_opencl_kernel = True

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or (QUICK_INTERVALS if quick else DEFAULT_INTERVALS)
        sizes = [n + (n % 2) for n in sizes]  # Simpson needs an even number of intervals
        dtypes = dtypes or (QUICK_DTYPES if quick else list(self.default_dtypes))
        return [{"rule": r, "n": n, "dtype": d} for r in RULES for d in dtypes for n in sizes]

    def items_per_call(self, params):
        return params["n"] + 1

    def work(self, params):
        points = params["n"] + 1
        # each point's value counted as materialised once (a fused kernel keeps it in registers)
        return Work(flops=float(FLOPS_PER_POINT * points), bytes_moved=float(points * ITEMSIZE[params["dtype"]]))

    def footprint_bytes(self, params):
        return 6 * min(params["n"] + 1, ACCELERATOR_CHUNK_ELEMENTS) * 8

    def prepare_arrays(self, ops, params, seed):
        rule, n, dtype = params["rule"], params["n"], params["dtype"]
        offsets = ops.arange(0, min(n + 1, ops.chunk_elements), ops.index_dtype)
        chunk_sum = chunk_function(ops, rule, dtype)

        def judge(output, variant):
            return self.judge(float(ops.to_host64(output)), rule, n, dtype, ops.backend.location(output),
                              ops.device, upper_limit(variant.key))

        rotation = JudgedRotation(_limits, judge, base_metrics(self, params, seed, "none (deterministic grid)"))
        return rotation.prepared(ops.backend, op=lambda v: ops.ready(
            weighted_sum(ops, chunk_sum, offsets, rule, n, dtype, upper_limit(v.key))))

    def prepare_kernels(self, runner, params, seed):
        rule, n, dtype = params["rule"], params["n"], params["dtype"]

        def make(key):
            variant = _limits(key)
            variant.drop = lambda: runner.release_slot(key)
            return variant

        def op(variant):
            runner.slot = variant.key
            return runner.integrate(rule, n, dtype, LOWER, upper_limit(variant.key), keep_on_device=True)

        def judge(output, variant):
            value = float(np.asarray(runner.backend.to_host(output), dtype=np.float64)[0])
            return self.judge(value, rule, n, dtype, runner.backend.location(output), runner.device,
                              upper_limit(variant.key))

        rotation = JudgedRotation(make, judge, base_metrics(self, params, seed, "none (deterministic grid)"))
        return rotation.prepared(runner.backend, op=op, to_host=lambda: runner.backend.to_host(rotation.current.last))

    def judge(self, value: float, rule: str, n: int, dtype: str, device_seen: str, device_asked: str,
              upper: float = UPPER):
        exact = exact_integral(upper)
        truncation, rounding = truncation_bound(rule, n, upper), rounding_allowance(dtype, n, upper)
        error = abs(value - exact)
        conditions = Conditions(f"{rule} rule over [0, {upper:g}], {n} intervals in {dtype}")
        conditions.within("integral", error / exact, (truncation + rounding) / exact,
                          f"{value:.15g} vs exact {exact:.15g}: relative error {error / exact:.2e} "
                          f"(limit {(truncation + rounding) / exact:.1e}: truncation {truncation:.1e} "
                          f"+ rounding {rounding:.1e})")
        figures = {"estimate": value, "exact": exact, "abs_error": error, "rel_error": relative_error(value, exact),
                   "truncation_bound": truncation, "rounding_allowance": rounding,
                   "correct_digits": -math.log10(max(error / exact, 1e-17))}
        return conditions.check(device_seen, device_asked), figures


def _limits(key: int) -> Variant:
    """Input set `key`: no arrays, an upper limit of its own and that limit's exact value."""
    return Variant([], np.array([exact_integral(upper_limit(key))]))
