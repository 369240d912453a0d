"""Matrix multiply: time per order (the seed 000 chart) and where the time goes (transfers, compute)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from accelbench.report.analysis import Row
from accelbench.report.data import RunData, matmul_series, phase_median_s
from accelbench.report.figure_base import (MAX_BAR_GROUPS, OTHER, OUTSIDE_RIGHT, ci_errors, FigureResult, finish,
                                           footprint_label, from_zero, keep_bars_narrow, legend_beside, log_axis,
                                           measured, new_figure, seconds_ticks, size, spread_ticks)
from accelbench.report.palette import colours_of
from accelbench.units import format_seconds

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PHASE_COLOURS = {"to_device": "#d95f02", "compute": "#1b9e77", "to_host": "#7570b3"}
# Bars on a linear axis from zero while the longest is at most this many times the shortest;
# beyond, the short ones would vanish, and points on a labelled log axis replace the bars
LINEAR_BAR_SPREAD = 10.0


# -- (1) time per size, the seed 000 chart -------------------------------------------------------

def time_per_size(run: RunData) -> FigureResult:
    result = FigureResult("matmul-time", "Matrix multiply: time per order, each device and backend")
    if not measured(run, "matmul"):
        return result  # matmul not run: left out
    series = matmul_series(run.rows)
    if not series:
        result.note = "no data for matmul: no verified matmul result in this run"
        return result
    fig, axes = new_figure(len(series))
    palette = colours_of(run)
    labels_by_dtype, forms = {}, set()
    for ax, (dtype, by_series) in zip(axes, sorted(series.items())):
        sizes = sorted({size(r) for rows in by_series.values() for r in rows})
        labels_by_dtype[dtype] = [footprint_label(n, dtype) for n in sizes]
        medians = [r.summary.median_s for rows in by_series.values() for r in rows if r.summary.median_s > 0]
        if len(sizes) > MAX_BAR_GROUPS:
            forms.add("lines")
            _draw_time_lines(ax, by_series, sizes, dtype, palette)
        elif medians and max(medians) <= LINEAR_BAR_SPREAD * min(medians):
            forms.add("bars")
            _draw_time_dodged(ax, by_series, sizes, palette, bars=True)
            from_zero(ax, "time per multiply")
        else:
            forms.add("points")
            _draw_time_dodged(ax, by_series, sizes, palette, bars=False)
            log_axis(ax, "y", "time per multiply")
        if len(sizes) <= MAX_BAR_GROUPS:
            ax.set_xlabel("matrix order n (memory for A, B and C)")
            ax.set_xticks(range(len(sizes)), labels_by_dtype[dtype])
        seconds_ticks(ax)
        ax.set_title(f"{dtype}: median with 95% CI, data resident on the device")
        legend_beside(ax, palette, sorted(by_series))
    result.facts["labels"] = labels_by_dtype
    result.caption = ("Resident time (inputs already on the device; transfers are in the time-split figure). "
                      "Whiskers: 95% confidence interval of the median.")
    if "bars" in forms:
        result.caption += " Bars start at zero: heights compare as ratios."
    if "points" in forms:
        result.caption += (f" Where the longest time is over {LINEAR_BAR_SPREAD:g}× the shortest, points on a log "
                           "scale instead of bars (a bar's length on a log axis means nothing).")
    if "lines" in forms:
        result.caption += (f" With more than {MAX_BAR_GROUPS} orders, one line per device and backend through "
                           "every order (log–log); some orders are labelled.")
    return finish(result, fig)


def _draw_time_dodged(ax: Axes, by_series: dict[str, list[Row]], sizes: list[float], palette: dict[str, str],
                      bars: bool) -> None:
    """Each series beside the others at each order: bars from zero, or points with whiskers."""
    width = 0.8 / len(by_series)
    position = {n: i for i, n in enumerate(sizes)}
    for i, (label, rows) in enumerate(sorted(by_series.items())):
        xs = [position[size(r)] - 0.4 + width * (i + 0.5) for r in rows]
        medians = [r.summary.median_s for r in rows]
        colour = palette.get(label, OTHER)
        if bars:
            ax.bar(xs, medians, width, yerr=ci_errors(rows), capsize=3, color=colour, label=label)
        else:
            ax.errorbar(xs, medians, yerr=ci_errors(rows), fmt="o", capsize=3, color=colour, label=label)
    keep_bars_narrow(ax, len(sizes))


def _draw_time_lines(ax: Axes, by_series: dict[str, list[Row]], sizes: list[float], dtype: str,
                     palette: dict[str, str]) -> None:
    """One errorbar call per series: the same medians and intervals as the bars, cheap to draw."""
    from matplotlib.ticker import NullFormatter

    for label, rows in sorted(by_series.items()):
        ax.errorbar([size(r) for r in rows], [r.summary.median_s for r in rows], yerr=ci_errors(rows),
                    color=palette.get(label, OTHER), label=label, marker="o", markersize=3, linewidth=1.2,
                    capsize=2)
    log_axis(ax, "x", "matrix order n (memory for A, B and C)")
    log_axis(ax, "y", "time per multiply")
    shown = spread_ticks(sizes)
    ax.set_xticks(shown, [footprint_label(n, dtype) for n in shown], fontsize="small")
    ax.xaxis.set_minor_formatter(NullFormatter())


# -- (3) where the time goes: transfers against compute -----------------------------------------

def time_split(run: RunData) -> FigureResult:
    result = FigureResult("matmul-time-split", "Where the time goes: to device, compute, back to host")
    if not measured(run, "matmul"):
        return result  # matmul not run: left out
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
    result.facts["transfer_share"] = shares
    result.caption = ("Each phase timed on its own (median); bars add to 100%. "
                      "Where orange and purple dominate, moving the data costs more than computing.")
    if as_areas:
        result.caption += (f" A panel with more than {MAX_BAR_GROUPS} orders stacks areas through every order "
                           "instead of bars; each phase's time is in the results table.")
    return finish(result, fig)


def _phase_shares(rows: list[Row]) -> tuple[dict[str, list[float]], list[float]]:
    """{phase: median seconds per row} and each row's summed total."""
    phases = {p: [phase_median_s(r, p) or 0.0 for r in rows] for p in PHASE_COLOURS}
    return phases, [sum(values) for values in zip(*phases.values())]


def _transfer_shares(rows: list[Row], phases: dict[str, list[float]], totals: list[float]) -> dict[float, float]:
    return {size(r): (phases["to_device"][i] + phases["to_host"][i]) / totals[i] if totals[i] else 0.0
            for i, r in enumerate(rows)}


def _draw_split_areas(ax: Axes, rows: list[Row], dtype: str, legend: bool) -> dict[float, float]:
    """The bars' percentages as one stacked area per phase over every order (log x); the phase
    legend, the same in every panel, on the first only."""
    from matplotlib.ticker import NullFormatter

    sizes = [size(r) for r in rows]
    phases, totals = _phase_shares(rows)
    percent = [[100 * v / t if t else 0.0 for v, t in zip(values, totals)] for values in phases.values()]
    ax.stackplot(sizes, *percent, colors=[PHASE_COLOURS[p] for p in phases], labels=list(phases))
    log_axis(ax, "x", "matrix order n (memory for A, B and C)")
    shown = spread_ticks(sorted(set(sizes)))
    ax.set_xticks(shown, [footprint_label(n, dtype) for n in shown], fontsize="small")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(sizes[0], sizes[-1])
    from_zero(ax, "share of time (%)", top=100)
    if legend:
        ax.legend(fontsize="small", **OUTSIDE_RIGHT)
    return _transfer_shares(rows, phases, totals)


def _draw_split(ax: Axes, rows: list[Row], dtype: str) -> dict[float, float]:
    sizes = [size(r) for r in rows]
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
    keep_bars_narrow(ax, len(rows))
    from_zero(ax, "share of time (%)", top=112)
    ax.set_xlabel("matrix order n (memory for A, B and C)")
    ax.legend(fontsize="small", **OUTSIDE_RIGHT)
    return _transfer_shares(rows, phases, totals)
