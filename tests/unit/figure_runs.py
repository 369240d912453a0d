"""A run holding every kind of result the report draws, stored in a real SQLite store and read back.

Numbers follow simple rules the tests know (samples ±1% around a chosen median, deterministic):
the CPU numpy baseline on all cores and on one core, torch on a GPU 10× faster than all cores with
transfers, STREAM and copies over two sizes, statistics workloads in two dtypes, training curves,
an inference batch sweep with latency percentiles, and telemetry windows with power and energy.
"""
from __future__ import annotations

from typing import Any

from accelbench.report.data import RunData, load_run
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store

SAMPLES = 21
CUDA_SPEED = 10.0   # the GPU against the CPU on all cores
ONE_CORE_SLOWER = 1.9


def _peak(metric: str, value: float) -> dict[str, Any]:
    return {"metric": metric, "value": value, "provenance": "table", "detail": "datasheet", "inputs": {}}


MACHINE = {
    "hostname": "figure-node", "os": "Linux", "python": "3.11",
    "inventory": {"devices": [
        {"id": "cpu", "kind": "cpu", "vendor": "Test", "name": "Test CPU", "source": "test",
         "properties": {"usable_cpus": 2},
         "peaks": [_peak("fp32", 200e9), _peak("fp64", 100e9), _peak("memory_bandwidth", 40e9)]},
        {"id": "cuda:0", "kind": "gpu", "vendor": "Test", "name": "Test GPU", "source": "test",
         "peaks": [_peak("fp32", 20e12), _peak("fp64", 10e12), _peak("memory_bandwidth", 900e9)]},
    ]},
    "software": {}, "environment": {},
}
SERIES = (("numpy", "cpu", 2, 1.0), ("numpy", "cpu", 1, 1 / ONE_CORE_SLOWER), ("torch", "cuda:0", None, CUDA_SPEED))


def samples(median_s: float) -> tuple[float, ...]:
    half = SAMPLES // 2
    return tuple(median_s * (1 + 0.01 * (k - half) / half) for k in range(SAMPLES))


def telemetry(index: int, device: str, window_s: float = 0.5) -> dict[str, Any]:
    """A timed window 2 s after the previous result's, with utilisation, clock and power; energy on the GPU."""
    gpu = device.startswith("cuda")
    metrics = {"utilization_percent": {"min": 60.0, "max": 100.0, "mean": 90.0, "samples": 5},
               ("sm_clock_mhz" if gpu else "frequency_mhz"): {"min": 1400.0, "max": 1500.0, "mean": 1480.0,
                                                              "samples": 5}}
    data: dict[str, Any] = {"source": "test", "samples": 5, "metrics": metrics, "energy_j": None}
    if gpu:
        metrics["power_w"] = {"min": 200.0, "max": 300.0, "mean": 250.0, "samples": 5}
        data.update(energy_j=250.0 * window_s, energy_uncertainty_j=1.0, energy_per_call_j=250.0 * window_s / 20,
                    mean_power_w=250.0, energy_method="counter difference (test)")
    return {"window_s": window_s, "interval_s": 0.1, "start_time": f"2026-01-01T00:{index * 2 // 60:02d}:"
            f"{index * 2 % 60:02d}.000+00:00", "devices": {device: data}}


def measurement(workload: str, backend: str, device: str, threads: int | None, compute_s: float, work: Work,
                *, transfer_s: float | None = None, passed: bool = True, rel_error: float = 1e-7,
                tolerance: float = 1e-3, extra: dict[str, Any] | None = None, index: int = 0,
                **params: Any) -> Measurement:
    if threads is not None:
        params["threads"] = threads
    phases = {"compute": samples(compute_s)}
    if transfer_s is not None:
        phases.update(to_device=samples(transfer_s * 2 / 3), to_host=samples(transfer_s / 3),
                      end_to_end=samples(compute_s + transfer_s))
    return Measurement(spec=Spec.make(workload, backend, device, **params), phases_s=phases,
                       first_call_s=compute_s * 2, work=work,
                       check=Check(passed, rel_error, tolerance, "within tolerance" if passed else "wrong", device),
                       threads=threads, telemetry=telemetry(index, device), extra=extra or {})


def _each_series(workload: str, cpu_s: float, work: Work, transfer_s: float | None = None,
                 **kwargs: Any) -> list[Measurement]:
    return [measurement(workload, b, d, t, cpu_s / speed, work, transfer_s=transfer_s if d != "cpu" else None,
                        **kwargs) for b, d, t, speed in SERIES]


def full_run_measurements(workloads: tuple[str, ...] | None = None) -> list[Measurement]:
    out: list[Measurement] = []

    def wanted(workload: str) -> bool:
        return workloads is None or workload in workloads

    if wanted("matmul"):
        for n in (500, 1000, 2000):
            out += _each_series("matmul", 1e-10 * n**3, Work(2.0 * n**3, 12.0 * n * n), transfer_s=2e-9 * n * n,
                                n=n, dtype="float32")
        out += _each_series("matmul", 2e-10 * 1000**3, Work(2.0 * 1000**3, 24.0 * 1000**2), transfer_s=4e-3,
                            n=1000, dtype="float64")  # a second precision at one order
    if wanted("stream"):
        for kernel, arrays in (("copy", 2), ("triad", 3)):
            for n in (2**20, 2**24):
                for dtype, size in (("float64", 8), ("float32", 4)):
                    out += _each_series("stream", arrays * n * size / 20e9, Work(0.0 if kernel == "copy" else 2.0 * n,
                                        arrays * n * size), kernel=kernel, n=n, dtype=dtype)
    if wanted("memcpy"):
        for pinned in (False, True):
            for direction in ("h2d", "d2h"):
                for size in (2**20, 2**26):
                    out.append(measurement("memcpy", "torch", "cuda:0", None, size / (25e9 if pinned else 10e9),
                                           Work(0.0, float(size)), direction=direction, bytes=size, pinned=pinned))
    if wanted("reduce"):
        for n in (2**20, 2**24):
            out += _each_series("reduce", n * 4 / 15e9, Work(float(n), 4.0 * n), n=n, dtype="float32")
            out += _each_series("elementwise", n * 8 / 12e9, Work(2.0 * n, 8.0 * n), n=n, dtype="float32")
    if wanted("montecarlo"):
        for n in (2**20, 2**22):
            for dtype, error, tolerance in (("float64", 1e-15, 1e-12), ("float32", 1e-7, 1e-5)):
                out += _each_series("montecarlo", n * 2e-9, Work(10.0 * n, 8.0 * n), n=n, dtype=dtype,
                                    rel_error=error, tolerance=tolerance)
    if wanted("mlp"):
        curves = {"val_loss_curve": [2.3, 0.9, 0.5, 0.35, 0.3], "val_accuracy_curve": [0.1, 0.7, 0.86, 0.9, 0.92],
                  "epochs_run": 4, "target_accuracy": 0.9, "train_samples_per_s": 5000.0}
        out += _each_series("mlp", 2.0, Work(1e9, 1e8), extra=curves, batch=128, dtype="float32")
    if wanted("vgg-infer"):
        for batch in (1, 8):
            latency = 0.01 * batch
            extra = {"latency_p50_s": latency, "latency_p90_s": latency * 1.2, "latency_p99_s": latency * 1.5,
                     "images_per_s": batch / latency}
            out.append(measurement("vgg-infer", "torch", "cuda:0", None, latency, Work(1e9 * batch, 1e7),
                                   extra=extra, batch=batch, dtype="float32"))
    return [_reindexed(m, i) for i, m in enumerate(out)]


def _reindexed(m: Measurement, index: int) -> Measurement:
    """Each result's telemetry window at its own time in the run."""
    import dataclasses

    return dataclasses.replace(m, telemetry=telemetry(index, m.spec.device))


def stored_run(tmp_path, measurements: list[Measurement], run_id: str = "20260101-000000-figs") -> RunData:
    """The measurements stored in a real SQLite file and read back as the report reads them."""
    store = Store(tmp_path / f"{run_id}.sqlite")
    try:
        store.restore_run(run_id, started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:30:00+00:00",
                          status="complete", accelbench_version="test", selection={"rigor": "quick"},
                          machine=MACHINE, tags={}, results=measurements, skips=())
        return load_run(store, run_id)
    finally:
        store.close()
