"""Memory bandwidth: STREAM kernels by size, host↔device copies by size (pinned and pageable), and
the reduce and elementwise kernels, each a rate in GB/s on a linear axis from zero.

The rate is the bytes the workload's work model says it moves over the median compute time; the
whiskers come from that time's 95% interval. Sizes go on a log axis (labelled so).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from accelbench.report.analysis import Row
from accelbench.report.data import RunData, series_label, valid_rows
from accelbench.report.figure_base import (OTHER, dodge, figure_legend, FigureResult, finish, from_zero,
                                           legend_beside, log_axis, measured, new_figure, rate_errors, size,
                                           size_ticks)
from accelbench.report.palette import colours_of
from accelbench.units import format_bytes, format_si

if TYPE_CHECKING:
    from matplotlib.axes import Axes

GB = 1e9
STREAM_ORDER = ("copy", "scale", "add", "triad")
DTYPE_STYLES = {"float64": ("-", "o"), "float32": ("--", "s"), "bfloat16": (":", "D"), "float16": ("-.", "v")}
PINNED_STYLES = {True: ("-", "o"), False: ("--", "s")}
DIRECTIONS = {"h2d": "host → device", "d2h": "device → host"}


@dataclass
class Line:
    """One line on a panel: its series (colour), its style key, and its rows sorted by size."""
    label: str
    style: tuple[str, str]
    rows: list[Row]


def bandwidth_gb_s(row: Row) -> float:
    median_s = row.summary.median_s
    return row.measurement.work.bytes_moved / median_s / GB if median_s > 0 else 0.0


def draw_rate_lines(ax: Axes, lines: list[Line], palette: dict[str, str], x_label: str,
                    x_text: Callable[[float], str]) -> list[dict[str, Any]]:
    """Each line's bandwidth against size with whiskers; returns what was drawn, for the facts."""
    drawn, sizes = [], set()
    for index, line in enumerate(lines):
        xs = [size(r) for r in line.rows]
        ys = [bandwidth_gb_s(r) for r in line.rows]
        sizes.update(xs)
        ax.errorbar(dodge(xs, index, len(lines)), ys, yerr=rate_errors(line.rows, lambda r: r.measurement.work.bytes_moved, GB),
                    color=palette.get(line.label, OTHER), linestyle=line.style[0], marker=line.style[1],
                    markersize=4, capsize=3, linewidth=1.3)
        drawn.append({"series": line.label, "sizes": xs, "gb_per_s": ys})
    log_axis(ax, "x", x_label)
    size_ticks(ax, sizes, x_text)
    from_zero(ax, "bandwidth (GB/s)")
    return drawn


def _lines(rows: list[Row], key: Callable[[Row], Any], styles: dict[Any, tuple[str, str]]) -> list[Line]:
    grouped: dict[tuple[str, Any], list[Row]] = defaultdict(list)
    for row in rows:
        grouped[(series_label(row.spec), key(row))].append(row)
    return [Line(label, styles.get(k, ("-", "x")), sorted(items, key=size))
            for (label, k), items in sorted(grouped.items(), key=lambda item: (item[0][0], str(item[0][1])))]


def _dtype(row: Row) -> str:
    return str(row.spec.param("dtype"))


def _elements(n: float) -> str:
    return format_si(n, "").strip()


def _style_keys(lines: list[Line], styles: dict[Any, tuple[str, str]], text: Callable[[Any], str]
                ) -> list[tuple[str, str, str]]:
    used = [k for k, style in styles.items() if any(line.style == style for line in lines)]
    return [(text(k), *styles[k]) for k in used]


def _panels(result: FigureResult, run: RunData, panels: list[tuple[str, list[Line]]], x_label: str,
            x_text: Callable[[float], str], styles: list[tuple[str, str, str]]) -> FigureResult:
    columns = 2 if len(panels) > 1 else 1
    fig, axes = new_figure(len(panels), height_in=3.0, columns=columns)
    palette = colours_of(run)
    facts: dict[str, Any] = {}
    for ax, (title, lines) in zip(axes, panels):
        facts[title] = draw_rate_lines(ax, lines, palette, x_label, x_text)
        ax.set_title(title)
    labels = sorted({line.label for _, lines in panels for line in lines})
    if len(panels) == 1:
        legend_beside(axes[0], palette, labels, styles)
    else:  # one legend for the grid, outside it
        figure_legend(fig, palette, labels, styles)
    result.facts["panels"] = facts
    return finish(result, fig)


def stream_bandwidth(run: RunData) -> FigureResult:
    result = FigureResult("stream-bandwidth", "Memory bandwidth: STREAM kernels by array size")
    if not measured(run, "stream"):
        return result  # not measured: left out
    rows = valid_rows(run.rows, "stream")
    if not rows:
        result.note = "no data for STREAM: no verified stream result in this run"
        return result
    by_kernel: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_kernel[str(row.spec.param("kernel"))].append(row)
    order = [k for k in STREAM_ORDER if k in by_kernel] + sorted(set(by_kernel) - set(STREAM_ORDER))
    panels = [(f"{kernel}", _lines(by_kernel[kernel], _dtype, DTYPE_STYLES)) for kernel in order]
    all_lines = [line for _, lines in panels for line in lines]
    _panels(result, run, panels, "elements per array n", _elements,
            _style_keys(all_lines, DTYPE_STYLES, str))
    result.caption = ("Bytes the kernel reads and writes (STREAM counting) over the median time; whiskers from "
                      "the time's 95% interval. Colour: device and backend; line style: dtype; series at one size are "
                      "drawn a few per cent apart. The best of these is the bandwidth ceiling in the roofline.")
    return result


def transfer_bandwidth(run: RunData) -> FigureResult:
    result = FigureResult("transfer-bandwidth", "Host↔device copies by size, pinned and pageable host memory")
    if not measured(run, "memcpy"):
        return result
    rows = valid_rows(run.rows, "memcpy")
    if not rows:
        result.note = "no data for copies: no verified memcpy result in this run"
        return result
    by_direction: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_direction[str(row.spec.param("direction"))].append(row)
    panels = [(DIRECTIONS.get(d, d), _lines(by_direction[d], lambda r: bool(r.spec.param("pinned")), PINNED_STYLES))
              for d in sorted(by_direction, key=lambda d: list(DIRECTIONS).index(d) if d in DIRECTIONS else 9)]
    all_lines = [line for _, lines in panels for line in lines]
    _panels(result, run, panels, "bytes per copy", format_bytes,
            _style_keys(all_lines, PINNED_STYLES, lambda pinned: "pinned host memory" if pinned else "pageable"))
    pinned = {bool(r.spec.param("pinned")) for r in rows}
    result.facts["pinned_kinds"] = sorted(pinned)
    result.caption = ("Bytes copied over the median copy time; whiskers from its 95% interval. Colour: device and "
                      "backend; solid: pinned (page-locked) host memory, dashed: pageable."
                      + ("" if len(pinned) > 1 else " Only one kind of host memory was measured here."))
    return result


def array_bandwidth(run: RunData) -> FigureResult:
    result = FigureResult("reduce-elementwise", "Reduce and elementwise kernels: bandwidth by array size")
    present = [w for w in ("reduce", "elementwise") if measured(run, w)]
    if not present:
        return result
    panels = [(w, _lines(valid_rows(run.rows, w), _dtype, DTYPE_STYLES)) for w in present]
    panels = [(w, lines) for w, lines in panels if lines]
    if not panels:
        result.note = "no data for reduce or elementwise: no verified result of either in this run"
        return result
    all_lines = [line for _, lines in panels for line in lines]
    _panels(result, run, panels, "elements n", _elements, _style_keys(all_lines, DTYPE_STYLES, str))
    result.caption = ("Bytes read and written over the median time (reduce: one pass over the input; elementwise: "
                      "read once, write once); whiskers from the time's 95% interval. A rate well below STREAM's "
                      "means the backend makes extra passes. Colour: device and backend; line style: dtype.")
    return result
