"""What the devices did over the run: utilisation, clock and power in each result's timed window,
from the telemetry stored with every result, and the energy of each result where a counter or a
power sensor measured it (for the report's energy table, report/energy_html.py).

Each window is drawn where it happened in the run: a horizontal bar spans the window, the point is
the window's mean, the vertical whisker its minimum to maximum.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from accelbench.report.analysis import Row
from accelbench.report.data import RunData, series_label
from accelbench.report.figure_base import (OTHER, FigureResult, figure_legend, finish, from_zero, new_figure,
                                           variant_text)
from accelbench.report.palette import colours_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes

CLOCK_METRICS = ("sm_clock_mhz", "gfx_clock_mhz", "frequency_mhz", "min_core_frequency_mhz")
PANELS = (("utilization_percent", "utilisation (%)", ("utilization_percent",)),
          ("clock_mhz", "clock (MHz)", CLOCK_METRICS),
          ("power_w", "power (W)", ("power_w", "power_from_energy_w")))


@dataclass(frozen=True)
class Window:
    device: str
    start_s: float       # since the run's first window began
    length_s: float
    metrics: dict[str, dict[str, float]]
    mean_power_w: float | None


def _start(telemetry: dict[str, Any]) -> float | None:
    text = telemetry.get("start_time")
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def windows(run: RunData) -> list[Window]:
    """Every device's window of every result that stored when it began."""
    found: list[tuple[float, str, float, dict[str, Any]]] = []
    for m in run.measurements:
        telemetry = m.telemetry or {}
        start = _start(telemetry)
        if start is None:
            continue
        for device, data in (telemetry.get("devices") or {}).items():
            if isinstance(data, dict):
                found.append((start, str(device), float(telemetry.get("window_s") or 0.0), data))
    if not found:
        return []
    first = min(start for start, *_ in found)
    return [Window(device, start - first, length, dict(data.get("metrics") or {}),
                   data.get("mean_power_w") if isinstance(data.get("mean_power_w"), (int, float)) else None)
            for start, device, length, data in sorted(found, key=lambda item: item[0])]


def _value(window: Window, names: tuple[str, ...]) -> tuple[str, dict[str, float]] | None:
    for name in names:
        stats = window.metrics.get(name)
        if isinstance(stats, dict) and all(isinstance(stats.get(k), (int, float)) for k in ("min", "max", "mean")):
            return name, stats
    if "power_w" in names and window.mean_power_w is not None:  # from an energy counter: a mean only
        w = float(window.mean_power_w)
        return "mean_power_w", {"min": w, "max": w, "mean": w}
    return None


def telemetry_over_run(run: RunData) -> FigureResult:
    result = FigureResult("telemetry", "What the devices did over the run: utilisation, clock, power")
    found = windows(run)
    if not found:
        if any(m.telemetry for m in run.measurements):
            result.note = "no data for telemetry over the run: no result stored a timed window with device samples"
        return result  # run with --no-telemetry: nothing to say twice
    panels = [(key, label, names) for key, label, names in PANELS if any(_value(w, names) for w in found)]
    if not panels:
        result.note = "no data for telemetry over the run: no utilisation, clock or power sample was recorded"
        return result
    fig, axes = new_figure(len(panels), height_in=2.6)
    palette = colours_of(run)
    facts: dict[str, Any] = {}
    for ax, (key, label, names) in zip(axes, panels):
        facts[key] = _draw_windows(ax, found, names, palette)
        highest = max((max(d["max"]) for d in facts[key].values() if d["max"]), default=1.0)
        if key == "clock_mhz" and (running := _running_cpu_clock(run, found)):
            result.facts["cpu_running_clock_mhz"] = running
            highest = max(highest, running)
            ax.axhline(running, linestyle="--", linewidth=1.0, color=palette.get("cpu", OTHER))
            ax.annotate(f"cpu running ≈ {running:,.0f} MHz (estimated); marks: cpu nominal clock", (0.01, running),
                        xycoords=("axes fraction", "data"), textcoords="offset points", xytext=(0, 3), fontsize=7)
        from_zero(ax, label, top=105.0 if key == "utilization_percent" else highest * 1.15)  # marks clear the top
        ax.set_xlabel("time since the first timed window (s)")
    figure_legend(fig, palette, sorted({w.device for w in found}))
    result.facts["panels"] = facts
    result.caption = ("One mark per result and device: the horizontal bar spans the result's timed window, the point "
                      "is the mean over it, the vertical whisker its minimum to maximum. Colour: device. Gaps are the "
                      "time between results (set-up, checks, paired rounds). A clock that dips under load means "
                      "throttling." + (f" Without cpufreq (a VM) the CPU's marks are /proc/cpuinfo's nominal clock; the "
                                       f"dashed line is the clock the cores ran at, about "
                                       f"{result.facts['cpu_running_clock_mhz']:,.0f} MHz as `accelbench info` estimates it "
                                       f"(a timed multiply chain)." if "cpu_running_clock_mhz" in result.facts else ""))
    return finish(result, fig)


def _running_cpu_clock(run: RunData, found: list[Window]) -> float | None:
    """The CPU's running clock from the run's inventory, where the drawn CPU clock is only the
    nominal one (no cpufreq: the stored telemetry labels its clock "nominal", telemetry/cpu.py)."""
    nominal = any(w.device == "cpu" and _value(w, CLOCK_METRICS) for w in found) and any(
        "frequency_mhz" in ((m.telemetry or {}).get("devices", {}).get("cpu", {}).get("labels") or {})
        for m in run.measurements)
    device = run.devices.get("cpu")
    mhz = device.properties.get("running_clock_mhz") if device is not None else None
    return float(mhz) if nominal and isinstance(mhz, (int, float)) and mhz > 0 else None


def _draw_windows(ax: Axes, found: list[Window], names: tuple[str, ...], palette: dict[str, str]
                  ) -> dict[str, dict[str, Any]]:
    by_device: dict[str, list[tuple[Window, str, dict[str, float]]]] = defaultdict(list)
    for window in found:
        value = _value(window, names)
        if value:
            by_device[window.device].append((window, *value))
    drawn: dict[str, dict[str, Any]] = {}
    for device, items in sorted(by_device.items()):
        xs = [w.start_s + w.length_s / 2 for w, _, _ in items]
        means = [float(s["mean"]) for _, _, s in items]
        ax.errorbar(xs, means, xerr=[w.length_s / 2 for w, _, _ in items],
                    yerr=([max(0.0, m - float(s["min"])) for m, (_, _, s) in zip(means, items)],  # mean rounds
                          [max(0.0, float(s["max"]) - m) for m, (_, _, s) in zip(means, items)]),
                    fmt="o", markersize=3, capsize=2, linewidth=1.0, color=palette.get(device, OTHER))
        drawn[device] = {"metric": sorted({name for _, name, _ in items}), "t_s": xs, "mean": means,
                         "max": [float(s["max"]) for _, _, s in items]}
    return drawn


# -- energy per result, for the report's table ---------------------------------------------------

def energy_rows(rows: list[Row]) -> list[dict[str, Any]]:
    """One entry per result and device whose energy was measured (counter or integrated power)."""
    out = []
    for row in rows:
        m = row.measurement
        for device, data in sorted(((m.telemetry or {}).get("devices") or {}).items()):
            if not isinstance(data, dict) or not isinstance(data.get("energy_j"), (int, float)):
                continue
            per_call = data.get("energy_per_call_j")
            work = m.work.flops if m.work.flops else m.work.bytes_moved
            unit = "FLOP" if m.work.flops else "B"
            out.append({"workload": m.spec.workload, "series": series_label(m.spec),
                        "params": variant_text(row, ()), "device": str(device), "status": m.verdict,
                        "energy_j": float(data["energy_j"]),
                        "uncertainty_j": data.get("energy_uncertainty_j"),
                        "per_call_j": float(per_call) if isinstance(per_call, (int, float)) else None,
                        "mean_power_w": data.get("mean_power_w"), "method": str(data.get("energy_method", "")),
                        "work_per_j": work / float(per_call) if isinstance(per_call, (int, float)) and per_call > 0
                        and work else None, "work_unit": f"{unit}/J"})
    return out
