"""Nonparametric bootstrap: B resamples of n observations, a statistic per resample, all batched.

Statistics: the mean and the median of y, and the least-squares slope of y on x (pairs bootstrap).
The resample indices are drawn once, on the device, from the recorded seed; the float64 reference
is computed on the host from the *same* indices and the float64 data, so the replicate statistics
and their standard deviation (the bootstrap SE) are compared like for like. The SE is also checked
against theory where theory has it: for the mean the ideal bootstrap SE is exactly the plug-in
s·√((n−1)/n)/√n; for the slope the pairs bootstrap estimates the OLS sandwich (HC0) SE, which in
this homoskedastic model agrees with the classical s²/Sxx one only up to O(1/√n), so the sandwich
is the one checked (1/n-order allowance) and the classical one is reported beside it. The Monte
Carlo error of an SE from B replicates is √((κ−1)/(4B)) relative (κ: the replicates' kurtosis), and
the limits are 4.5 of those.
The timed call is the gather and the statistics: it is memory-bound (every resample reads n values
at random places), the opposite of montecarlo. The timed calls alternate between data sets and
index matrices of their own seeds (workloads/rotation.py), so an output cached from another call fails.
"""
from __future__ import annotations

import math

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.stats.arrays import ACCELERATOR_CHUNK_ELEMENTS, ArrayOps, HostOps, map_chunks
from accelbench.workloads.rotation import SEED_STRIDE, Variant
from accelbench.workloads.stats.base import QUICK_DTYPES, JudgedRotation, StatsWorkload, base_metrics
from accelbench.workloads.stats.checking import STANDARD_ERRORS_LIMIT, Conditions, relative_error
from accelbench.workloads.stats.rng import device_random, generator_name
from accelbench.workloads.verify import TOLERANCE

STATISTICS = ("mean", "median", "ols")
OBSERVATIONS = 501   # odd: the median is one observation, the same in every framework
INTERCEPT, SLOPE = 1.0, 2.0
QUICK_RESAMPLES = [2000]
DEFAULT_RESAMPLES = [10000]  # 1000 to 100000 with --sizes
# flops per gathered observation, per statistic: mean adds; the slope centres x and y, multiplies
# and adds twice; the median sorts (≈ log2 n comparisons each, counted as operations)
FLOPS_PER_OBSERVATION = {"mean": 1.0, "ols": 8.0, "median": math.log2(OBSERVATIONS)}


def host_data(seed: int, n: int = OBSERVATIONS) -> tuple[np.ndarray, np.ndarray]:
    """x ~ N(0, 1), y = 1 + 2x + ε with ε ~ N(0, 1), in float64."""
    rng = np.random.Generator(np.random.PCG64(seed))
    x = rng.standard_normal(n)
    return x, INTERCEPT + SLOPE * x + rng.standard_normal(n)


def replicate_statistic(ops, stat: str, xs, ys):
    """The statistic of each row (resample): xs, ys are (resamples, n)."""
    if stat == "mean":
        return ys.mean(axis=1)
    if stat == "median":
        return ops.median_rows(ys)
    dx = xs - xs.mean(axis=1, keepdims=True)
    dy = ys - ys.mean(axis=1, keepdims=True)
    return (dx * dy).sum(axis=1) / (dx * dx).sum(axis=1)


def bootstrap_replicates(ops, stat: str, x, y, indices):
    """Replicate statistics for every row of `indices`, in chunks of about ops.chunk_elements gathers.

    `ops` is an ArrayOps, or HOST_OPS for the float64 reference on the host."""
    rows = max(1, ops.chunk_elements // indices.shape[1])

    def one(start):  # chunks of rows are independent: on all cores where the namespace has them
        chunk = indices[start:start + rows]
        xs = ops.take(x, chunk) if stat == "ols" else None
        return replicate_statistic(ops, stat, xs, ops.take(y, chunk))

    return ops.concat(map_chunks(ops, one, range(0, indices.shape[0], rows)))


def analytic_standard_errors(x: np.ndarray, y: np.ndarray) -> dict:
    """Theory for the two statistics that have it, from the float64 sample."""
    n = x.size
    dx = x - x.mean()
    slope = (dx @ (y - y.mean())) / (dx @ dx)
    residual = y - y.mean() - slope * dx
    return {"mean": y.std(ddof=0) / math.sqrt(n),  # plug-in: exactly the ideal bootstrap SE
            "ols": math.sqrt(residual @ residual / (n - 2) / (dx @ dx)),
            "ols_sandwich": math.sqrt(np.sum(dx**2 * residual**2)) / (dx @ dx)}


def se_monte_carlo_error(replicates: np.ndarray) -> float:
    """Relative standard error of a standard deviation estimated from these replicates."""
    centred = replicates - replicates.mean()
    kurtosis = np.mean(centred**4) / np.mean(centred**2) ** 2
    return math.sqrt(max(kurtosis - 1.0, 0.5) / (4 * replicates.size))


class Bootstrap(StatsWorkload):
    name = "bootstrap"
    description = "bootstrap SE of the mean, the median and an OLS slope: B resamples, batched gathers"
    size_param, size_unit = "resamples", "resamples"
    item_unit = "resamples"
    has_opencl_kernel = True  # mean and slope; the median is refused there

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or (QUICK_RESAMPLES if quick else DEFAULT_RESAMPLES)
        dtypes = dtypes or (QUICK_DTYPES if quick else list(self.default_dtypes))
        return [{"stat": s, "resamples": b, "n": OBSERVATIONS, "dtype": d}
                for s in STATISTICS for d in dtypes for b in sizes]

    def items_per_call(self, params):
        return params["resamples"]

    def work(self, params):
        gathers = params["resamples"] * params["n"]
        columns = 2 if params["stat"] == "ols" else 1
        # each gather reads an 8-byte index and one value per column, at a random place
        return Work(flops=FLOPS_PER_OBSERVATION[params["stat"]] * gathers,
                    bytes_moved=float(gathers * (8 + columns * ITEMSIZE[params["dtype"]])))

    def footprint_bytes(self, params):
        return params["resamples"] * params["n"] * 8 + 4 * ACCELERATOR_CHUNK_ELEMENTS * 8

    def prepare_arrays(self, ops: ArrayOps, params, seed):
        stat, dtype, n, resamples = params["stat"], params["dtype"], params["n"], params["resamples"]

        def make(key):
            host_x, host_y = host_data(seed + key * SEED_STRIDE, n)
            indices = device_random(ops, seed + key * SEED_STRIDE + 1).integers(n, (resamples, n))
            host_indices = np.asarray(ops.backend.to_host(indices), dtype=np.int64)
            return Variant([ops.put(host_x, dtype), ops.put(host_y, dtype), indices], reference=None,
                           hosts=[host_x, host_y, host_indices])

        def judge(output, variant):
            return self._judged(stat, dtype, ops.to_host64(output), variant, ops.backend.location(output), ops.device)

        rotation = JudgedRotation(make, judge, base_metrics(self, params, seed + 1, generator_name(ops)))

        def to_device():
            variant = rotation.upcoming
            variant.inputs[:2] = [ops.put(variant.hosts[0], dtype), ops.put(variant.hosts[1], dtype)]
            return variant.inputs[1]

        shared = ops.backend.shares_host_memory(ops.device)
        return rotation.prepared(ops.backend, op=lambda v: ops.ready(bootstrap_replicates(ops, stat, *v.inputs)),
                                 to_device=None if shared else to_device,
                                 to_host=None if shared else (lambda: ops.backend.to_host(rotation.current.last)))

    def prepare_kernels(self, runner, params, seed):
        stat, dtype, n, resamples = params["stat"], params["dtype"], params["n"], params["resamples"]
        if stat not in ("mean", "ols"):
            raise Unsupported(f"the OpenCL bootstrap kernel computes the mean and the OLS slope, not the {stat} "
                              "(a selection per resample would hold n values in each work-item)")

        def make(key):
            host_x, host_y = host_data(seed + key * SEED_STRIDE, n)
            runner.slot = key
            inputs = [runner.upload("x", host_x), runner.upload("y", host_y)]
            host_indices = runner.resample_indices(resamples, n, seed + key * SEED_STRIDE + 1)  # on the device
            return Variant(inputs, reference=None, hosts=[host_x, host_y, host_indices],
                           drop=lambda: runner.release_slot(key))

        def op(variant):
            runner.slot = variant.key
            return runner.bootstrap(stat, resamples, n, keep_on_device=True)

        def judge(output, variant):
            replicates = np.asarray(runner.backend.to_host(output), dtype=np.float64)
            return self._judged(stat, dtype, replicates, variant, runner.backend.location(output), runner.device)

        rotation = JudgedRotation(make, judge, base_metrics(self, params, seed + 1, runner.generator))

        def to_device():
            variant = rotation.upcoming
            runner.slot = variant.key
            variant.inputs = [runner.upload("x", variant.hosts[0]), runner.upload("y", variant.hosts[1])]
            return variant.inputs[1]

        return rotation.prepared(runner.backend, op=op, to_device=to_device,
                                 to_host=lambda: runner.backend.to_host(rotation.current.last))

    def _judged(self, stat, dtype, replicates, variant: Variant, device_seen, device_asked):
        """The judgement against this input set's float64 replicates (made on first use)."""
        host_x, host_y, host_indices = variant.hosts
        if variant.reference is None:
            variant.reference = bootstrap_replicates(HostOps(), stat, host_x, host_y, host_indices)
        return self.judge(stat, dtype, replicates, variant.reference, host_x, host_y, device_seen, device_asked)

    def judge(self, stat, dtype, replicates, reference, host_x, host_y, device_seen, device_asked):
        conditions = Conditions(f"bootstrap {stat} over {reference.size} resamples in {dtype}")
        scale = max(1.0, math.sqrt(host_x.size) / 8)
        norm_error = _relative_norm(replicates, reference)
        conditions.within("replicates vs float64", norm_error, TOLERANCE[dtype] * scale,
                          f"relative error {norm_error:.2e} (limit {TOLERANCE[dtype] * scale:.1e})")
        se, se_reference = float(np.std(replicates, ddof=1)), float(np.std(reference, ddof=1))
        figures = {"bootstrap_se": se, "bootstrap_se_float64": se_reference,
                   "se_rel_error_vs_float64": relative_error(se, se_reference),
                   "rel_error_vs_float64": norm_error, "estimate": float(np.mean(replicates))}
        if stat in ("mean", "ols"):
            theory = analytic_standard_errors(host_x, host_y)
            target = theory["mean" if stat == "mean" else "ols_sandwich"]
            monte_carlo = se_monte_carlo_error(reference)
            # the slope's pairs bootstrap estimates the sandwich SE up to O(1/n) terms
            limit = STANDARD_ERRORS_LIMIT * monte_carlo + (5.0 / host_x.size if stat == "ols" else 0.0)
            error = relative_error(se, target)
            conditions.within("SE vs analytic", error, limit,
                              f"{se:.5g} vs {target:.5g}: {error:.2%} (limit {limit:.2%})")
            figures.update(analytic_se=target, se_rel_error_vs_analytic=error, se_monte_carlo_rel_error=monte_carlo)
            if stat == "ols":
                figures["ols_classical_se"] = theory["ols"]  # s²/Sxx: equal under homoskedasticity
        return conditions.check(device_seen, device_asked), figures


def _relative_norm(result: np.ndarray, reference: np.ndarray) -> float:
    if result.shape != reference.shape or not np.all(np.isfinite(result)):
        return math.inf
    return float(np.linalg.norm(result - reference) / (np.linalg.norm(reference) or 1.0))
