"""Ceilings a result is read against: which peak metric fits a workload and dtype, datasheet rows
as per-device figures, and the best verified rates a run itself reached.

Shared by the reference placement (your matmul as a share of an H100's) and the projection.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.compare.sources import RunData
from accelbench.devices import datasheets
from accelbench.results import Measurement, Spec
from accelbench.timing import stats

BANDWIDTH = "memory_bandwidth"
_VECTOR = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
# dense matrix products run on matrix units (tensor cores, DMMA) where the dtype has them; fp32
# stays on the vector units unless TF32 is switched on, which no backend here does by default
MATRIX_WORKLOADS = frozenset({"matmul"})


def flops_metrics(workload: str, dtype: str | None) -> tuple[str, ...]:
    """Peak metrics to try for a workload's FLOP/s, best fitting first; () for an unknown dtype."""
    vector = _VECTOR.get(str(dtype))
    if vector is None:
        return ()
    matrix = f"{vector}_matrix"
    if workload in MATRIX_WORKLOADS and vector != "fp32":
        return (matrix, vector)
    return (vector, matrix)  # a matrix figure is an upper bound where the vector one is missing


def row_peak(row: datasheets.DatasheetRow, metrics: tuple[str, ...]) -> tuple[str, float] | None:
    """(metric, per-device value) of the first metric the datasheet row gives."""
    for metric in metrics:
        if metric in row.peaks:
            return metric, row.peaks[metric] / row.devices_per_package
    return None


@dataclass(frozen=True)
class BestRate:
    """The best verified rate one workload reached on one device in a run."""

    device: str
    device_name: str
    what: str            # "matmul float32", "stream"
    metrics: tuple[str, ...]
    rate: float          # FLOP/s or B/s
    unit: str
    spec: Spec


def _median_s(m: Measurement) -> float:
    return stats.median(m.samples_s)


def run_best_rates(run: RunData) -> list[BestRate]:
    """Best matmul FLOP/s per device and dtype, and best stream B/s per device; verified only."""
    best: dict[tuple[str, str], BestRate] = {}
    for m in run.measurements:
        if not m.valid or _median_s(m) <= 0:
            continue
        spec = m.spec
        if spec.workload == "matmul" and m.work.flops > 0:
            dtype = str(spec.param("dtype"))
            found = BestRate(spec.device, run.device_name(spec.device), f"matmul {dtype}",
                             flops_metrics("matmul", dtype), m.work.flops / _median_s(m), "FLOP/s", spec)
        elif spec.workload == "stream" and m.work.bytes_moved > 0:
            found = BestRate(spec.device, run.device_name(spec.device), "stream", (BANDWIDTH,),
                             m.work.bytes_moved / _median_s(m), "B/s", spec)
        else:
            continue
        key = (found.device, found.what)
        if key not in best or found.rate > best[key].rate:
            best[key] = found
    return list(best.values())
