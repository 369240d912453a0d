"""The verdict an unpaired speed-up keeps when a side's own median was moved while it was measured.

An unpaired speed-up is the ratio of two medians measured apart (runner/speedups.py). Where a side
was measured noisy because load slowed it, its median is longer than the work takes, and the ratio
is off in a known direction: a slowed baseline raises the ratio, a slowed candidate lowers it. So
the verdict that load could have made is withheld ("inconclusive", with the reason), and the one it
could not have made stands: a GPU measured 3× faster than a CPU that was slowed by load is not
known to be faster, one measured 3× slower is known to be slower. A side moved either way (drift,
a state change) leaves no verdict standing. Paired speed-ups need none of this:
their rounds cancel load, and runner/paired_check.py checks them.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from accelbench.results import Measurement
from accelbench.verdict import (BURSTS, CPU_WAIT, DEVICE_SHARED, DEVICE_SLOWED, DISTURBING, DRIFT, HYPERVISOR, NOISY,
                               OTHER_PROCESSES, OWN_THREADS, STATE_CHANGED, WARMUP, kind_of)

# noisy reasons that say a timing itself was moved: the harness's and the contention monitor's kinds
TIMING_MOVED = DISTURBING | {OWN_THREADS, CPU_WAIT, HYPERVISOR, OTHER_PROCESSES, DEVICE_SHARED, DEVICE_SLOWED}


def safe_verdicts(moved_sides: frozenset[str]) -> tuple[str, ...]:
    """The verdicts a ratio baseline time / candidate time keeps when `moved_sides` were slowed by load:
    a slowed baseline only raises the ratio (so "slower" stands), a slowed candidate only lowers it
    (so "faster" stands); with both moved, or for "same", nothing stands."""
    if moved_sides == {"baseline"}:
        return ("slower",)
    if moved_sides == {"candidate"}:
        return ("faster",)
    return ()


def with_load_moved(ratio: Any, w: Any) -> Any:
    """An unpaired ratio with the sides whose own median was moved while it was measured: its verdict
    then keeps only what the move could not have made (SpeedupCI.verdict). Load only lengthens a time,
    so a side slowed by load leaves one direction standing; a side moved either way (drift, a state
    change, a reason of unknown kind) leaves none."""
    moved = [(side, m, how) for side, m in (("baseline", w.baseline), ("candidate", w.candidate))
             if (how := median_moved(m))]
    if not moved:
        return ratio
    sides = {side for side, _, _ in moved}
    if any(how == MOVED_EITHER_WAY for _, _, how in moved):
        sides = {"baseline", "candidate"}
    why = "; ".join(f"{m.spec.label()} was measured {m.verdict} ({'; '.join(m.verdict_reasons) or 'no reason stored'})"
                    for _, m, _ in moved)
    return dataclasses.replace(ratio, load_moved=f"unpaired, and a side's median moved: {why}",
                               moved_sides=frozenset(sides))


SLOWED = "slowed"                   # median_moved: only lengthened (load)
MOVED_EITHER_WAY = "either way"     # median_moved: drift, a state change, a reason of unknown kind
# the noisy kinds that can only lengthen a time: load of every sort, warm-up left in, bursts of slow samples
SLOWING = frozenset({OWN_THREADS, CPU_WAIT, HYPERVISOR, OTHER_PROCESSES, DEVICE_SHARED, DEVICE_SLOWED, WARMUP, BURSTS})
# ... and those that can move it either way: a trend through the samples, a clock or state that changed
EITHER_WAY = frozenset({DRIFT, STATE_CHANGED, ""})
# a missed target or a wide spread move nothing by themselves: the ratio's interval carries them


def median_moved(m: Measurement) -> str:
    """'' where a measurement's median is as it was timed (its interval carries its spread), SLOWED
    where load can only have lengthened it, MOVED_EITHER_WAY where its reasons leave the direction open."""
    if m.verdict != NOISY:
        return ""
    kinds = {kind_of(reason) for reason in m.verdict_reasons}
    if not kinds or kinds & EITHER_WAY:
        return MOVED_EITHER_WAY
    return SLOWED if kinds & SLOWING else ""


def short_reason(moved_sides: frozenset[str]) -> str:
    """Why a verdict was withheld, in a clause, without the measurements' own reasons (their rows say them)."""
    who = ("both medians" if len(moved_sides) > 1 else
           "the CPU baseline's median" if "baseline" in moved_sides else "this result's median")
    return f"{who} moved while measured (noisy), which could have made its direction"
