"""Bulk work (an import of 100,000 results, a report over 10,000) without the cyclic collector
walking the same millions of live objects over and over.

CPython's collector runs every few hundred allocations of container objects and, now and then,
traverses every tracked object alive. While a bulk job builds its data, all of it is alive and in
use, so those passes find nothing and cost a fifth or more of the job.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_heap(*, collect: bool = True) -> Iterator[None]:
    """Inside, objects alive on entry are never traversed again (gc.freeze); with
    `collect=False` the collector is off as well, for work that makes no reference cycles (parsing
    JSON, building rows). Both are undone on exit, so nothing is kept alive longer than it would be."""
    was_enabled = gc.isenabled()
    gc.freeze()
    if not collect:
        gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
