"""Derived figures for each measurement: rate, share of ceilings, speed-ups with confidence intervals.

Only verified results count: a failed check gets no rate, no speed-up and no part in any ceiling.
The CPU baseline is the fastest CPU implementation measured on all usable cores (numpy, or torch or
jax on the CPU: runner/speedups.py cpu_baselines); the one-thread figure is shown beside it, labelled.
Speed-ups come from interleaved paired rounds where the run measured them (runner/speedups.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from accelbench.devices.model import Device
from accelbench.results import Measurement
from accelbench.runner.peak_results import PEAK_PARAM
from accelbench.runner.cpu_baseline import baseline_key
from accelbench.runner.speedups import (CPU_ALL_CORES, CPU_ONE_THREAD, END_TO_END, VS_FLOAT32, PairedSamples,
                                        SpeedupCI, Speedups, cpu_baselines)
from accelbench.store.ceilings import best_ceilings, ceiling_metric
from accelbench.timing import stats




@dataclass(frozen=True)
class Row:
    measurement: Measurement
    summary: stats.Summary
    rate: float | None            # FLOP/s or B/s from the median compute time
    rate_unit: str                # "FLOP/s" | "B/s"
    metric: str | None            # the peak metric this rate is compared with
    of_measured: float | None     # rate / best measured ceiling of this device (0..1)
    of_datasheet: float | None    # rate / datasheet (or formula) ceiling
    datasheet_provenance: str | None
    speedup_all: SpeedupCI | None       # CPU all cores time / this time (resident)
    speedup_one: SpeedupCI | None       # CPU one thread time / this time
    speedup_end_to_end: SpeedupCI | None  # CPU all cores / this end-to-end time
    baseline_role: str | None = None          # "cpu_all_cores" | "cpu_one_thread" for the baselines
    vs_float32: SpeedupCI | None = None   # this time / float32's time, same series and parameters

    @property
    def spec(self):
        return self.measurement.spec

    def __repr__(self) -> str:
        """One line: what, time ± CI, rate, speed-up, verdict (every figure: report/derived.py)."""
        from accelbench.report.result_text import row_line

        return f"Row({row_line(self)})"


def rate_of(m: Measurement, median_s: float) -> tuple[float | None, str]:
    work = m.work
    if work.flops and (not work.bytes_moved or (work.intensity_flop_per_byte or 0) > 1):  # FLOPs alone: FLOP/s
        return (work.flops / median_s if median_s > 0 else None), "FLOP/s"
    return (work.bytes_moved / median_s if median_s > 0 and work.bytes_moved else None), "B/s"


def peak_metric(m: Measurement, unit: str, device: Device | None) -> str | None:
    """The ceiling this rate is read against, if its unit is the ceiling's (store/ceilings.py)."""
    metric = ceiling_metric(m.spec, device)
    if metric is None or (unit == "B/s") != (metric == "memory_bandwidth"):
        return None
    return metric


def analyse(measurements: list[Measurement], devices: dict[str, Device] | None = None,
            paired: Iterable[PairedSamples] = ()) -> list[Row]:
    """`paired`: the run's paired rounds (Store.speedups); speed-ups without them are unpaired."""
    devices = devices or {}
    # `accelbench peak`'s figures are no CPU baseline: its search chose their order, no grid did
    valid = [m for m in measurements if m.valid and m.spec.param(PEAK_PARAM) is None]
    cpu_all, cpu_one = cpu_baselines(valid)
    prelim = []
    best: dict[tuple[str, str, int | None], float] = {}

    def summarised() -> None:  # needs no speed-up: done while workers bootstrap them
        for m in measurements:
            summary = stats.summarize(m.samples_s)
            rate, unit = rate_of(m, summary.median_s) if m.valid else (None, rate_of(m, 1.0)[1])
            prelim.append((m, summary, rate, unit, peak_metric(m, unit, devices.get(m.spec.device))))
        best.update(_best_rates(prelim, devices))

    speedups = Speedups(paired).by_candidate(measurements, summarised)
    rows = []
    for m, summary, rate, unit, metric in prelim:
        device = devices.get(m.spec.device)
        sheet = (device.peak(metric, "table") or device.peak(metric, "formula")) if device and metric else None
        key = baseline_key(m)
        peak_key = (m.spec.device, metric, m.threads)
        rows.append(Row(
            measurement=m, summary=summary, rate=rate, rate_unit=unit, metric=metric,
            # against the best of the same configuration (device, unit, threads), and only for a rate
            # that is itself a figure (a noisy one could pass its configuration's best valid rate)
            of_measured=rate / best[peak_key] if rate and metric and peak_key in best and m.trusted else None,
            of_datasheet=rate / sheet.value if rate and sheet else None,
            datasheet_provenance=sheet.provenance if sheet else None,
            speedup_all=speedups.get(id(m), {}).get(CPU_ALL_CORES),
            speedup_one=speedups.get(id(m), {}).get(CPU_ONE_THREAD),
            speedup_end_to_end=speedups.get(id(m), {}).get(END_TO_END),
            baseline_role="cpu_all_cores" if cpu_all.get(key) is m else ("cpu_one_thread" if cpu_one.get(key) is m else None),
            vs_float32=speedups.get(id(m), {}).get(VS_FLOAT32),
        ))
    return rows


def _best_rates(prelim, devices: dict[str, Device]) -> dict[tuple[str, str, int | None], float]:
    """Best qualifying rate per configuration (device, metric, threads) in this run; the inventory's
    stored measured peaks join the configuration of the most threads (a device's whole)."""
    best: dict[tuple[str, str, int | None], float] = {}
    for m, summary, *_ in prelim:
        for (device_id, metric), ceiling in best_ceilings([(m, "")], devices, [summary.median_s]).items():
            key = (device_id, metric, m.threads)
            best[key] = max(best.get(key, 0.0), ceiling.value)
    most: dict[str, int | None] = {}
    for m, *_ in prelim:
        most[m.spec.device] = max(most.get(m.spec.device) or 0, m.threads or 0) or None
    for m, _, rate, _, metric in prelim:
        device = devices.get(m.spec.device)
        stored = device.peak(metric, "measured") if device and metric else None
        if stored and m.threads == most.get(m.spec.device):
            key = (m.spec.device, metric, m.threads)
            best[key] = max(best.get(key, 0.0), stored.value)
    return best
