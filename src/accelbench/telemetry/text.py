"""Telemetry as text for a person: one line per device per poll, and the end-of-window summary
laid out like nvidia-smi's "Samples" blocks (Samples, Max, Min, Avg for each metric)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from accelbench.units import format_property, label

# the order metrics are shown in; anything else follows in its own order
SHOWN = ("utilization_percent", "max_core_utilization_percent", "memory_utilization_percent", "memory_used_bytes",
         "memory_total_bytes", "process_rss_bytes", "frequency_mhz", "min_core_frequency_mhz", "sm_clock_mhz",
         "gfx_clock_mhz", "memory_clock_mhz", "power_w", "power_from_energy_w", "dram_power_w", "temperature_c",
         "hotspot_temperature_c", "renderer_utilization_percent", "tiler_utilization_percent")
ACRONYMS = {"gfx": "GFX", "Gfx": "GFX", "dram": "DRAM", "Dram": "DRAM", "rss": "RSS"}


def metric_label(metric: str) -> str:
    """'dram_power_w' -> 'DRAM power' (the unit goes with the value)."""
    return " ".join(ACRONYMS.get(w, w) for w in label(metric).split(" "))


def ordered(metrics: Iterable[str]) -> list[str]:
    present = list(metrics)
    return [m for m in SHOWN if m in present] + [m for m in present if m not in SHOWN]


def value_text(metric: str, value: Any) -> str:
    if metric == "throttle_reasons":
        return ", ".join(value) if value else "none"
    if metric.endswith("_percent"):
        return f"{value:.1f} %"
    return format_property(metric, value)


def frame_line(time_text: str, device_id: str, values: Mapping[str, Any]) -> str:
    """'12:00:01 cpu  Utilization 12.0 % · Memory used 1.4 GiB · ...' (headless monitor output)."""
    parts = [f"{metric_label(m)} {value_text(m, values[m])}" for m in ordered(values)
             if not isinstance(values[m], list) or m == "throttle_reasons"]
    return f"{time_text} {device_id}  " + (" · ".join(parts) if parts else "(no reading yet)")


def no_data_lines(no_data: Iterable[Mapping[str, Any]]) -> list[str]:
    lines = []
    for item in no_data:
        devices = f" [{', '.join(item['devices'])}]" if item.get("devices") else ""
        lines.append(f"    {item['vendor']} ({item['source']}){devices}: {item['status']}: {item['reason']}")
    return lines


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    polls = max((d["samples"] for d in summary["devices"].values()), default=0)
    lines = [f"Summary over {summary['window_s']:.2f} s (polled every {summary['interval_s']:g} s; "
             f"up to {polls} samples per device)"]
    for device_id, device in summary["devices"].items():
        lines.append(f"{device_id}" + (f"  {device['name']}" if device.get("name") else "")
                     + f"  [{device['source']}]")
        for metric in ordered(device["metrics"]):
            s = device["metrics"][metric]
            lines.append(f"    {metric_label(metric):<28}: Samples {s['samples']:<5} Max {value_text(metric, s['max'])}"
                         f"   Min {value_text(metric, s['min'])}   Avg {value_text(metric, s['mean'])}")
        lines.append(f"    {'Energy':<28}: {_energy_text(device)}")
        if "throttle_reasons" in device:
            lines.append(f"    {'Throttle reasons':<28}: {value_text('throttle_reasons', device['throttle_reasons'])}")
        lines += [f"    {metric_label(m):<28}: no data: {why}" for m, why in device.get("missing", {}).items()]
        lines += [f"    note: {n}" for n in device.get("notes", [])]
    if summary.get("no_data"):
        lines.append("No telemetry here:")
        lines += no_data_lines(summary["no_data"])
    return lines


def _energy_text(device: Mapping[str, Any]) -> str:
    if device.get("energy_j") is None:
        return f"not available: {device.get('energy_reason', 'no sensor')}"
    text = f"{device['energy_j']:.3f} J ± {device.get('energy_uncertainty_j', 0):.3f} J, {device['energy_method']}"
    return text + (f" (mean {device['mean_power_w']:.1f} W)" if device.get("mean_power_w") is not None else "")
