"""Clocks the harness reads: a protocol, so tests inject virtual time, and the real one.

The harness only ever calls `clock.now()`. A clock may also expose `resolution_s`, the smallest
step two successive reads can show; the harness uses it to make blocks long enough that
quantisation stays under 0.1%, and to warn when they could not be. A clock without it is assumed
fine-grained (nothing is checked).

Resolution note: `time.perf_counter` is monotonic and the finest clock Python offers (on Linux
CLOCK_MONOTONIC, 1 ns declared). What matters in practice is the *effective* resolution: two
successive reads never differ by less than the cost of one read (tens of nanoseconds), so that is
what `perf_counter_info()` measures, once per process.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

_RESOLUTION_TRIALS = 200        # pairs of differing reads; the smallest step is kept
_MAX_READS_PER_STEP = 100_000   # a clock that does not move in this many reads is "not observable"
_OVERHEAD_READS = 10_000
_OVERHEAD_REPEATS = 5


@runtime_checkable
class Clock(Protocol):
    """Anything with `now() -> float` in seconds; only differences between reads are meaningful."""

    def now(self) -> float: ...


@dataclass(frozen=True)
class ClockInfo:
    """What one clock can resolve and what reading it costs."""

    resolution_s: float             # smallest non-zero step seen between successive reads
    read_overhead_s: float          # cost of one `now()` call
    declared_resolution_s: float | None = None  # what the OS claims (often finer than reality)


def probe_clock(now: Callable[[], float]) -> ClockInfo:
    """Measure a clock's effective resolution and read overhead (takes a few milliseconds)."""
    return ClockInfo(resolution_s=_smallest_step_s(now), read_overhead_s=_read_overhead_s(now))


def _smallest_step_s(now: Callable[[], float]) -> float:
    """The smallest positive difference between two successive distinct reads (inf if none)."""
    smallest_s = math.inf
    for _ in range(_RESOLUTION_TRIALS):
        first_s = now()
        for _ in range(_MAX_READS_PER_STEP):
            step_s = now() - first_s
            if step_s > 0:
                smallest_s = min(smallest_s, step_s)
                break
        else:
            return math.inf  # the clock did not move at all: its resolution cannot be seen
    return smallest_s


def _read_overhead_s(now: Callable[[], float]) -> float:
    """Seconds per `now()` call; the minimum over repeats, since interruptions only add time."""
    best_s = math.inf
    for _ in range(_OVERHEAD_REPEATS):
        start_s = time.perf_counter()
        for _ in range(_OVERHEAD_READS):
            now()
        best_s = min(best_s, (time.perf_counter() - start_s) / _OVERHEAD_READS)
    return best_s


@functools.lru_cache(maxsize=None)
def perf_counter_info() -> ClockInfo:
    """`time.perf_counter`'s resolution and read overhead, measured once per process."""
    measured = probe_clock(time.perf_counter)
    declared_s = time.get_clock_info("perf_counter").resolution
    return ClockInfo(measured.resolution_s, measured.read_overhead_s, declared_s)


class PerfCounterClock:
    """The real clock: `time.perf_counter`, monotonic and system-wide."""

    def now(self) -> float:
        return time.perf_counter()

    @property
    def resolution_s(self) -> float:
        return perf_counter_info().resolution_s

    def __repr__(self) -> str:
        return "PerfCounterClock()"


def clock_resolution_s(clock: Clock) -> float:
    """The clock's `resolution_s` where it declares one, else 0.0 (nothing to check against)."""
    resolution_s = getattr(clock, "resolution_s", 0.0)
    return float(resolution_s) if resolution_s is not None else 0.0
