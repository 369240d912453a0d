"""Ceilings a result is read against: which peak metric fits a workload and dtype, datasheet rows
as per-device figures, and the best verified rates a run itself reached.

Shared by the reference placement (your matmul as a share of an H100's) and the projection.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.report.data import RunData
from accelbench.devices import datasheets
from accelbench.results import Spec
from accelbench.store.ceilings import best_ceilings, judged_against
from accelbench.vocabulary import PEAK_METRIC

BANDWIDTH = "memory_bandwidth"


def flops_metrics(workload: str, dtype: str | None) -> tuple[str, ...]:
    """Peak metrics to try for a workload's FLOP/s, best fitting first; () for an unknown dtype."""
    vector = PEAK_METRIC.get(str(dtype))
    if vector is None:
        return ()
    matrix = f"{vector}_matrix"
    # dense matrix products (a workload judged against "matrix": matmul) run on matrix units (tensor
    # cores, DMMA) where the dtype has them; fp32 stays on the vector units unless TF32 is switched
    # on, which no backend here does by default
    if judged_against(workload) == "matrix" and vector != "fp32":
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


def run_best_rates(run: RunData) -> list[BestRate]:
    """The run's measured ceilings (store/ceilings.py rules: valid, built-in, plausible) as BestRates."""
    found = []
    for (device, metric), ceiling in best_ceilings(((m, run.run_id) for m in run.measurements),
                                                   run.devices).items():
        spec = ceiling.spec
        metrics: tuple[str, ...]
        if metric == BANDWIDTH:
            what, metrics = spec.workload, (BANDWIDTH,)
        else:
            dtype = str(spec.param("dtype"))
            what, metrics = f"{spec.workload} {dtype}", flops_metrics(spec.workload, dtype)
        found.append(BestRate(device, run.device_name(device), what, metrics, ceiling.value, ceiling.unit, spec))
    return found
