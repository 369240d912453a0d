"""Synchronisation is tested, not trusted: does `synchronize()` really wait for the device?

The same known-long work is timed twice, k launches each:

    with_sync:      sync; t0; [out = launch(); synchronize()] x k; t1
    with_readback:  sync; t0; [out = launch(); read_back(out)] x k; t1

Reading an output back can only return once the work that made it is done, so `with_readback`
is a true time (plus one copy of the output per launch, measured apart and subtracted). If
`with_sync` is far below it, `synchronize()` returned before the work finished, and every time
read after it would be too short: such a backend must not be timed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from accelbench.timing.clock import Clock, PerfCounterClock
from accelbench.units import format_seconds

LAUNCHES = 3
WAITS_FRACTION = 0.5   # with_sync must reach half the true time (a copy or two of slack either way)
MIN_WORK_S = 0.002     # below this the two timings are too close to the clock and launch overhead


@dataclass(frozen=True)
class SyncProbe:
    ok: bool
    detail: str
    with_sync_s: float = 0.0
    true_s: float = 0.0


def probe(launch: Callable[[], Any], synchronize: Callable[[], object], read_back: Callable[[Any], object],
          clock: Clock | None = None, launches: int = LAUNCHES) -> SyncProbe:
    """Compare per-launch times with synchronize() and with the output read back (see module)."""
    clock = clock or PerfCounterClock()
    out = launch()  # the first call (compilation, allocation) stays out of both timings
    read_back(out)
    synchronize()
    start_s = clock.now()
    read_back(out)  # the output is ready: this is the copy alone
    copy_s = clock.now() - start_s

    start_s = clock.now()
    for _ in range(launches):
        out = launch()
        synchronize()
    with_sync_s = (clock.now() - start_s) / launches

    synchronize()
    start_s = clock.now()
    for _ in range(launches):
        out = launch()
        read_back(out)
    true_s = max((clock.now() - start_s) / launches - copy_s, 0.0)
    if true_s < MIN_WORK_S:
        return SyncProbe(True, f"work too short to judge ({format_seconds(true_s)} a launch)", with_sync_s, true_s)
    if with_sync_s < WAITS_FRACTION * true_s:
        return SyncProbe(False, f"synchronize() does not wait for the device: work that takes "
                                f"{format_seconds(true_s)} (its output read back) measured "
                                f"{format_seconds(with_sync_s)} when followed by synchronize()",
                         with_sync_s, true_s)
    return SyncProbe(True, f"synchronize() waits ({format_seconds(with_sync_s)} with it, "
                           f"{format_seconds(true_s)} with the output read back)", with_sync_s, true_s)
