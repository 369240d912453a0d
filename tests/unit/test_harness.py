"""The timing harness against fakes of known cost: every number here is virtual time."""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for fakes

from fakes import FakeBackend, FakeClock  # noqa: E402

from accelbench.errors import UsageError  # noqa: E402
from accelbench.timing import harness, stats  # noqa: E402
from accelbench.timing.clock import PerfCounterClock, perf_counter_info  # noqa: E402
from accelbench.timing.harness import measure  # noqa: E402
from accelbench.timing.rigor import RIGORS, Rigor, get_rigor  # noqa: E402

KERNEL_S = 1.234e-3
SYNC_S = 50e-6


def _fake(jitter: float = 0.0, seed: int = 0, **backend) -> FakeBackend:
    backend.setdefault("kernel_s", KERNEL_S)
    backend.setdefault("sync_s", SYNC_S)
    return FakeBackend(FakeClock(jitter=jitter, seed=seed), **backend)


def _measure(backend: FakeBackend, **kwargs) -> harness.Timing:
    if "rigor" in kwargs:
        kwargs["rigor"] = get_rigor(kwargs["rigor"])  # a name, as the tests write it; measure takes a Rigor
    return measure(backend.kernel, backend.synchronize, clock=backend.clock, **kwargs)


# -- known costs are recovered -------------------------------------------------------------------

@pytest.mark.parametrize("asynchronous", [False, True])
def test_known_kernel_cost_is_recovered_without_jitter(asynchronous):
    timing = _measure(_fake(asynchronous=asynchronous))
    assert timing.summary.median_s == pytest.approx(KERNEL_S, rel=0.005)
    assert timing.target_met and timing.warnings == ()


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("asynchronous", [False, True])
def test_known_kernel_cost_is_recovered_with_jitter(asynchronous, seed):
    timing = _measure(_fake(jitter=0.02, seed=seed, asynchronous=asynchronous))
    assert timing.summary.median_s == pytest.approx(KERNEL_S, rel=0.005)


def test_async_backend_is_timed_correctly_because_the_harness_synchronises():
    backend = _fake(asynchronous=True)
    clock = backend.clock
    # A naive timer (no sync) sees almost nothing: the fake really only queues work.
    start_s = clock.now()
    for _ in range(100):
        backend.kernel()
    naive_per_call_s = (clock.now() - start_s) / 100
    assert naive_per_call_s < 0.01 * KERNEL_S
    assert backend.pending_s == pytest.approx(100 * KERNEL_S)
    backend.synchronize()
    timing = _measure(backend)
    assert timing.summary.median_s == pytest.approx(KERNEL_S, rel=0.005)


def test_every_clock_read_finds_the_device_idle():
    backend = _fake(asynchronous=True)
    busy_reads = []

    class CheckingClock:
        def now(self):
            busy_reads.append(backend.pending_s > 0)
            return backend.clock.now()

    measure(backend.kernel, backend.synchronize, clock=CheckingClock())
    assert busy_reads and not any(busy_reads)


def test_first_call_is_kept_apart():
    backend = _fake(compile_s=2.0)
    timing = _measure(backend)
    assert timing.first_call_s == pytest.approx(2.0 + KERNEL_S + SYNC_S, rel=1e-6)
    assert max(timing.samples_s) < 1.01 * KERNEL_S
    assert timing.summary.median_s == pytest.approx(KERNEL_S, rel=0.005)
    assert timing.total_wall_s > 2.0


# -- block size --------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel_s, sync_s", [(KERNEL_S, SYNC_S), (1e-6, 20e-6), (3e-6, 0.0), (0.2, 1e-4)])
def test_block_size_keeps_overhead_under_a_thousandth(kernel_s, sync_s):
    timing = _measure(_fake(kernel_s=kernel_s, sync_s=sync_s))
    assert timing.overhead_s == pytest.approx(sync_s)
    block_s = timing.calls_per_sample * kernel_s
    assert timing.overhead_s / block_s < harness.MAX_OVERHEAD_FRACTION
    assert block_s >= RIGORS["standard"].min_block_s
    assert timing.summary.median_s == pytest.approx(kernel_s, rel=0.002)


def test_coarse_clock_gives_a_resolution_warning():
    backend = FakeBackend(FakeClock(resolution_s=1e-3), kernel_s=KERNEL_S)
    timing = _measure(backend)
    assert any("clock resolution" in w for w in timing.warnings), timing.warnings


def test_blocks_too_short_for_the_overhead_are_reported():
    # quick's budget caps blocks at 37.5 ms; a 1 ms sync would need 1 s blocks
    timing = _measure(_fake(sync_s=1e-3), rigor="quick")
    assert any("overhead" in w for w in timing.warnings), timing.warnings


# -- warm-up -----------------------------------------------------------------------------------

def test_warm_up_runs_until_the_times_stop_falling():
    def warming_kernel_s(call_index: int) -> float:
        return KERNEL_S * (1.0 + 2.0 * math.exp(-call_index / 60))

    timing = _measure(_fake(kernel_s=warming_kernel_s))
    assert timing.warmup_samples >= 3
    assert timing.summary.median_s == pytest.approx(KERNEL_S, rel=0.005)


def test_warm_up_that_never_settles_is_reported():
    slowly_warming = Rigor("t", target_rel_ci=0.02, budget_s=3.0, min_samples=15, max_samples=1000,
                           max_warmup_samples=4, max_warmup_s=1.0, min_block_s=0.002)
    timing = _measure(_fake(kernel_s=lambda i: KERNEL_S * (1.0 + 5.0 * math.exp(-i / 2000))),
                      rigor=slowly_warming)
    assert any("still getting faster" in w for w in timing.warnings), timing.warnings


# -- adaptive stop -----------------------------------------------------------------------------

def test_quiet_run_stops_early_on_the_target():
    rigor = RIGORS["standard"]
    timing = _measure(_fake(jitter=0.005, seed=1))
    assert timing.stop_reason == "target" and timing.target_met
    assert len(timing.samples_s) == rigor.min_samples
    assert timing.total_wall_s - timing.first_call_s < rigor.budget_s / 2
    assert timing.summary.rel_ci_halfwidth <= rigor.target_rel_ci


def test_noisy_run_spends_the_budget_and_says_so():
    rigor = RIGORS["standard"]
    timing = _measure(_fake(jitter=1.0, seed=2))
    assert timing.stop_reason == "budget" and not timing.target_met
    spent_s = timing.total_wall_s - timing.first_call_s
    assert rigor.budget_s <= spent_s < rigor.budget_s + 0.2
    pattern = r"95% CI ±\d+\.\d% of median, target ±2%: budget of 3 s spent"
    assert any(re.fullmatch(pattern, w) for w in timing.warnings), timing.warnings


def test_max_samples_ends_a_run_with_a_warning():
    few = Rigor("few", target_rel_ci=0.001, budget_s=100.0, min_samples=10, max_samples=12,
                max_warmup_samples=5, max_warmup_s=0.1, min_block_s=0.001)
    timing = _measure(_fake(jitter=0.3, seed=3), rigor=few)
    assert len(timing.samples_s) == 12 and timing.stop_reason == "max_samples"
    assert any("maximum of 12 samples reached" in w for w in timing.warnings)


@pytest.mark.parametrize("kernel_s", [1e-6, 1e-4, KERNEL_S, 0.02, 0.1])
def test_quick_budget_bounds_the_time_spent(kernel_s):
    # ~40 quick measurements must fit in ~90 s: each takes its budget and at most a little more
    rigor = RIGORS["quick"]
    timing = _measure(_fake(kernel_s=kernel_s, sync_s=10e-6, jitter=0.5, seed=4), rigor="quick")
    spent_s = timing.total_wall_s - timing.first_call_s
    assert spent_s <= rigor.budget_s + max(0.05, 4 * kernel_s)
    assert 40 * (spent_s + kernel_s) < 60


def test_a_call_longer_than_the_budget_still_gets_three_samples():
    timing = _measure(_fake(kernel_s=2.0), rigor="quick")
    assert timing.calls_per_sample == 1 and len(timing.samples_s) == harness.MIN_SAMPLES_ON_BUDGET
    assert not timing.target_met


# -- warnings ----------------------------------------------------------------------------------

def test_bimodal_run_is_flagged_unstable():
    # the device alternates between two speeds every 400 calls (thermal or boost states)
    timing = _measure(_fake(kernel_s=lambda i: 1.0e-3 if (i // 400) % 2 else 1.4e-3))
    unstable = [w for w in timing.warnings if w.startswith("unstable: IQR is")]
    assert unstable and re.fullmatch(r"unstable: IQR is \d+% of median", unstable[0])


def test_state_change_is_reported():
    readings = iter([{"cpu_mhz": 3400.0, "temp_c": 60.0, "governor": "performance"},
                     {"cpu_mhz": 2800.0, "temp_c": 61.0, "governor": "powersave"}])
    timing = _measure(_fake(), state=lambda: next(readings))
    text = " | ".join(timing.warnings)
    assert "cpu_mhz changed during the measurement: 3400 -> 2800 (-18%)" in text
    assert "temp_c" not in text  # under 5%
    assert "governor" in text


def test_state_warnings_ignore_missing_readings():
    assert harness.state_warnings({"a": None, "b": math.nan, "c": 1.0}, {"a": 5.0, "b": math.nan}) == []


def test_failing_state_reader_becomes_a_warning():
    def broken():
        raise OSError("no sysfs")

    timing = _measure(_fake(), state=broken)
    assert timing.samples_s and any("state reader failed" in w for w in timing.warnings)


# -- phases ------------------------------------------------------------------------------------

def test_phases_are_timed_separately_and_end_to_end_by_the_runner():
    from accelbench.results import Check, Spec
    from accelbench.runner.execute import _timed
    from accelbench.runner.plan import PlanItem
    from accelbench.workloads.base import Prepared
    from accelbench.workloads.registry import get_workload

    backend = _fake(kernel_s=2e-3, sync_s=10e-6, transfer_s_per_byte=1e-9)
    host = np.ones((250, 250))  # 500 kB: 0.5 ms each way
    on_device = backend.from_host(host, "fake:0")
    out = backend.empty(host.shape, "float64", "fake:0")
    passed = Check(True, 0.0, 1e-10, "fake", "fake:0")
    prepared = Prepared(compute=lambda: backend.elementwise(on_device, out),
                        to_device=lambda: backend.from_host(host, "fake:0"), to_host=lambda: backend.to_host(out),
                        check_output=lambda _: passed)
    item = PlanItem(Spec.make("elementwise", "fake", "fake:0", n=host.size, dtype="float64"), None)
    measurement, _ = _timed(item, backend, get_workload("elementwise"), prepared, get_rigor("standard"), backend.clock)
    medians_s = {name: stats.median(samples) for name, samples in measurement.phases_s.items()}
    assert list(medians_s) == ["compute", "to_device", "to_host", "end_to_end"]
    assert medians_s["to_device"] == pytest.approx(0.5e-3, rel=0.005)
    assert medians_s["compute"] == pytest.approx(2e-3, rel=0.005)
    assert medians_s["to_host"] == pytest.approx(0.5e-3, rel=0.005)
    assert medians_s["end_to_end"] == pytest.approx(3e-3, rel=0.005)


# -- one call per sample (a training step, an inference batch) ------------------------------------

def test_calls_per_block_fixes_the_block_size_so_each_sample_is_one_call():
    backend = _fake(kernel_s=1e-4)  # short: unfixed, blocks would grow to ~20 calls
    grown = _measure(backend, rigor="quick")
    fixed = _measure(_fake(kernel_s=1e-4), rigor="quick", calls_per_block=1)
    assert grown.calls_per_sample > 1 and fixed.calls_per_sample == 1
    assert fixed.summary.median_s == pytest.approx(1e-4 + SYNC_S, rel=0.01)  # the sync is in every sample


def test_min_samples_are_taken_even_when_the_budget_runs_out():
    slow = 0.5  # s per call: quick's 0.75 s budget stops after 3 samples
    timing = _measure(_fake(kernel_s=slow, jitter=0.3), rigor="quick", calls_per_block=1)
    assert len(timing.samples_s) < 10 and timing.stop_reason == "budget"
    kept = _measure(_fake(kernel_s=slow, jitter=0.3), rigor="quick", calls_per_block=1, min_samples=10)
    assert len(kept.samples_s) >= 10 and kept.stop_reason in ("budget", "target")


def test_the_rigor_sets_the_samples_of_a_per_call_measurement():
    counts = {name: len(_measure(_fake(kernel_s=0.02, jitter=0.2, seed=3), rigor=name, calls_per_block=1).samples_s)
              for name in ("quick", "rigorous")}
    assert counts["quick"] >= RIGORS["quick"].min_samples and counts["rigorous"] >= RIGORS["rigorous"].min_samples
    assert counts["rigorous"] > counts["quick"]


# -- rigor, clock, fakes -------------------------------------------------------------------------

def test_rigors_tighten_in_order():
    quick, standard, rigorous = (get_rigor(name) for name in ("quick", "standard", "rigorous"))
    assert (quick.target_rel_ci, standard.target_rel_ci, rigorous.target_rel_ci) == (0.05, 0.02, 0.01)
    assert quick.budget_s < standard.budget_s < rigorous.budget_s
    assert get_rigor(standard) is standard
    with pytest.raises(UsageError, match="quick, standard, rigorous"):
        get_rigor("thorough")
    with pytest.raises(ValueError):
        Rigor("bad", target_rel_ci=0.0, budget_s=1.0, min_samples=5, max_samples=10,
              max_warmup_samples=3, max_warmup_s=0.1, min_block_s=0.001)


def test_timing_summary_is_derived_from_the_samples():
    timing = _measure(_fake(jitter=0.01))
    assert timing.summary == stats.summarize(timing.samples_s)


def test_fake_backend_can_return_wrong_values():
    backend = FakeBackend(wrong_by=1e-3)
    a = backend.random((8, 8), "float64", "fake:0", seed=1)
    b = backend.random((8, 8), "float64", "fake:0", seed=2)
    got = backend.matmul(a, b)
    assert np.allclose(got, (a @ b) * (1 + 1e-3)) and not np.allclose(got, a @ b, rtol=1e-6, atol=0)
    assert FakeBackend().matmul(a, b) == pytest.approx(a @ b)


def test_real_clock_smoke():
    info = perf_counter_info()
    assert info is perf_counter_info()  # measured once, cached
    assert 0 < info.resolution_s < math.inf and info.read_overhead_s > 0
    tiny = Rigor("tiny", target_rel_ci=0.05, budget_s=0.05, min_samples=6, max_samples=50,
                 max_warmup_samples=3, max_warmup_s=0.01, min_block_s=0.001)
    timing = measure(lambda: sum(range(10)), lambda: None, clock=PerfCounterClock(), rigor=tiny)
    assert timing.calls_per_sample > 1 and all(s > 0 for s in timing.samples_s)


def test_drift_during_sampling_is_reported():
    # a device that slows steadily (heating up) after a clean warm-up
    drifting = Rigor("drift", target_rel_ci=0.001, budget_s=3.0, min_samples=15, max_samples=60,
                     max_warmup_samples=5, max_warmup_s=0.2, min_block_s=0.002)
    timing = _measure(_fake(kernel_s=lambda i: KERNEL_S * (1 + 0.2 * max(0, i - 400) / 2000), jitter=0.01),
                      rigor=drifting)
    assert any(w.startswith("drift: the last third of the samples is") and "slower" in w
               for w in timing.warnings), timing.warnings
    assert not any(w.startswith("drift") for w in _measure(_fake(jitter=0.01), rigor=drifting).warnings)
