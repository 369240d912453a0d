"""Drawing every figure of a report, on the usable CPU cores when there is enough to draw.

matplotlib draws one figure on one core, and a report over thousands of results has dozens of
figures: they are drawn by forked workers (accelbench.forked), which inherit the loaded runs and
send back each figure's PNG and facts, or here, one after another, for a small report or where
forking is unsafe. Either way the figures are the same.
"""
from __future__ import annotations

from collections.abc import Callable

from accelbench import forked
from accelbench.report.data import RunData
from accelbench.report.figures import FigureResult, figure_builders

PARALLEL_FROM_RESULTS = 2000  # below this, starting workers costs more than it saves


def draw_all(runs: list[RunData], meanwhile: Callable[[], None] = lambda: None) -> list[list[FigureResult]]:
    """Every run's figures, in make_figures' order; `meanwhile` runs here while workers draw."""
    from accelbench.report.palette import assign_colours

    assign_colours(runs)  # one colour per series across every figure and run of the report
    builders = figure_builders()
    pieces = [(run, build) for run in runs for build in builders]
    if sum(len(run.measurements) for run in runs) < PARALLEL_FROM_RESULTS:
        drawn = [build(run) for run, build in pieces]
        meanwhile()
    else:
        if forked.worker_count(len(pieces)):
            import matplotlib.backends.backend_agg  # noqa: F401 - imported once here, inherited by every worker
            import matplotlib.figure  # noqa: F401
        drawn = forked.forked_map(_draw, pieces, meanwhile)
    return [drawn[i:i + len(builders)] for i in range(0, len(drawn), len(builders))]


def _draw(piece: tuple[RunData, Callable[[RunData], FigureResult]]) -> FigureResult:
    run, build = piece
    return build(run)
