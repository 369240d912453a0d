"""A paired speed-up checked against an independent derivation: the ratio of its sides' own medians.

The paired rounds (runner/pairing.py) and the two measurements they pair are separate timings of
the same work. Their ratios must agree within their combined uncertainty; where they do not,
something touched the rounds that did not touch the measurements (a thread pool of the other side
still spinning, a cache or clock state left behind), and the paired figure is contaminated: shown
with the reason, never a faster/slower verdict. Pure arithmetic on stored numbers, so a stored run
is judged the same way whenever it is read.
"""
from __future__ import annotations

import math
from typing import Sequence

from accelbench.timing import stats, steady_state

# Beyond the two intervals, the rounds and the measurements may differ by this much without
# contamination: a paired block follows the other side's, whose data evicted its own from the caches
# (numpy 1 against 2 threads, n=256 on a Zen 4: paired 0.53, medians 0.56, every run), and starts
# with its pool just woken. The cross-talk this check is for moved ratios 2× (0.47 against 0.94).
SYSTEMATIC_SLACK = 0.10
# Rounds run forward (A B) and backward (B A) in turn: cross-talk slows whichever side follows the
# other, so the ratios of the two directions part. Load that comes and goes hits both alike.
ORDER_EFFECT = 0.05       # the two directions' medians differ by more than this...
ORDER_ALPHA = 0.05        # ...and Mann-Whitney says it is no accident
# An order effect beyond this contaminates (the cross-talk parted the directions 2x); within it
# the true ratio lies between the two directions' medians, and the interval is widened to span them:
# jax against numpy's one thread, reduce, paired 2.12x one way and 2.23x the other, is no mute figure
ORDER_CONTAMINATES = SYSTEMATIC_SLACK
# With a side noisy, its median moved with the load and is no tight reference; still, the paired figure
# may not stand this many times from the ratio of the medians: a load that slowed one side's rounds
# alone is no load pairing cancels (beside a busy process, numpy on 2 threads ran 99-390× its own
# time in the rounds, a pool thread preempted at every barrier, and PoCL was called 59× faster
# than all cores where the medians said 0.29×)
GROSS_FACTOR = 2.0


# The rounds' interval may be this many times as wide as the ratio of medians' (log scale), and at
# least this wide, before the rounds count as scattered: two equally fast sides pair within about
# twice their own interval on a quiet machine; torch against numpy at n=1000 once paired 0.908
# [0.783-0.985] where the medians gave 0.985: a side switching between two speeds during the rounds
SCATTER_FACTOR = 2.0
SCATTER_FLOOR = 0.05


def warm_rounds(baseline_s: Sequence[float], candidate_s: Sequence[float], min_pairs: int) -> int:
    """How many first rounds were still the group's warm-up: a leading run of slow rounds in either
    side (timing/steady_state.py; jax at n=1000 ran its first 2-3 paired blocks 1.1-1.2× slow after
    the untimed warm-up round, in most runs on a quiet Zen 4 VM), cut from both sides alike and in
    an even number, so that forward and backward rounds stay in turn, leaving `min_pairs` at least."""
    cut = max(steady_state.settled_start(baseline_s), steady_state.settled_start(candidate_s))
    cut += cut % 2
    room = (min(len(baseline_s), len(candidate_s)) - min_pairs) // 2 * 2
    return max(0, min(cut, room))


def scattered(paired: stats.RatioCI, medians: stats.RatioCI) -> str:
    """Why the paired rounds scattered far more than the two measurements did, or ''."""
    spread, own = _half_width(paired.low, paired.high), _half_width(medians.low, medians.high)
    if not math.isfinite(spread) or spread <= max(SCATTER_FACTOR * own, math.log1p(SCATTER_FLOOR)):
        return ""
    return (f"the rounds scattered: paired {paired.ratio:.3g}× [{paired.low:.3g}–{paired.high:.3g}] against "
            f"±{math.expm1(own):.1%} for the ratio of the sides' own medians")


def _half_width(low: float, high: float) -> float:
    """Half the width of an interval on a log scale (0 for a degenerate or unbounded one)."""
    if not (0 < low <= high) or math.isinf(high):
        return math.inf if math.isinf(high) or low <= 0 else 0.0
    return (math.log(high) - math.log(low)) / 2


def disagreement(paired: stats.RatioCI, medians: stats.RatioCI) -> float:
    """How far apart the two figures are, in units of their combined log-scale uncertainty
    (with the systematic slack added): above 1 they disagree."""
    if paired.ratio <= 0 or medians.ratio <= 0 or not all(map(math.isfinite, (paired.ratio, medians.ratio))):
        return math.inf
    distance = abs(math.log(paired.ratio) - math.log(medians.ratio))
    allowed = math.hypot(_half_width(paired.low, paired.high), _half_width(medians.low, medians.high))
    return distance / (allowed + math.log1p(SYSTEMATIC_SLACK))


def _directions(baseline_s: Sequence[float], candidate_s: Sequence[float]) -> tuple[float, float] | None:
    """The medians of the forward rounds' ratios (baseline first) and the backward ones', where the
    two differ beyond ORDER_EFFECT and Mann-Whitney says it is no accident; else None."""
    ratios = [b / c if c > 0 else math.inf for b, c in zip(baseline_s, candidate_s)]
    forward, backward = ratios[0::2], ratios[1::2]
    if len(forward) < 4 or len(backward) < 4:
        return None
    f, b = stats.median(forward), stats.median(backward)
    if not (0 < f < math.inf and 0 < b < math.inf) or abs(math.log(f / b)) <= math.log1p(ORDER_EFFECT):
        return None
    if stats.mann_whitney(forward, backward).p_value >= ORDER_ALPHA:
        return None
    return f, b


def order_effect(baseline_s: Sequence[float], candidate_s: Sequence[float]) -> str:
    """'' or why the paired ratios depend on which side ran first (rounds alternate direction) by more
    than ORDER_CONTAMINATES: contamination."""
    found = _directions(baseline_s, candidate_s)
    if found is None or abs(math.log(found[0] / found[1])) <= math.log1p(ORDER_CONTAMINATES):
        return ""
    return (f"the paired ratio depends on which side ran first ({found[0]:.3g}× with the baseline first, "
            f"{found[1]:.3g}× with it second): one side's block slows the next (a thread pool, a cache or a "
            "clock it leaves behind)")


def small_order_effect(baseline_s: Sequence[float], candidate_s: Sequence[float]) -> tuple[float, float, str] | None:
    """(low, high, note) where the directions part by no more than ORDER_CONTAMINATES. Whatever one side
    leaves behind changes the block that follows it by some factor: the forward ratio carries the
    candidate's, the backward one the baseline's, so the true ratio lies between the two medians
    (both factors slowing, or both speeding), and the interval is widened to span them."""
    found = _directions(baseline_s, candidate_s)
    if found is None or abs(math.log(found[0] / found[1])) > math.log1p(ORDER_CONTAMINATES):
        return None
    f, b = found
    return (min(f, b), max(f, b), f"the paired ratio depends a little on which side ran first ({f:.3g}× with "
            f"the baseline first, {b:.3g}× with it second): the interval spans both")


def side_shift(rounds_s: Sequence[float], own_s: Sequence[float]) -> float:
    """A side's median time in the paired rounds over its median in its own measurement."""
    own = stats.median(own_s)
    return stats.median(rounds_s) / own if own > 0 else math.inf


def contamination(paired: stats.RatioCI, medians: stats.RatioCI | None, baseline: tuple[str, Sequence[float],
                  Sequence[float]], candidate: tuple[str, Sequence[float], Sequence[float]],
                  loose: stats.RatioCI | None = None) -> str:
    """Why the paired figure cannot be trusted, or '' when it holds.

    `baseline` and `candidate` are (label, per-round seconds, own measurement's seconds); `medians`
    is None where a side's own measurement was disturbed (noisy), so its median is no reference; then
    `loose`, the same ratio of those medians, is held to GROSS_FACTOR only."""
    order = order_effect(baseline[1], candidate[1])
    if order:
        return order
    if medians is None:
        if loose is None or not gross(paired, loose) or slow_own_measurement(baseline, candidate):
            return ""
        medians = loose
    elif disagreement(paired, medians) <= 1 or slow_own_measurement(baseline, candidate):
        return ""
    shifts = ", ".join(f"{label} ran {_times(side_shift(rounds, own))} its own measurement's time"
                       for label, rounds, own in (baseline, candidate))
    return (f"the paired rounds disagree with the sides' own measurements: paired {paired.ratio:.3g}× "
            f"[{paired.low:.3g}–{paired.high:.3g}] against {medians.ratio:.3g}× [{medians.low:.3g}–"
            f"{medians.high:.3g}] from their medians (in the rounds {shifts})")


def slow_own_measurement(baseline: tuple[str, Sequence[float], Sequence[float]],
                         candidate: tuple[str, Sequence[float], Sequence[float]]) -> str:
    """Why the rounds and the medians part although the rounds are sound, or ''.

    Whatever crosses between the sides of a pair (a pool still spinning, caches evicted, a clock
    let down) slows a block: it cannot make a side's rounds faster than its own measurement. Where
    no side ran slower in the rounds than in its own measurement (beyond the slack) and one ran
    faster, that side's own measurement was slowed while it was taken (on a 2-core VM, numpy on 2
    threads at n=256 measured 330 µs, its 1-thread time, and ran 185 µs in every round): the paired
    figure stands, and says so."""
    slowed = slowed_own_side(baseline, candidate)
    if slowed is None:
        return ""
    label, shift = (baseline, candidate)[slowed][0], side_shift(*(baseline, candidate)[slowed][1:])
    return (f"{label}'s own measurement took {1 / shift:.2f}× its time in the paired rounds (slowed while it "
            f"was measured; nothing in the rounds ran slower): the paired figure stands")


def slowed_own_side(baseline: tuple[str, Sequence[float], Sequence[float]],
                    candidate: tuple[str, Sequence[float], Sequence[float]]) -> int | None:
    """0 (the baseline) or 1 (the candidate) where that side's own measurement ran slower than its
    paired rounds beyond the slack while neither side ran slower in the rounds; else None."""
    shifts = [side_shift(rounds, own) for _, rounds, own in (baseline, candidate)]
    if not all(math.isfinite(s) and s > 0 for s in shifts) or max(shifts) > 1 + SYSTEMATIC_SLACK:
        return None
    side = min(range(2), key=lambda i: shifts[i])
    return side if shifts[side] < 1 / (1 + SYSTEMATIC_SLACK) else None


def gross(paired: stats.RatioCI, medians: stats.RatioCI) -> bool:
    """The two figures more than GROSS_FACTOR apart (or not comparable at all)."""
    if paired.ratio <= 0 or medians.ratio <= 0 or not all(map(math.isfinite, (paired.ratio, medians.ratio))):
        return True
    return abs(math.log(paired.ratio / medians.ratio)) > math.log(GROSS_FACTOR)


def _times(shift: float) -> str:
    return f"{shift:.2f}×" if math.isfinite(shift) else "∞×"
