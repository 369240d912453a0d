"""What every figure shares: its size, a Figure made without pyplot, PNG output, the result record,
the report's colours, and the honesty rules every axis follows.

Rules: a linear axis of bars or rates starts at zero; a log axis says "(log scale)" in its label;
bars never stretch across a panel (at least MIN_BAR_SLOTS slots wide). `finish` records, from the
drawn artists themselves, what each axes shows (report/figure_readback.py): captions and tests read
those facts, not what the code meant to draw.
"""
from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from accelbench.report.analysis import Row
from accelbench.report.data import RunData, matmul_footprint_bytes, size_of
from accelbench.report.figure_layout import fit_margins
from accelbench.report.figure_readback import axes_facts, legend_colours
from accelbench.report.label_place import cover_whiskers, place_labels
from accelbench.units import format_bytes, format_seconds
from accelbench import vocabulary

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import LineStyleType

PANEL_HEIGHT_IN = 3.8
WIDTH_IN = 9.5
DPI = 100
OUTSIDE_RIGHT: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}  # a legend beside its axes
LOG_SCALE = "log scale"
# Beyond this many orders one bar per order is too thin to read and slow to lay out (every bar
# and tick label is measured): figures draw lines over every order instead.
MAX_BAR_GROUPS = 12
MAX_LABELLED_TICKS = 6
OTHER = "#7f7f7f"  # a label outside the report's mapping
MIN_BAR_SLOTS = 4  # a panel with fewer bars keeps this many slots' width: one bar is not a wall
# tab10 then its light partners: distinct for the first ten series, then still stable
SERIES_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                  "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
                  "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")


@dataclass
class FigureResult:
    name: str                  # file stem: "matmul-time"
    title: str
    caption: str = ""
    png: bytes | None = None
    note: str | None = None    # why there is no figure; None with no png: not applicable, left out silently
    facts: dict[str, Any] = field(default_factory=dict)
    drawn: dict[str, Any] = field(default_factory=dict)  # what the drawn axes show: finish() reads them back

    @property
    def present(self) -> bool:
        return self.png is not None


def series_colours(labels: Iterable[str]) -> dict[str, str]:
    """One colour per label, by sorted order: the same labels always get the same colours."""
    return {label: SERIES_PALETTE[i % len(SERIES_PALETTE)] for i, label in enumerate(sorted(set(labels)))}


def new_figure(panels: int, width_in: float = WIDTH_IN, height_in: float = PANEL_HEIGHT_IN,
               columns: int = 1) -> tuple[Figure, list[Axes]]:
    """A Figure not tied to pyplot (no global state, no display), with `panels` axes; its margins
    are set when it is drawn (figure_layout.fit_margins)."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = math.ceil(panels / columns)
    fig = Figure(figsize=(width_in, height_in * rows), dpi=DPI)
    FigureCanvasAgg(fig)  # one renderer measures the layout and then draws the PNG
    # titles at a fixed height: no axes here has labels on top, and the automatic placement
    # measures every tick label of the panel again at each draw
    with rc_context({"axes.titley": 1.0}):
        axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return fig, list(axes[:panels])


def log_axis(ax: Axes, which: str, label: str) -> None:
    """A log axis whose label says so: bars and distances on it are not proportional."""
    if which == "x":
        ax.set_xscale("log")
        ax.set_xlabel(f"{label} ({LOG_SCALE})")
    else:
        ax.set_yscale("log")
        ax.set_ylabel(f"{label} ({LOG_SCALE})")


def from_zero(ax: Axes, label: str, top: float | None = None) -> None:
    """A linear y axis from zero: heights compare as ratios."""
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0.0, top=top)


def keep_bars_narrow(ax: Axes, slots: int) -> None:
    """x limits of at least MIN_BAR_SLOTS slots, centred: one bar stays a bar."""
    shown = max(slots, MIN_BAR_SLOTS)
    pad = (shown - slots) / 2
    ax.set_xlim(-0.5 - pad, slots - 0.5 + pad)


def to_png(fig: Figure) -> bytes:
    cover_whiskers(fig)  # before the ticks: a widened log axis may span another decade
    for ax in fig.axes:
        _fewer_ticks(ax)
    fit_margins(fig)
    if place_labels(fig):  # a y axis got headroom for a label: its tick labels may have changed
        fit_margins(fig)
        place_labels(fig)
    fig.canvas.draw()
    return encode_png(fig.canvas.buffer_rgba())  # type: ignore[attr-defined]  # an Agg canvas (new_figure)


def encode_png(rgba: Any) -> bytes:
    """The canvas as PNG: RGB where every pixel is opaque (a quarter less to compress, the same
    picture), zlib level 3 (about twice as fast as Pillow's default 6 here, and no larger)."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(rgba)
    if pixels[..., 3].min() == 255:
        pixels = pixels[..., :3]
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="png", compress_level=3, dpi=(DPI, DPI))
    return buffer.getvalue()


def finish(result: FigureResult, fig: Figure) -> FigureResult:
    """Draw to PNG, then record what the drawn axes show (after layout, in display coordinates)."""
    result.png = to_png(fig)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    result.drawn = {"axes": [axes_facts(ax) for ax in shown],
                    "colours": legend_colours([ax.get_legend() for ax in shown] + list(fig.legends))}
    return result










def _fewer_ticks(ax: Axes) -> None:
    """Log axes: labels at 1, 2 and 5 of each decade over up to three decades, at each decade
    beyond (two dozen labels crowd a panel); unlabelled minor ticks only at 2 and 5 of each decade
    over one or two decades, none beyond. Each tick is several artists to lay out and draw, and
    the default eight minor ones per decade cost more than all the data of a figure."""
    from matplotlib.ticker import LogLocator, NullLocator

    for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        low, high = sorted(limits)
        if axis.get_scale() != "log" or low <= 0 or high / low <= 10:
            continue
        axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)) if high / low <= 100 else NullLocator())
        major = axis.get_major_locator()
        if high / low > 1e3 and isinstance(major, LogLocator):
            major.set_params(subs=(1.0,))


# -- rows on axes: sizes, intervals, ticks -------------------------------------------------------

def measured(run: RunData, workload: str) -> bool:
    """Whether the run measured this workload at all (a figure of one it did not is left out)."""
    return any(m.spec.workload == workload for m in run.measurements)


def is_cpu_baseline(row: Row) -> bool:
    return vocabulary.is_cpu_baseline(row.spec.backend, row.spec.device)


def size(row: Row) -> float:
    """The row's problem size (0 where the workload has none)."""
    return size_of(row.spec) or 0.0


def footprint_label(n: float, dtype: str) -> str:
    """'2000 (45.8 MiB)': the order and the memory of A, B and C, as the seed 000 chart labels it."""
    return f"{int(n)} ({format_bytes(matmul_footprint_bytes(int(n), dtype))})"


def ci_errors(rows: Iterable[Row]) -> tuple[list[float], list[float]]:
    """Whisker lengths below and above each median: its 95% CI (none where it is unbounded)."""
    low, high = [], []
    for r in rows:
        s = r.summary
        finite = math.isfinite(s.ci_low_s) and math.isfinite(s.ci_high_s)
        low.append(s.median_s - s.ci_low_s if finite else 0.0)
        high.append(s.ci_high_s - s.median_s if finite else 0.0)
    return low, high


def seconds_ticks(ax: Axes) -> None:
    """y ticks labelled '10 µs', '1 ms': plain text, also far cheaper to draw than 10⁻⁵ (mathtext)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if ax.get_yscale() == "log":  # 20 ms, 50 ms, 100 ms: labelled at 1, 2 and 5, never in 10ˣ notation
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_seconds(v) if v > 0 else "0"))


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


def size_ticks(ax: Axes, sizes: Iterable[float], label: Callable[[float], str] = lambda n: f"{n:,.0f}") -> None:
    """Log x ticks at some of the measured sizes, labelled plainly; no minor labels."""
    from matplotlib.ticker import NullFormatter

    shown = spread_ticks(sorted(set(sizes)))
    ax.set_xticks(shown, [label(n) for n in shown], fontsize="small")
    ax.xaxis.set_minor_formatter(NullFormatter())
    centre_single_size(ax, shown)


def _legend_handles(palette: dict[str, str], labels: Iterable[str],
                    styles: Iterable[tuple[str, str, str]]) -> list[Any]:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette.get(label, OTHER), linewidth=2.5, label=label) for label in labels]
    handles += [Line2D([], [], color="black", linestyle=cast("LineStyleType", style), marker=marker, markersize=4,
                       label=text) for text, style, marker in styles]
    return handles


def legend_beside(ax: Axes, palette: dict[str, str], labels: Iterable[str],
                  styles: Iterable[tuple[str, str, str]] = ()) -> None:
    """One legend beside the axes: a coloured line per series label, then black keys (text,
    line style, marker) for what the style means. Beside, so it never covers a point."""
    ax.legend(handles=_legend_handles(palette, labels, styles), fontsize="small", **OUTSIDE_RIGHT)


def figure_legend(fig: Figure, palette: dict[str, str], labels: Iterable[str],
                  styles: Iterable[tuple[str, str, str]] = ()) -> None:
    """The same legend for a grid of panels, once, outside them on the right."""
    # placed top right of the canvas, beside the axes, by fit_margins
    fig.legend(handles=_legend_handles(palette, labels, styles), fontsize="small", loc="upper right",
               borderaxespad=0.0)


def centre_single_size(ax: Axes, sizes: Iterable[float]) -> None:
    """A log x axis over one measured size: that size in the middle, not at an edge."""
    distinct = {n for n in sizes if n > 0}
    if len(distinct) == 1:
        n = distinct.pop()
        ax.set_xlim(n / 4, n * 4)


def rate_errors(rows: Iterable[Row], work: Callable[[Row], float], scale: float) -> tuple[list[float], list[float]]:
    """Whiskers of a rate work / time from the time's 95% CI (a shorter time is a higher rate)."""
    below, above = [], []
    for r in rows:
        s, amount = r.summary, work(r) / scale
        if not (math.isfinite(s.ci_low_s) and math.isfinite(s.ci_high_s)) or s.ci_low_s <= 0 or s.median_s <= 0:
            below.append(0.0)
            above.append(0.0)
            continue
        rate = amount / s.median_s
        below.append(rate - amount / s.ci_high_s)
        above.append(amount / s.ci_low_s - rate)
    return below, above


def dodge(xs: Iterable[float], index: int, count: int, step: float = 1.06) -> list[float]:
    """Sizes on a log axis nudged apart (a few per cent) so series measured at the same size do not
    hide each other's whiskers; the ticks and facts keep the true sizes."""
    factor = step ** (index - (count - 1) / 2)
    return [x * factor for x in xs]


def workload_size(row: Row) -> float:
    """The problem size by a statistics workload's own size parameter (resamples, steps ...)."""
    param = size_param(row.spec.workload) if family(row.spec.workload) == "stats" else None
    value = row.spec.param(param) if param else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return size(row)


@functools.lru_cache(maxsize=None)
def size_param(workload: str) -> str | None:
    from accelbench.workloads.registry import builtin_workload_class

    cls = builtin_workload_class(workload)
    return getattr(cls, "size_param", None) if cls is not None else None


@functools.lru_cache(maxsize=None)
def size_unit(workload: str) -> str:
    from accelbench.workloads.registry import builtin_workload_class

    cls = builtin_workload_class(workload)
    return str(getattr(cls, "size_unit", "") or size_param(workload) or "size") if cls is not None else "size"


def family(workload: str) -> str:
    """'stats', 'dl' or '' from where a built-in workload lives."""
    from accelbench.workloads.registry import BUILTIN_WORKLOADS

    target = BUILTIN_WORKLOADS.get(workload, "")
    return next((f for f in ("stats", "dl") if target.startswith(f"accelbench.workloads.{f}.")), "")


def variant_text(row: Row, leave_out: Iterable[str]) -> str:
    """The parameters that make a variant ('stat=median'), without size, dtype and threads."""
    skip = {"threads", "dtype", *leave_out}
    return " ".join(f"{k}={v}" for k, v in row.spec.params if k not in skip)
