"""Speed-up against problem size, against both CPU baselines: all cores and one core.

Each series keeps its report colour; the line style says which baseline (solid: CPU all cores,
dotted: CPU one core, dashed: end-to-end against all cores, transfers included). Whiskers are the
95% intervals of the speed-ups from report/analysis.py (paired rounds where measured). Also drawn
per statistics workload (report/figures_stats.py).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from accelbench.report.analysis import Row
from accelbench.report.crossover import Curve, find_crossing
from accelbench.report.data import RunData, matmul_series
from accelbench.report.figure_base import (MAX_BAR_GROUPS, OTHER, OUTSIDE_RIGHT, dodge, FigureResult, finish,
                                           is_cpu_baseline, log_axis, measured, new_figure, size, size_ticks)
from accelbench.report.palette import colours_of
from accelbench.runner.speedups import SpeedupCI

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import LineStyleType


@dataclass(frozen=True)
class Baseline:
    attr: str        # the Row attribute holding the speed-up
    name: str        # in facts and crossings
    legend: str
    style: str
    marker: str


BASELINES = (Baseline("speedup_all", "cpu_all_cores", "vs CPU all cores (resident)", "-", "o"),
             Baseline("speedup_one", "cpu_one_core", "vs CPU one core (resident)", ":", "^"),
             Baseline("speedup_end_to_end", "end_to_end", "end-to-end vs CPU all cores", "--", "s"))
SHORT = {"cpu_all_cores": "resident", "cpu_one_core": "one core", "end_to_end": "end-to-end"}


@dataclass(frozen=True)
class Group:
    """One series on a speed-up panel: its legend text, the label that picks its colour, its rows."""
    legend: str
    colour_label: str
    rows: list[Row]
    size: Callable[[Row], float] = size  # the problem size a row is drawn at


def has_speedups(rows: Iterable[Row]) -> bool:
    return any(getattr(r, b.attr) is not None for r in rows for b in BASELINES)


def _points(rows: list[Row], attr: str, size_of_row: Callable[[Row], float]) -> list[tuple[float, SpeedupCI]]:
    found = [(size_of_row(r), getattr(r, attr)) for r in rows]
    return sorted(((n, ratio) for n, ratio in found if ratio is not None and n > 0), key=lambda p: p[0])


def _whiskers(ratios: list[SpeedupCI]) -> tuple[list[float], list[float]]:
    """Lengths below and above each ratio; none where the interval is unbounded (too few rounds)."""
    below = [r.ratio - r.low if math.isfinite(r.low) and r.low > 0 else 0.0 for r in ratios]
    above = [r.high - r.ratio if math.isfinite(r.high) else 0.0 for r in ratios]
    return below, above


def draw_speedup_panel(ax: Axes, groups: list[Group], palette: dict[str, str], x_label: str,
                       facts: dict[str, Any]) -> None:
    """Every group against every baseline it has, a crossing of 1 marked; legend beside the axes."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    styles_used: list[Baseline] = []
    sizes: set[float] = set()
    curves = len(groups) * len(BASELINES)
    for group_index, group in enumerate(groups):
        colour = palette.get(group.colour_label, OTHER)
        for baseline_index, baseline in enumerate(BASELINES):
            points = _points(group.rows, baseline.attr, group.size)
            if not points:
                continue
            if baseline not in styles_used:
                styles_used.append(baseline)
            xs, ratios = [p[0] for p in points], [p[1] for p in points]
            sizes.update(xs)
            ax.errorbar(dodge(xs, group_index * len(BASELINES) + baseline_index, curves),
                        [r.ratio for r in ratios], yerr=_whiskers(ratios), color=colour,
                        linestyle=baseline.style, marker=baseline.marker, markersize=4, capsize=3, linewidth=1.3)
            facts["curves"].append({"series": group.legend, "baseline": baseline.name, "sizes": xs,
                                    "ratios": [r.ratio for r in ratios], "low": [r.low for r in ratios],
                                    "high": [r.high for r in ratios]})
            _mark_crossing(ax, xs, ratios, colour, f"{group.legend} {SHORT[baseline.name]}", facts)
    ax.axhline(1.0, color="black", linewidth=0.8)
    log_axis(ax, "x", x_label)
    log_axis(ax, "y", "speed-up (× CPU)")
    size_ticks(ax, sizes)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    # one legend: colour names the series, the black line style names the baseline
    handles = [Line2D([], [], color=palette.get(g.colour_label, OTHER), linewidth=2.5, label=g.legend)
               for g in groups]
    handles += [Line2D([], [], color="black", linestyle=cast("LineStyleType", b.style), marker=b.marker,
                       markersize=4, label=b.legend) for b in styles_used]
    ax.legend(handles=handles, fontsize="small", **OUTSIDE_RIGHT)
    facts["baselines"] = sorted(set(facts.get("baselines", [])) | {b.name for b in styles_used})


def _mark_crossing(ax: Axes, sizes: list[float], ratios: list[SpeedupCI], colour: str, name: str,
                   facts: dict[str, Any]) -> None:
    crossing = find_crossing(Curve(tuple(sizes), tuple(ratios))) if len(sizes) > 1 else None
    if crossing is None:
        return
    ax.axvline(crossing.size, color=colour, linestyle=":", linewidth=1.2)
    sure = "" if crossing.supported else " (CI includes 1)"
    stagger_pt = 12 + 13 * sum(1 for c in facts["crossings"] if c.get("panel") == id(ax))  # stay legible
    ax.annotate(f"break-even n≈{crossing.size:,.0f}{sure}", (crossing.size, 1.0), xytext=(5, stagger_pt),
                textcoords="offset points", fontsize="small", color=colour)
    facts["crossings"].append({"series": name, "n": crossing.size, "supported": crossing.supported,
                               "panel": id(ax)})


def speedup_vs_size(run: RunData) -> FigureResult:
    result = FigureResult("matmul-speedup", "Speed-up against the CPU, all cores and one core, by problem size")
    if not measured(run, "matmul"):
        return result  # matmul not run: left out
    series = {dtype: {label: rows for label, rows in by.items() if not is_cpu_baseline(rows[0]) and has_speedups(rows)}
              for dtype, by in matmul_series(run.rows).items()}
    series = {dtype: by for dtype, by in series.items() if by}
    if not series:
        result.note = ("no data for speed-ups: no matmul result on another device or backend with a "
                       "CPU numpy baseline at the same size")
        return result
    fig, axes = new_figure(len(series))
    palette = colours_of(run)
    facts: dict[str, Any] = {"curves": [], "crossings": [], "baselines": []}
    for ax, (dtype, by_series) in zip(axes, sorted(series.items())):
        groups = [Group(label, label, rows) for label, rows in sorted(by_series.items())]
        draw_speedup_panel(ax, groups, palette, "matrix order n (elements per side)", facts)
        ax.set_title(f"{dtype}: above 1 the device is faster; whiskers are 95% intervals")
    for crossing in facts["crossings"]:
        crossing.pop("panel")
    result.facts.update(facts)
    many = any(len(c["sizes"]) > MAX_BAR_GROUPS for c in facts["curves"])
    result.caption = ("Colour: device and backend; solid: against the CPU on all cores, dotted: against the CPU "
                      "on one core (the fastest implementation measured there), both with data resident on the "
                      "device; dashed: end-to-end against all cores, transfers included. Break-even interpolated (log–log) where a curve crosses 1. "
                      "A point without whiskers has an unbounded interval (too few paired rounds). Curves at the same "
                      "size are drawn a few per cent apart so no whisker hides another.")
    if many:
        result.caption += " Some orders are labelled on the x axis; every order is drawn."
    return finish(result, fig)
