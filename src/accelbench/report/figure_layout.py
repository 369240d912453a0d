"""Margins from one measurement, instead of matplotlib's constrained layout.

Constrained layout draws the whole figure once without rendering, then measures every axes twice:
about a third of a figure's CPU time. Here each axes (its tick labels, axis labels, title and a
legend beside it) is measured once, at its first position, and the grid's margins and gaps are set
so that what sticks out of the largest axes still fits; a figure legend gets a column on the right.
Every figure is a grid of equal axes (new_figure), so one margin per side and one gap per
direction are enough. PAD_PX leaves room for tick labels that change a little with the axes' size.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure

PAD_PX = 8.0  # between neighbours and to the canvas edge
MIN_AXES_PX = 40.0  # below this the labels do not fit at any margins: the default grid stays


@dataclass
class Overhang:
    """How far, in pixels, drawn parts stick out of an axes' frame on each side (at most)."""
    left: float = 0.0
    right: float = 0.0
    bottom: float = 0.0
    top: float = 0.0

    def widen(self, ax: Axes, renderer: RendererBase) -> None:
        frame, drawn = ax.get_window_extent(renderer), ax.get_tightbbox(renderer)
        if drawn is None:
            return
        self.left = max(self.left, frame.x0 - drawn.x0)
        self.right = max(self.right, drawn.x1 - frame.x1)
        self.bottom = max(self.bottom, frame.y0 - drawn.y0)
        self.top = max(self.top, drawn.y1 - frame.y1)


def fit_margins(fig: Figure) -> None:
    """Place the axes grid so that every label and legend lies inside the canvas, overlapping nothing."""
    axes = [ax for ax in fig.axes if ax.get_visible()]
    grid = axes[0].get_gridspec() if axes else None
    if grid is None:
        return
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # an Agg canvas (new_figure)
    over = Overhang()
    for ax in axes:
        over.widen(ax, renderer)
    legend_px = max((legend.get_window_extent(renderer).width for legend in fig.legends), default=0.0)
    rows, columns = grid.get_geometry()
    width, height = fig.bbox.width, fig.bbox.height
    left, bottom, top = over.left + PAD_PX, over.bottom + PAD_PX, over.top + PAD_PX
    right = over.right + PAD_PX + (legend_px + PAD_PX if legend_px else 0.0)
    gap_x, gap_y = over.left + over.right + PAD_PX, over.bottom + over.top + PAD_PX
    axes_w = (width - left - right - gap_x * (columns - 1)) / columns
    axes_h = (height - bottom - top - gap_y * (rows - 1)) / rows
    if min(axes_w, axes_h) < MIN_AXES_PX:
        return
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=gap_x / axes_w if columns > 1 else None, hspace=gap_y / axes_h if rows > 1 else None)
    for legend in fig.legends:  # top right of the canvas, level with the top of the axes
        legend.set_bbox_to_anchor((1 - PAD_PX / width, 1 - top / height), transform=fig.transFigure)
