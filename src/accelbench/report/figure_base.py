"""What every figure shares: its size, a Figure made without pyplot, PNG output, the result record."""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from typing import Any

PANEL_HEIGHT_IN = 3.8
WIDTH_IN = 9.5
DPI = 100
OUTSIDE_RIGHT = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}  # a legend beside its axes


@dataclass
class FigureResult:
    name: str                  # file stem: "matmul-time"
    title: str
    caption: str = ""
    png: bytes | None = None
    note: str | None = None    # why there is no figure
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def present(self) -> bool:
        return self.png is not None


def new_figure(panels: int, width_in: float = WIDTH_IN, height_in: float = PANEL_HEIGHT_IN, columns: int = 1):
    """A Figure not tied to pyplot (no global state, no display), with `panels` axes."""
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    rows = math.ceil(panels / columns)
    fig = Figure(figsize=(width_in, height_in * rows), layout="constrained")
    # titles at a fixed height: no axes here has labels on top, and the automatic placement
    # measures every tick label of the panel again at each draw
    with rc_context({"axes.titley": 1.0}):
        axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return fig, list(axes[:panels])


def to_png(fig) -> bytes:
    for ax in fig.axes:
        _fewer_minor_ticks(ax)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def _fewer_minor_ticks(ax) -> None:
    """Unlabelled minor ticks only at 2 and 5 of each decade where a log axis spans one or two
    decades, and none beyond (no minor tick is labelled there): each tick is several artists to lay
    out and draw, and the default eight per decade cost more than all the data of a figure."""
    from matplotlib.ticker import LogLocator, NullLocator

    for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        low, high = sorted(limits)
        if axis.get_scale() == "log" and low > 0 and high / low > 10:
            axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)) if high / low <= 100 else NullLocator())
