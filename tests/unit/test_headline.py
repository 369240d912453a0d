"""The headline: each device against the CPU first, with intervals, break-even, transfers and confidence."""
from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic_runs import (BREAK_EVEN_SIZES, CPU, DEVICES, break_even_measurements, expected_transfer_share,
                            measurement)

from accelbench.devices.model import Device
from accelbench.report.analysis import analyse
from accelbench.report.headline import device_description, headline, headline_for_run, ratio_words
from accelbench.runner.speedups import SpeedupCI

POCL = Device("opencl:0:0", "opencl", "AMD", "cpu-zen4", "opencl",
              properties={"device_type": "CPU", "platform_name": "Portable Computing Language"})


def _with_stream(measurements, gpu_s: float):
    """STREAM triad at 2^24 elements: the CPU at 10 ms, the GPU at `gpu_s`."""
    return [*measurements,
            measurement("stream", "numpy", "cpu", compute_s=0.010, threads=2, kernel="triad", n=1 << 24, dtype="float32"),
            measurement("stream", "numpy", "cpu", compute_s=0.012, threads=1, kernel="triad", n=1 << 24, dtype="float32"),
            measurement("stream", "torch", "cuda:0", compute_s=gpu_s, kernel="triad", n=1 << 24, dtype="float32")]


def test_each_device_gets_compute_and_memory_against_all_cores_and_one_core_with_break_even():
    rows = analyse(_with_stream(break_even_measurements(), gpu_s=0.001), DEVICES)
    answer = headline(rows, {"cuda:0": "Test GPU"})
    (gpu,) = answer.devices  # the CPU baseline itself is not a headline entry
    assert gpu.series == "torch@cuda:0"
    compute, memory = gpu.comparisons
    n = max(BREAK_EVEN_SIZES)
    assert compute.kind == "compute-bound" and compute.what == f"matmul float32 n={n:,}"
    assert compute.vs_all_cores.ratio == pytest.approx(10, rel=0.02)
    assert compute.vs_one_core.ratio == pytest.approx(19, rel=0.02)
    assert memory.kind == "memory-bound" and memory.vs_all_cores.ratio == pytest.approx(10, rel=0.02)
    assert memory.vs_one_core.ratio == pytest.approx(12, rel=0.02)
    assert gpu.break_even.startswith("with transfers it breaks even at n ≈ ")  # 2,000 by construction
    assert float(gpu.break_even.rsplit(" ", 1)[1].replace(",", "")) == pytest.approx(2000, rel=0.02)
    where, share = gpu.transfer_share
    assert where == f"matmul n={n:,}" and share == pytest.approx(expected_transfer_share(n), rel=0.02)
    text = " ".join(gpu.sentences())
    assert text.startswith("torch@cuda:0 (Test GPU): compute-bound (matmul float32 n=3,000) 10.0")
    assert "faster" in text and "than all CPU cores" in text and "than one core" in text
    assert f"Transfers take {expected_transfer_share(n):.0%} of the end-to-end time" in text
    assert "Confidence high (5 valid)" in text  # four matrix sizes and the triad


def test_a_device_slower_than_the_cpu_says_slower_with_the_inverted_interval():
    rows = analyse(_with_stream(break_even_measurements(sizes=(1000, 1500)), gpu_s=0.04), DEVICES)
    (gpu,) = headline(rows).devices
    memory = gpu.comparisons[1]
    assert memory.vs_all_cores.ratio == pytest.approx(0.25, rel=0.02)
    assert ratio_words(memory.vs_all_cores).startswith("4.00× slower [")
    assert gpu.break_even.startswith("with transfers it never breaks even")


def test_an_interval_across_one_is_no_clear_difference():
    said = ratio_words(SpeedupCI(1.02, 0.9, 1.1, pairs=8))
    assert said.startswith("no clear difference (between 1.11× slower and 1.10× faster, 8 pairs)"), said
    assert "unpaired" in ratio_words(SpeedupCI(3.0, 2.8, 3.2))


def test_noisy_and_invalid_results_lower_the_confidence_and_are_grouped_as_caveats():
    busy = ("other processes used 48% of the 2 cores during this measurement",)
    measurements, gpu = [], 0
    for m in _with_stream(break_even_measurements(), gpu_s=0.001):
        if m.spec.device == "cuda:0":
            gpu += 1
            verdict = ("noisy", busy) if gpu <= 3 else (
                ("invalid", ("faster than this device can compute: 900% of its peak",)) if gpu == 4 else ("valid", ()))
            m = replace(m, verdict=verdict[0], verdict_reasons=verdict[1])
        measurements.append(m)
    rows = analyse(measurements, DEVICES)
    answer = headline_for_run(rows, DEVICES, {})
    (entry,) = answer.devices
    assert entry.verdicts == {"valid": 1, "noisy": 3, "invalid": 1}
    assert entry.confidence.startswith("confidence low (1 valid, 3 noisy, 1 invalid)")
    (caveat,) = answer.caveats
    assert caveat.startswith(f"4 of {len(rows)} results are not plainly valid (3 noisy, 1 invalid)")
    assert "other processes ran alongside (3)" in caveat and "a rate beyond the device's peak (1)" in caveat


def test_unreached_devices_follow_the_devices_and_pocl_is_named_as_the_same_cpu():
    measurements = [measurement("matmul", "numpy", "cpu", compute_s=0.01, threads=2, n=512, dtype="float32"),
                    measurement("matmul", "numpy", "cpu", compute_s=0.018, threads=1, n=512, dtype="float32"),
                    measurement("matmul", "pyopencl", "opencl:0:0", compute_s=0.05, n=512, dtype="float32")]
    devices = {"cpu": CPU, "opencl:0:0": POCL}
    machine = {"unreached_devices": [{"name": "Tesla K40m", "device_ids": ["cuda:0", "cuda:1"], "reasons": [
        {"backend": "torch", "reason": "torch 2.13.0+cpu is a CPU-only build: install a CUDA build of torch"}]}]}
    answer = headline_for_run(analyse(measurements, devices), devices, machine)
    (pocl,) = answer.devices
    assert pocl.description == "Portable Computing Language running on this same CPU, not an accelerator"
    assert "5.00× slower" in " ".join(pocl.sentences())
    lines = answer.lines()
    assert lines[0].startswith("pyopencl@opencl:0:0 (Portable Computing Language running on this same CPU")
    # then what the CPU side is and what it reached, then what could not be measured
    assert lines[1].startswith("The CPU side (all cores): matmul float32 n=512 on numpy, 2 threads: 26.8 GFLOP/s, 100% of "
                               "the best this CPU was measured at")
    assert lines[2].startswith("2 × Tesla K40m (cuda:0, cuda:1) found, not measured") and "CPU-only build" in lines[2]
    assert answer.to_dict()["devices"][0]["comparisons"][0]["vs_cpu_all_cores"]["ratio"] == pytest.approx(0.2, rel=0.02)


def test_a_run_of_the_cpu_baseline_alone_has_nothing_to_compare_and_says_so():
    measurements = [measurement("matmul", "numpy", "cpu", compute_s=0.01, threads=2, n=512, dtype="float32")]
    answer = headline(analyse(measurements, DEVICES))
    assert answer.devices == () and "no speed-up to state" in answer.lines()[0]


def test_the_description_of_a_gpu_is_its_name_and_of_the_cpu_says_cpu():
    assert device_description(DEVICES["cuda:0"].to_dict()) == "Test GPU"
    assert device_description(CPU.to_dict()) == "the CPU, Test CPU"


def _mlp(backend: str, device: str, step_s: float, threads: int | None = None):
    from accelbench.results import Check, Measurement, Spec, Work
    from accelbench.timing import stats  # noqa: F401 - the samples below are what a run stores

    params = {"batch": 128, "dtype": "float32", **({"threads": threads} if threads else {})}
    return Measurement(spec=Spec.make("mlp", backend, device, **params),
                       phases_s={"compute": tuple(step_s * (1 + 0.002 * i) for i in range(12))},
                       first_call_s=step_s, work=Work(1e8, 1e6), check=Check(True, 1e-6, 1e-2), threads=threads)


def test_deep_learning_is_read_against_the_same_framework_on_the_cpu():
    """numpy runs no deep learning: the CPU side of mlp is torch on the CPU, on all cores and on one."""
    measurements = [_mlp("torch", "cpu", 0.010, threads=2), _mlp("torch", "cpu", 0.018, threads=1),
                    _mlp("torch", "cuda:0", 0.001)]
    answer = headline(analyse(measurements, {}), {"cuda:0": "Test GPU"})
    by_series = {d.series: d for d in answer.devices}
    (gpu,) = by_series["torch@cuda:0"].comparisons
    assert gpu.kind == "deep learning" and gpu.what == "mlp float32"
    assert gpu.vs_all_cores.ratio == pytest.approx(10, rel=0.02) and gpu.vs_one_core.ratio == pytest.approx(18, rel=0.02)
    # on the CPU the framework is compared with itself on one core
    (cpu,) = by_series["torch@cpu (2 threads)"].comparisons
    assert cpu.vs_all_cores is None and cpu.vs_one_core.ratio == pytest.approx(1.8, rel=0.02)
    assert "1.80× faster" in " ".join(by_series["torch@cpu (2 threads)"].sentences())
    assert "no speed-up against the CPU could be measured" not in " ".join(answer.lines())


def test_the_plan_measures_a_framework_baseline_on_one_core_and_on_all():
    from accelbench.runner.plan import _thread_counts
    from accelbench.workloads.registry import get_workload

    assert _thread_counts("torch", "cpu", 4, get_workload("mlp")) == [1, 4]
    assert _thread_counts("torch", "cpu", 4, get_workload("matmul")) == [4]   # numpy is matmul's baseline
    assert _thread_counts("numpy", "cpu", 4, get_workload("matmul")) == [1, 4]
    assert _thread_counts("torch", "cuda:0", 4, get_workload("mlp")) == [None]
