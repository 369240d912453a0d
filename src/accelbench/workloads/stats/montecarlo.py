"""Monte Carlo price of a European call under geometric Brownian motion, against Black–Scholes.

    S_T = S0 · exp((r − σ²/2)·T + σ·√T·Z),  Z ~ N(0, 1);   price = e^(−rT) · E[max(S_T − K, 0)]

The closed-form Black–Scholes value is exact, so the estimate is judged in its own standard
errors: more than 4.5 SE away fails, which is what catches a generator or a backend whose draws are
biased. Draws are made on the device in chunks (memory stays bounded at any n); each timed call
draws afresh. In float32 and lower the same draws are also priced in float64, so the error that
precision alone adds (`rel_error_vs_float64`) is reported apart from the Monte Carlo error.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.rotation import SEED_STRIDE
from accelbench.workloads.stats.arrays import ACCELERATOR_CHUNK_ELEMENTS, chunk_counts, map_draws
from accelbench.workloads.stats.base import QUICK_DTYPES, StatsWorkload, base_metrics, checked
from accelbench.workloads.stats.checking import Conditions, relative_error
from accelbench.workloads.stats.draw_spread import audited_draws
from accelbench.workloads.stats.rng import device_random, generator_name

OPTION = {"spot": 100.0, "strike": 110.0, "rate": 0.05, "volatility": 0.2, "maturity_years": 1.0}
# per draw: ~10 for a normal (Box–Muller / ziggurat: log, sqrt, sin/cos, scaling), 2 for the
# exponent's multiply-add, 1 exp, 2 for max(S−K, 0), 3 to accumulate the sum and the sum of squares;
# each transcendental counted as one operation
FLOPS_PER_DRAW = 18
QUICK_DRAWS = [1 << 20]
DEFAULT_DRAWS = [10**6, 10**7]  # 10**8 (the brief's top) with --sizes 100000000: ~3 s a call here


def black_scholes_call(spot: float, strike: float, rate: float, volatility: float, maturity_years: float) -> float:
    """The exact price of a European call (Black and Scholes, 1973)."""
    root_t = math.sqrt(maturity_years)
    d1 = (math.log(spot / strike) + (rate + volatility**2 / 2) * maturity_years) / (volatility * root_t)
    d2 = d1 - volatility * root_t
    normal_cdf = lambda x: 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))  # noqa: E731
    return spot * normal_cdf(d1) - strike * math.exp(-rate * maturity_years) * normal_cdf(d2)


def undiscounted_payoff(xp, z):
    """max(S_T − K, 0) for standard normal draws z, in z's dtype (no branches: a select)."""
    o = OPTION
    drift = (o["rate"] - o["volatility"] ** 2 / 2) * o["maturity_years"]
    terminal = o["spot"] * xp.exp(drift + o["volatility"] * math.sqrt(o["maturity_years"]) * z)
    return xp.where(terminal > o["strike"], terminal - o["strike"], 0.0 * terminal)


def estimate_from_sums(total: float, total_squares: float, n: int) -> tuple[float, float]:
    """(discounted price, its standard error) from the payoff sum and sum of squares over n draws."""
    discount = math.exp(-OPTION["rate"] * OPTION["maturity_years"])
    mean = total / n
    variance = max(total_squares / n - mean * mean, 0.0) * n / (n - 1)
    return discount * mean, discount * math.sqrt(variance / n)


class MonteCarlo(StatsWorkload):
    name = "montecarlo"
    description = "European call under GBM by Monte Carlo, checked in standard errors against Black–Scholes"
    size_param, size_unit = "n", "draws"
    item_unit = "draws"
    default_dtypes = ("float64", "float32", "bfloat16")
    has_opencl_kernel = True

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or (QUICK_DRAWS if quick else DEFAULT_DRAWS)
        dtypes = dtypes or (QUICK_DTYPES if quick else list(self.default_dtypes))
        return [{"n": n, "dtype": d} for d in dtypes for n in sizes]

    def items_per_call(self, params):
        return params["n"]

    def work(self, params):
        # the draws are the only data: counted as materialised once (fused kernels do less)
        n = params["n"]
        return Work(flops=float(FLOPS_PER_DRAW * n), bytes_moved=float(n * ITEMSIZE[params["dtype"]]))

    def footprint_bytes(self, params):
        return 6 * min(params["n"], ACCELERATOR_CHUNK_ELEMENTS) * 8  # a chunk and its temporaries

    def prepare_arrays(self, ops, params, seed):
        n, dtype = params["n"], params["dtype"]
        timed, chunk = device_random(ops, seed), chunk_sums(ops)
        also_float64 = dtype != "float64" and ops.supports("float64")

        def judge(output):
            return self.judge(list(ops.to_host64(output)), n, dtype, ops.backend.location(output), ops.device)

        def same_draws_in_float64():
            """Untimed: one more call's draws summed in dtype and in float64 (the cost of precision alone)."""
            narrow, wide = payoff_sums(ops, chunk, device_random(ops, seed), n, dtype, also_float64=True)
            sums = [value for array in (narrow, wide) for value in ops.to_host64(array)]
            return {k: v for k, v in self.judge(sums, n, dtype, "", "")[1].items() if "float64" in k}

        prepared = checked(lambda: ops.ready(payoff_sums(ops, chunk, timed, n, dtype)), judge,
                           base_metrics(self, params, seed, generator_name(ops)) | OPTION,
                           figures=same_draws_in_float64 if also_float64 else None, draws_afresh=True)
        return audited_draws(prepared, lambda output: self.distance(list(ops.to_host64(output)), n, dtype),
                             f"call price from {n} draws in {dtype}", ops.backend.location, dtype)

    def prepare_kernels(self, runner, params, seed):
        n, dtype = params["n"], params["dtype"]
        calls = itertools.count()

        def compute():  # each call its own stream: the draws are new every time, as on the other backends
            return runner.montecarlo_sums(n, seed + next(calls) * SEED_STRIDE, dtype, OPTION, keep_on_device=True)

        def judge(output):
            sums = list(np.asarray(runner.backend.to_host(output), dtype=np.float64))
            return self.judge(sums, n, dtype, runner.backend.location(output), runner.device)

        def same_draws_in_float64():
            sums = list(runner.montecarlo_sums(n, seed, dtype, OPTION)) + list(
                runner.montecarlo_sums(n, seed, "float64", OPTION))  # the same stream
            return {k: v for k, v in self.judge(sums, n, dtype, "", "")[1].items() if "float64" in k}

        prepared = checked(compute, judge, base_metrics(self, params, seed, runner.generator) | OPTION,
                           figures=same_draws_in_float64 if dtype != "float64" and runner.has_float64 else None,
                           to_host=runner.fetch_last, draws_afresh=True)
        return audited_draws(prepared, lambda output: self.distance(
            list(np.asarray(runner.backend.to_host(output), dtype=np.float64)), n, dtype),
            f"call price from {n} draws in {dtype}", runner.backend.location, dtype)

    def distance(self, sums, n: int, dtype: str) -> float:
        """How far one call's estimate lies from the exact price, in its own standard errors."""
        return float(self.judge(sums, n, dtype, "", "")[1]["error_in_standard_errors"])

    def judge(self, sums, n: int, dtype: str, device_seen: str, device_asked: str):
        """The Check and the figures for the metrics, from [sum, sum², (sum64, sum²64)]."""
        exact = black_scholes_call(**OPTION)
        estimate, standard_error = estimate_from_sums(float(sums[0]), float(sums[1]), n)
        conditions = Conditions(f"call price from {n} draws in {dtype}")
        distance = conditions.standard_errors("price", estimate, exact, standard_error)
        figures = {"estimate": estimate, "exact": exact, "standard_error": standard_error,
                   "abs_error": abs(estimate - exact), "rel_error": relative_error(estimate, exact),
                   "error_in_standard_errors": distance}
        if len(sums) == 4:
            same_draws, _ = estimate_from_sums(float(sums[2]), float(sums[3]), n)
            figures["estimate_float64_same_draws"] = same_draws
            figures["rel_error_vs_float64"] = relative_error(estimate, same_draws)
        return conditions.check(device_seen, device_asked), figures


def chunk_sums(ops):
    """z -> [Σ payoff, Σ payoff²] in z's dtype; one fused dispatch under jax.jit (made once per prepare)."""
    def sums(z):
        payoff = undiscounted_payoff(ops.xp, z)
        return ops.stack([payoff.sum(), (payoff * payoff).sum()])
    return ops.jit(sums)


def payoff_sums(ops, chunk, rng, n: int, dtype: str, also_float64: bool = False):
    """[Σ payoff, Σ payoff²] in `dtype`, left on the device; with also_float64, a pair of such arrays,
    the second from the same draws widened to float64 (the cost of precision alone). Each chunk draws
    from a stream of its own where the generator splits (numpy: chunks on all cores)."""
    def one(count, stream):
        z = stream.normal((count,), dtype)
        return chunk(z), chunk(ops.astype(z, "float64")) if also_float64 else None

    pairs = map_draws(ops, rng, one, [count for _, count in chunk_counts(n, ops.chunk_elements)])
    total = _add_up(ops, [narrow for narrow, _ in pairs])
    return (total, _add_up(ops, [wide for _, wide in pairs])) if also_float64 else total


def _add_up(ops, chunks):
    return ops.stack(chunks).sum(axis=0) if len(chunks) > 1 else chunks[0]
