"""Drawing every figure of a report, on the usable CPU cores when there is enough to draw.

matplotlib draws one figure on one core, and a report over thousands of results has dozens of
figures. Where the system forks (Linux), worker processes inherit the loaded runs (nothing is
copied or pickled on the way in) and send back each figure's PNG and facts; elsewhere, in a
process that has loaded a threaded framework (torch, jax), or for a small report, the figures are
drawn here, one after another. Either way the figures are the same.
"""
from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor

from accelbench.report.data import RunData
from accelbench.report.figures import FigureResult, figure_builders
from accelbench.vocabulary import usable_cpus

PARALLEL_FROM_RESULTS = 2000  # below this, starting workers costs more than it saves
MAX_WORKERS = 8

_RUNS: list[RunData] = []  # what forked workers read, set just before they start


# frameworks that run native threads: forking a process that loaded one may deadlock the child
THREADED_FRAMEWORKS = ("torch", "jax", "tensorflow", "cupy")


def fork_is_safe() -> bool:
    return ("fork" in multiprocessing.get_all_start_methods()
            and not any(name in sys.modules for name in THREADED_FRAMEWORKS))


def _draw(run_index: int, builder_index: int) -> FigureResult:
    return figure_builders()[builder_index](_RUNS[run_index])


def draw_all(runs: list[RunData], meanwhile: Callable[[], None] = lambda: None) -> list[list[FigureResult]]:
    """Every run's figures, in make_figures' order; `meanwhile` runs here while workers draw."""
    from accelbench.report.palette import assign_colours

    assign_colours(runs)  # one colour per series across every figure and run of the report
    workers = min(usable_cpus(), MAX_WORKERS)
    results = sum(len(run.measurements) for run in runs)
    if workers < 2 or results < PARALLEL_FROM_RESULTS or not fork_is_safe():
        drawn = [[build(run) for build in figure_builders()] for run in runs]
        meanwhile()
        return drawn
    import matplotlib.backends.backend_agg  # noqa: F401 - imported once here, inherited by every worker
    import matplotlib.figure  # noqa: F401

    global _RUNS
    _RUNS = runs
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures: list[list[Future]] = [[pool.submit(_draw, r, b) for b in range(len(figure_builders()))]
                                           for r in range(len(runs))]
            meanwhile()
            return [[future.result() for future in row] for row in futures]
    finally:
        _RUNS = []
