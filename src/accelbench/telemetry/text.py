"""Telemetry as text for a person: one line per device per poll, and the end-of-window summary
laid out like nvidia-smi's "Samples" blocks (Samples, Max, Min, Avg for each metric)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from accelbench.terminal import packed, wrapped
from accelbench.units import format_property, label

# the order metrics are shown in; anything else follows in its own order
SHOWN = ("utilization_percent", "max_core_utilization_percent", "memory_utilization_percent", "memory_used_bytes",
         "memory_total_bytes", "process_rss_bytes", "frequency_mhz", "min_core_frequency_mhz", "sm_clock_mhz",
         "gfx_clock_mhz", "memory_clock_mhz", "power_w", "power_from_energy_w", "dram_power_w", "temperature_c",
         "hotspot_temperature_c", "renderer_utilization_percent", "tiler_utilization_percent")
ACRONYMS = {"gfx": "GFX", "Gfx": "GFX", "dram": "DRAM", "Dram": "DRAM", "rss": "RSS"}


def metric_label(metric: str, labels: Mapping[str, str] | None = None) -> str:
    """'dram_power_w' -> 'DRAM power' (the unit goes with the value); `labels`: a source's own names
    ('Nominal clock' for a CPU frequency that is only the nominal one)."""
    if labels and metric in labels:
        return labels[metric]
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


def frame_line(time_text: str, device_id: str, values: Mapping[str, Any], width: int = 10_000,
               labels: Mapping[str, str] | None = None) -> str:
    """'12:00:01 cpu  Utilization 12.0 % · Memory used 1.4 GiB · ...' (headless monitor output), in
    lines of at most `width` columns, each reading whole."""
    parts = [f"{metric_label(m, labels)} {value_text(m, values[m])}" for m in ordered(values)
             if not isinstance(values[m], list) or m == "throttle_reasons"]
    return "\n".join(packed(parts or ["(no reading yet)"], width, f"{time_text} {device_id}  "))


def no_data_lines(no_data: Iterable[Mapping[str, Any]], width: int = 10_000) -> list[str]:
    lines = []
    for item in no_data:
        devices = f" [{', '.join(item['devices'])}]" if item.get("devices") else ""
        lines += wrapped(f"{item['vendor']} ({item['source']}){devices}: {item['status']}: {item['reason']}",
                         width, "    ", "      ")
    return lines


def summary_lines(summary: Mapping[str, Any], width: int = 10_000) -> list[str]:
    """nvidia-smi's Samples / Max / Min / Avg per metric, in lines of at most `width` columns."""
    polls = max((d["samples"] for d in summary["devices"].values()), default=0)
    lines = wrapped(f"Summary over {summary['window_s']:.2f} s (polled every {summary['interval_s']:g} s; "
                    f"up to {polls} samples per device)", width)
    for device_id, device in summary["devices"].items():
        lines += wrapped(f"{device_id}" + (f"  {device['name']}" if device.get("name") else "")
                         + f"  [{device['source']}]", width)
        lines += _device_lines(device, width)
    if summary.get("no_data"):
        lines.append("No telemetry here:")
        lines += no_data_lines(summary["no_data"], width)
    return lines


def _device_lines(device: Mapping[str, Any], width: int) -> list[str]:
    metrics, labels = ordered(device["metrics"]), device.get("labels")
    names = [metric_label(m, labels) for m in (*metrics, *device.get("missing", {}))] + ["Throttle reasons"]
    column = max(len(n) for n in names)  # the labels aligned, no wider than the longest one

    def line(name: str, text: str) -> list[str]:
        return wrapped(text, width, f"    {name:<{column}}: ", " " * (column + 6))

    lines = []
    digits = max((len(str(device["metrics"][m]["samples"])) for m in metrics), default=1)
    for metric in metrics:
        s = device["metrics"][metric]
        parts = [f"Samples {s['samples']:<{digits}}", *(f"{key} {value_text(metric, s[field])}" for key, field
                                                        in (("Max", "max"), ("Min", "min"), ("Avg", "mean")))]
        lines += packed(parts, width, f"    {metric_label(metric, labels):<{column}}: ", " " * (column + 6), "  ")
    lines += line("Energy", _energy_text(device))
    if "throttle_reasons" in device:
        lines += line("Throttle reasons", value_text("throttle_reasons", device["throttle_reasons"]))
    for metric, why in device.get("missing", {}).items():
        lines += line(metric_label(metric, labels), f"no data: {why}")
    for note in device.get("notes", []):
        lines += wrapped(note, width, "    note: ", "          ")
    return lines


def _energy_text(device: Mapping[str, Any]) -> str:
    if device.get("energy_j") is None:
        return f"not available: {device.get('energy_reason', 'no sensor')}"
    text = f"{device['energy_j']:.3f} J ± {device.get('energy_uncertainty_j', 0):.3f} J, {device['energy_method']}"
    return text + (f" (mean {device['mean_power_w']:.1f} W)" if device.get("mean_power_w") is not None else "")
