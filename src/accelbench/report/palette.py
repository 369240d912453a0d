"""The report's colours: one per backend@device series (and per device in telemetry), the same in
every figure and every run of one report, chosen once from the sorted labels of all its runs."""
from __future__ import annotations

from collections.abc import Iterable

from accelbench.report.data import RunData, series_label
from accelbench.report.figure_base import series_colours


def colour_labels(run: RunData) -> set[str]:
    """Every series label of the run's results, and every device its telemetry watched."""
    labels = {series_label(m.spec) for m in run.measurements}
    for m in run.measurements:
        labels.update(str(d) for d in ((m.telemetry or {}).get("devices") or {}))
    return labels


def assign_colours(runs: Iterable[RunData]) -> dict[str, str]:
    """One mapping for a whole report, given to each run (forked workers inherit it)."""
    runs = list(runs)
    mapping = series_colours(label for run in runs for label in colour_labels(run))
    for run in runs:
        run.colours = mapping
    return mapping


def colours_of(run: RunData) -> dict[str, str]:
    """The report's mapping, or for a run drawn on its own, its own."""
    if not run.colours:
        run.colours = series_colours(colour_labels(run))
    return run.colours
