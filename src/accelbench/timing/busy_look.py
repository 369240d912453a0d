"""A look at the machine before the first measurement: are other processes holding the cores?

The contention monitor (timing/contention.py) judges each measurement after it ran; a user on a
busy machine is better told before: one line naming the process that holds the cores and its
share, and, with `--wait-quiet`, a bounded wait until the machine is quiet. Standard library only.
"""
from __future__ import annotations

import time
from typing import Callable

from accelbench.timing import contention

LOOK_S = 0.5            # one look: long enough for 10 ms CPU-time ticks on a few cores, at most 1 s
QUIET_CORES = 0.25      # other processes under a quarter of a core: quiet
QUIET_LOOKS = 2         # ... in this many looks in a row, to wait no more


def look(seconds: float = LOOK_S) -> contention.Interference | None:
    """Other processes' use of the cores over the next `seconds` (None where it cannot be read)."""
    with contention.watch() as window:
        time.sleep(seconds)
    return window.result


def others_cores(seen: contention.Interference | None) -> float | None:
    if seen is None:
        return None
    return seen.others_cores if seen.others_cores is not None else seen.visible_others_cores


def busy_line(seen: contention.Interference | None) -> str | None:
    """'other processes used 1.0 of the 2 cores over the last 0.5 s (the most: stress (pid 812))', or
    None where the machine looked quiet or could not be read."""
    used = others_cores(seen)
    if seen is None or used is None or used < QUIET_CORES:
        return None
    cores = f" of the {seen.cores} cores" if seen.cores else " cores"
    most = f" (the most: {seen.top_other})" if seen.top_other else ""
    return (f"other processes used {used:.1f}{cores} over {seen.window_s:.1f} s before the first measurement{most}: "
            "results will be noisy; --wait-quiet waits for them, or close them")


def wait_quiet(limit_s: float, on_wait: Callable[[str], None] | None = None,
               seconds: float = LOOK_S) -> tuple[bool, contention.Interference | None]:
    """Look until QUIET_LOOKS looks in a row are quiet, or `limit_s` has passed: (quiet, the last look)."""
    started, quiet_in_a_row, seen = time.monotonic(), 0, None
    while True:
        seen = look(seconds)
        used = others_cores(seen)
        quiet_in_a_row = quiet_in_a_row + 1 if used is not None and used < QUIET_CORES else 0
        if quiet_in_a_row >= QUIET_LOOKS:
            return True, seen
        if time.monotonic() - started >= limit_s:
            return False, seen
        if on_wait is not None and quiet_in_a_row == 0:
            on_wait(busy_line(seen) or "the machine's load could not be read")
