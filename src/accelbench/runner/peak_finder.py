"""The maximum and the sustained matmul rate of one device, told apart, within a time budget.

Maximum: after a short warm-up, square products of orders around the device's preferred multiple
are timed in short bursts; the best verified rate is the maximum (what a fresh, cool chip gives).
Sustained: the best order is then held, burst after burst, until the rate settles (the last
`settle_span_s` of bursts spread less than `settle_tolerance`) or the budget ends; a power cap
shows here as a lower clock. Every burst records the clock, and the power where the device reports
it. Like every accelbench matmul, an order's time counts only after its product passed a check
against a float64 reference, and a rate above the formula peak is invalid, never a maximum.

The device is reached through a `Bench` (runner/peak_bench.py for real backends; tests replay one).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from accelbench.results import Check

SEARCH_SHARE = 0.55   # of the budget: the rest holds the best order until it settles
BURST_S = 1.0         # one timed burst: long enough for ~100 calls at a GPU's large orders
WARMUP_S = 3.0        # clocks and caches up before the first burst counts


@dataclass(frozen=True)
class Burst:
    """Back-to-back products of one order: how many, how long, the clock and power seen meanwhile."""

    calls: int
    elapsed_s: float
    clock_mhz: float | None = None
    power_w: float | None = None
    batch_s: tuple[float, ...] = ()   # seconds per call of each batch between synchronisations


class Bench(Protocol):
    label: str                     # "torch@cuda:0 bfloat16"

    def prepare(self, n: int) -> None: ...
    def check(self, n: int) -> Check: ...
    def burst(self, n: int, seconds: float) -> Burst: ...
    def release(self, n: int) -> None: ...


@dataclass(frozen=True)
class Trial:
    """One order's burst during the search, or why it has no rate."""

    n: int
    rate: float | None             # FLOP/s; None where it did not count
    clock_mhz: float | None = None
    power_w: float | None = None
    status: str = "valid"          # valid | check failed | above peak | failed
    detail: str = ""
    batch_s: tuple[float, ...] = ()  # the burst's per-call seconds, batch by batch: the rate's spread


@dataclass(frozen=True)
class Sustained:
    n: int
    rate: float
    clock_mhz: float | None
    power_w: float | None
    settled: bool
    held_s: float
    windows: tuple[Trial, ...]     # every burst of the hold, in order
    counted: int = 2               # the last `counted` windows make the sustained rate


@dataclass
class PeakSearch:
    label: str
    budget_s: float
    candidates: tuple[int, ...]
    trials: list[Trial] = field(default_factory=list)
    maximum: Trial | None = None
    sustained: Sustained | None = None
    final_check: Check | None = None
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> str:
        tried = [t.n for t in self.trials]
        grid = sum(1 for n in tried if n in self.candidates)
        return (f"{grid} of {len(self.candidates)} grid orders and {len(tried) - grid} neighbours of the best "
                f"tried ({', '.join(map(str, tried)) or 'none'}); {self.elapsed_s:.0f} s of a "
                f"{self.budget_s:.0f} s budget")


def candidate_orders(multiple: int, low: int, high: int, count: int = 8) -> list[int]:
    """Orders from `low` to `high`, every one a multiple of `multiple`: `count` spread geometrically
    and the powers of two among them (libraries tune for those first); the search then climbs to
    the best's neighbours."""
    if high < low or multiple <= 0:
        return []
    ratio = (high / low) ** (1 / max(count - 1, 1))
    orders = {max(multiple, round(low * ratio**i / multiple) * multiple) for i in range(count)}
    orders |= {2**k for k in range(max(low, multiple).bit_length() - 1, high.bit_length())
               if low <= 2**k <= high and 2**k % multiple == 0}
    return sorted(o for o in orders if o <= high)


def _rate(n: int, burst: Burst) -> float:
    return 2.0 * n**3 * burst.calls / burst.elapsed_s if burst.elapsed_s > 0 and burst.calls > 0 else 0.0


def _try(bench: Bench, n: int, seconds: float, peak_flops: float | None) -> Trial:
    try:
        bench.prepare(n)
        check = bench.check(n)  # before its time counts, as every accelbench matmul
        if not check.passed:
            return Trial(n, None, status="check failed", detail=check.detail or f"error {check.max_rel_error:.2g}")
        burst = bench.burst(n, seconds)
    except (MemoryError, RuntimeError) as exc:  # too large for this device, or a backend refusal
        return Trial(n, None, status="failed", detail=str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__)
    finally:
        bench.release(n)
    rate = _rate(n, burst)
    if peak_flops and rate > peak_flops:
        return Trial(n, None, burst.clock_mhz, burst.power_w, "above peak",
                     f"{rate / 1e12:.1f} TFLOP/s exceeds the device's bound {peak_flops / 1e12:.3g} (its peak at the running clock, with a margin): not counted")
    return Trial(n, rate, burst.clock_mhz, burst.power_w, batch_s=burst.batch_s)


def _best(trials: Sequence[Trial]) -> Trial | None:
    counted = [t for t in trials if t.rate]
    return max(counted, key=lambda t: t.rate or 0.0) if counted else None


def settled(rates: Sequence[float], span: int, tolerance: float) -> bool:
    """The last `span` rates spread (max - min) less than `tolerance` of their mean."""
    if span < 2 or len(rates) < span:
        return False
    last = rates[-span:]
    mean = sum(last) / span
    return mean > 0 and (max(last) - min(last)) / mean < tolerance


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def find_peak(bench: Bench, candidates: Sequence[int], *, multiple: int, budget_s: float = 180.0,
              peak_flops: float | None = None, burst_s: float = BURST_S, warmup_s: float = WARMUP_S,
              settle_span_s: float = 10.0, settle_tolerance: float = 0.02,
              clock: Callable[[], float] = time.monotonic) -> PeakSearch:
    """Search, then hold; every step stays within `budget_s` (a step that starts in time may end
    one burst after it)."""
    started = clock()
    search = PeakSearch(bench.label, budget_s, tuple(candidates))
    search_end = started + SEARCH_SHARE * budget_s
    if candidates:
        warm = _try(bench, candidates[len(candidates) // 2], min(warmup_s, 0.2 * budget_s), peak_flops)
        if warm.status != "valid":
            search.notes.append(f"warm-up at n={warm.n}: {warm.status} ({warm.detail})")
    for n in candidates:
        if search.trials and clock() + burst_s > search_end:  # one order at least: a slow warm-up on a
            break                                              # loaded machine left none (exit 1)
        search.trials.append(_try(bench, n, burst_s, peak_flops))
    best, climbed = _best(search.trials), None
    while best is not None and best is not climbed:  # climb to the best's neighbours while they gain
        climbed = best
        for n in (best.n - multiple, best.n + multiple):
            if n > 0 and n not in {t.n for t in search.trials} and clock() + burst_s <= search_end:
                search.trials.append(_try(bench, n, burst_s, peak_flops))
        best = _best(search.trials)
    search.maximum = _best(search.trials)
    if search.maximum is not None:
        search.sustained, search.final_check = _hold(bench, search.maximum.n, started + budget_s, burst_s,
                                                     settle_span_s, settle_tolerance, peak_flops, clock)
    else:
        search.notes.append("no order gave a verified rate: no maximum, no sustained rate")
    search.elapsed_s = clock() - started
    return search


def _hold(bench: Bench, n: int, deadline: float, burst_s: float, span_s: float, tolerance: float,
          peak_flops: float | None, clock: Callable[[], float]) -> tuple[Sustained | None, Check | None]:
    span = max(2, math.ceil(span_s / burst_s))
    windows: list[Trial] = []
    began = clock()
    bench.prepare(n)
    try:
        while clock() + burst_s <= deadline or len(windows) < 2:
            burst = bench.burst(n, burst_s)
            rate = _rate(n, burst)
            status = "above peak" if peak_flops and rate > peak_flops else "valid"
            windows.append(Trial(n, rate if status == "valid" else None, burst.clock_mhz, burst.power_w, status))
            if settled([w.rate or 0.0 for w in windows], span, tolerance):
                break
        final = bench.check(n)  # the held product is checked again: a chip that went wrong under heat shows here
    finally:
        bench.release(n)
    last = windows[-span:]
    if not final.passed or any(w.rate is None for w in last):
        return None, final
    return Sustained(n, sum(w.rate or 0.0 for w in last) / len(last), _mean([w.clock_mhz for w in last]),
                     _mean([w.power_w for w in last]), settled([w.rate or 0.0 for w in windows], span, tolerance),
                     clock() - began, tuple(windows), len(last)), final
