"""A Monte Carlo estimate judged as a statistic (issue 41, item 5): the spread of the timed calls'
estimates against the standard errors they claim catches a backend that draws half the numbers."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from accelbench.backends.arrays import NumpyArrays, NumpyRandom
from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import Rigor
from accelbench.verdict import INVALID
from accelbench.workloads.stats.draw_spread import SPREAD_MIN_CALLS, DrawSpread, chi2_upper

RIGOR = Rigor("spread", target_rel_ci=0.05, budget_s=1.5, min_samples=30, max_samples=400,
              max_warmup_samples=3, max_warmup_s=0.05, min_block_s=0.0005)


def _distances(scale: float, count: int, seed: int) -> list[float]:
    draw = random.Random(seed)
    return [abs(draw.gauss(0.0, scale)) for _ in range(count)]


def test_the_chi_square_tail_is_right_where_it_is_known():
    # P(χ²_k > k) is near 0.5 (a little under: the median lies below the mean); the 99.9% quantile of χ²_100 is 149.4
    assert 0.45 < chi2_upper(100, 100) < 0.5
    assert chi2_upper(149.4, 100) == pytest.approx(0.001, rel=0.15)


@pytest.mark.parametrize("scale, passes", [(1.0, True), (math.sqrt(2), False), (0.5, False)])
def test_estimates_that_scatter_as_claimed_pass_and_others_fail(scale, passes):
    """Honest draws pass; half the draws (√2 the spread) fail; estimates smoothed or repeated (half the
    spread) fail: 20 seeds each, 200 estimates."""
    outcomes = []
    for seed in range(20):
        spread = DrawSpread("test")
        for d in _distances(scale, 200, seed):
            spread.add(d)
        outcomes.append(spread.check("cpu").passed)
    assert all(o == passes for o in outcomes), outcomes


def test_too_few_estimates_decide_nothing():
    spread = DrawSpread("test")
    for d in _distances(5.0, SPREAD_MIN_CALLS - 1, 1):
        spread.add(d)
    assert spread.check("cpu").passed


@pytest.mark.parametrize("fine, repeated, fails", [(True, 0, False), (True, 2, False), (True, 8, True),
                                                   (False, 8, False)])
def test_estimates_that_repeat_to_the_bit_fail_where_sums_are_fine(fine, repeated, fails):
    """A backend handing a call's result out again (every other call, say) repeats estimates exactly:
    in float32/float64 sums that fails from 3 repeats and 5% of the estimates, even among too few to
    judge their spread; bfloat16's coarse sums repeat honestly, so there it decides nothing."""
    spread = DrawSpread("test", fine=fine)
    distances = _distances(1.0, SPREAD_MIN_CALLS - 1, 3)
    for d in distances + distances[:repeated]:
        spread.add(d)
    check = spread.check("cpu")
    assert check.passed is not fails, check.detail
    assert ("repeat another's exactly" in check.detail) is fails


class _HalfRandom(NumpyRandom):
    """Draws half the normals asked for and hands each out twice."""

    def normal(self, shape, dtype):
        count = int(np.prod(shape))
        half = self.generator.standard_normal((count + 1) // 2, dtype=np.dtype(dtype))
        return np.concatenate([half, half])[:count].reshape(shape)


class _HalfArrays(NumpyArrays):
    generator = _HalfRandom


class HalfDraws(NumpyBackend):
    name = "halfdraws"

    def arrays(self, device):
        return _HalfArrays(self, device)


def _measured(backend):
    spec = Spec.make("montecarlo", backend.name, "cpu", n=1 << 15, dtype="float64")
    with backend.threads(1):
        return measure_item(PlanItem(spec, 1), backend, RIGOR, seed=3, trust=TrustContext(probe_sync=False))


def test_a_backend_drawing_half_the_numbers_is_invalid_and_an_honest_one_is_not():
    cheat, honest = _measured(HalfDraws()), _measured(NumpyBackend())
    # the spread of all estimates, or now and then one estimate √2 too far out on its own
    assert cheat.verdict == INVALID and ("scatter" in cheat.check.detail or "SE" in cheat.check.detail), (
        cheat.check.detail, cheat.verdict_reasons)
    assert honest.verdict != INVALID and honest.check.passed, (honest.check.detail, honest.verdict_reasons)
    assert "scatter" in honest.check.detail  # judged together, as independent draws of the count do


def _block_judged(prepared, calls: int):
    prepared.before_block(calls)
    last = None
    for _ in range(calls):
        last = prepared.compute()
    return prepared.check_output(last)


@pytest.mark.parametrize("reused", [False, True])
def test_an_output_buffer_written_again_is_judged_once_as_its_last_call(reused):
    """An honest backend that writes every call's sums into one buffer (the OpenCL runner did): by the
    time the block ends, the buffer holds the last call's estimate, which is judged once, not once per call."""
    from accelbench.results import Check
    from accelbench.workloads.base import Prepared
    from accelbench.workloads.stats.draw_spread import audited_draws
    from accelbench.workloads.stats.montecarlo import OPTION, MonteCarlo

    n, workload, draws = 4096, MonteCarlo(), np.random.default_rng(11)
    buffer = np.zeros(2)

    def compute():
        z = draws.standard_normal(n)
        drift = (OPTION["rate"] - OPTION["volatility"] ** 2 / 2) * OPTION["maturity_years"]
        pay = np.maximum(OPTION["spot"] * np.exp(drift + OPTION["volatility"] * OPTION["maturity_years"] ** 0.5 * z)
                         - OPTION["strike"], 0.0)
        out = buffer if reused else np.empty(2)
        out[:] = (pay.sum(), (pay * pay).sum())
        return out

    def judge(output):
        return workload.judge(list(output), n, "float64", "cpu", "cpu")[0]

    prepared = audited_draws(Prepared(compute=compute, check_output=judge),
                             lambda output: workload.distance(list(output), n, "float64"), "call price", lambda _: "cpu")
    blocks, calls = 40, 6
    for _ in range(blocks):
        assert isinstance(_block_judged(prepared, calls), Check)
    together = prepared.judged_together()
    counted = int(together.detail.split(" timed calls")[0].split()[-1])
    assert counted == (blocks if reused else blocks * calls), together.detail
    assert together.passed, together.detail
