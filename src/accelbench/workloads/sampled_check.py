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
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from accelbench.backends import raw_values
from accelbench.results import Check
from accelbench.workloads.verify import make_check

Variant = Any  # workloads/rotation.py's Variant (named, not imported: rotation imports this module)

SAMPLED = 256  # random elements judged per output, besides the poisoned ones


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


def positions(size: int, marked: np.ndarray | None, draw: random.Random, whole_up_to: int = SAMPLED) -> np.ndarray:
    """SAMPLED distinct random flat positions below `size` (all of them for an output of at most
    `whole_up_to` elements), with the `marked` ones (the poison's) added."""
    count = size if size <= whole_up_to else min(size, SAMPLED)
    chosen = np.asarray(draw.sample(range(size), count) if count < size else range(size), dtype=np.int64)
    if marked is not None and marked.size:
        chosen = np.union1d(chosen, marked[marked < size])
    return chosen


def judge(output: Any, variant: Variant, expectation: Expectation, marked: np.ndarray | None,
          draw: random.Random, located: Callable[[Any], str], device: str,
          read: Callable[[Any], np.ndarray] | None = None) -> Check:
    """The output's sampled elements against their expected values; `read` reads the whole output
    where its framework is unknown (the backend's to_host: the placement check then says so)."""
    size = expectation.size(variant)
    count = raw_values.element_count(output)
    if count is not None and count != size:
        return Check(False, float("inf"), 0.0, f"the output has {count} elements, {size} expected",
                     located(output))
    if expectation.placed is not None:
        target, locate = expectation.placed(output, variant), located
        located = lambda _: locate(target)  # noqa: E731 - the placement of another array than the output
    where = positions(size, marked, draw, expectation.whole_up_to)
    got = raw_values.gather(output, where)
    if got is None and read is not None:
        got = np.asarray(read(output), dtype=np.float64).reshape(-1)[where]
    if got is None:
        return Check(False, float("inf"), 0.0, "the output could not be read through any framework", located(output))
    want = expectation.at(variant, where)
    if expectation.exact:
        differ = int(np.count_nonzero(~((got == want) | (np.isnan(got) & np.isnan(want)))))
        check = make_check(0.0 if not differ else float("inf"), 0.0, located(output), device, expectation.what)
        if not differ and check.passed:  # "within tolerance" says nothing of a copy: its elements are identical
            return dataclasses.replace(check, detail=f"{expectation.what} ({where.size} elements judged)")
        if differ:
            return dataclasses.replace(check, detail=f"data changed: {differ} of {where.size} judged elements differ "
                                                     f"from the input's; {check.detail}")
        return check
    return make_check(sampled_error(got, want), expectation.limit(variant), located(output), device,
                      f"{expectation.what} ({where.size} elements judged)".strip())


def sampled_error(got: np.ndarray, want: np.ndarray) -> float:
    """||got - want|| / ||want|| over the judged elements: inf where any value is not finite."""
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    off = got - want
    return float(np.sqrt(np.sum(off * off)) / (np.sqrt(np.sum(want * want)) or 1.0))
