"""Realistic generated results for the speed benchmarks (report_speed.py, import_speed.py).

Each run measures matmul, stream and reduce over many sizes on six series (numpy on all cores
and on one thread, the CPU baselines; torch on the CPU; torch and cupy on a GPU; pyopencl), with
20-60 lognormal samples per phase, the transfer phases on accelerators and a few failed checks.
Seeded: the same arguments always give the same results.
"""
from __future__ import annotations

import math
import random
import resource
import subprocess
import time
from typing import Any

from accelbench.results import Check, Measurement, Spec, Work

SERIES = (  # backend, device, threads, speed relative to one CPU core, has transfer phases
    ("numpy", "cpu", 2, 1.9, False),
    ("numpy", "cpu", 1, 1.0, False),
    ("torch", "cpu", 2, 1.8, False),
    ("torch", "cuda:0", None, 40.0, True),
    ("cupy", "cuda:0", None, 38.0, True),
    ("pyopencl", "opencl:0:0", None, 12.0, True),
)
STREAM_KERNELS = {"copy": (2, 0), "scale": (2, 1), "add": (3, 1), "triad": (3, 2)}  # arrays, flops/element
ITEMSIZE = {"float32": 4, "float64": 8}


def _peak(metric: str, value: float) -> dict[str, Any]:
    return {"metric": metric, "value": value, "provenance": "table", "detail": "datasheet", "inputs": {}}


MACHINE = {
    "hostname": "bench-node", "os": "Linux", "python": "3.11",
    "inventory": {"devices": [
        {"id": "cpu", "kind": "cpu", "vendor": "Test", "name": "Test CPU", "source": "synthetic",
         "properties": {"usable_cpus": 2},
         "peaks": [_peak("fp32", 200e9), _peak("fp64", 100e9), _peak("memory_bandwidth", 40e9)]},
        {"id": "cuda:0", "kind": "gpu", "vendor": "Test", "name": "Test GPU", "source": "synthetic",
         "peaks": [_peak("fp32", 20e12), _peak("fp64", 10e12), _peak("memory_bandwidth", 900e9)]},
        {"id": "opencl:0:0", "kind": "gpu", "vendor": "Test", "name": "Test OpenCL", "source": "synthetic",
         "peaks": [_peak("fp32", 5e12), _peak("memory_bandwidth", 300e9)]},
    ]},
    "software": {"accelbench": "synthetic"}, "environment": {},
}


def _points(count: int):
    """(workload, params, flops, bytes) for `count` distinct problems, matmul, stream and reduce in turn."""
    step = 0
    while True:
        for dtype in ("float32", "float64"):
            size = step + 1
            n = 64 * size
            yield "matmul", {"n": n, "dtype": dtype}, 2.0 * n**3, 3.0 * n * n * ITEMSIZE[dtype]
            elements = 2**20 * size
            for kernel, (arrays, flops) in STREAM_KERNELS.items():
                yield ("stream", {"kernel": kernel, "n": elements, "dtype": dtype}, float(flops * elements),
                       float(arrays * elements * ITEMSIZE[dtype]))
            yield "reduce", {"n": elements, "dtype": dtype}, float(elements), float(elements * ITEMSIZE[dtype])
        step += 1


def _samples(rng: random.Random, median_s: float, sigma: float, count: int) -> tuple[float, ...]:
    return tuple(median_s * math.exp(rng.gauss(0.0, sigma)) for _ in range(count))


def run_measurements(count: int, seed: int = 0) -> list[Measurement]:
    """`count` measurements of one run: every problem on every series, in run order."""
    rng = random.Random(seed)
    out: list[Measurement] = []
    for workload, params, flops, bytes_moved in _points(count):
        for backend, device, threads, speed, transfers in SERIES:
            if len(out) == count:
                return out
            rate = 5e9 * speed if workload == "matmul" else 2e9 * speed  # FLOP/s, bytes/s
            compute_s = (flops if workload == "matmul" else bytes_moved) / rate
            sigma = rng.choice((0.01, 0.03, 0.1, 0.3))
            n_samples = rng.randint(20, 60)
            phases = {"compute": _samples(rng, compute_s, sigma, n_samples)}
            if transfers:
                move_s = bytes_moved / 12e9
                phases["to_device"] = _samples(rng, move_s * 2 / 3, sigma, n_samples)
                phases["to_host"] = _samples(rng, move_s / 3, sigma, n_samples)
                phases["end_to_end"] = _samples(rng, compute_s + move_s, sigma, n_samples)
            passed = rng.random() > 0.03
            spec = Spec.make(workload, backend, device, **params, **({"threads": threads} if threads else {}))
            out.append(Measurement(
                spec=spec, phases_s=phases, first_call_s=compute_s * 3, work=Work(flops, bytes_moved),
                check=Check(passed, 1e-7 if passed else 0.5, 1e-3,
                            "within tolerance" if passed else "relative error exceeds the tolerance", device),
                warnings=() if sigma < 0.1 else (f"IQR is {sigma * 135:.0f}% of median",),
                target_met=sigma < 0.1, threads=threads,
                telemetry={"cpu_percent_median": 55.0}, extra={}))
    raise AssertionError("unreachable")


def export_document(runs: int, results_per_run: int, seed: int = 0) -> dict[str, Any]:
    """An `accelbench export` document (format 1) holding generated runs."""
    docs = []
    for index in range(runs):
        measurements = run_measurements(results_per_run, seed=seed + index)
        results = [m.to_dict() for m in measurements]
        docs.append({
            "id": f"20250101-{index:06d}-synth", "started_at": f"2025-01-01T{index % 24:02d}:00:00+00:00",
            "finished_at": f"2025-01-01T{index % 24:02d}:30:00+00:00", "status": "complete",
            "accelbench_version": "synthetic", "selection": {"rigor": "quick"}, "machine": MACHINE,
            "tags": {"synthetic": "yes"}, "results": results, "skips": []})
    return {"format": "accelbench-results", "format_version": 1, "runs": docs}


def fill_store(store, runs: int, results_per_run: int, seed: int = 0) -> list[str]:
    """Store generated runs (one transaction each, through restore_run); returns their ids."""
    ids = []
    for index in range(runs):
        run_id = f"20250101-{index:06d}-synth"
        store.restore_run(run_id, started_at=f"2025-01-01T{index % 24:02d}:00:00+00:00",
                          finished_at=f"2025-01-01T{index % 24:02d}:30:00+00:00", status="complete",
                          accelbench_version="synthetic", selection={"rigor": "quick"}, machine=MACHINE,
                          tags={"synthetic": "yes"}, results=run_measurements(results_per_run, seed + index),
                          skips=())
        ids.append(run_id)
    return ids


# -- timing a command (shared by the speed benchmarks) --
def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of a command: on a shared machine the CPU
    figure is the steadier one, the wall figure what a user waits."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
