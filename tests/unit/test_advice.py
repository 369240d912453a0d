"""Findings from synthetic measurements whose numbers the tests set, and none without support."""
from __future__ import annotations

import functools
import math
import subprocess
import sys

import pytest
from synthetic_runs import (BREAK_EVEN_SIZES, CPU, DEVICES, break_even_measurements, expected_transfer_share,
                            measurement)

from accelbench.devices.model import Device
from accelbench.report.advice import findings
from accelbench.report.crossover import Curve, classify, find_crossing, interpolate_crossing
from accelbench.report.analysis import analyse
from accelbench.timing.stats import RatioCI
from accelbench.verdict import UNSTABLE, Caveat


@functools.lru_cache(maxsize=1)
def break_even_rows():
    return analyse(break_even_measurements(), DEVICES)


def kinds(found, kind):
    return [f for f in found if f.kind == kind]


def test_interpolated_crossing_is_exact_for_a_power_law():
    # speed-up = (n / 2000)^1.5 crosses 1 at exactly 2000 on log-log axes
    assert interpolate_crossing(1000, 0.5**1.5, 4000, 2**1.5) == pytest.approx(2000)


def test_crossing_needs_intervals_that_exclude_one_on_both_sides():
    sure = Curve((1000, 3000), (RatioCI(0.5, 0.45, 0.55), RatioCI(1.5, 1.4, 1.6)))
    unsure = Curve((1000, 3000), (RatioCI(0.5, 0.3, 1.2), RatioCI(1.5, 1.4, 1.6)))
    assert classify(sure) == "crosses" and find_crossing(sure).supported
    assert classify(unsure) == "unclear" and not find_crossing(unsure).supported


def test_break_even_where_end_to_end_starts_to_beat_the_cpu_with_the_transfer_share():
    rows = break_even_rows()
    [finding] = kinds(findings(rows, DEVICES, {}), "break_even")
    numbers = finding.numbers
    assert numbers["timing"] == "end-to-end"
    assert numbers["break_even_n"] == pytest.approx(2000, rel=0.05)
    assert (numbers["n_below"], numbers["n_above"]) == (1500, 2500)
    assert numbers["speedup_below"] < 1 < numbers["speedup_above"]
    for n in BREAK_EVEN_SIZES:
        assert numbers["transfer_share"][n] == pytest.approx(expected_transfer_share(n), rel=0.02)
    # resident (data kept on the device) it is 10× faster at every size: the transfers are the cost
    assert "faster at every size" in finding.text
    assert f"{expected_transfer_share(1500):.0%} at n = 1,500" in finding.text
    assert "breaks even" in finding.text and "n ≈ 2,0" in finding.text


def test_no_break_even_when_the_intervals_straddle_one():
    # end-to-end samples spread ±60%: the crossing between 1500 and 2500 cannot be claimed
    rows = analyse(break_even_measurements(sizes=(1500, 2500), e2e_spread=0.6), DEVICES)
    found = findings(rows, DEVICES, {})
    assert not kinds(found, "break_even")
    assert not [f for f in kinds(found, "no_break_even") if f.numbers["timing"] == "end-to-end"]


def test_no_break_even_from_a_single_size():
    rows = analyse(break_even_measurements(sizes=(2000,)), DEVICES)
    found = findings(rows, DEVICES, {})
    assert not kinds(found, "break_even") and not kinds(found, "no_break_even")


def test_slower_everywhere_end_to_end_says_so_with_the_numbers():
    rows = analyse(break_even_measurements(sizes=(500, 1000, 1500)), DEVICES)
    [finding] = kinds(findings(rows, DEVICES, {}), "no_break_even")
    assert finding.numbers["break_even_n"] is None
    assert "slower than the CPU (all cores) end-to-end at every size" in finding.text


def test_precision_tradeoff_quotes_the_time_ratio_and_the_fp32_error():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.1, threads=2, n=2000, dtype="float32", rel_error=3e-6),
          measurement("matmul", "numpy", "cpu", compute_s=0.25, threads=2, n=2000, dtype="float64", rel_error=2e-16)]
    [finding] = kinds(findings(analyse(ms, DEVICES), DEVICES, {}), "precision")
    assert finding.numbers["time_ratio_vs_float32"] == pytest.approx(2.5, rel=0.01)
    assert finding.numbers["float32_rel_error"] == 3e-6
    assert "float64 is 2.50× slower [2.49–2.52] than float32" in finding.text and "3.0e-06" in finding.text


def test_no_precision_finding_with_one_dtype():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.1, threads=2, n=n, dtype="float32") for n in (500, 1000)]
    assert not kinds(findings(analyse(ms, DEVICES), DEVICES, {}), "precision")


def test_cpu_baseline_on_fewer_threads_than_usable_cores():
    many = Device("cpu", "cpu", "Test", "Test CPU", "test", properties={"usable_cpus": 8}, peaks=CPU.peaks)
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.1, threads=2, n=1000, dtype="float32")]
    [finding] = kinds(findings(analyse(ms, {"cpu": many}), {"cpu": many}, {}), "cpu_baseline_threads")
    assert finding.severity == "warning"
    assert finding.numbers == {"baseline_threads": 2, "usable_cpus": 8, "count": 1}
    assert "overstated by up to 4.0×" in finding.text
    # the same baseline on a 2-CPU machine uses every core: nothing to say
    assert not kinds(findings(analyse(ms, DEVICES), DEVICES, {}), "cpu_baseline_threads")


def test_result_that_ran_on_another_device_than_asked():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.1, threads=2, n=1000, dtype="float32"),
          measurement("matmul", "torch", "cuda:0", compute_s=0.1, n=1000, dtype="float32", passed=False,
                      device_seen="cpu")]
    found = findings(analyse(ms, DEVICES), DEVICES, {})
    [finding] = kinds(found, "wrong_device")
    assert finding.numbers["asked"] == "cuda:0" and finding.numbers["seen"] == "cpu"
    assert "ran on cpu" in finding.text and not kinds(found, "check_failed")
    assert found[0].severity == "warning"  # warnings come first


def test_unstable_measurements_and_what_would_help():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.1, threads=2, n=1000, dtype="float32", spread=0.4,
                      warnings=(Caveat("unstable: IQR is 40% of median", UNSTABLE),), target_met=False),
          measurement("matmul", "numpy", "cpu", compute_s=0.8, threads=2, n=2000, dtype="float32")]
    rows = analyse(ms, DEVICES)
    [finding] = kinds(findings(rows, DEVICES, {}, rigor="quick"), "unstable")
    assert finding.numbers["flagged"] == 1 and finding.numbers["total"] == 2
    assert finding.numbers["worst_rel_iqr"] == pytest.approx(rows[0].summary.rel_iqr)
    assert "--rigor rigorous" in finding.text and "0.75 s" in finding.text and "quieter machine" in finding.text
    [already] = kinds(findings(rows, DEVICES, {}, rigor="rigorous"), "unstable")
    assert "--rigor rigorous" not in already.text
    assert not kinds(findings(analyse(ms[1:], DEVICES), DEVICES, {}), "unstable")


def test_memory_bound_share_of_measured_bandwidth_and_compute_bound_share_of_peak():
    n = 2**24
    stream_s = 3 * n * 8 / 10e9           # triad float64 at 10 GB/s
    reduce_s = n * 4 / 8e9                # reduce float32 at 8 GB/s: 80% of the stream ceiling
    matmul_s = 2 * 2000**3 / 100e9        # 100 GFLOP/s: half the 200 GFLOP/s formula peak
    ms = [measurement("stream", "numpy", "cpu", compute_s=stream_s, threads=2, n=n, dtype="float64", kernel="triad"),
          measurement("reduce", "numpy", "cpu", compute_s=reduce_s, threads=2, n=n, dtype="float32"),
          measurement("matmul", "numpy", "cpu", compute_s=matmul_s, threads=2, n=2000, dtype="float32")]
    found = findings(analyse(ms, DEVICES), DEVICES, {})
    [memory] = kinds(found, "memory_bound")
    assert memory.numbers["fraction_of_bandwidth"] == pytest.approx(0.8, rel=0.01)
    assert "memory-bound" in memory.text and "80% of the measured bandwidth" in memory.text
    [compute] = kinds(found, "compute_bound")
    assert compute.numbers["fraction_of_peak"] == pytest.approx(0.5, rel=0.01)
    assert "50% of the formula peak" in compute.text
    # ridge = 200 GFLOP/s peak / 10 GB/s measured stream = 20 FLOP/byte; matmul n=2000 has 333
    assert compute.numbers["ridge_flop_per_byte"] == pytest.approx(20, rel=0.01)
    assert "compute-bound (333 FLOP/byte, above the ridge at 20)" in compute.text


def test_a_rate_above_the_peak_blames_the_ceiling():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=2 * 2000**3 / 300e9, threads=2, n=2000, dtype="float32")]
    [finding] = kinds(findings(analyse(ms, DEVICES), DEVICES, {}), "ceiling_exceeded")
    assert finding.severity == "warning" and finding.numbers["fraction_of_peak"] == pytest.approx(1.5, rel=0.01)


def test_one_thread_claim_overstates_the_gain():
    # the synthetic CPU takes 1.9× as long on one thread as on both
    [finding] = kinds(findings(break_even_rows(), DEVICES, {}), "one_thread_claim")
    assert finding.numbers["n"] == 3000
    assert finding.numbers["speedup_one_thread"] / finding.numbers["speedup_all_cores"] == pytest.approx(1.9, rel=0.03)
    assert "overstates the gain by 1.9×" in finding.text


def test_no_one_thread_claim_when_the_cpu_barely_scales():
    ms = [m if m.threads != 1 else measurement("matmul", "numpy", "cpu", compute_s=m.samples_s[10] / 1.9 * 1.2,
                                              threads=1, n=m.spec.param("n"), dtype="float32")
          for m in break_even_measurements()]
    assert not kinds(findings(analyse(ms, DEVICES), DEVICES, {}), "one_thread_claim")


def test_one_thread_beating_all_cores_flags_a_busy_machine():
    ms = [measurement("matmul", "numpy", "cpu", compute_s=0.2, threads=2, n=1000, dtype="float32"),
          measurement("matmul", "numpy", "cpu", compute_s=0.1, threads=1, n=1000, dtype="float32")]
    [finding] = kinds(findings(analyse(ms, DEVICES), DEVICES, {}), "cpu_scaling")
    assert finding.numbers["worst_ratio"] == pytest.approx(2.0, rel=0.01)
    assert finding.numbers["all_cores_threads"] == 2 and "quieter machine" in finding.text
    assert "no baseline" in finding.text  # issue 42: a collapsed all-cores result is never a denominator
    # the synthetic CPU of the break-even runs scales (1.9× on two threads): nothing to flag
    assert not kinds(findings(break_even_rows(), DEVICES, {}), "cpu_scaling")


def test_nothing_to_say_about_an_empty_run():
    assert findings([], {}, {}) == []


def test_findings_serialise_without_infinities():
    rows = break_even_rows()
    for finding in findings(rows, DEVICES, {}):
        for value in finding.to_dict()["numbers"].values():
            assert not (isinstance(value, float) and math.isinf(value))


def test_importing_the_report_package_loads_no_plotting_library():
    code = "import sys, accelbench.report, accelbench.report.advice; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
