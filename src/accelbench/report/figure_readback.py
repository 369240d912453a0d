"""What the drawn axes show, read back from the artists themselves after layout: scales, limits,
labels, the widest bar, legend colours, points under a legend, errorbars with their whiskers and
the texts. Captions and tests (the derived-figure oracle included) read these, not what the code
meant to draw."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.legend import Legend


def axes_facts(ax: Axes) -> dict[str, Any]:
    from matplotlib.patches import Rectangle

    axes_width_px = ax.get_window_extent().width
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_width() > 0]
    widest = max((b.get_window_extent().width for b in bars), default=0.0)
    return {"title": ax.get_title(), "xscale": ax.get_xscale(), "yscale": ax.get_yscale(),
            "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "xlim": tuple(ax.get_xlim()),
            "ylim": tuple(ax.get_ylim()), "bars": len(bars),
            "widest_bar_fraction": widest / axes_width_px if axes_width_px else 0.0,
            "points_under_legend": points_under_legend(ax), "errorbars": errorbars(ax), "scatters": scatters(ax),
            "texts": [t.get_text() for t in ax.texts]}


def scatters(ax: Axes) -> list[list[tuple[float, float]]]:
    """Each scatter's points as drawn, in data coordinates (a legend's empty stand-ins left out)."""
    import numpy as np
    from matplotlib.collections import PathCollection

    found = []
    for collection in ax.collections:
        offsets = np.asarray(collection.get_offsets(), dtype=float).reshape(-1, 2)
        if isinstance(collection, PathCollection) and len(offsets):
            found.append([(float(x), float(y)) for x, y in offsets])
    return found


def errorbars(ax: Axes) -> list[dict[str, Any]]:
    """Each errorbar series as drawn: colour, line style, and per point x, y and the whisker's two
    ends (a point without a whisker has its own y at both): what an oracle reads back."""
    from matplotlib.colors import to_hex
    from matplotlib.container import ErrorbarContainer

    found = []
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        line, _, whiskers = container.lines
        if line is None:
            continue
        import numpy as np

        xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
        xs, ys = xy[:, 0].tolist(), xy[:, 1].tolist()
        ends: dict[float, tuple[float, float]] = {}
        for collection in whiskers:
            for (x0, y0), (_, y1) in collection.get_segments():
                ends[float(x0)] = (min(float(y0), float(y1)), max(float(y0), float(y1)))
        found.append({"colour": to_hex(line.get_color()), "linestyle": line.get_linestyle(),
                      "points": [(x, y, *ends.get(x, (y, y))) for x, y in zip(xs, ys)]})
    return found


def legend_colours(legends: Iterable[Legend | None]) -> dict[str, str]:
    """{legend text: colour} from every legend's handles, as drawn."""
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    found: dict[str, str] = {}
    for legend in legends:
        if legend is None:
            continue
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            if isinstance(handle, Line2D):
                colour: Any = handle.get_color()
            elif handle is not None and hasattr(handle, "get_facecolor"):
                colour = handle.get_facecolor()
                if getattr(colour, "ndim", 1) == 2:  # a collection: one row per item
                    colour = colour[0] if len(colour) else "none"
            else:
                continue
            found[text.get_text()] = to_hex(colour, keep_alpha=False)
    return found


def points_under_legend(ax: Axes) -> int:
    """How many drawn markers (scatter points, line markers) lie inside the axes' legend box."""
    import numpy as np
    from matplotlib.collections import PathCollection

    legend = ax.get_legend()
    if legend is None:
        return 0
    box = legend.get_window_extent()
    found = [np.empty((0, 2))]
    for line in ax.lines:
        if line.get_marker() not in (None, "", "None", " ") and line.get_visible():
            found.append(line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float)))
    for collection in ax.collections:
        offsets = np.asarray(collection.get_offsets(), dtype=float)
        if isinstance(collection, PathCollection) and offsets.size:
            found.append(collection.get_offset_transform().transform(offsets))
    xy = np.concatenate(found)
    inside = ((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)
              & np.isfinite(xy).all(axis=1))
    return int(inside.sum())
