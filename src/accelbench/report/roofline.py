"""Two figures about ceilings: a roofline per device, and matmul speed per precision.

The roofline places each verified result at its arithmetic intensity (FLOP per byte moved, from
the workload's own work model) under the device's ceilings: measured ones solid (the best
compute-bound result per dtype, as each workload declares its role: matmul; the best stream),
datasheet or formula ones dashed.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from accelbench.devices.model import Device
from accelbench.report.data import RunData, matmul_series, series_label, trusted_rows, valid_rows
from accelbench.report.figure_base import (OUTSIDE_RIGHT, FigureResult, finish, from_zero, keep_bars_narrow, log_axis,
                                           measured, new_figure, size)
from accelbench.report import ratio_text
from accelbench.report.analysis import Row
from accelbench.report.precision import time_vs_float32
from accelbench.units import format_si
from accelbench.vocabulary import PEAK_METRIC
from accelbench.workloads.registry import workloads_of_role

if TYPE_CHECKING:
    from matplotlib.axes import Axes

Point = dict[str, Any]

DTYPE_COLOURS = {"float64": "#4c72b0", "float32": "#55a868", "bfloat16": "#c44e52", "float16": "#8172b2"}
WORKLOAD_MARKERS = {"matmul": "o", "stream": "s", "reduce": "v", "elementwise": "D"}
OTHER_MARKERS = ("P", "X", "*", "h", "p", "<", ">", "^", "8", "d")  # the rest, in name order


def workload_markers(workloads: set[str]) -> dict[str, str]:
    """A distinct marker per workload of a panel: the four classics fixed, the rest in turn."""
    others = sorted(workloads - set(WORKLOAD_MARKERS))
    return {**WORKLOAD_MARKERS, **{w: OTHER_MARKERS[i % len(OTHER_MARKERS)] for i, w in enumerate(others)}}
DTYPE_ORDER = ("float64", "float32", "bfloat16", "float16")


def _flop_rate(row: Row) -> float | None:
    median_s = row.summary.median_s
    return row.measurement.work.flops / median_s if median_s > 0 and row.measurement.work.flops else None


def device_ceilings(rows: list[Row], device_id: str, device: Device | None) -> dict[str, Any]:
    """Measured compute per dtype and bandwidth, and the datasheet/formula figures, for one device."""
    from accelbench.report.advice import bandwidth_ceiling

    # a ceiling is drawn as measured only from a plainly valid result: a noisy rate may be a burst
    mine = [r for r in trusted_rows(rows) if r.spec.device == device_id]
    compute: dict[str, float] = {}
    compute_bound = set(workloads_of_role((r.measurement for r in mine), "compute-bound"))
    for row in (r for r in mine if r.spec.workload in compute_bound):  # as each workload declares
        dtype, rate = str(row.spec.param("dtype")), _flop_rate(row)
        if rate and rate > compute.get(dtype, 0.0):
            compute[dtype] = rate
    sheet: dict[str, Any] = {}
    for dtype, metric in PEAK_METRIC.items():
        if device is None:
            break
        stored = device.peak(metric, "measured")
        if stored and stored.value > compute.get(dtype, 0.0):
            compute[dtype] = stored.value
        figure = next((device.peak(m, p) for m in (f"{metric}_matrix", metric)
                       for p in ("table", "formula") if device.peak(m, p)), None)
        if figure:
            sheet[dtype] = figure
    bandwidth = bandwidth_ceiling(rows, device if device is not None else device_id)
    bandwidth_sheet = None
    if device is not None:
        bandwidth_sheet = device.peak("memory_bandwidth", "table") or device.peak("memory_bandwidth", "formula")
    return {"compute": compute, "bandwidth": bandwidth[0] if bandwidth else None,
            "sheet": sheet, "bandwidth_sheet": bandwidth_sheet}


def attainable(ceilings: dict[str, Any], dtype: str, intensity: float) -> float | None:
    """min(compute ceiling, bandwidth × intensity) from the measured ceilings that exist."""
    limits = [ceilings["compute"].get(dtype)]
    if ceilings["bandwidth"]:
        limits.append(ceilings["bandwidth"] * intensity)
    limits = [v for v in limits if v]
    return min(limits) if limits else None


def _points(rows: list[Row], device_id: str, ceilings: dict[str, Any]) -> list[Point]:
    points = []
    for row in valid_rows(rows):
        work, rate = row.measurement.work, _flop_rate(row)
        if row.spec.device != device_id or not rate or not work.bytes_moved:
            continue
        dtype, intensity = str(row.spec.param("dtype")), work.flops / work.bytes_moved
        roof = attainable(ceilings, dtype, intensity)
        params = " ".join(f"{k}={v}" for k, v in row.spec.params if k not in ("threads", "dtype"))
        points.append({"row": row, "workload": row.spec.workload, "dtype": dtype, "intensity": intensity,
                       "label": f"{row.spec.workload} {dtype} {params} on {series_label(row.spec)}",
                       "flop_per_s": rate, "fraction": rate / roof if roof else None})
    return points


def _draw_roofs(ax: Axes, ceilings: dict[str, Any], x_lo: float, x_hi: float) -> None:
    import numpy as np

    xs = np.geomspace(x_lo, x_hi, 200)
    bandwidth = ceilings["bandwidth"]
    for dtype, peak in ceilings["compute"].items():
        ys = np.minimum(peak, bandwidth * xs) if bandwidth else np.full_like(xs, peak)
        ax.plot(xs, ys, "-", color=DTYPE_COLOURS.get(dtype, "grey"), linewidth=1.6,
                label=f"{dtype} measured {format_si(peak, 'FLOP/s')}")
    if bandwidth and not ceilings["compute"]:
        ax.plot(xs, bandwidth * xs, "-", color="grey", label=f"bandwidth measured {format_si(bandwidth, 'B/s')}")
    for dtype, figure in ceilings["sheet"].items():
        ax.axhline(figure.value, linestyle="--", linewidth=1, color=DTYPE_COLOURS.get(dtype, "grey"),
                   label=f"{dtype} {figure.provenance} {format_si(figure.value, 'FLOP/s')}")
    if ceilings["bandwidth_sheet"]:
        figure = ceilings["bandwidth_sheet"]
        ax.plot(xs, figure.value * xs, "--", color="black", linewidth=1,
                label=f"bandwidth {figure.provenance} {format_si(figure.value, 'B/s')}")


def _y_range(ceilings: dict[str, Any], points: list[Point]) -> tuple[float, float]:
    """Every point and ceiling in view, and at least two decades, so log ticks are labelled."""
    values = [p["flop_per_s"] for p in points] + list(ceilings["compute"].values())
    values += [f.value for f in ceilings["sheet"].values()]
    return _at_least_two_decades(min(values) / 3, max(values) * 2)


def _at_least_two_decades(low: float, high: float) -> tuple[float, float]:
    if high / low < 100:
        middle = math.sqrt(high * low)
        low, high = middle / 10, middle * 10
    return low, high


def _draw_roofline(ax: Axes, device_id: str, device: Device | None, ceilings: dict[str, Any],
                   points: list[Point], markers: dict[str, str]) -> None:
    from matplotlib.ticker import FuncFormatter, NullFormatter

    xs = [p["intensity"] for p in points]
    x_lo, x_hi = _at_least_two_decades(min(xs) / 4, max(xs) * 4)
    _draw_roofs(ax, ceilings, x_lo, x_hi)
    groups: dict[tuple[str, str], list[Point]] = defaultdict(list)
    for p in points:  # one scatter per marker and colour: thousands of points stay cheap to draw
        groups[(p["workload"], p["dtype"])].append(p)
    for (workload, dtype), items in sorted(groups.items()):
        ax.scatter([p["intensity"] for p in items], [p["flop_per_s"] for p in items],
                   marker=markers[workload], color=DTYPE_COLOURS.get(dtype, "grey"),
                   edgecolor="black", linewidth=0.5, zorder=3)
    for p in _best_points(points):  # one label per workload and dtype keeps the chart legible
        ax.annotate(f"{p['fraction']:.0%}", (p["intensity"], p["flop_per_s"]), xytext=(5, -3),
                    textcoords="offset points", fontsize="small")
    for workload in sorted({p["workload"] for p in points}):
        ax.scatter([], [], marker=markers[workload], color="white", edgecolor="black", label=workload)
    log_axis(ax, "x", "arithmetic intensity (FLOP/byte)")
    log_axis(ax, "y", "performance (FLOP/s)")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(*_y_range(ceilings, points))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_si(v, "FLOP/s")))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    name = getattr(device, "name", device_id)
    ax.set_title(f"{device_id}: {name}")
    ax.legend(fontsize="x-small", **OUTSIDE_RIGHT)  # beside the axes: it can never cover a point


def _best_points(points: list[Point]) -> list[Point]:
    best: dict[tuple[str, str], Point] = {}
    for p in points:
        key = (p["workload"], p["dtype"])
        if p["fraction"] is not None and (key not in best or p["flop_per_s"] > best[key]["flop_per_s"]):
            best[key] = p
    return list(best.values())


def roofline(run: RunData) -> FigureResult:
    result = FigureResult("roofline", "Roofline per device: each result against its ceilings")
    panels = []
    for device_id in sorted({r.spec.device for r in valid_rows(run.rows)}):
        device = run.devices.get(device_id)
        ceilings = device_ceilings(run.rows, device_id, device)
        points = _points(run.rows, device_id, ceilings)
        if points:
            panels.append((device_id, device, ceilings, points))
    if not panels:
        result.note = "no data for a roofline: no verified result that did arithmetic (FLOP > 0)"
        return result
    fig, axes = new_figure(len(panels), height_in=4.6)
    facts = {}
    markers = workload_markers({p["workload"] for *_, points in panels for p in points})  # the same in every panel
    for ax, (device_id, device, ceilings, points) in zip(axes, panels):
        _draw_roofline(ax, device_id, device, ceilings, points, markers)
        facts[device_id] = {"ceilings_flop_per_s": dict(ceilings["compute"]),
                            "bandwidth_b_per_s": ceilings["bandwidth"],
                            "points": [{k: v for k, v in p.items() if k != "row"} for p in points]}
    omitted = sum(1 for r in valid_rows(run.rows) if not r.measurement.work.flops)
    result.facts.update(facts)
    result.caption = ("Solid: measured ceilings (best compute-bound result per dtype; slope: best stream "
                      "bandwidth). "
                      "Dashed: datasheet or formula. Each point is a verified result at its FLOP per byte "
                      "moved; the best of each workload and dtype is labelled with its share of the "
                      "attainable measured ceiling min(compute, bandwidth × intensity), every point's "
                      "share is in the table below. Results with no arithmetic (copies) cannot be "
                      f"placed: {omitted} omitted.")
    return finish(result, fig)


# -- (5) float64 / float32 / bfloat16 -------------------------------------------------------------

def _precision_groups(rows: list[Row]) -> dict[str, tuple[float, dict[str, Row]]]:
    """{series: (n, {dtype: row})} at the largest order measured in two or more dtypes."""
    by: dict[str, dict[float, dict[str, Row]]] = defaultdict(lambda: defaultdict(dict))
    for dtype, series in matmul_series(rows).items():
        for label, items in series.items():
            for row in items:
                by[label][size(row)][dtype] = row
    groups: dict[str, tuple[float, dict[str, Row]]] = {}
    for label, by_size in by.items():
        shared = [n for n, dtypes in by_size.items() if len(dtypes) >= 2]
        if shared:
            groups[label] = (max(shared), by_size[max(shared)])
    return groups


def precision_speed(run: RunData) -> FigureResult:
    result = FigureResult("precision", "Matmul speed by precision on each device and backend")
    if not measured(run, "matmul"):
        return result  # matmul not run: left out
    groups = _precision_groups(run.rows)
    if not groups:
        result.note = ("no data for a precision comparison: no device ran matmul in two or more dtypes "
                       "at the same order")
        return result
    fig, axes = new_figure(1, height_in=4.2)
    ax = axes[0]
    dtypes = [d for d in DTYPE_ORDER if any(d in g[1] for g in groups.values())]
    width = 0.8 / len(dtypes)
    facts: dict[str, Any] = {}
    labelled: set[str] = set()
    for x, (label, (n, by_dtype)) in enumerate(sorted(groups.items())):
        base = _flop_rate(by_dtype["float32"]) if "float32" in by_dtype else None
        rates: dict[str, float] = {}
        facts[label] = {"n": n, "rates_flop_per_s": rates}
        for i, dtype in enumerate(dtypes):
            row = by_dtype.get(dtype)
            rate = _flop_rate(row) if row is not None else None
            if row is None or rate is None:
                continue
            rates[dtype] = rate
            xpos = x - 0.4 + width * (i + 0.5)
            ax.bar(xpos, rate / 1e9, width, color=DTYPE_COLOURS[dtype], capsize=3,
                   yerr=[[_rate_err(row, "low")], [_rate_err(row, "high")]],
                   label=None if dtype in labelled else dtype)
            labelled.add(dtype)
            if base and dtype != "float32":  # the findings' figure, said one way: never "0.03×"
                head, detail = ratio_text.cell(ratio_text.inverted(time_vs_float32(row, by_dtype["float32"])))
                ax.annotate(f"{head}\n{detail}", (xpos, rate / 1e9), xytext=(0, 3), textcoords="offset points",
                            ha="center", fontsize="xx-small")
    ax.set_xticks(range(len(groups)), [f"{label}\nn = {n:,.0f}" for label, (n, _) in sorted(groups.items())],
                  fontsize="small")
    keep_bars_narrow(ax, len(groups))
    from_zero(ax, "matmul rate (GFLOP/s)")
    ax.set_xlabel("device and backend, at the largest order measured in several dtypes")
    ax.set_title("median rate with 95% CI; labels: speed against float32 (paired where timed)")
    ax.legend(fontsize="small", **OUTSIDE_RIGHT)  # beside the bars: never over one, and cheap to place
    result.facts.update(facts)
    result.caption = ("Higher is faster; bars start at zero. The check errors of each precision are in the "
                      "accuracy figure, the findings and the tables.")
    return finish(result, fig)


def _rate_err(row: Row, side: str) -> float:
    """Error bar length in GFLOP/s from the time's CI (a shorter time is a higher rate)."""
    s, flops = row.summary, row.measurement.work.flops
    if not (math.isfinite(s.ci_low_s) and math.isfinite(s.ci_high_s)) or s.ci_low_s <= 0:
        return 0.0
    rate = flops / s.median_s
    return ((flops / s.ci_low_s - rate) if side == "high" else (rate - flops / s.ci_high_s)) / 1e9
