"""Checking outputs against float64 references, with tolerances that fit each dtype.

A tolerance is derived from the dtype's own arithmetic: its unit roundoff u (half a unit in
the last place), the rounding of the output, and the rounding error of a sum of `terms` values
(grows as sqrt(terms): rounding errors of random sign add up as a random walk). Sums of 16-bit
products are taken as accumulated in float32, as every framework does, so a float16 result
computed through bfloat16 (8x its roundoff) or a float64 one through float32 fails.
"""
from __future__ import annotations

import numpy as np

from accelbench.results import Check
from accelbench.vocabulary import TOLERANCE

NUMPY_DTYPE = {"float64": np.float64, "float32": np.float32, "float16": np.float16}


UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
# an honest rounding's RMS error is about u/sqrt(3): twice the bound leaves room, while a float16
# result computed through bfloat16 (error ~4u) does not fit
ROUNDING_FACTOR = 2.0


def tolerance(dtype: str, scale: float = 1.0, terms: int | None = None) -> float:
    """The relative error a correct result in `dtype` stays under. With `terms` (values summed
    into each output element) it is derived from the unit roundoff; without, the fixed table's."""
    if terms is None or dtype not in UNIT_ROUNDOFF:
        return TOLERANCE[dtype] * scale
    u = UNIT_ROUNDOFF[dtype]
    accumulated = UNIT_ROUNDOFF["float32"] if u > UNIT_ROUNDOFF["float32"] else u
    return ROUNDING_FACTOR * (u + accumulated * np.sqrt(max(terms, 1) + 1)) * scale


def relative_norm_error(result: np.ndarray, reference: np.ndarray) -> float:
    """||result - reference||_F / ||reference||_F, computed in float64."""
    result = np.asarray(result, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    if result.shape != reference.shape:
        return float("inf")
    if not np.all(np.isfinite(result)):
        return float("inf")
    denominator = float(np.linalg.norm(reference)) or 1.0
    return float(np.linalg.norm(result - reference)) / denominator


def make_check(error: float, limit: float, device_seen: str, device_asked: str, what: str = "") -> Check:
    """A Check that fails on too large an error *or* an output on another device than asked."""
    problems = []
    if not error <= limit:  # NaN fails too
        problems.append(f"relative error {error:.2e} exceeds the tolerance {limit:.1e}")
    if device_seen != device_asked:
        problems.append(f"ran on {device_seen}, asked for {device_asked}")
    detail = "; ".join(problems) or f"{what} within tolerance".strip()
    return Check(passed=not problems, max_rel_error=error, tolerance=limit, detail=detail, device_seen=device_seen)


def host_inputs(shape: tuple[int, ...], seed: int, dtype: str) -> np.ndarray:
    """Fresh uniform [-1, 1) inputs (never zeros), rounded to `dtype` where numpy has it."""
    generator = np.random.default_rng(seed)
    if dtype not in NUMPY_DTYPE or NUMPY_DTYPE[dtype] == np.float32:  # bfloat16: the backend rounds on the device
        # drawn in float32 (half the time of float64 and a cast: 2^24 elements, 66 ms against 125),
        # k·2^-24 scaled to the odd multiples of 2^-24 in (-1, 1): exact in float32, never zero
        values = generator.random(shape, dtype=np.float32)
        values *= np.float32(2.0)
        values -= np.float32(1.0 - 2.0 ** -24)
        return values
    return generator.uniform(-1.0, 1.0, size=shape).astype(NUMPY_DTYPE[dtype], copy=False)  # float64: no copy


def round_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    return ((bits + rounding) & np.uint32(0xFFFF0000)).view(np.float32)


def as_computed(values: np.ndarray, dtype: str) -> np.ndarray:
    """The float64 values a device computes on once `values` are stored in `dtype`."""
    if dtype == "bfloat16":
        return round_to_bfloat16(values.astype(np.float32)).astype(np.float64)
    return values.astype(NUMPY_DTYPE[dtype]).astype(np.float64)
