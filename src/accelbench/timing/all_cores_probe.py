"""An all-cores probe beside each multi-thread CPU result: the host's own speed on all its cores, then.

A shared VM has phases, lasting seconds, in which work on all cores slows while work on one core
does not (on 2-core AMD VMs, Zen 4 and Zen 5: numpy on 2 threads 1.2-1.45× slower for 20-60 s at a time,
its two vCPUs' cache-line round trip 330-360 ns instead of 55-90 ns; one-thread numpy unmoved). The
run's machine reference (timing/machine_reference.py) is one thread at three moments, so it cannot
see them, and `compare` called the next run's 2-thread results faster or slower. This probe times a
fixed kernel on the same number of threads just before and just after each such result is timed,
so `compare` can set the result's shift against the host's at that moment (compare/machine.py).
Measured on the Zen 5 VM over 4 minutes of alternating probe and numpy matmul n=512 on 2 threads: 11% of the
matmul's readings were more than 15% off its median; divided by the probe's, 3%.

The kernel: 8 products of 256×256 float64 on `threads` BLAS threads, median of REPEATS timings
after one warm-up: about 15 ms a reading. numpy is imported inside `measure`.
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

KEY = "all_cores_probe"              # the key in a result's telemetry
KERNEL = "matmul256-f64x8"           # readings of another kernel are not compared
MATMUL_N = 256
CALLS = 8
REPEATS = 5
BUDGET_S = 0.1       # a reading stops after this long (beside a busy process a timing took 0.13 s)
SEED = 20261205


def wanted(on_host_cpu: bool, threads: int | None) -> int | None:
    """The threads to probe with for a result run with `threads` (None: all it is given) on a device
    that is (`on_host_cpu`) or is not the host's own cores (None: no probe): results on more than one
    thread, the CPU's own and an OpenCL CPU device's, on a machine with more than one core open to us."""
    if not on_host_cpu:
        return None
    cores = open_cores()
    count = cores if threads is None else threads
    return count if count > 1 and cores > 1 else None


def open_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def measure(threads: int, repeats: int = REPEATS) -> float:
    """Median seconds of one timing (CALLS products) on `threads` BLAS threads."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(SEED)
    left, right = rng.standard_normal((MATMUL_N, MATMUL_N)), rng.standard_normal((MATMUL_N, MATMUL_N))
    product = np.empty((MATMUL_N, MATMUL_N))
    times_s = []
    began = time.perf_counter()
    with threadpool_limits(limits=threads, user_api="blas"):
        for index in range(repeats + 1):
            started = time.perf_counter()
            for _ in range(CALLS):
                np.matmul(left, right, out=product)
            if index:  # the first is the warm-up
                times_s.append(time.perf_counter() - started)
            if times_s and time.perf_counter() - began > BUDGET_S:
                break  # a busy core makes each call wait for a time slice: fewer timings, same figure
    return median(times_s)


def reading(threads: int | None, before_s: float | None, after_s: float | None) -> dict[str, Any] | None:
    """The stored form (None where either reading failed)."""
    if threads is None or before_s is None or after_s is None:
        return None
    return {"kernel": KERNEL, "threads": threads, "before_s": before_s, "after_s": after_s}


def safely(threads: int | None) -> float | None:
    """One reading, or None: the probe serves `compare`; it never fails a result."""
    if threads is None:
        return None
    try:
        return measure(threads)
    except Exception:  # noqa: BLE001 - no numpy, no threadpoolctl: the result simply has no probe
        return None


@dataclass(frozen=True)
class Probe:
    """A result's probe as read back: the geometric mean of its two readings and their log spread."""

    threads: int
    time_s: float
    spread_log: float   # |log(after / before)|: how much the host moved while the result was timed


def _positive(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def stored(telemetry: Mapping[str, Any] | None) -> Probe | None:
    """A result's probe (None: none stored, another kernel, or unusable values)."""
    data = (telemetry or {}).get(KEY)
    if not isinstance(data, Mapping) or data.get("kernel") != KERNEL:
        return None
    threads = data.get("threads")
    before, after = _positive(data.get("before_s")), _positive(data.get("after_s"))
    if not isinstance(threads, int) or isinstance(threads, bool) or before is None or after is None:
        return None
    return Probe(threads, math.sqrt(before * after), abs(math.log(after / before)))
