"""Pairwise distances feeding a Gaussian kernel density estimate at every one of n points in d dims.

    s_i = (1/n) Σ_j exp(−‖x_i − x_j‖² / (2h²)),   density_i = s_i · (2πh²)^(−d/2)

All n² squared distances are needed, which makes this compute-bound (the n·d inputs are read once,
n²·(2d + 6) operations follow). The array version uses the matmul trick ‖x‖² + ‖y‖² − 2x·y, a
block of rows at a time (memory stays at one block × n); the OpenCL kernel takes direct differences,
staging blocks of points in local memory. The bandwidth is the median heuristic h² = d, where a
typical exponent is about −1, so no kernel value under- or overflows in any dtype.
The float64 reference is computed once per (n, d, seed) on the host from the float64 points, when
an output is checked; the matmul trick's cancellation in low precision is what
`rel_error_vs_float64` measures. The timed calls alternate between point sets of their own seeds
(workloads/rotation.py), so an output cached from another call fails.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.rotation import SEED_STRIDE, Variant
from accelbench.workloads.stats.arrays import map_chunks
from accelbench.workloads.stats.base import QUICK_DTYPES, JudgedRotation, StatsWorkload, base_metrics
from accelbench.workloads.stats.checking import Conditions
from accelbench.workloads.verify import TOLERANCE

DIMENSIONS = 16
QUICK_POINTS = [2048]
DEFAULT_POINTS = [5000]  # 20000 with --sizes: 16x the pairs
# rows per block are chosen so a block × n holds at most this many kernel values
BLOCK_VALUES = 1 << 20


def bandwidth_squared(dimensions: int) -> float:
    return float(dimensions)  # median heuristic for N(0, I): median ‖x−y‖² ≈ 2d, h² = that / 2


def host_points(n: int, dimensions: int, seed: int) -> np.ndarray:
    return np.random.Generator(np.random.PCG64(seed)).standard_normal((n, dimensions))


def kernel_means(ops, points, bandwidth2: float):
    """s_i for every row of `points` (n, d), by blocks of rows, with the matmul trick."""
    n = points.shape[0]
    squares = (points * points).sum(axis=1)
    rows, scale = max(1, BLOCK_VALUES // n), -0.5 / bandwidth2

    def one(start):  # blocks of rows are independent: on all cores where the namespace has them
        block = points[start:start + rows]
        cross = ops.xp.matmul(block, points.T)
        distances2 = squares[start:start + rows][:, None] + squares[None, :] - 2.0 * cross
        return ops.xp.exp(distances2 * scale).mean(axis=1)

    return ops.concat(map_chunks(ops, one, range(0, n, rows)))


@lru_cache(maxsize=4)
def reference_means(n: int, dimensions: int, seed: int) -> np.ndarray:
    """The float64 s_i on the host (matmul trick in float64: ~1e-15 of ‖x‖², far below any limit)."""
    from accelbench.workloads.stats.arrays import HostOps

    return kernel_means(HostOps(), host_points(n, dimensions, seed), bandwidth_squared(dimensions))


class Distance(StatsWorkload):
    name = "distance"
    description = "all pairwise distances of n points into a Gaussian kernel density estimate (compute-bound)"
    size_param, size_unit = "n", "points"
    item_unit = "pairs"
    default_dtypes = ("float64", "float32", "bfloat16")
    has_opencl_kernel = True

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or (QUICK_POINTS if quick else DEFAULT_POINTS)
        dtypes = dtypes or (QUICK_DTYPES if quick else list(self.default_dtypes))
        return [{"n": n, "d": DIMENSIONS, "dtype": dt} for dt in dtypes for n in sizes]

    def items_per_call(self, params):
        return params["n"] ** 2

    def work(self, params):
        n, d, itemsize = params["n"], params["d"], ITEMSIZE[params["dtype"]]
        # per pair: 2d for the dot product, 3 to form the squared distance, scale, exp, sum
        return Work(flops=float(n * n * (2 * d + 6)), bytes_moved=float((n * d + 2 * n) * itemsize))

    def footprint_bytes(self, params):
        return (params["n"] * params["d"] + 3 * BLOCK_VALUES) * 8

    def prepare_arrays(self, ops, params, seed):
        n, d, dtype = params["n"], params["d"], params["dtype"]

        def make(key):
            host = host_points(n, d, seed + key * SEED_STRIDE)
            return Variant([ops.put(host, dtype)], reference=None, hosts=[host])

        def judge(output, variant):
            return self.judge(ops.to_host64(output), n, d, dtype, seed + variant.key * SEED_STRIDE,
                              ops.backend.location(output), ops.device)

        rotation = JudgedRotation(make, judge, base_metrics(self, params, seed, "numpy PCG64 on the host (inputs)"))

        def to_device():
            variant = rotation.upcoming
            variant.inputs = [ops.put(variant.hosts[0], dtype)]
            return variant.inputs[0]

        shared = ops.backend.shares_host_memory(ops.device)
        return rotation.prepared(ops.backend, op=lambda v: ops.ready(kernel_means(ops, v.inputs[0], bandwidth_squared(d))),
                                 to_device=None if shared else to_device,
                                 to_host=None if shared else (lambda: ops.backend.to_host(rotation.current.last)))

    def prepare_kernels(self, runner, params, seed):
        n, d, dtype = params["n"], params["d"], params["dtype"]

        def make(key):
            host = host_points(n, d, seed + key * SEED_STRIDE)
            runner.slot = key
            return Variant([runner.upload("points", host)], reference=None, hosts=[host],
                           drop=lambda: runner.release_slot(key))

        def op(variant):
            runner.slot = variant.key
            return runner.kernel_means("points", n, d, bandwidth_squared(d), keep_on_device=True)

        def judge(output, variant):
            return self.judge(np.asarray(runner.backend.to_host(output), dtype=np.float64), n, d, dtype,
                              seed + variant.key * SEED_STRIDE, runner.backend.location(output), runner.device)

        rotation = JudgedRotation(make, judge, base_metrics(self, params, seed, "numpy PCG64 on the host (inputs)"))

        def to_device():
            variant = rotation.upcoming
            runner.slot = variant.key
            variant.inputs = [runner.upload("points", variant.hosts[0])]
            return variant.inputs[0]

        return rotation.prepared(runner.backend, op=op, to_device=to_device,
                                 to_host=lambda: runner.backend.to_host(rotation.current.last))

    def judge(self, result, n, d, dtype, seed, device_seen, device_asked):
        reference = reference_means(n, d, seed)
        conditions = Conditions(f"Gaussian KDE at {n} points in {d} dims, {dtype}")
        if result.shape != reference.shape or not np.all(np.isfinite(result)):
            error = float("inf")
        else:
            error = float(np.linalg.norm(result - reference) / np.linalg.norm(reference))
        limit = TOLERANCE[dtype] * max(1.0, d / 4)
        conditions.within("densities vs float64", error, limit, f"relative error {error:.2e} (limit {limit:.1e})")
        worst = float(np.max(np.abs(result - reference) / reference)) if np.isfinite(error) else float("inf")
        normaliser = (2 * np.pi * bandwidth_squared(d)) ** (-d / 2)
        figures = {"rel_error_vs_float64": error, "max_pointwise_rel_error": worst,
                   "mean_density": float(np.mean(result)) * normaliser, "density_normaliser": normaliser,
                   "bandwidth": float(np.sqrt(bandwidth_squared(d)))}
        return conditions.check(device_seen, device_asked), figures
