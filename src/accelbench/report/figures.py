"""The report's figures as PNG bytes: matplotlib (Agg, no display) imported only when drawing.

Each builder returns a FigureResult: the PNG, or no PNG and a note saying which data is missing,
so the report says "no data for X" instead of showing an empty chart; figures of workloads the run
did not measure at all have neither and are left out. `facts` holds the numbers a figure shows
(labels, break-even sizes) and what its drawn axes show, for captions and tests. Colours come from
the report's one mapping (report/palette.py): a series has the same colour in every figure.
"""
from __future__ import annotations

from collections.abc import Callable

from accelbench.report.data import RunData
from accelbench.report.figure_base import (  # noqa: F401 - re-exported for the report and tests
    DPI, MAX_BAR_GROUPS, MAX_LABELLED_TICKS, OUTSIDE_RIGHT, PANEL_HEIGHT_IN, WIDTH_IN, FigureResult,
    footprint_label, new_figure, spread_ticks, to_png)
from accelbench.report.figures_dl import dl_batches, dl_curves
from accelbench.report.figures_matmul import time_per_size, time_split
from accelbench.report.figures_memory import array_bandwidth, stream_bandwidth, transfer_bandwidth
from accelbench.report.figures_speedup import speedup_vs_size
from accelbench.report.figures_stats import stats_accuracy, stats_speedup
from accelbench.report.figures_telemetry import telemetry_over_run
from accelbench.report.roofline import precision_speed, roofline

Builder = Callable[[RunData], FigureResult]


def figure_builders() -> list[Builder]:
    """The functions that draw a run's figures, in reading order."""
    return [time_per_size, speedup_vs_size, time_split, roofline, precision_speed, stream_bandwidth,
            transfer_bandwidth, array_bandwidth, stats_speedup, stats_accuracy, dl_curves, dl_batches,
            telemetry_over_run]


def make_figures(run: RunData) -> list[FigureResult]:
    """Every figure of a run's report, present or with its note, in reading order."""
    return [build(run) for build in figure_builders()]
