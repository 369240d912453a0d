"""A simulation study: the power of the two-sample t-test over a grid of effect sizes.

Each cell (effect size δ) simulates R replicates of two groups of n ~ N(0, 1) and N(δ, 1), runs the
pooled-variance t-test at α = 0.05 on every replicate at once (batched means and variances, a
comparison instead of a branch), and reports the share rejected. The exact power is known: under δ
the statistic is noncentral t with 2n−2 degrees of freedom and noncentrality δ·√(n/2), so each cell
is checked within 4.5 binomial standard errors √(p(1−p)/R) of scipy.stats.nct. In float32 and lower
the same draws are also tested in float64 and the decisions that flip are counted: the accuracy
precision alone costs, apart from the Monte Carlo error.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.rotation import SEED_STRIDE
from accelbench.workloads.stats.arrays import ACCELERATOR_CHUNK_ELEMENTS, map_draws
from accelbench.workloads.stats.base import QUICK_DTYPES, StatsWorkload, base_metrics, checked
from accelbench.workloads.stats.checking import Conditions, binomial_standard_error
from accelbench.workloads.stats.rng import device_random, generator_name

EFFECT_SIZES = (0.0, 0.2, 0.5, 0.8)  # Cohen's none, small, medium, large
GROUP_SIZE = 20
ALPHA = 0.05
QUICK_REPLICATES = [4000]
DEFAULT_REPLICATES = [10000]  # 100000 with --sizes
# per draw: ~10 to make the normal, 1 to shift, 3 for the sums of x and x²; per replicate ~15 for
# the pooled t statistic and the comparison (each transcendental counted as one operation)
FLOPS_PER_DRAW, FLOPS_PER_REPLICATE = 14, 15


def critical_value(group_size: int, alpha: float = ALPHA) -> float:
    return float(_scipy_stats().t.ppf(1.0 - alpha / 2.0, 2 * group_size - 2))


def exact_power(effect: float, group_size: int, alpha: float = ALPHA) -> float:
    """P(|T| > t_crit) with T ~ noncentral t(2n−2, δ·√(n/2)): the two-sided test's power."""
    stats = _scipy_stats()
    df, noncentrality = 2 * group_size - 2, effect * math.sqrt(group_size / 2.0)
    crit = critical_value(group_size, alpha)
    return float(stats.nct.sf(crit, df, noncentrality) + stats.nct.cdf(-crit, df, noncentrality))


def _scipy_stats():
    try:
        import scipy.stats
    except ModuleNotFoundError:
        raise Unsupported("simstudy needs scipy for the exact noncentral-t power: pip install scipy") from None
    return scipy.stats


def t_statistics(xs, ys):
    """Pooled two-sample t statistic of each row pair: xs, ys are (replicates, n)."""
    n = xs.shape[1]
    mean_x, mean_y = xs.mean(axis=1), ys.mean(axis=1)
    dx, dy = xs - mean_x[:, None], ys - mean_y[:, None]
    pooled_variance = ((dx * dx).sum(axis=1) + (dy * dy).sum(axis=1)) / (2 * n - 2)
    return (mean_y - mean_x) / (pooled_variance * (2.0 / n)) ** 0.5


def decision_functions(ops, critical: float):
    """draws (2, rows, n), effect -> rejections; and the decisions float64 would change; jitted on jax."""
    def rejected(draws, effect):
        return ops.xp.abs(t_statistics(draws[0], draws[1] + effect)) > critical

    def count(draws, effect):
        return ops.astype(rejected(draws, effect), "int32").sum()

    def flips(draws, effect):
        return ops.astype(rejected(draws, effect) != rejected(ops.astype(draws, "float64"), effect), "int32").sum()
    return ops.jit(count), ops.jit(flips)


def rejections(ops, functions, rng, replicates: int, dtype: str, also_float64: bool = False):
    """Rejection counts per cell, then the decisions changed vs float64 on the same draws (or 0s)."""
    count, flips = functions
    rows = max(1, ops.chunk_elements // (2 * GROUP_SIZE))
    sizes = [min(rows, replicates - start) for start in range(0, replicates, rows)]

    def one(task, stream):  # a chunk of one cell, from its own stream where the generator splits
        effect, size = task
        draws = stream.normal((2, size, GROUP_SIZE), dtype)
        return count(draws, effect), flips(draws, effect) if also_float64 else None

    done = map_draws(ops, rng, one, [(effect, size) for effect in EFFECT_SIZES for size in sizes])
    counts, changed = [], []
    for first in range(0, len(done), len(sizes)):
        cell = done[first:first + len(sizes)]
        counts.append(ops.stack([rejected for rejected, _ in cell]).sum())
        changed.append(ops.stack([flipped for _, flipped in cell]).sum() if also_float64 else counts[-1] * 0)
    return ops.stack(counts + changed)


class SimStudy(StatsWorkload):
    name = "simstudy"
    description = "power of the two-sample t-test by simulation, 4 effect sizes, vs the noncentral t"
    size_param, size_unit = "replicates", "replicates per cell"
    item_unit = "replicates"
    has_opencl_kernel = True

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or (QUICK_REPLICATES if quick else DEFAULT_REPLICATES)
        dtypes = dtypes or (QUICK_DTYPES if quick else list(self.default_dtypes))
        return [{"replicates": r, "group_size": GROUP_SIZE, "dtype": d} for d in dtypes for r in sizes]

    def items_per_call(self, params):
        return params["replicates"] * len(EFFECT_SIZES)

    def work(self, params):
        replicates = params["replicates"] * len(EFFECT_SIZES)
        draws = replicates * 2 * params["group_size"]
        return Work(flops=float(FLOPS_PER_DRAW * draws + FLOPS_PER_REPLICATE * replicates),
                    bytes_moved=float(draws * ITEMSIZE[params["dtype"]]))  # each draw materialised once

    def footprint_bytes(self, params):
        return 8 * ACCELERATOR_CHUNK_ELEMENTS * 8

    def prepare_arrays(self, ops, params, seed):
        replicates, dtype = params["replicates"], params["dtype"]
        if params["group_size"] != GROUP_SIZE:
            raise Unsupported(f"simstudy runs with group_size={GROUP_SIZE}")
        critical = critical_value(GROUP_SIZE)
        timed, functions = device_random(ops, seed), decision_functions(ops, critical)
        also_float64 = dtype != "float64" and ops.supports("float64")

        def judge(output):
            counts = [int(round(v)) for v in ops.to_host64(output)]
            return self.judge(counts, replicates, dtype, False, ops.backend.location(output), ops.device)

        def decisions_in_float64():
            """Untimed: one more call's draws decided in dtype and in float64 (decisions that flip)."""
            result = rejections(ops, functions, device_random(ops, seed), replicates, dtype, also_float64=True)
            counts = [int(round(v)) for v in ops.to_host64(result)]
            return {k: v for k, v in self.judge(counts, replicates, dtype, True, "", "")[1].items()
                    if k.startswith("decisions_changed")}

        return checked(lambda: ops.ready(rejections(ops, functions, timed, replicates, dtype)), judge,
                       base_metrics(self, params, seed, generator_name(ops)) |
                       {"effect_sizes": list(EFFECT_SIZES), "alpha": ALPHA, "critical_t": critical},
                       figures=decisions_in_float64 if also_float64 else None, draws_afresh=True)

    def prepare_kernels(self, runner, params, seed):
        replicates = params["replicates"]
        if params["group_size"] != GROUP_SIZE:
            raise Unsupported(f"simstudy runs with group_size={GROUP_SIZE}")
        critical = critical_value(GROUP_SIZE)
        calls = itertools.count()

        def compute():  # each call its own stream: new samples every time, as on the other backends
            return runner.t_test_rejections(replicates, GROUP_SIZE, seed + next(calls) * SEED_STRIDE, critical,
                                            EFFECT_SIZES, keep_on_device=True)

        def judge(output):
            counts = [int(round(v)) for v in np.asarray(runner.backend.to_host(output), dtype=np.float64)]
            return self.judge(counts, replicates, params["dtype"], False, runner.backend.location(output),
                              runner.device)

        return checked(compute, judge, base_metrics(self, params, seed, runner.generator) |
                       {"effect_sizes": list(EFFECT_SIZES), "alpha": ALPHA, "critical_t": critical},
                       to_host=runner.fetch_last, release=runner.release, draws_afresh=True)

    def judge(self, counts, replicates, dtype, compared, device_seen, device_asked):
        cells = len(EFFECT_SIZES)
        conditions = Conditions(f"t-test power, {replicates} replicates per cell in {dtype}")
        powers, exacts, distances = [], [], []
        for effect, rejected in zip(EFFECT_SIZES, counts[:cells]):
            power, exact = rejected / replicates, exact_power(effect, GROUP_SIZE)
            powers.append(power)
            exacts.append(exact)
            distances.append(conditions.standard_errors(
                f"power at d={effect}", power, exact, binomial_standard_error(exact, replicates)))
        figures = {"power": powers, "exact_power": exacts, "error_in_standard_errors": distances,
                   "max_error_in_standard_errors": max(distances),
                   "max_abs_error": max(abs(p - e) for p, e in zip(powers, exacts))}
        if compared:
            flipped = sum(counts[cells:])
            figures.update(decisions_changed_vs_float64=flipped,
                           decisions_changed_fraction=flipped / (replicates * cells))
        return conditions.check(device_seen, device_asked), figures
