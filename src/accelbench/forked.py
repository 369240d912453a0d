"""Independent pieces of work on the usable cores, in forked processes, where that is safe.

A forked worker inherits what the parent holds (loaded runs, sorted samples) with no copy and no
pickle on the way in; only what each piece returns is pickled back. Where the system cannot fork,
where the process has loaded a framework that runs native threads (forking one may deadlock the
child), inside a worker, or with one usable core, the pieces run here, one after another: the
results are the same either way.
"""
from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from accelbench.vocabulary import usable_cpus

MAX_WORKERS = 8

# frameworks that run native threads: forking a process that loaded one may deadlock the child
THREADED_FRAMEWORKS = ("torch", "jax", "tensorflow", "cupy")

Item = TypeVar("Item")
Result = TypeVar("Result")

_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # what forked workers read
_IN_WORKER = False


def fork_is_safe() -> bool:
    return (not _IN_WORKER and "fork" in multiprocessing.get_all_start_methods()
            and not any(name in sys.modules for name in THREADED_FRAMEWORKS))


def worker_count(pieces: int) -> int:
    """How many workers `forked_map` would start for this many pieces: 0 where it runs them here."""
    workers = min(usable_cpus(), MAX_WORKERS, pieces)
    return workers if workers >= 2 and fork_is_safe() else 0


def forked_map(function: Callable[[Item], Result], items: Sequence[Item],
               meanwhile: Callable[[], None] = lambda: None) -> list[Result]:
    """[function(item) for item in items], spread over forked workers where worth it; `meanwhile`
    runs here while they work (after the pieces, where they run here)."""
    global _WORK
    workers = worker_count(len(items))
    if not workers:
        done = [function(item) for item in items]
        meanwhile()
        return done
    _WORK = (function, items)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_become_worker) as pool:
            futures = [pool.submit(_run, index) for index in range(len(items))]
            meanwhile()
            return [future.result() for future in futures]
    finally:
        _WORK = None


def _become_worker() -> None:
    global _IN_WORKER
    _IN_WORKER = True  # a worker runs nested maps itself: the cores are already taken


def _run(index: int) -> Any:
    assert _WORK is not None, "set by forked_map before its workers fork"
    function, items = _WORK
    return function(items[index])
