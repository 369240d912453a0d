"""The host side of an array workload's input sets, held once and computed a piece at a time (issue 28).

An input set's host arrays and its float64 reference depend on nothing but the problem (kernel,
length, dtype) and the seed, so two instances of one problem (the CPU baseline and a device, both
prepared for one part of the paired rounds: runner/pairing_parts.py) get the very same arrays:
`shared` hands out an array while anything still holds it, and makes it again once nothing does
(a weak cache: a released instance lets its arrays go). Nothing writes into these arrays: the
backends upload copies, and the aliasing check (workloads/rotation.py) restores what it marks.

The reference and the check's error are computed PIECE elements at a time, so their float64
temporaries stay a few MiB where whole-array ones took two or three times an input's size.
"""
from __future__ import annotations

import weakref
from typing import Callable, Hashable, Sequence

import numpy as np

PIECE = 2**20  # elements per piece: 8 MiB of float64

_HELD: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
# the last few arrays asked for stay held a while longer: the specs of one problem follow each other
# in a plan (numpy on 1 and 2 threads, torch, a device), and made anew for each the host inputs of
# the quick suite's STREAM cost a quarter of a second a spec (7 s of a 70 s suite)
RECENT = 2
_recent: list[tuple[Hashable, np.ndarray]] = []


def shared(key: Hashable, make: Callable[[], np.ndarray]) -> np.ndarray:
    """The array held under `key` while anything still holds it (or it is among the RECENT last
    asked for); else `make()`, then held."""
    found = _HELD.get(key)
    if found is None:
        found = make()
        _HELD[key] = found
    _recent[:] = [(k, a) for k, a in _recent if k != key][-(RECENT - 1):] + [(key, found)]
    return found


def pieces(n: int) -> list[slice]:
    return [slice(start, min(start + PIECE, n)) for start in range(0, n, PIECE)]


def elementwise_reference(expected: Callable[..., np.ndarray], hosts: Sequence[np.ndarray]) -> np.ndarray:
    """expected(*hosts in float64), an elementwise function, computed a piece at a time."""
    n = len(hosts[0])
    reference = np.empty(n, dtype=np.float64)
    for piece in pieces(n):
        reference[piece] = expected(*(np.asarray(h[piece], dtype=np.float64) for h in hosts))
    return reference


def sum_float64(values: np.ndarray, absolute: bool = False) -> float:
    """The float64 sum of `values` (of their magnitudes with `absolute`), a piece at a time."""
    total = 0.0
    for piece in pieces(len(values)):
        part = np.abs(values[piece]) if absolute else values[piece]
        total += float(np.sum(part, dtype=np.float64))
    return total


def relative_error(result: np.ndarray, reference: np.ndarray) -> float:
    """verify.relative_norm_error (||result - reference|| / ||reference||, in float64), a piece at a
    time: inf for another shape or any value that is not finite."""
    result = np.asarray(result)
    if result.shape != reference.shape:
        return float("inf")
    difference = norm = 0.0
    for piece in pieces(len(reference)):
        got, want = np.asarray(result[piece], dtype=np.float64), reference[piece]
        if not np.all(np.isfinite(got)):
            return float("inf")
        off = got - want  # squares summed by numpy, not BLAS: no BLAS thread left spinning
        difference += float(np.sum(off * off))
        norm += float(np.sum(want * want))
    return float(np.sqrt(difference) / (np.sqrt(norm) or 1.0))


def forget_recent() -> None:
    """Let go of the RECENT arrays held beyond their users (what a long-lived caller does when done)."""
    _recent.clear()
