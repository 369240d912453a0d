"""Synchronisation is tested, not trusted: does `synchronize()` really wait for the device?

The same known-long work is timed twice, k launches each:

    with_sync:      sync; t0; [out = launch()] x k; synchronize(); t1
    with_readback:  sync; t0; [out = launch()] x k; read_back(out); t1

Reading an output back can only return once the work that made it is done (a device runs its
queue in order), so `with_readback` is a true time (plus one copy, measured apart and subtracted). If
`with_sync` is far below it, `synchronize()` returned before the work finished, and every time
read after it would be too short: such a backend must not be timed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from accelbench.timing.clock import Clock, PerfCounterClock
from accelbench.units import format_seconds

WAITS_FRACTION = 0.5   # with_sync must reach half the true time (noise either way)
TARGET_BLOCK_S = 0.02  # launches per block grow until a block lasts this long
MAX_LAUNCHES = 4096
MIN_WORK_S = 0.002     # a block's true work below this is too close to clock and copy noise to judge
ROUNDS = 5
MIN_LAUNCHES = 4       # a block of one launch is at the mercy of one stall


@dataclass(frozen=True)
class SyncProbe:
    ok: bool
    detail: str
    with_sync_s: float = 0.0   # per launch
    true_s: float = 0.0        # per launch, from the output read back


def probe(launch: Callable[[], Any], synchronize: Callable[[], object], read_back: Callable[[Any], object],
          clock: Clock | None = None) -> SyncProbe:
    """Per-launch times of k launches ended by synchronize() and by reading the last output back.

    One copy of the output ends each read-back block (measured apart and subtracted), and k grows
    until the block is long, so a slow link (a GPU's PCIe) does not drown the work being judged.
    """
    clock = clock or PerfCounterClock()
    out = launch()  # the first call (compilation, allocation) stays out of both timings
    read_back(out)
    synchronize()
    start_s = clock.now()
    read_back(out)  # the output is ready: this is the copy alone
    copy_s = clock.now() - start_s
    launches, block_s = 1, 0.0
    while True:
        block_s = _read_back_block(launch, synchronize, read_back, clock, launches) - copy_s
        if block_s >= TARGET_BLOCK_S or launches >= MAX_LAUNCHES:
            break
        launches = min(MAX_LAUNCHES, launches * 4)
    launches = max(launches, MIN_LAUNCHES)
    # a stall of the machine only ever lengthens a block: the shortest of a few, interleaved, decide
    true_s = with_sync_s = float("inf")
    for _ in range(ROUNDS):
        true_s = min(true_s, max(_read_back_block(launch, synchronize, read_back, clock, launches) - copy_s, 0.0))
        synchronize()
        start_s = clock.now()
        for _ in range(launches):
            out = launch()
        synchronize()
        with_sync_s = min(with_sync_s, clock.now() - start_s)
        read_back(out)
    block_s, true_s, with_sync_s = true_s, true_s / launches, with_sync_s / launches
    if block_s < MIN_WORK_S:
        return SyncProbe(True, f"work too short to judge ({format_seconds(true_s)} a launch)", with_sync_s, true_s)
    if with_sync_s < WAITS_FRACTION * true_s:
        return SyncProbe(False, f"synchronize() does not wait for the device: work that takes "
                                f"{format_seconds(true_s)} (its output read back) measured "
                                f"{format_seconds(with_sync_s)} when followed by synchronize()",
                         with_sync_s, true_s)
    return SyncProbe(True, f"synchronize() waits ({format_seconds(with_sync_s)} with it, "
                           f"{format_seconds(true_s)} with the output read back)", with_sync_s, true_s)


def _read_back_block(launch, synchronize, read_back, clock, launches: int) -> float:
    synchronize()
    start_s = clock.now()
    out = None
    for _ in range(launches):
        out = launch()
    read_back(out)
    return clock.now() - start_s
