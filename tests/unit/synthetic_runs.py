"""Synthetic measurements whose numbers the tests control, for advice and figure tests.

Samples are spread ±1% around the wanted median (deterministic), so speed-up intervals are
tight and verdicts certain unless a test widens them with `spread`.
"""
from __future__ import annotations

from accelbench.devices.model import Device, PeakFigure
from accelbench.report.data import RunData
from accelbench.results import Check, Measurement, Spec
from accelbench.report.analysis import analyse
from accelbench.workloads.matmul import Matmul
from accelbench.workloads.memory import Reduce, Stream

SAMPLES = 21


def samples(median_s: float, spread: float = 0.01) -> tuple[float, ...]:
    half = SAMPLES // 2
    return tuple(median_s * (1 + spread * (k - half) / half) for k in range(SAMPLES))


def measurement(workload: str, backend: str, device: str, *, compute_s: float, to_device_s: float | None = None,
                to_host_s: float | None = None, threads: int | None = None, spread: float = 0.01,
                e2e_spread: float | None = None, rel_error: float = 1e-7, passed: bool = True,
                device_seen: str | None = None, warnings: tuple[str, ...] = (), target_met: bool = True,
                **params) -> Measurement:
    if threads is not None:
        params["threads"] = threads
    spec = Spec.make(workload, backend, device, **params)
    phases = {"compute": samples(compute_s, spread)}
    if to_device_s is not None:
        phases["to_device"] = samples(to_device_s, spread)
        phases["to_host"] = samples(to_host_s or 0.0, spread)
        total_s = compute_s + to_device_s + (to_host_s or 0.0)
        phases["end_to_end"] = samples(total_s, spread if e2e_spread is None else e2e_spread)
    work_model = {"matmul": Matmul(), "stream": Stream(), "reduce": Reduce()}[workload]
    seen = device_seen or device
    detail = "within tolerance" if passed else (f"ran on {seen}, asked for {device}" if seen != device
                                               else "relative error exceeds the tolerance")
    return Measurement(spec=spec, phases_s=phases, first_call_s=compute_s * 2,
                       work=work_model.work({k: v for k, v in params.items() if k != "threads"}),
                       check=Check(passed, rel_error, 1e-3, detail, seen), warnings=warnings,
                       target_met=target_met, threads=threads)


CPU = Device("cpu", "cpu", "Test", "Test CPU", "test", properties={"usable_cpus": 2},
             peaks=(PeakFigure("fp32", 200e9, "formula", "2 cores × 3 GHz × 32 FLOP/cycle", {"cores": 2}),
                    PeakFigure("fp64", 100e9, "formula", "2 cores × 3 GHz × 16 FLOP/cycle", {"cores": 2})))
GPU = Device("cuda:0", "gpu", "Test", "Test GPU", "test",
             peaks=(PeakFigure("fp32", 10e12, "table", "datasheet"),
                    PeakFigure("memory_bandwidth", 500e9, "table", "datasheet")))
DEVICES = {"cpu": CPU, "cuda:0": GPU}

# CPU time a·n³; the GPU computes 10× faster but moves 3 n² float32 values at b·n² seconds, so
# end-to-end it breaks even where 0.9·a·n³ = b·n², i.e. n = b / (0.9 a) = 2000
CPU_S_PER_N3 = 1e-10
TRANSFER_S_PER_N2 = 1800 * CPU_S_PER_N3
BREAK_EVEN_SIZES = (1000, 1500, 2500, 3000)


def break_even_measurements(sizes=BREAK_EVEN_SIZES, dtype: str = "float32", e2e_spread: float | None = None):
    out = []
    for n in sizes:
        cpu_s = CPU_S_PER_N3 * n**3
        transfer_s = TRANSFER_S_PER_N2 * n**2
        out.append(measurement("matmul", "numpy", "cpu", compute_s=cpu_s, threads=2, n=n, dtype=dtype))
        out.append(measurement("matmul", "numpy", "cpu", compute_s=cpu_s * 1.9, threads=1, n=n, dtype=dtype))
        out.append(measurement("matmul", "torch", "cuda:0", compute_s=cpu_s / 10, to_device_s=transfer_s * 2 / 3,
                               to_host_s=transfer_s / 3, e2e_spread=e2e_spread, n=n, dtype=dtype))
    return out


def expected_transfer_share(n: int) -> float:
    transfer_s = TRANSFER_S_PER_N2 * n**2
    return transfer_s / (transfer_s + CPU_S_PER_N3 * n**3 / 10)


def run_data(measurements, devices=None, skips=()) -> RunData:
    devices = DEVICES if devices is None else devices
    return RunData(run_id="synthetic", info=None, machine={}, measurements=list(measurements),
                   skips=list(skips), devices=devices, rows=analyse(list(measurements), devices))
