"""One window's telemetry in a JSON-ready dict: per device, per metric min/max/mean, energy, gaps.

Besides the full per-metric statistics each device gets a few headline figures a benchmark result
stores: `utilization_mean_percent`, `utilization_max_percent`, `memory_peak_bytes`, `clock_min_mhz`
(a clock that dips during a measurement means throttling) and `energy_j`.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from accelbench.telemetry.energy import counter_energy, integrated_energy
from accelbench.telemetry.model import SLOWDOWN_REASONS, CounterReading, DeviceInfo, NoData, Sample
from accelbench.units import format_seconds

CLOCK_METRICS = ("sm_clock_mhz", "gfx_clock_mhz", "min_core_frequency_mhz", "frequency_mhz")


def merge_infos(infos: Iterable[DeviceInfo]) -> dict[str, DeviceInfo]:
    """One DeviceInfo per device id when several sources cover it (psutil and RAPL for the CPU)."""
    merged: dict[str, DeviceInfo] = {}
    for info in infos:
        if info.device_id not in merged:
            merged[info.device_id] = DeviceInfo(info.device_id, info.source, info.name, tuple(info.metrics),
                                                dict(info.missing), dict(info.hints), list(info.notes),
                                                dict(info.labels), info.energy_note, info.power_sampling_s,
                                                info.power_accuracy)
            continue
        m = merged[info.device_id]
        m.source = f"{m.source}+{info.source}"
        m.name = m.name or info.name
        m.metrics = m.metrics + tuple(x for x in info.metrics if x not in m.metrics)
        m.missing.update({k: v for k, v in info.missing.items() if k not in m.missing})
        m.hints.update(info.hints)
        m.notes += [n for n in info.notes if n not in m.notes]
        m.labels.update({k: v for k, v in info.labels.items() if k not in m.labels})
        m.energy_note = m.energy_note or info.energy_note
        m.power_accuracy = m.power_accuracy or info.power_accuracy
    return merged


def metric_stats(values: Sequence[float]) -> dict[str, float | int]:
    """min, max, mean and count; bytes stay integers."""
    return {"min": min(values), "max": max(values), "mean": sum(values) / len(values), "samples": len(values)}


def _ms(value_s: float) -> str:
    return format_seconds(value_s)


def summarize(t0_s: float, t1_s: float, samples: Sequence[Sample], counters: Sequence[CounterReading],
              infos: dict[str, DeviceInfo], no_data: Sequence[NoData], interval_s: float,
              calls: int | None = None, samples_end_s: float | None = None) -> dict[str, Any]:
    """Energy over [t0_s, t1_s]; samples over [t0_s, samples_end_s] (the closing poll, just after t1_s)."""
    window_s = max(0.0, t1_s - t0_s)
    last_s = max(t1_s, samples_end_s or t1_s)
    by_device: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        if t0_s <= sample.t_s <= last_s:
            by_device[sample.device_id].append(sample)
    counters_by_device: dict[str, list[CounterReading]] = defaultdict(list)
    for reading in counters:
        counters_by_device[reading.device_id].append(reading)
    devices = {device_id: _device(info, by_device.get(device_id, []), counters_by_device.get(device_id, []),
                                  t0_s, t1_s, calls)
               for device_id, info in infos.items()}
    return {"window_s": window_s, "interval_s": interval_s,
            "start_time": datetime.fromtimestamp(t0_s, timezone.utc).isoformat(timespec="milliseconds")
            if t0_s > 1e9 else None,  # a test's clock near zero is not a date
            "devices": devices, "no_data": [n.to_dict() for n in no_data]}


def _device(info: DeviceInfo, samples: list[Sample], counters: list[CounterReading],
            t0_s: float, t1_s: float, calls: int | None) -> dict[str, Any]:
    window_s = t1_s - t0_s
    series: dict[str, list[float | int]] = defaultdict(list)
    reasons: set[str] = set()
    power: list[tuple[float, float]] = []
    for sample in samples:
        for metric, value in sample.values.items():
            if metric == "throttle_reasons":
                reasons.update(value)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                series[metric].append(value)
                if metric == "power_w":
                    power.append((sample.t_s, float(value)))
    metrics = {m: metric_stats(v) for m, v in series.items()}
    result: dict[str, Any] = {"source": info.source, "name": info.name, "samples": len(samples), "metrics": metrics}
    result.update(_headline(metrics))
    if info.metrics and "throttle_reasons" in info.metrics:
        result["throttle_reasons"] = sorted(reasons)
        result["throttled"] = any(r in SLOWDOWN_REASONS for r in reasons)
    result.update(_energy(info, counters, power, t0_s, t1_s))
    if calls and result.get("energy_j") is not None:
        result["energy_per_call_j"] = result["energy_j"] / calls
    missing = dict(info.missing)
    for metric in info.metrics:
        if metric not in metrics and metric not in missing and not (metric == "throttle_reasons" and samples):
            hint = info.hints.get(metric)
            missing[metric] = f"no sample inside the {_ms(window_s)} window" + (f" ({hint})" if hint else "")
    result["missing"] = missing
    result["notes"] = list(info.notes)
    if info.labels:
        result["labels"] = dict(info.labels)
    return result


def _headline(metrics: dict[str, dict[str, float | int]]) -> dict[str, Any]:
    headline: dict[str, Any] = {}
    if "utilization_percent" in metrics:
        headline["utilization_mean_percent"] = metrics["utilization_percent"]["mean"]
        headline["utilization_max_percent"] = metrics["utilization_percent"]["max"]
    if "memory_used_bytes" in metrics:
        headline["memory_peak_bytes"] = metrics["memory_used_bytes"]["max"]
    if "process_rss_bytes" in metrics:
        headline["process_rss_peak_bytes"] = metrics["process_rss_bytes"]["max"]
    clock = next((m for m in CLOCK_METRICS if m in metrics), None)
    if clock:
        headline["clock_min_mhz"] = metrics[clock]["min"]
        headline["clock_metric"] = clock
    return headline


def _energy(info: DeviceInfo, counters: list[CounterReading], power: list[tuple[float, float]],
            t0_s: float, t1_s: float) -> dict[str, Any]:
    totals = [r for r in counters if r.in_total]
    if len({r.t_s for r in totals}) >= 2:
        return counter_energy(counters, t1_s - t0_s)
    if power:
        return integrated_energy(power, t0_s, t1_s, sensor_period_s=info.power_sampling_s,
                                 accuracy=info.power_accuracy)
    return {"energy_j": None, "energy_reason": info.energy_note or "no energy counter or power sensor is "
                                                                   "readable for this device here"}
