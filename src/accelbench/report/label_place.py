"""Labels that keep clear: every text drawn inside an axes (ax.annotate with an offset) is moved,
as little as it can be, to a place inside the axes' frame where it covers no other label, no
whisker (segment or cap), no bar and no data marker; where no place inside is free, the y axis
gets headroom.

This is a pass over the drawn artists, not over what each figure meant to draw, so it holds for
every figure: a roofline's percentages a few pixels apart, a ratio above a bar whose whisker
reaches through it, a break-even note over a curve's whiskers. Whiskers are kept inside their
panel too (`cover_whiskers`): a y limit set by hand must still include every whisker's end.
A text deliberately outside its frame carries the gid OUTSIDE_FRAME and is left where it is.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

OUTSIDE_FRAME = "outside-frame"
GAP_PX = 2.0        # between a label and what it keeps clear of, and to the frame
STEPS_UP, STEPS_DOWN = 24, 10  # how far a label may move up and down, in half text heights
CANDIDATE_CHUNK = 64  # places tested together, cheapest first
MAX_SIDE_STEPS = 80  # sideways: up to its own width (a label past the frame's edge comes back in)
SIDE_COST = 3.0     # a step sideways costs this many steps up: a label stays over its point
DOWN_COST = 1.3     # and below costs a little more than above
MOVABLE = ("offset points", "offset pixels")
HEADROOM_TRIES = 3
_ORIGINAL: weakref.WeakKeyDictionary[Any, tuple[float, float]] = weakref.WeakKeyDictionary()


def place_labels(fig: Figure) -> bool:
    """Place every axes' labels; True when a y limit was widened (the margins need fitting again)."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # an Agg canvas (new_figure)
    widened = False
    for ax in fig.axes:
        if not ax.get_visible() or not ax.texts:
            continue
        for _ in range(HEADROOM_TRIES):
            shortfall_px = _place_axes(ax, renderer)
            if shortfall_px <= 0 or not _raise_top(ax, shortfall_px):
                break
            widened = True
    return widened


def cover_whiskers(fig: Figure) -> None:
    """Every whisker's end inside its panel: y limits widened (never narrowed) to include them."""
    import numpy as np

    for ax in fig.axes:
        ends = [np.asarray(segment, dtype=float)[:, 1] for segment in _whisker_segments(ax)]
        ends = [y[np.isfinite(y)] for y in ends]
        values = np.concatenate(ends) if ends else np.empty(0)
        if ax.get_yscale() == "log":
            values = values[values > 0]
        if not values.size or not ax.get_visible():
            continue
        low, high = ax.get_ylim()
        scale = ax.yaxis.get_transform()
        s_low, s_high, s_min, s_max = (float(v) for v in scale.transform(np.array([low, high, values.min(),
                                                                                     values.max()])))
        span = s_high - s_low
        new_low = s_min - 0.03 * span if s_min < s_low else s_low
        new_high = s_max + 0.03 * span if s_max > s_high else s_high
        if (new_low, new_high) != (s_low, s_high):
            inverse = scale.inverted()
            ax.set_ylim(float(inverse.transform(np.array([new_low]))[0]) if new_low != s_low else low,
                        float(inverse.transform(np.array([new_high]))[0]) if new_high != s_high else high)


def _whisker_segments(ax: Axes) -> list[Any]:
    from matplotlib.container import ErrorbarContainer

    found: list[Any] = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            for collection in container.lines[2]:
                found += collection.get_segments()
    return found


def obstacles(ax: Axes, renderer: RendererBase) -> np.ndarray:
    """[x0, y0, x1, y1] in pixels of every whisker segment, whisker cap, bar and data marker."""
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.container import ErrorbarContainer
    from matplotlib.patches import Rectangle

    boxes = [np.empty((0, 4))]
    px_per_pt = float(renderer.points_to_pixels(1.0))  # type: ignore[arg-type]  # a float here
    for container in (c for c in ax.containers if isinstance(c, ErrorbarContainer)):
        _, caps, whiskers = container.lines
        for collection in whiskers:
            half = float(np.max(np.atleast_1d(collection.get_linewidth()))) * px_per_pt / 2
            transform = collection.get_transform()
            for segment in collection.get_segments():
                xy = transform.transform(np.asarray(segment, dtype=float))
                boxes.append(np.concatenate([xy.min(axis=0) - half, xy.max(axis=0) + half])[None, :])
        for cap in caps:
            length, thick = cap.get_markersize() * px_per_pt / 2, cap.get_markeredgewidth() * px_per_pt / 2
            half_xy = np.array([length, thick] if cap.get_marker() == "_" else [thick, length])
            xy = cap.get_transform().transform(np.asarray(cap.get_xydata(), dtype=float))
            boxes.append(np.hstack([xy - half_xy, xy + half_xy]))
    for line in ax.lines:  # data points drawn as markers: a label beside its point, never over one
        if line.get_visible() and line.get_marker() not in (None, "", "None", " ", "_", "|"):
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
            half = line.get_markersize() * px_per_pt / 2
            boxes.append(np.hstack([xy - half, xy + half]))
    for points in ax.collections:
        offsets = np.asarray(points.get_offsets(), dtype=float)
        if isinstance(points, PathCollection) and offsets.size and len(points.get_sizes()):
            xy = points.get_offset_transform().transform(offsets)
            half = np.sqrt(np.max(points.get_sizes())) * px_per_pt / 2  # sizes are areas in points²
            boxes.append(np.hstack([xy - half, xy + half]))
    for bar in ax.patches:
        if isinstance(bar, Rectangle) and bar.get_width() > 0 and bar.get_height() != 0:
            boxes.append(np.array([bar.get_window_extent(renderer).extents]))
    found = np.concatenate(boxes)
    return found[np.isfinite(found).all(axis=1)]


def _place_axes(ax: Axes, renderer: RendererBase) -> float:
    """Move each movable label of the axes to its nearest free place; return how many pixels of
    headroom the worst label lacked (0 when every one found a place inside the frame)."""
    import numpy as np
    from matplotlib.text import Annotation

    frame = np.asarray(ax.get_window_extent(renderer).extents, dtype=float)
    taken = [obstacles(ax, renderer)]
    movable = []
    for text in ax.texts:
        if not text.get_visible() or not text.get_text():
            continue
        if (isinstance(text, Annotation) and text.get_gid() != OUTSIDE_FRAME
                and text.anncoords in MOVABLE):
            movable.append(text)
        else:  # fixed: the others keep clear of it
            taken.append(np.array([text.get_window_extent(renderer).extents]))
    shortfall = 0.0
    for text in movable:
        box = _reset(text, renderer)
        dx, dy, lacking = _free_offset(box, frame, np.concatenate(taken))
        shortfall = max(shortfall, lacking)
        _shift(text, dx, dy, renderer)
        taken.append(box[None, :] + np.array([dx, dy, dx, dy]))
    return shortfall


def _reset(text: Annotation, renderer: RendererBase) -> np.ndarray:
    """The label back at the offset its figure gave it; its box there."""
    import numpy as np

    original = _ORIGINAL.setdefault(text, tuple(text.xyann))  # type: ignore[arg-type]
    text.xyann = original
    return np.array(text.get_window_extent(renderer).extents)


def _free_offset(box: np.ndarray, frame: np.ndarray, taken: np.ndarray) -> tuple[float, float, float]:
    """(dx, dy) in pixels to the cheapest free place inside the frame, and 0; where none is free,
    the cheapest free place ignoring the frame's top and the pixels it lacks there."""
    import numpy as np

    step = max((box[3] - box[1]) / 2, 2.0)
    ups = np.arange(-STEPS_DOWN, STEPS_UP + 1)
    side_steps = min(MAX_SIDE_STEPS, int(np.ceil((box[2] - box[0]) / step)) + 2)
    sides = np.arange(-side_steps, side_steps + 1)
    dy, dx = (grid.ravel() * step for grid in np.meshgrid(ups, sides))
    cost = np.where(dy < 0, -dy * DOWN_COST, dy) + np.abs(dx) * SIDE_COST
    order = np.argsort(cost, kind="stable")
    dx, dy = dx[order], dy[order]
    moved = box[None, :] + np.stack([dx, dy, dx, dy], axis=1)
    padded = taken + np.array([-GAP_PX, -GAP_PX, GAP_PX, GAP_PX])
    # only obstacles within reach of some candidate place can block one (a roofline has thousands)
    padded = padded[(padded[:, 2] > moved[:, 0].min()) & (padded[:, 0] < moved[:, 2].max())
                    & (padded[:, 3] > moved[:, 1].min()) & (padded[:, 1] < moved[:, 3].max())]
    within_sides = (moved[:, 0] >= frame[0] + GAP_PX) & (moved[:, 2] <= frame[2] - GAP_PX) & (
        moved[:, 1] >= frame[1] + GAP_PX)
    inside = within_sides & (moved[:, 3] <= frame[3] - GAP_PX)
    fallback = None  # the cheapest clear place above the frame's top
    # in order of cost, a chunk at a time: the cheapest places are usually free, and each is tested
    # against every obstacle within reach (a roofline has thousands)
    for first in range(0, len(moved), CANDIDATE_CHUNK):
        chunk = moved[first:first + CANDIDATE_CHUNK]
        clear = ~((np.minimum(chunk[:, None, 2], padded[None, :, 2]) > np.maximum(chunk[:, None, 0], padded[None, :, 0]))
                  & (np.minimum(chunk[:, None, 3], padded[None, :, 3]) > np.maximum(chunk[:, None, 1], padded[None, :, 1]))
                  ).any(axis=1)
        places = slice(first, first + len(chunk))
        if (clear & inside[places]).any():
            i = first + int(np.argmax(clear & inside[places]))
            return float(dx[i]), float(dy[i]), 0.0
        if fallback is None and (clear & within_sides[places]).any():
            fallback = first + int(np.argmax(clear & within_sides[places]))
    if fallback is not None:
        return float(dx[fallback]), float(dy[fallback]), float(moved[fallback, 3] - frame[3] + GAP_PX)
    return 0.0, 0.0, 0.0


def _shift(text: Annotation, dx_px: float, dy_px: float, renderer: RendererBase) -> None:
    x, y = (float(v) for v in text.xyann)
    per_unit = float(renderer.points_to_pixels(1.0)) if text.anncoords == "offset points" else 1.0  # type: ignore[arg-type]
    text.xyann = (x + dx_px / per_unit, y + dy_px / per_unit)


def _raise_top(ax: Axes, shortfall_px: float) -> bool:
    """Widen the y axis upwards so that `shortfall_px` more pixels of data fit below the frame's
    top; False where that would take more than half the panel (then the label stays out)."""
    import numpy as np

    height_px = ax.get_window_extent().height
    if shortfall_px + GAP_PX >= height_px / 2:
        return False
    low, high = ax.get_ylim()
    scale = ax.yaxis.get_transform()
    s_low, s_high = (float(v) for v in scale.transform(np.array([low, high])))
    s_new = s_low + (s_high - s_low) * height_px / (height_px - shortfall_px - GAP_PX)
    ax.set_ylim(low, float(scale.inverted().transform(np.array([s_new]))[0]))
    return True
