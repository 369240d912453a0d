"""Warm-up seen in the samples (timing/steady_state.py): both error rates of the cut, measured on
synthetic runs, and the harness leaving a slow start out of a result instead of calling it noisy."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for fakes

from fakes import FakeBackend, FakeClock  # noqa: E402

from accelbench.timing import stats, steady_state  # noqa: E402
from accelbench.timing.harness import measure  # noqa: E402
from accelbench.timing.rigor import RIGORS  # noqa: E402
from accelbench.verdict import DISTURBING, SETTLED_LATE, kind_of  # noqa: E402

RUNS = 600

STATIONARY = {  # noise with no start in it: every cut is a wrong one
    "gaussian 5%": lambda rng: 1 + 0.05 * rng.gauss(0, 1),
    "log-normal 10%": lambda rng: rng.lognormvariate(0, 0.1),
    "two modes": lambda rng: 1.0 if rng.random() < 0.7 else 1.3,
    "exponential tail": lambda rng: 1 + 0.05 * rng.expovariate(1),
}


def _slow_start(rng: random.Random, slow: int, n: int, slower: float) -> list[float]:
    return [(1 + slower if i < slow else 1.0) * rng.lognormvariate(0, 0.03) for i in range(n)]


@pytest.mark.parametrize("name", STATIONARY)
@pytest.mark.parametrize("n", [10, 17, 40, 300])
def test_stationary_noise_is_rarely_cut_and_never_moves_the_median_far(name, n):
    rng = random.Random(f"{name}{n}")
    cut = shifts = 0
    for _ in range(RUNS):
        samples = [STATIONARY[name](rng) for _ in range(n)]
        start = steady_state.settled_start(samples)
        cut += start > 0
        shift = abs(stats.median(samples[start:]) / stats.median(samples) - 1)
        shifts += shift > 0.05
    assert cut / RUNS <= 0.05, f"{name}, {n} samples: {cut} of {RUNS} runs cut"
    assert shifts / RUNS <= 0.01


@pytest.mark.parametrize("slow, n, slower, at_least", [(5, 17, 0.2, 0.7), (10, 55, 0.25, 0.9),
                                                        (20, 94, 0.3, 0.99), (30, 300, 0.5, 0.99)])
def test_a_slow_start_is_found_and_cut_where_it_ends(slow, n, slower, at_least):
    rng = random.Random(slow * n)
    starts = [steady_state.settled_start(_slow_start(rng, slow, n, slower)) for _ in range(RUNS // 2)]
    found = [start for start in starts if start > 0]
    assert len(found) / len(starts) >= at_least
    # where it is found, no slow sample stays in; the steady ones cut with them are a few at most
    assert all(slow <= start <= slow + n // 3 for start in found), sorted(found)


def test_a_fast_start_is_never_cut():
    """A clock boost that fades makes the first samples faster: that is no warm-up."""
    rng = random.Random(3)
    for _ in range(RUNS // 2):
        samples = _slow_start(rng, 10, 40, -0.2)
        assert steady_state.settled_start(samples) == 0


def test_a_burst_after_a_steady_start_is_not_warm_up():
    samples = [1.0, 1.01, 0.99, 1.0, 1.02, 1.0, 3.0, 3.0, 3.0, 1.0, 0.99, 1.01, 1.0, 1.0, 0.98, 1.0, 1.0, 1.01]
    assert steady_state.settled_start(samples) == 0


def test_too_few_samples_are_never_cut():
    assert steady_state.settled_start([2.0, 2.0, 1.0, 1.0, 1.0]) == 0
    assert steady_state.mser_start([]) == 0


def _kernel_with_a_long_warm_up(i: int) -> float:
    """1 ms calls 30-80% slow (unevenly, as real warm-ups are) for the first 25 calls, past the warm-up
    phase's cut: a slow start steady enough to meet the target alone would be timed as it is."""
    return 1e-3 * (1.3 + 0.5 * ((i * 7919) % 13) / 12) if i < 25 else 1e-3


def test_the_harness_leaves_a_slow_start_out_and_names_it():
    clock = FakeClock(jitter=0.01, seed=4)
    backend = FakeBackend(clock, kernel_s=_kernel_with_a_long_warm_up)
    quick_short_warm_up = RIGORS["quick"].__class__(**{**RIGORS["quick"].__dict__, "max_warmup_s": 0.01})
    timing = measure(backend.kernel, backend.synchronize, clock=clock, rigor=quick_short_warm_up)
    late = [w for w in timing.warnings if kind_of(w) == SETTLED_LATE]
    assert late and late[0].figures["samples"] >= 2 and "slower than the rest" in late[0]
    assert timing.summary.median_s == pytest.approx(1e-3, rel=0.02)
    assert not [w for w in timing.warnings if kind_of(w) in DISTURBING], timing.warnings
    assert SETTLED_LATE not in DISTURBING  # a start left out is no reason to call the result noisy


def test_without_the_cut_the_same_start_disturbs_the_result(monkeypatch):
    """The counterfactual: the slow start left in widens the interval or reads as drift."""
    monkeypatch.setattr(steady_state, "settled_start", lambda samples: 0)
    clock = FakeClock(jitter=0.01, seed=4)
    backend = FakeBackend(clock, kernel_s=_kernel_with_a_long_warm_up)
    quick_short_warm_up = RIGORS["quick"].__class__(**{**RIGORS["quick"].__dict__, "max_warmup_s": 0.01})
    timing = measure(backend.kernel, backend.synchronize, clock=clock, rigor=quick_short_warm_up)
    assert [w for w in timing.warnings if kind_of(w) in DISTURBING]
