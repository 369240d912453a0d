"""A machine reference: one small fixed CPU kernel timed at the start, the middle and the end of a run.

`accelbench compare` sets a change of the code against a change of the machine: when every spec of
run B is 1.4× slower, that is the code only if this kernel, which never changes, was not slower too.
The kernel is deterministic and single-threaded (threadpoolctl limits the BLAS to one thread, so
thread settings do not move it): a 256×256 float64 matrix product (compute) and a pass over 32 MiB
(memory), each about 5-10 ms. Each reading is the median of REPEATS timings after one warm-up; the
three readings and their spread are stored with the run; compare reads the fastest reading and the
spread of the fastest two (`stored`) (machine["machine_reference"]), so they
travel with `accelbench export` / `import`.

Measuring needs numpy (imported inside `measure`); reading a stored record back does not.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

KEY = "machine_reference"          # the key in a run's machine record
KERNEL = "matmul256-f64x8+copy-scale-32MiB-x3, 1 thread"  # readings of another kernel are not compared
MATMUL_N = 256
MATMUL_CALLS = 8                   # ~5 ms on one core of a current CPU
MEMORY_ELEMENTS = 4 * 1024 * 1024  # float64: 32 MiB, beyond the last-level cache of most CPUs
MEMORY_PASSES = 3                  # copy then scale in place, ~5-10 ms
REPEATS = 5
SEED = 20260101
POINTS = ("start", "middle", "end")


@dataclass(frozen=True)
class Reading:
    """One reading: the median time of the compute and of the memory part, in seconds."""

    at: str
    matmul_s: float
    memory_s: float

    @property
    def total_s(self) -> float:
        return self.matmul_s + self.memory_s

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "matmul_s": self.matmul_s, "memory_s": self.memory_s, "total_s": self.total_s}


def _timed_s(call, repeats: int) -> float:
    call()  # warm-up: first touch of the pages, BLAS buffers
    times_s = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times_s.append(time.perf_counter() - started)
    return median(times_s)


def measure(at: str, repeats: int = REPEATS) -> Reading:
    """Time the fixed kernel now (about 0.1-0.2 s in all)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(SEED)
    left, right = rng.standard_normal((MATMUL_N, MATMUL_N)), rng.standard_normal((MATMUL_N, MATMUL_N))
    product = np.empty((MATMUL_N, MATMUL_N))
    source = rng.standard_normal(MEMORY_ELEMENTS)
    target = np.empty_like(source)

    def matmul() -> None:
        for _ in range(MATMUL_CALLS):
            np.matmul(left, right, out=product)

    def memory() -> None:
        for _ in range(MEMORY_PASSES):
            np.copyto(target, source)
            np.multiply(target, 1.000001, out=target)

    with threadpool_limits(limits=1):
        matmul_s = _timed_s(matmul, repeats)
    return Reading(at, matmul_s, _timed_s(memory, repeats))


def record(readings: list[Reading]) -> dict[str, Any]:
    """The stored form: the readings, their median total and spread (max / min − 1)."""
    totals = [r.total_s for r in readings]
    return {"kernel": KERNEL, "readings": [r.to_dict() for r in readings], "repeats": REPEATS,
            "total_s": median(totals) if totals else None,
            "spread": (max(totals) / min(totals) - 1) if totals and min(totals) > 0 else None}


PARTS = ("total_s", "matmul_s", "memory_s")


@dataclass(frozen=True)
class Stored:
    """One part of a run's machine reference (the total, the compute or the memory part) as read back."""

    total_s: float        # the fastest reading's time of that part
    spread_log: float     # log(second fastest / fastest) of those times (0 with one reading)
    readings: int

    @property
    def spread(self) -> float:
        return math.expm1(self.spread_log)


def _positive(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def stored(machine: Mapping[str, Any], part: str = "total_s") -> Stored | None:
    """One part (PARTS) of the run's reference (None: none stored, another kernel, nothing usable)."""
    data = machine.get(KEY)
    if not isinstance(data, Mapping) or data.get("kernel") != KERNEL or not isinstance(data.get("readings"), list):
        return None
    times_s = [t for t in (_positive(r.get(part)) for r in data["readings"] if isinstance(r, Mapping))
               if t is not None]
    if not times_s:
        return None
    # the fastest reading is what the machine could do; a reading slowed by a neighbour's burst (the
    # results measured then are marked noisy on their own) is set aside: the spread is that of the
    # fastest two, so the reference moves with a machine that is slower throughout, not for a moment
    fastest = sorted(times_s)[:2]
    return Stored(fastest[0], math.log(fastest[-1] / fastest[0]), len(times_s))


class RunReadings:
    """The readings of one run: `start()` before it, `middle` once half its specs are done (through
    `after_each`, wrapped around the runner's on_done), `end()` after it. A kernel that cannot run
    (no numpy, an error) leaves the run without a reference; it never fails the run."""

    def __init__(self, specs: int):
        self.half = max(1, math.ceil(specs / 2))
        self.done = 0
        self.readings: list[Reading] = []

    def _take(self, at: str) -> dict[str, Any]:
        try:
            self.readings.append(measure(at))
        except Exception:  # noqa: BLE001 - a reference is for the comparison, never a reason to fail a run
            pass
        return record(self.readings)

    def start(self) -> dict[str, Any]:
        return self._take("start")

    def end(self) -> dict[str, Any]:
        return self._take("end")

    def after_each(self, on_done):
        """on_done, with the middle reading taken once half the specs are done."""
        def wrapped(*args: Any) -> None:
            if on_done is not None:
                on_done(*args)
            self.done += 1
            if self.done == self.half:
                self._take("middle")
        return wrapped
