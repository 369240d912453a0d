"""The CPU baseline is chosen by measurement: the fastest CPU implementation measured in the run
(numpy with its pool, torch or jax on the CPU ...), on all cores and on one, named in the answer."""
from __future__ import annotations

import dataclasses

import pytest
from synthetic_runs import DEVICES, measurement

from accelbench.report.analysis import analyse
from accelbench.report.headline import headline
from accelbench.runner.speedups import cpu_baselines, wanted_speedups

TRIAD = {"kernel": "triad", "n": 1 << 24, "dtype": "float64"}


def _stream(torch_cpu_s: float, *, torch_ran: float | None = None, torch_threads: int = 2):
    torch_cpu = measurement("stream", "torch", "cpu", compute_s=torch_cpu_s, threads=torch_threads, **TRIAD)
    if torch_ran is not None:  # runnable time / wall time of its threads, as execute.py records it
        torch_cpu = dataclasses.replace(torch_cpu, telemetry={"interference": {"compute": {
            "own_demand_cores": torch_ran, "own_cores": torch_ran}}})
    return [measurement("stream", "numpy", "cpu", compute_s=0.010, threads=2, **TRIAD),
            measurement("stream", "numpy", "cpu", compute_s=0.020, threads=1, **TRIAD),
            torch_cpu,
            measurement("stream", "torch", "cuda:0", compute_s=0.001, **TRIAD)]


def _one(found: dict):
    (only,) = found.values()
    return only.spec.backend, only.threads


def test_a_faster_cpu_implementation_becomes_the_all_cores_baseline():
    runs = _stream(0.008)
    all_cores, one_core = cpu_baselines(runs)
    assert _one(all_cores) == ("torch", 2)
    assert _one(one_core) == ("numpy", 1)  # numpy alone was measured on one thread
    rows = {(r.spec.backend, r.spec.device, r.measurement.threads): r for r in analyse(runs, DEVICES)}
    assert rows[("torch", "cpu", 2)].baseline_role == "cpu_all_cores"
    gpu = rows[("torch", "cuda:0", None)]
    assert gpu.speedup_all.ratio == pytest.approx(8, rel=0.05)   # against torch on the CPU, not numpy's 10
    assert gpu.speedup_one.ratio == pytest.approx(20, rel=0.05)
    # numpy on all cores is now a candidate like any other: 1.25× slower than the best the CPU did
    assert rows[("numpy", "cpu", 2)].baseline_role is None
    assert rows[("numpy", "cpu", 2)].speedup_all.ratio == pytest.approx(0.8, rel=0.05)
    answer = headline(list(rows.values()))
    assert "stream triad float64 n=16,777,216 on torch, 2 threads" in answer.cpu  # the answer names what the CPU ran
    # torch on the CPU, the baseline of this work, is read against one core there (as deep learning is)
    entry = {d.series: d for d in answer.devices}["torch@cpu (2 threads)"]
    (memory,) = entry.comparisons
    assert memory.vs_all_cores is None and memory.vs_one_core.ratio == pytest.approx(2.5, rel=0.05)


def test_numpy_stays_the_baseline_where_it_is_the_fastest():
    all_cores, _ = cpu_baselines(_stream(0.012))
    assert _one(all_cores) == ("numpy", 2)
    kinds = {(w.kind, w.candidate.spec.backend, w.candidate.spec.device) for w in wanted_speedups(_stream(0.012))}
    assert ("cpu_all_cores", "torch", "cpu") in kinds and ("cpu_all_cores", "torch", "cuda:0") in kinds


def test_a_faster_implementation_that_did_not_use_the_cores_it_claims_is_no_baseline():
    # torch faster, but its threads ran 1.0 at a time while it claims 2: not an all-cores figure
    all_cores, _ = cpu_baselines(_stream(0.008, torch_ran=1.0))
    assert _one(all_cores) == ("numpy", 2)
    all_cores, _ = cpu_baselines(_stream(0.008, torch_ran=1.9))
    assert _one(all_cores) == ("torch", 2)


def test_an_invalid_or_fewer_thread_measurement_is_never_chosen():
    runs = _stream(0.008)
    broken = dataclasses.replace(runs[2], check=dataclasses.replace(runs[2].check, passed=False))
    all_cores, _ = cpu_baselines([m for m in (runs[0], runs[1], broken, runs[3]) if m.valid])
    assert _one(all_cores) == ("numpy", 2)
    # torch measured on one thread only, faster than numpy on two: the fastest on one core, not on all
    all_cores, one_core = cpu_baselines(_stream(0.008, torch_threads=1))
    assert _one(all_cores) == ("numpy", 2)
    assert _one(one_core) == ("torch", 1)


@pytest.mark.parametrize("torch_s, chosen", [(0.0099, "numpy"), (0.0096, "numpy"), (0.0094, "torch")])
def test_numpy_keeps_the_place_unless_another_is_clearly_faster(torch_s, chosen):
    # equal-speed implementations (1% and 4% apart: noise between runs) would take turns as the
    # baseline from run to run; 6% faster is a real difference, and the baseline follows it
    all_cores, _ = cpu_baselines(_stream(torch_s))
    assert _one(all_cores) == (chosen, 2)
