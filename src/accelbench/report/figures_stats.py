"""Statistics workloads: speed-up against the CPU by problem size, and float32 against float64 accuracy.

The speed-up grid has one row per workload variant (bootstrap's statistic, integrate's rule, mcmc's
variant) and one column per dtype, drawn as the matmul speed-up figure is (report/figures_speedup.py).
The accuracy figure shows each result's check error, relative to the float64 reference, beside the
tolerance its dtype is allowed: the trade-off seed 000 asks about.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from accelbench.report.analysis import Row
from accelbench.report.data import RunData, series_label, valid_rows
from accelbench.report.figure_base import (OTHER, FigureResult, family, figure_legend, finish, is_cpu_baseline, keep_bars_narrow,
                                           legend_beside, log_axis, new_figure, size_param, size_unit,
                                           variant_text, workload_size)
from accelbench.report.figures_speedup import Group, draw_speedup_panel, has_speedups
from accelbench.report.palette import colours_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes

DTYPE_ORDER = ("float64", "float32", "bfloat16", "float16")
DTYPE_MARKERS = {"float64": "o", "float32": "s", "bfloat16": "D", "float16": "v"}
ERROR_FLOOR = 1e-17  # an exact result (error 0) is drawn here, below any rounding error of float64


def _stats_rows(run: RunData) -> list[Row]:
    return [r for r in valid_rows(run.rows) if family(r.spec.workload) == "stats"]


def _measured(run: RunData) -> bool:
    return any(family(m.spec.workload) == "stats" for m in run.measurements)


def _dtype(row: Row) -> str:
    return str(row.spec.param("dtype"))


def _variant(row: Row) -> str:
    param = size_param(row.spec.workload) or "n"
    return f"{row.spec.workload} {variant_text(row, (param,))}".strip()


def stats_speedup(run: RunData) -> FigureResult:
    result = FigureResult("stats-speedup", "Statistics workloads: speed-up against the CPU by problem size")
    if not _measured(run):
        return result
    cells: dict[tuple[str, str], dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in _stats_rows(run):
        if not is_cpu_baseline(row):
            cells[(_variant(row), _dtype(row))][series_label(row.spec)].append(row)
    cells = {k: {label: rows for label, rows in v.items() if has_speedups(rows)} for k, v in cells.items()}
    cells = {k: v for k, v in cells.items() if v}
    if not cells:
        result.note = ("no data for statistics speed-ups: no verified statistics result on another device or "
                       "backend with a CPU numpy baseline of the same parameters")
        return result
    variants = sorted({v for v, _ in cells})
    dtypes = [d for d in DTYPE_ORDER if any(d == dt for _, dt in cells)] + sorted(
        {dt for _, dt in cells} - set(DTYPE_ORDER))
    fig, axes = new_figure(len(variants) * len(dtypes), height_in=2.8, columns=len(dtypes))
    palette = colours_of(run)
    facts: dict[str, Any] = {"curves": [], "crossings": [], "baselines": []}
    labels = sorted({label for by in cells.values() for label in by})
    for index, ax in enumerate(axes):
        variant, dtype = variants[index // len(dtypes)], dtypes[index % len(dtypes)]
        by_series = cells.get((variant, dtype))
        if not by_series:
            ax.set_visible(False)
            continue
        workload = variant.split(" ")[0]
        groups = [Group(label, label, rows, workload_size) for label, rows in sorted(by_series.items())]
        draw_speedup_panel(ax, groups, palette, size_unit(workload), facts)
        legend = ax.get_legend()
        if legend is not None:  # one legend for the whole grid instead
            legend.remove()
        ax.set_title(f"{variant}, {dtype}", fontsize="medium")
    figure_legend(fig, palette, labels, _baseline_keys(facts["baselines"]))
    for crossing in facts["crossings"]:
        crossing.pop("panel")
    result.facts.update(facts)
    result.caption = ("One row per workload and variant, one column per dtype. Colour: device and backend; solid: "
                      "against the CPU on all cores, dotted: against one core (the fastest CPU implementation "
                      "measured). Whiskers: 95% intervals. Above 1 the device is faster; its error at that dtype "
                      "is in the accuracy figure. Points at one size are drawn a few per cent apart.")
    return finish(result, fig)


def _baseline_keys(names: list[str]) -> list[tuple[str, str, str]]:
    from accelbench.report.figures_speedup import BASELINES

    return [(b.legend, b.style, b.marker) for b in BASELINES if b.name in names]


# -- float32 against float64: how far each result is from the float64 reference ------------------

def stats_accuracy(run: RunData) -> FigureResult:
    result = FigureResult("stats-accuracy", "Statistics workloads: error of each precision against float64")
    if not _measured(run):
        return result
    by_variant: dict[str, dict[str, dict[str, Row]]] = defaultdict(lambda: defaultdict(dict))
    for row in _stats_rows(run):
        size_text = f"{size_param(row.spec.workload) or 'n'}={workload_size(row):,.0f}"
        by_variant[f"{_variant(row)} {size_text}"][series_label(row.spec)][_dtype(row)] = row
    shown = {v: {label: d for label, d in by.items() if len(d) >= 2} for v, by in by_variant.items()}
    shown = {v: by for v, by in shown.items() if by}
    if not shown:
        result.note = ("no data for a precision comparison of the statistics workloads: no series ran one in two "
                       "or more dtypes with the same parameters")
        return result
    fig, axes = new_figure(1, height_in=4.4)
    ax = axes[0]
    palette = colours_of(run)
    facts = _draw_errors(ax, shown, palette)
    labels = sorted({label for by in shown.values() for label in by})
    dtypes = [d for d in DTYPE_ORDER if any(d in ds for by in shown.values() for ds in by.values())]
    legend_beside(ax, palette, labels, [(f"{d} error", "none", DTYPE_MARKERS.get(d, "x")) for d in dtypes]
                  + [("tolerance of that dtype", "none", "_")])
    result.facts["errors"] = facts
    result.caption = ("Each marker is a result's largest relative error against the float64 reference (the check's "
                      "figure); the black dash above it is the tolerance its dtype is allowed. Lower is more "
                      f"accurate; an exact result is drawn at {ERROR_FLOOR:g}. Pair it with the speed-up figure to "
                      "judge whether single precision is worth it.")
    return finish(result, fig)


def _draw_errors(ax: Axes, shown: dict[str, dict[str, dict[str, Row]]], palette: dict[str, str]
                 ) -> dict[str, dict[str, dict[str, float]]]:
    variants = sorted(shown)
    facts: dict[str, dict[str, dict[str, float]]] = {}
    slots = max(len(by) * len(ds) for by in shown.values() for ds in by.values())
    width = 0.8 / max(1, slots)
    for x, variant in enumerate(variants):
        facts[variant] = {}
        position = 0
        for label, by_dtype in sorted(shown[variant].items()):
            facts[variant][label] = {}
            for dtype in [d for d in DTYPE_ORDER if d in by_dtype] + sorted(set(by_dtype) - set(DTYPE_ORDER)):
                row = by_dtype[dtype]
                check = row.measurement.check
                error = check.max_rel_error if math.isfinite(check.max_rel_error) else math.nan
                xpos = x - 0.4 + width * (position + 0.5)
                ax.plot([xpos], [max(error, ERROR_FLOOR)], marker=DTYPE_MARKERS.get(dtype, "x"), linestyle="none",
                        color=palette.get(label, OTHER), markersize=7, markeredgecolor="black", markeredgewidth=0.5)
                ax.plot([xpos], [check.tolerance], marker="_", markersize=12, color="black", linestyle="none")
                facts[variant][label][dtype] = error
                position += 1
    ax.set_xticks(range(len(variants)), [v.replace(" ", "\n") for v in variants], fontsize="small")
    keep_bars_narrow(ax, len(variants))
    log_axis(ax, "y", "relative error vs float64 reference")
    ax.set_xlabel("workload, variant and size")
    ax.set_title("check error by dtype (markers) and the tolerance allowed (dashes)")
    return facts
