"""The report's figures as PNG bytes: matplotlib (Agg, no display) imported only when drawing.

Each builder returns a FigureResult: the PNG, or no PNG and a note saying which data is missing,
so the report says "no data for X" instead of showing an empty chart. `facts` holds the numbers
a figure shows (labels, break-even sizes) for captions and tests.
"""
from __future__ import annotations

import math
from typing import Any

from accelbench.report.crossover import Curve, find_crossing
from accelbench.report.figure_base import (  # noqa: F401 - FigureResult and the rest re-exported
    DPI, OUTSIDE_RIGHT, PANEL_HEIGHT_IN, WIDTH_IN, FigureResult, new_figure, to_png)
from accelbench.report.data import (RunData, matmul_footprint_bytes, matmul_series, phase_median_s,
                                    size_of)
from accelbench.report.analysis import Row
from accelbench import vocabulary
from accelbench.units import format_bytes, format_seconds

PHASE_COLOURS = {"to_device": "#d95f02", "compute": "#1b9e77", "to_host": "#7570b3"}
# Beyond this many orders one bar per order is too thin to read and slow to lay out (every bar
# and tick label is measured): the figure draws lines over every order instead.
MAX_BAR_GROUPS = 12
MAX_LABELLED_TICKS = 6


def colours(labels) -> dict[str, Any]:
    """The same colour for a device/backend in every figure of a report."""
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {label: palette(i % 10) for i, label in enumerate(sorted(set(labels)))}


def is_cpu_baseline(row: Row) -> bool:
    return vocabulary.is_cpu_baseline(row.spec.backend, row.spec.device)


def footprint_label(n: float, dtype: str) -> str:
    """'2000 (45.8 MiB)': the order and the memory of A, B and C, as the seed 000 chart labels it."""
    return f"{int(n)} ({format_bytes(matmul_footprint_bytes(int(n), dtype))})"


def _ci_errors(rows: list[Row]) -> tuple[list[float], list[float]]:
    low, high = [], []
    for r in rows:
        s = r.summary
        finite = math.isfinite(s.ci_low_s) and math.isfinite(s.ci_high_s)
        low.append(s.median_s - s.ci_low_s if finite else 0.0)
        high.append(s.ci_high_s - s.median_s if finite else 0.0)
    return low, high


# -- (1) time per size, the seed 000 chart -------------------------------------------------------

def time_per_size(run: RunData) -> FigureResult:
    result = FigureResult("matmul-time", "Matrix multiply: time per order, each device and backend")
    series = matmul_series(run.rows)
    if not series:
        result.note = "no data for matmul: no verified matmul result in this run"
        return result
    fig, axes = new_figure(len(series))
    palette = colours(label for by in series.values() for label in by)
    labels_by_dtype = {}
    as_lines = False
    for ax, (dtype, by_series) in zip(axes, sorted(series.items())):
        sizes = sorted({size_of(r.spec) for rows in by_series.values() for r in rows})
        labels_by_dtype[dtype] = [footprint_label(n, dtype) for n in sizes]
        if len(sizes) > MAX_BAR_GROUPS:
            as_lines = True
            _draw_time_lines(ax, by_series, sizes, dtype, palette)
        else:
            _draw_time_bars(ax, by_series, sizes, palette)
            ax.set_xticks(range(len(sizes)), labels_by_dtype[dtype])
        _seconds_log_axis(ax)
        ax.set_xlabel("matrix order n (memory for A, B and C)")
        ax.set_ylabel("time per multiply")
        ax.set_title(f"{dtype}: median with 95% CI, data resident on the device")
        ax.legend(fontsize="small", loc="upper left" if as_lines else "best")
    result.png, result.facts = to_png(fig), {"labels": labels_by_dtype}
    result.caption = ("Resident time (inputs already on the device; transfers are in the time-split figure). "
                      "Error bars: 95% confidence interval of the median. Log scale.")
    if as_lines:
        result.caption += (f" With more than {MAX_BAR_GROUPS} orders, one line per device and backend through "
                           "every order (log–log); some orders are labelled.")
    return result


def _draw_time_bars(ax, by_series: dict[str, list[Row]], sizes: list[float], palette) -> None:
    width = 0.8 / len(by_series)
    position = {n: i for i, n in enumerate(sizes)}
    for i, (label, rows) in enumerate(sorted(by_series.items())):
        xs = [position[size_of(r.spec)] - 0.4 + width * (i + 0.5) for r in rows]
        ax.bar(xs, [r.summary.median_s for r in rows], width, yerr=_ci_errors(rows), capsize=3,
               color=palette[label], label=label)


def _draw_time_lines(ax, by_series: dict[str, list[Row]], sizes: list[float], dtype: str, palette) -> None:
    """One errorbar call per series: the same medians and intervals as the bars, cheap to draw."""
    from matplotlib.ticker import NullFormatter

    for label, rows in sorted(by_series.items()):
        ax.errorbar([size_of(r.spec) for r in rows], [r.summary.median_s for r in rows], yerr=_ci_errors(rows),
                    color=palette[label], label=label, marker="o", markersize=3, linewidth=1.2, capsize=2)
    ax.set_xscale("log")
    shown = spread_ticks(sizes)
    ax.set_xticks(shown, [footprint_label(n, dtype) for n in shown], fontsize="small")
    ax.xaxis.set_minor_formatter(NullFormatter())


def _seconds_log_axis(ax) -> None:
    """Log scale labelled '10 µs', '1 ms': plain text, which is also far cheaper to draw than the
    default 10⁻⁵ (mathtext, parsed again for every figure)."""
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v)))


def spread_ticks(sizes: list[float], count: int = MAX_LABELLED_TICKS) -> list[float]:
    """At most `count` of the sorted sizes, evenly spread on a log scale, first and last included."""
    if len(sizes) <= count:
        return list(sizes)
    low, high = math.log(sizes[0]), math.log(sizes[-1])
    step = (high - low) / (count - 1)
    picked = sorted({min(sizes, key=lambda n: abs(math.log(n) - (low + step * k))) for k in range(count)})
    kept = [picked[0]]
    for n in picked[1:]:  # labels much closer than a step would overlap
        if math.log(n) - math.log(kept[-1]) >= step * 0.75:
            kept.append(n)
        elif n == picked[-1]:
            kept[-1] = n
    return kept


# -- (2) speed-up against problem size ----------------------------------------------------------

def _speedup_points(rows: list[Row], attr: str) -> list[tuple[float, Any]]:
    return [(size_of(r.spec), getattr(r, attr)) for r in rows if getattr(r, attr) is not None and size_of(r.spec)]


def _draw_speedup(ax, points, colour, style: str, label: str, crossings: list) -> None:
    sizes = [p[0] for p in points]
    ratios = [p[1] for p in points]
    ax.plot(sizes, [r.ratio for r in ratios], style, color=colour, marker="o" if style == "-" else "s", label=label)
    ax.fill_between(sizes, [r.low for r in ratios], [r.high for r in ratios], color=colour, alpha=0.18)
    crossing = find_crossing(Curve(tuple(sizes), tuple(ratios))) if len(points) > 1 else None
    if crossing:
        ax.axvline(crossing.size, color=colour, linestyle=":", linewidth=1.2)
        sure = "" if crossing.supported else " (CI includes 1)"
        stagger_pt = 12 + 13 * sum(1 for c in crossings if c.get("axes") is ax)  # close crossings stay legible
        ax.annotate(f"break-even n≈{crossing.size:,.0f}{sure}", (crossing.size, 1.0), xytext=(5, stagger_pt),
                    textcoords="offset points", fontsize="small", color=colour)
        crossings.append({"series": label, "n": crossing.size, "supported": crossing.supported, "axes": ax})


def _plain_log_axes(ax, sizes: list[float]) -> None:
    """Log axes labelled '0.5×' and '1,000' rather than 5×10⁻¹: readable without decoding."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    shown = spread_ticks(sizes)  # every order labelled would overlap beyond a dozen
    ax.set_xticks(shown, [f"{n:,.0f}" for n in shown])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def speedup_vs_size(run: RunData) -> FigureResult:
    result = FigureResult("matmul-speedup", "Speed-up against the CPU (all cores) by problem size")
    series = {dtype: {label: rows for label, rows in by.items() if not is_cpu_baseline(rows[0])
                      and any(r.speedup_all for r in rows)}
              for dtype, by in matmul_series(run.rows).items()}
    series = {dtype: by for dtype, by in series.items() if by}
    if not series:
        result.note = ("no data for speed-ups: no matmul result on another device or backend with a "
                       "CPU (all cores) numpy baseline at the same size")
        return result
    fig, axes = new_figure(len(series))
    palette = colours(label for by in series.values() for label in by)
    crossings: list[dict] = []
    for ax, (dtype, by_series) in zip(axes, sorted(series.items())):
        for label, rows in sorted(by_series.items()):
            _draw_speedup(ax, _speedup_points(rows, "speedup_all"), palette[label], "-", f"{label} resident", crossings)
            e2e = _speedup_points(rows, "speedup_end_to_end")
            if e2e:
                _draw_speedup(ax, e2e, palette[label], "--", f"{label} end-to-end", crossings)
        ax.axhline(1.0, color="black", linewidth=0.8)
        _plain_log_axes(ax, sorted({size_of(r.spec) for rows in by_series.values() for r in rows}))
        ax.set_xlabel("matrix order n (elements per side)")
        ax.set_ylabel("speed-up (× CPU all cores)")
        ax.set_title(f"{dtype}: above 1 the device is faster; bands are 95% bootstrap intervals")
        many = len({size_of(r.spec) for rows in by_series.values() for r in rows}) > MAX_BAR_GROUPS
        # "best" tries every position against every vertex: beside the axes when there are many
        ax.legend(fontsize="small", **(OUTSIDE_RIGHT if many else {}))
    result.png = to_png(fig)
    result.facts = {"crossings": [{k: v for k, v in c.items() if k != "axes"} for c in crossings]}
    result.caption = ("Solid: data resident on the device; dashed: end-to-end, transfers included. "
                      "Break-even interpolated (log–log) where a curve crosses 1.")
    return result


# -- (3) where the time goes: transfers against compute -----------------------------------------

def time_split(run: RunData) -> FigureResult:
    result = FigureResult("matmul-time-split", "Where the time goes: to device, compute, back to host")
    panels = [(dtype, label, rows) for dtype, by in sorted(matmul_series(run.rows).items())
              for label, rows in sorted(by.items())
              if any(phase_median_s(r, p) for r in rows for p in ("to_device", "to_host"))]
    if not panels:
        result.note = ("no data for the time split: no matmul result moved data to or from a device "
                       "(every device here computes on host memory)")
        return result
    fig, axes = new_figure(len(panels), height_in=3.2)
    shares, as_areas = {}, False
    for ax, (dtype, label, rows) in zip(axes, panels):
        if len(rows) > MAX_BAR_GROUPS:
            shares[f"{label} {dtype}"] = _draw_split_areas(ax, rows, dtype, legend=not as_areas)
            as_areas = True
            ax.set_title(f"{label}, {dtype}: share of the summed phase times")
        else:
            shares[f"{label} {dtype}"] = _draw_split(ax, rows, dtype)
            ax.set_title(f"{label}, {dtype}: share of the summed phase times; total above each bar")
    result.png, result.facts = to_png(fig), {"transfer_share": shares}
    result.caption = ("Each phase timed on its own (median); bars add to 100%. "
                      "Where orange and purple dominate, moving the data costs more than computing.")
    if as_areas:
        result.caption += (f" A panel with more than {MAX_BAR_GROUPS} orders stacks areas through every order "
                           "instead of bars; each phase's time is in the results table.")
    return result


def _phase_shares(rows: list[Row]) -> tuple[dict[str, list[float]], list[float]]:
    """{phase: median seconds per row} and each row's summed total."""
    phases = {p: [phase_median_s(r, p) or 0.0 for r in rows] for p in PHASE_COLOURS}
    return phases, [sum(values) for values in zip(*phases.values())]


def _transfer_shares(rows: list[Row], phases, totals) -> dict[float, float]:
    return {size_of(r.spec): (phases["to_device"][i] + phases["to_host"][i]) / totals[i] if totals[i] else 0.0
            for i, r in enumerate(rows)}


def _draw_split_areas(ax, rows: list[Row], dtype: str, legend: bool) -> dict[float, float]:
    """The bars' percentages as one stacked area per phase over every order (log x); the phase
    legend, the same in every panel, on the first only."""
    from matplotlib.ticker import NullFormatter

    sizes = [size_of(r.spec) for r in rows]
    phases, totals = _phase_shares(rows)
    percent = [[100 * v / t if t else 0.0 for v, t in zip(values, totals)] for values in phases.values()]
    ax.stackplot(sizes, *percent, colors=[PHASE_COLOURS[p] for p in phases], labels=list(phases))
    ax.set_xscale("log")
    shown = spread_ticks(sorted(set(sizes)))
    ax.set_xticks(shown, [footprint_label(n, dtype) for n in shown], fontsize="small")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(sizes[0], sizes[-1])
    ax.set_ylim(0, 100)
    ax.set_xlabel("matrix order n (memory for A, B and C)")
    ax.set_ylabel("share of time (%)")
    if legend:
        ax.legend(fontsize="small", **OUTSIDE_RIGHT)
    return _transfer_shares(rows, phases, totals)


def _draw_split(ax, rows: list[Row], dtype: str) -> dict[float, float]:
    sizes = [size_of(r.spec) for r in rows]
    phases, totals = _phase_shares(rows)
    bottom = [0.0] * len(rows)
    for phase, values in phases.items():
        percent = [100 * v / t if t else 0.0 for v, t in zip(values, totals)]
        ax.bar(range(len(rows)), percent, 0.6, bottom=bottom, color=PHASE_COLOURS[phase], label=phase)
        bottom = [b + p for b, p in zip(bottom, percent)]
    for x, total in enumerate(totals):
        ax.annotate(format_seconds(total), (x, 100), xytext=(0, 3), textcoords="offset points",
                    ha="center", fontsize="small")
    ax.set_xticks(range(len(rows)), [footprint_label(n, dtype) for n in sizes])
    ax.set_ylim(0, 112)
    ax.set_xlabel("matrix order n (memory for A, B and C)")
    ax.set_ylabel("share of time (%)")
    ax.legend(fontsize="small", **OUTSIDE_RIGHT)
    return _transfer_shares(rows, phases, totals)


def figure_builders():
    """The functions that draw a run's figures, in reading order."""
    from accelbench.report.roofline import precision_speed, roofline

    return [time_per_size, speedup_vs_size, time_split, roofline, precision_speed]


def make_figures(run: RunData) -> list[FigureResult]:
    """Every figure of a run's report, present or with its note, in reading order."""
    return [build(run) for build in figure_builders()]
