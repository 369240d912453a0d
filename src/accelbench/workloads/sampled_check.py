"""Judging an output by a sample of its elements against their float64 expected values.

A timed block's outputs are judged where its calls left them (runner/block_audit.py), so judging
must cost little: a few hundred elements drawn at random, plus every element the block's poison
marked, are read through the array's framework and compared with what the workload says they must
be, at the input values the block ran on (scaled by exact factors: workloads/rotation.py). A call
that skipped any part of its output leaves stale values (the inputs changed since) or NaN there;
a share s of the output left undone escapes a sample of k elements with chance (1 - s)^k
(k = 256: s = 5% escapes with 2e-6). Lower precision shows in every element.
"""
from __future__ import annotations

import dataclasses
import random
import secrets
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from accelbench.backends import raw_values
from accelbench.results import Check
from accelbench.workloads.verify import make_check

Variant = Any  # workloads/rotation.py's Variant (named, not imported: rotation imports this module)

SAMPLED = 256  # random elements judged per output, besides the poisoned ones
# which elements are judged: drawn from the system's entropy once, then fast (a draw per element
# from the system's entropy cost 2 µs each, a millisecond a judgement)
PRIVATE = np.random.default_rng(secrets.randbits(128))


@dataclass(frozen=True)
class Expectation:
    """What a workload's output must be, element by element, for a variant's current input values.

    `at(variant, flat)`: float64 expected values at flat positions; `size(variant)`: the output's
    element count; `limit(variant)`: the relative error allowed (norm over the judged elements);
    `exact`: bit-identical values required (copies)."""

    at: Callable[[Variant, np.ndarray], np.ndarray]
    size: Callable[[Variant], int]
    limit: Callable[[Variant], float]
    what: str = ""
    exact: bool = False
    #: the array whose location shows where the work ran, given the output and its variant (default:
    #: the output; a device-to-host copy's output is host memory, its input is on the device)
    placed: Callable[[Any, Variant], Any] | None = None
    #: outputs of at most this many elements are judged whole (their expected values cost little)
    whole_up_to: int = SAMPLED
    #: the output positions the inputs changed before this block feed (default: the same positions:
    #: an elementwise op); judged besides the drawn ones, so an output left from the block before shows
    affected: Callable[[Variant, random.Random], np.ndarray] | None = None


def positions(size: int, marked: np.ndarray | None, draw: random.Random, whole_up_to: int = SAMPLED,
              affected: np.ndarray | None = None) -> np.ndarray:
    """SAMPLED distinct random flat positions below `size` (all of them for an output of at most
    `whole_up_to` elements), with the `marked` ones (the poison's) and the `affected` ones added:
    sorted, as the readings that select them assume."""
    count = size if size <= whole_up_to else min(size, SAMPLED)
    chosen = np.sort(PRIVATE.choice(size, count, replace=False) if count < size else np.arange(size)).astype(np.int64)
    for extra in (marked, affected):
        if extra is not None and extra.size:
            chosen = np.union1d(chosen, extra[(extra >= 0) & (extra < size)])
    return chosen


def changed_positions(variant: Variant, draw: random.Random) -> np.ndarray:
    """An elementwise op's affected outputs: the positions its inputs changed at."""
    found = [np.asarray(c, dtype=np.int64) for c in getattr(variant, "changed", []) if len(c)]
    return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Reading:
    """An output's judged elements, read right after its block: the positions and their values (or
    why they could not be read), and where the output lives."""

    where: np.ndarray
    got: np.ndarray | None
    device_seen: str
    problem: str = ""
    poison_left: int = 0   # marked (poisoned) elements still NaN: never written


def read(output: Any, variant: Variant, expectation: Expectation, marked: np.ndarray | None,
         draw: random.Random, located: Callable[[Any], str],
         read_whole: Callable[[Any], np.ndarray] | None = None) -> Reading:
    """The output's elements at the judged positions, read through its framework (`read_whole`, the
    backend's to_host, where its framework is unknown: the placement check then says so). Cheap: the
    expected values are computed later (`judged`), away from the timed blocks' caches."""
    if expectation.placed is not None:
        target, locate = expectation.placed(output, variant), located
        located = lambda _: locate(target)  # noqa: E731 - the placement of another array than the output
    size = expectation.size(variant)
    count = raw_values.element_count(output)
    if count is not None and count != size:
        return Reading(np.empty(0, dtype=np.int64), None, located(output),
                       f"the output has {count} elements, {size} expected")
    affected = (expectation.affected or changed_positions)(variant, draw)
    where = positions(size, None, draw, expectation.whole_up_to, affected)
    marks = np.empty(0, dtype=np.int64) if marked is None else marked[(marked >= 0) & (marked < size)]
    everything = np.union1d(where, marks)
    got = raw_values.gather(output, everything)
    if got is None and read_whole is not None:
        got = np.asarray(read_whole(output), dtype=np.float64).reshape(-1)[everything]
    if got is None:
        return Reading(where, None, located(output), "the output could not be read through any framework")
    # the poisoned elements need no expected value: one left NaN was never written
    left = int(np.count_nonzero(np.isnan(got[np.isin(everything, marks)]))) if marks.size else 0
    return Reading(where, got[np.isin(everything, where)], located(output), poison_left=left)


def judged(reading: Reading, variant: Variant, expectation: Expectation, device: str) -> Check:
    """A reading against the values `variant` (as it was when read) says the output must hold."""
    if reading.got is None or reading.problem:
        return Check(False, float("inf"), 0.0, reading.problem, reading.device_seen)
    if reading.poison_left:
        return Check(False, float("inf"), expectation.limit(variant), f"{expectation.what}: {reading.poison_left} "
                     "poisoned elements were never written (the call skipped part of its output)", reading.device_seen)
    want = expectation.at(variant, reading.where)
    if expectation.exact:
        got = reading.got
        differ = int(np.count_nonzero(~((got == want) | (np.isnan(got) & np.isnan(want)))))
        check = make_check(0.0 if not differ else float("inf"), 0.0, reading.device_seen, device, expectation.what)
        if not differ and check.passed:  # "within tolerance" says nothing of a copy: its elements are identical
            return dataclasses.replace(check, detail=f"{expectation.what} ({reading.where.size} elements judged)")
        if differ:
            return dataclasses.replace(check, detail=f"data changed: {differ} of {reading.where.size} judged elements "
                                                     f"differ from the input's; {check.detail}")
        return check
    return make_check(sampled_error(reading.got, want), expectation.limit(variant), reading.device_seen, device,
                      f"{expectation.what} ({reading.where.size} elements judged)".strip())


def sampled_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want|| / ||want|| over the judged elements: inf where any value is not finite."""
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    off = got - want
    return float(np.sqrt(np.sum(off * off)) / (np.sqrt(np.sum(want * want)) or 1.0))
