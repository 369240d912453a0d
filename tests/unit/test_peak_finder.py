"""The peak finder: an H200 replayed (docs/gpu-results.md: 769-798 TFLOP/s right after a warm-up,
~688 sustained at ~1.6 GHz under the 700 W cap), its refusals, and a real run on this CPU."""
from __future__ import annotations

import math
import platform

import pytest

from accelbench.backends.registry import get_backend
from accelbench.results import Check
from accelbench.runner.peak_bench import BackendBench, cpu_reader
from accelbench.runner.peak_finder import Burst, candidate_orders, find_peak, settled
from accelbench.runner.peak_results import pair_lines, peak_pairs, search_measurements

H200_BOOST_MHZ, H200_CAPPED_MHZ = 1980.0, 1600.0


def rate_at_boost(n: int) -> float:
    """798 TFLOP/s at n=8192 right after warm-up, falling off away from it (on a log scale)."""
    return 798e12 * max(0.3, 1 - 0.25 * abs(math.log2(n / 8192)))


class ReplayedH200:
    """An H200 on a simulated clock: full boost for 25 s, then the power cap pulls the SM clock down
    to ~1.6 GHz by 60 s; the rate follows the clock as the recorded runs did (798 -> ~688)."""

    label = "replay H200 bf16"

    def __init__(self, now: list[float], wrong_at: int | None = None, above_peak_at: int | None = None,
                 wobble: float = 0.002):
        self.now, self.wrong_at, self.above_peak_at, self.wobble = now, wrong_at, above_peak_at, wobble
        self.bursts = 0

    def clock_mhz(self) -> float:
        t = self.now[0]
        if t < 25:
            return H200_BOOST_MHZ
        return max(H200_CAPPED_MHZ, H200_BOOST_MHZ - (H200_BOOST_MHZ - H200_CAPPED_MHZ) * (t - 25) / 35)

    def prepare(self, n):
        self.now[0] += 0.2

    def check(self, n):
        self.now[0] += 0.3
        wrong = n == self.wrong_at
        return Check(not wrong, 0.5 if wrong else 1e-3, 4e-3, "replayed", "cuda:0")

    def burst(self, n, seconds):
        self.now[0] += seconds
        self.bursts += 1
        at_boost = rate_at_boost(n)
        if n == self.above_peak_at:
            at_boost = 1500e12  # a timing bug: faster than the chip can go
        rate = at_boost * (self.clock_mhz() / H200_BOOST_MHZ) ** 0.7
        rate *= 1 + self.wobble * (-1) ** self.bursts
        per_call = 2.0 * n**3 / rate
        batches = tuple(per_call * (1 + 0.004 * math.sin(7 * i + self.bursts)) for i in range(10))  # 0.1 s each
        return Burst(max(1, round(rate * seconds / (2.0 * n**3))), seconds, self.clock_mhz(), 700.0, batches)

    def release(self, n):
        pass


def _run(bench, now, **options):
    orders = candidate_orders(256, 2048, 16384)
    return find_peak(bench, orders, multiple=256, budget_s=180, peak_flops=989e12 * 1.0,
                     clock=lambda: now[0], **options)


def test_replayed_h200_tells_the_maximum_from_the_sustained_rate_within_three_minutes():
    now = [0.0]
    search = _run(ReplayedH200(now), now)
    best, held = search.maximum, search.sustained
    assert best is not None and held is not None
    assert best.n == 8192 and 769e12 <= best.rate <= 798e12 * 1.01 and best.clock_mhz == H200_BOOST_MHZ
    assert held.settled and 675e12 <= held.rate <= 700e12
    assert held.clock_mhz == pytest.approx(H200_CAPPED_MHZ, abs=30) and held.power_w == 700.0
    assert search.elapsed_s <= 180 + 1.5
    assert "grid orders" in search.coverage and "neighbours of the best" in search.coverage
    assert {8192, 7936, 8448} <= {t.n for t in search.trials}  # the best's neighbours were tried


def test_a_failed_check_and_a_rate_above_the_formula_peak_never_become_the_maximum():
    now = [0.0]
    orders = candidate_orders(256, 2048, 16384)
    search = _run(ReplayedH200(now, wrong_at=8192, above_peak_at=orders[-1]), now)
    statuses = {t.n: t.status for t in search.trials}
    assert statuses[8192] == "check failed" and statuses[orders[-1]] == "above peak"
    assert search.maximum is not None and search.maximum.n not in (8192, orders[-1])
    assert search.maximum.rate <= 989e12


def test_a_rate_that_never_settles_is_named_so_and_the_budget_still_holds():
    now = [0.0]
    search = _run(ReplayedH200(now, wobble=0.05), now)  # ±5 % burst to burst: never within 2 %
    assert search.sustained is not None and not search.sustained.settled
    assert search.elapsed_s <= 180 + 1.5


class _SlowWarmUp(ReplayedH200):
    """A warm-up that overran the search's share of the budget (a loaded machine)."""

    def burst(self, n, seconds):
        result = super().burst(n, seconds)
        if self.bursts == 1:
            self.now[0] += 120.0
        return result


def test_a_warm_up_that_ate_the_search_window_still_leaves_one_order_tried():
    now = [0.0]
    search = _run(_SlowWarmUp(now), now)
    assert len(search.trials) == 1 and search.maximum is not None  # not "no maximum", exit 1


def test_settled_needs_the_whole_window_within_the_tolerance():
    assert settled([100, 99.5, 100.4, 100], span=4, tolerance=0.02)
    assert not settled([100, 90, 100, 100], span=4, tolerance=0.02)
    assert not settled([100, 100], span=4, tolerance=0.02)


def test_the_pair_is_stored_as_results_and_read_back_with_clock_and_power():
    now = [0.0]
    search = _run(ReplayedH200(now), now)
    measurements = search_measurements(search, "torch", "cuda:0", "bfloat16", search.final_check)
    assert [m.spec.param("peak") for m in measurements] == ["maximum", "sustained"]
    assert all(m.trusted and m.spec.workload == "matmul" for m in measurements)
    pairs = peak_pairs([(m, "run-1") for m in measurements])
    pair = pairs[("cuda:0", "bfloat16")]
    assert pair["maximum"]["rate_flops"] == pytest.approx(search.maximum.rate, rel=0.005)  # median of its batches
    assert pair["sustained"]["rate_flops"] == pytest.approx(search.sustained.rate)
    lines = pair_lines("bfloat16", pair)
    assert lines[0].startswith("bfloat16 maximum 7") and "1,980 MHz" in lines[0]
    assert any(line.startswith("bfloat16 sustained 6") and "settled" in line for line in lines)
    assert all(len(line) <= 72 for line in lines)


def test_the_maximum_carries_its_best_bursts_batches_as_samples():
    now = [0.0]
    search = _run(ReplayedH200(now), now)
    maximum, _ = search_measurements(search, "torch", "cuda:0", "bfloat16", search.final_check)
    assert maximum.samples_s == search.maximum.batch_s and len(maximum.samples_s) == 10
    entry = peak_pairs([(maximum, "run-1")])[("cuda:0", "bfloat16")]["maximum"]
    assert entry["samples"] == 10 and entry["ci_low_flops"] < entry["rate_flops"] < entry["ci_high_flops"]
    assert entry["ci_high_flops"] / entry["ci_low_flops"] < 1.01     # the replay's batches spread 0.4 %
    assert entry["rate_flops"] == pytest.approx(search.maximum.rate, rel=0.005)
    assert "95% CI 7" in pair_lines("bfloat16", {"maximum": entry})[1] and "10 batches" in pair_lines(
        "bfloat16", {"maximum": entry})[1]


def test_a_real_burst_keeps_the_settled_batches_not_the_ramp():
    from accelbench.runner.peak_bench import SETTLED_BATCH_S, per_call_of_batches

    ramp = [(0.001, 1), (0.002, 2), (0.004, 4)]
    settled = [(0.1, 100), (0.11, 100), (0.09, 100)]
    assert per_call_of_batches(ramp + settled) == pytest.approx((0.001, 0.0011, 0.0009))
    assert per_call_of_batches(ramp) == pytest.approx((0.001, 0.001, 0.001))  # too few settled: every batch
    assert SETTLED_BATCH_S < 0.09


def test_the_finder_runs_for_real_on_this_cpu_and_reports_the_running_clock():
    bench = BackendBench(get_backend("numpy"), "cpu", "float32", reader=cpu_reader())
    search = find_peak(bench, [128, 192], multiple=64, budget_s=6, burst_s=0.3, warmup_s=0.3, settle_span_s=1.0)
    assert search.maximum is not None and search.maximum.rate > 0
    assert search.final_check is not None and search.final_check.passed
    assert search.sustained is not None and search.sustained.rate > 0
    assert search.maximum.batch_s and all(s > 0 for s in search.maximum.batch_s)
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert search.maximum.clock_mhz and 300 < search.maximum.clock_mhz < 7000
    assert search.elapsed_s < 6 + 2


def test_the_cpu_check_catches_a_wrong_product():
    numpy_backend = get_backend("numpy")

    class Wrong:  # a backend whose product is off by one element
        name = "wrong"
        def __getattr__(self, attr):
            return getattr(numpy_backend, attr)

        def matmul(self, a, b, out=None):
            result = numpy_backend.matmul(a, b, out=out)
            result[0, 0] += 10.0
            return result

    bench = BackendBench(Wrong(), "cpu", "float32")
    bench.prepare(64)
    assert not bench.check(64).passed


def test_the_command_holds_rates_to_the_bound_every_result_is_held_to(monkeypatch):
    """Not the nominal formula peak: this CPU's numpy ran 201 GFLOP/s at 3.69 GHz against a formula
    peak of 166 at 2.596, and every honest order was refused. The bound moves the refusal."""
    from piped_cli import piped

    from accelbench.runner import plausibility

    args = ["peak", "--device", "cpu", "--budget", "3", "--orders", "128", "--no-store", "--json"]
    monkeypatch.setattr(plausibility, "flops_bound", lambda device, dtype=None: plausibility.Bound(1.0, 1.0, "tiny"))
    refused, _ = piped(args)
    assert refused == 1  # every order above the (patched) bound: no maximum
    monkeypatch.undo()
    code, out = piped(args)
    assert code == 0, out
