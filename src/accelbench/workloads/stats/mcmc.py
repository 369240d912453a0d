"""Random-walk Metropolis on a 2-D correlated normal: one sequential chain, or many chains at once.

Target N(0, Σ) with unit variances and correlation 0.5; proposal x' = x + 1.5·z, z ~ N(0, I);
accept when log u < log π(x') − log π(x) (a comparison and a select, no branch). Two variants:

* sequential — one chain: every step depends on the last, so each is a handful of tiny array ops
  and an accelerator pays its launch latency per op; parallel hardware cannot help.
* chains — C independent chains stepped together: the same ops on C-long arrays, which is where
  a GPU's thousands of lanes (or a CPU's SIMD and cores) pay off.

The array version runs the step loop in Python, ~20 array ops per step whatever the chain count
(`launches_per_call` in the metrics). The OpenCL kernel runs each chain's whole loop in one
work-item in one launch, so its sequential variant is one lane of the device walking the chain:
free of launch costs, but using one lane of thousands on a GPU (one core under PoCL), and its
speed-up over numpy is that of compiled code over an interpreted loop, not of parallel hardware.

Both report chain-steps per second, so the cost of a step of one chain and of a chain-step among
many can be set side by side. On numpy with several threads the chains are split into groups, one
per thread (at least MIN_GROUP_CHAINS chains each), each walking its own step loop from its own
random stream on the pool (numpy releases the GIL inside each op: measured here, a step of 4096
chains is ~10 µs of interpreter and ~200 µs inside the ops, so two groups keep two cores running).
One chain is sequential by nature: numpy runs it on one core whatever its thread count, and a CPU
result that claims more says so (runner/execute.py: the cores it used) and is no all-cores baseline.
An accelerator steps every chain in each launch (one group).

The check compares the moments of the kept draws (after a quarter discarded as burn-in) with the
target's — means 0, variances 1, covariance 0.5 — in standard errors that account for
autocorrelation: the spread of independent units, which are the chains for `chains` and 20
consecutive batches of the one chain for `sequential` (batch means; 5 SE, as a t with 19 degrees of
freedom has heavier tails).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.rotation import SEED_STRIDE
from accelbench.workloads.stats.arrays import map_chunks, parallel_width
from accelbench.workloads.stats.base import StatsWorkload, base_metrics, checked
from accelbench.workloads.stats.checking import STANDARD_ERRORS_LIMIT, Conditions
from accelbench.workloads.stats.rng import device_random, generator_name

RHO = 0.5
STEP = 1.5
BURN_IN_FRACTION = 0.25
SEQUENTIAL_BATCHES = 20
MOMENTS = ("mean x1", "mean x2", "var x1", "var x2", "cov x1 x2")
EXACT_MOMENTS = (0.0, 0.0, 1.0, 1.0, RHO)
QUICK = {"sequential": {"chains": 1, "steps": 6000}, "chains": {"chains": 4096, "steps": 400}}
DEFAULT = {"sequential": {"chains": 1, "steps": 20000}, "chains": {"chains": 16384, "steps": 500}}
# fewest steps whose check means something: 20 batches of >= ~15 autocorrelation times (τ ≈ 9
# here) after burn-in for one chain; a burn-in of >= 50 steps for many chains started at the mode
MIN_STEPS = {"sequential": 4000, "chains": 200}
# array ops (kernel launches, on an accelerator) per kept step in step_functions: proposal 2,
# log π 7, accept 2, selects 2, count 2, moment sums 6 (one fused dispatch under jax.jit)
ARRAY_OPS_PER_STEP = 21
# per chain-step: ~10 per normal (2) and ~3 for the log of a uniform, the proposal (2), log π (6),
# the comparison (2), two selects (3), the acceptance count (1), the moment sums (7)
FLOPS_PER_CHAIN_STEP = 44
# fewest chains in a group run on a thread of its own: a step costs ~10 µs of interpreter whatever
# the chain count and ~50 ns per chain, so 512 chains keep the interpreter's share near a sixth
MIN_GROUP_CHAINS = 512


def log_density(x):
    """log π(x) up to a constant, for the rows of x (chains, 2)."""
    x1, x2 = x[:, 0], x[:, 1]
    return (x1 * x1 - (2.0 * RHO) * x1 * x2 + x2 * x2) * (-0.5 / (1.0 - RHO * RHO))


def step_functions(ops):
    """One Metropolis step of every chain, without and with adding the new states' moments.

    Compiled with jax.jit on jax (one dispatch per step instead of ~20); plain functions elsewhere."""
    xp = ops.xp

    def step(x, log_p, accepted, proposals, log_u, offset):
        candidate = x + proposals[offset]  # offset is traced under jit: no recompile per step
        log_p_candidate = log_density(candidate)
        accept = log_u[offset] < log_p_candidate - log_p
        return (xp.where(accept[:, None], candidate, x), xp.where(accept, log_p_candidate, log_p),
                accepted + ops.astype(accept, "int32"))

    def kept_step(x, log_p, accepted, sums, proposals, log_u, offset):
        x, log_p, accepted = step(x, log_p, accepted, proposals, log_u, offset)
        return x, log_p, accepted, sums + ops.concat([x, x * x, (x[:, 0] * x[:, 1])[:, None]], axis=1)

    return ops.jit(step), ops.jit(kept_step)


def run_chains(ops, functions, rng, chains: int, steps: int, batches: int, dtype: str):
    """Moment sums per (batch, chain) of the kept states, shape (batches, chains, 5), and acceptances."""
    step, kept_step = functions
    x = ops.zeros((chains, 2), dtype)
    log_p, accepted = log_density(x), ops.zeros((chains,), "int32")
    burn_in = int(steps * BURN_IN_FRACTION)
    per_batch = (steps - burn_in) // batches
    block = max(1, ops.chunk_elements // (3 * chains))  # steps whose random numbers are drawn at once
    records, sums = [], ops.zeros((chains, 5), dtype)
    for first in range(0, steps, block):
        count = min(block, steps - first)
        proposals = rng.normal((count, chains, 2), dtype) * STEP
        log_u = ops.xp.log(1.0 - rng.uniform((count, chains), dtype))  # 1 − u is in (0, 1]: no log(0)
        for offset in range(count):
            kept = first + offset - burn_in
            if not 0 <= kept < per_batch * batches:
                x, log_p, accepted = step(x, log_p, accepted, proposals, log_u, offset)
                continue
            x, log_p, accepted, sums = kept_step(x, log_p, accepted, sums, proposals, log_u, offset)
            if (kept + 1) % per_batch == 0:
                records.append(sums)
                sums = ops.zeros((chains, 5), dtype)
    return ops.stack(records), accepted


def chain_groups(ops, chains: int) -> int:
    """Groups the chains are split into: one per thread map_chunks runs at once, each of at least
    MIN_GROUP_CHAINS chains; one where the namespace runs one item at a time (an accelerator)."""
    return max(1, min(parallel_width(ops), chains // MIN_GROUP_CHAINS))


def run_chain_groups(ops, functions, rng, chains: int, steps: int, batches: int, dtype: str):
    """run_chains over chain_groups(ops, chains) groups at once, each from its own random stream:
    moment sums (batches, chains, 5) and acceptances (chains,), the groups' chains side by side."""
    groups, spawn = chain_groups(ops, chains), getattr(rng, "spawn", None)
    if groups == 1 or spawn is None:  # one stream cannot be shared between threads
        return run_chains(ops, functions, rng, chains, steps, batches, dtype)
    sizes = [chains // groups + (1 if g < chains % groups else 0) for g in range(groups)]
    streams = spawn(groups)
    done = map_chunks(ops, lambda g: run_chains(ops, functions, streams[g], sizes[g], steps, batches, dtype),
                      range(groups))
    return ops.concat([sums for sums, _ in done], axis=1), ops.concat([accepted for _, accepted in done])


def unit_means(sums: np.ndarray, per_unit_steps: int) -> np.ndarray:
    """(units, 5) means of x1, x2, x1², x2², x1·x2 from the moment sums."""
    return sums.reshape(-1, 5) / per_unit_steps


class MCMC(StatsWorkload):
    name = "mcmc"
    description = "random-walk Metropolis on a correlated 2-D normal: one sequential chain vs many chains"
    size_param, size_unit = "steps", "steps per chain"
    item_unit = "chain_steps"
    dtypes: tuple[str, ...] = ("float64", "float32")
    has_opencl_kernel = True

    def grid(self, sizes, dtypes, quick):
        dtypes = dtypes or list(self.default_dtypes)
        shapes = QUICK if quick else DEFAULT
        return [{"variant": v, "chains": shape["chains"], "steps": s, "dtype": d}
                for v, shape in shapes.items() for d in dtypes for s in (sizes or [shape["steps"]])]

    def items_per_call(self, params):
        return params["chains"] * params["steps"]

    def sequential(self, params):
        return params["chains"] == 1  # one chain: every step waits for the last

    def work(self, params):
        chain_steps = params["chains"] * params["steps"]
        return Work(flops=float(FLOPS_PER_CHAIN_STEP * chain_steps),
                    bytes_moved=float(3 * chain_steps * ITEMSIZE[params["dtype"]]))  # the draws, made once

    def footprint_bytes(self, params):
        return 16 * params["chains"] * 8 + 4 * (1 << 22) * 8

    def prepare(self, backend, device, params, seed):
        if params["steps"] < MIN_STEPS[params["variant"]]:
            raise Unsupported(f"mcmc {params['variant']} needs at least {MIN_STEPS[params['variant']]} steps "
                              "for its autocorrelation-aware check")
        return super().prepare(backend, device, params, seed)

    def prepare_arrays(self, ops, params, seed):
        chains, steps, dtype = params["chains"], params["steps"], params["dtype"]
        batches = SEQUENTIAL_BATCHES if params["variant"] == "sequential" else 1
        timed, functions = device_random(ops, seed), step_functions(ops)

        def judge(output):
            sums, accepted = output
            return self.judge(ops.to_host64(sums), ops.to_host64(accepted), params, batches,
                              ops.backend.location(sums), ops.device)

        groups = chain_groups(ops, chains)  # as the timed calls split them: prepared under the same threads
        return checked(lambda: ops.ready(*run_chain_groups(ops, functions, timed, chains, steps, batches, dtype)),
                       judge, base_metrics(self, params, seed, generator_name(ops)) |
                       {"correlation": RHO, "proposal_sd": STEP, "steps_per_call": steps, "chain_groups": groups,
                        "launches_per_call": (1 if ops.compiles_functions else ARRAY_OPS_PER_STEP) * steps * groups},
                       draws_afresh=True, placed=lambda output: output[0])

    def prepare_kernels(self, runner, params, seed):
        chains, steps = params["chains"], params["steps"]
        batches = SEQUENTIAL_BATCHES if params["variant"] == "sequential" else 1
        burn_in = int(steps * BURN_IN_FRACTION)
        calls = itertools.count()

        def compute():  # each call its own stream: new chains every time, as on the other backends
            return runner.metropolis(chains, steps, burn_in, batches, seed + next(calls) * SEED_STRIDE, STEP, RHO,
                                     keep_on_device=True)

        def judge(output):
            sums, accepted = (np.asarray(runner.backend.to_host(part), dtype=np.float64) for part in output)
            return self.judge(sums, accepted, params, batches, runner.backend.location(output[0]), runner.device)

        # one work-item per chain: the sequential variant is one lane walking the whole chain
        return checked(compute, judge, base_metrics(self, params, seed, runner.generator) |
                       {"correlation": RHO, "proposal_sd": STEP, "steps_per_call": steps, "launches_per_call": 1},
                       to_host=runner.fetch_last, release=runner.release, draws_afresh=True,
                       placed=lambda output: output[0])

    def judge(self, sums, accepted, params, batches, device_seen, device_asked):
        steps, chains = params["steps"], params["chains"]
        per_unit = (steps - int(steps * BURN_IN_FRACTION)) // batches
        units = unit_means(sums, per_unit)
        # units -> moments: means, variances about the known mean 0, covariance
        estimates = units.mean(axis=0)
        errors = units.std(axis=0, ddof=1) / math.sqrt(units.shape[0])
        limit = 5.0 if batches > 1 else STANDARD_ERRORS_LIMIT
        conditions = Conditions(f"{params['variant']} Metropolis, {chains} chain(s) × {steps} steps")
        distances = [conditions.standard_errors(name, float(e), exact, float(se), limit)
                     for name, e, exact, se in zip(MOMENTS, estimates, EXACT_MOMENTS, errors)]
        kept = units.shape[0] * per_unit
        # effective sample size of x1: the variance of its mean, as if the kept draws were independent
        ess = float(estimates[2] / errors[0] ** 2) if errors[0] > 0 else float("nan")
        figures = {"moments": [float(e) for e in estimates], "exact_moments": list(EXACT_MOMENTS),
                   "error_in_standard_errors": distances, "max_error_in_standard_errors": max(distances),
                   "acceptance_rate": float(accepted.sum() / (chains * steps)),
                   "effective_sample_size": ess, "kept_draws": kept,
                   "max_abs_error": float(np.max(np.abs(estimates - np.array(EXACT_MOMENTS))))}
        return conditions.check(device_seen, device_asked), figures
